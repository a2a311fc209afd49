"""The cvg.run record: where it goes, that it validates, that it is written whole.

Every exit meaning's record is validated by the tests of that meaning
(test_run_exit.py, test_run_processes.py, test_run_signals.py) through
runhelp.load_record, which parses it with cvg_schema.RunRecord.
"""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import stat
import threading
from pathlib import Path

import pytest
from runhelp import ABI_ENV, Box, load_record, main, make_policy, only_record, record, run_main

Identity = pwd.struct_passwd | None


def test_default_location_is_the_state_dir(identity: Identity, box: Box) -> None:
    ran = run_main(["--", "true"], box=box, user=identity)
    assert ran.rc == 0, ran.err
    [path] = box.records()
    raw, rec = load_record(path)
    assert path.parent == box.state / "cvg" / "runs"
    assert path.name == f"{rec.run_id}.json"
    st = path.stat()
    assert stat.S_IMODE(st.st_mode) == 0o600
    assert st.st_uid == (os.geteuid() if identity is None else identity.pw_uid)
    assert rec.kind == "cvg.run"
    assert rec.policy_path is None  # the embedded default policy
    assert rec.argv == ["true"] and rec.cwd == str(box.cwd)
    assert rec.started <= rec.ended
    assert rec.timings.wall_seconds >= 0 and not rec.traced and rec.denials == []
    # The plan digest is the digest of the plan the record carries.
    canonical = json.dumps(raw["plan"], sort_keys=True, separators=(",", ":")).encode()
    assert rec.plan_digest == "sha256:" + hashlib.sha256(canonical).hexdigest()
    assert rec.plan is not None


def test_record_path_option(identity: Identity, box: Box) -> None:
    target = box.share / "deeper" / "run.json"
    target.parent.mkdir()
    target.parent.chmod(0o777)
    policy = make_policy(box.share)
    ran = run_main(["-p", str(policy), "--record", str(target), "--", "sh", "-c", "exit 3"],
                   box=box, user=identity)  # fmt: skip
    assert ran.rc == 3, ran.err
    assert box.records() == []  # not also in the state dir
    _, rec = load_record(target)
    assert (rec.exit.meaning, rec.exit.status) == ("exited", 3)
    assert rec.policy_path == str(policy)
    assert rec.policy_digest.startswith("sha256:")

    # A second run replaces it whole, leaving no temporary file beside it.
    target.write_text("not json, and longer than nothing " * 1000)
    ran = run_main(["--record", str(target), "--", "true"], box=box, user=identity)
    assert ran.rc == 0, ran.err
    _, rec = load_record(target)
    assert rec.exit.status == 0
    assert sorted(p.name for p in target.parent.iterdir()) == ["run.json"]


def test_unwritable_record_keeps_the_tool_status(identity: Identity, box: Box) -> None:
    # The directory exists but no file can be made in it, by root either.
    target = "/proc/self/run.json"
    ran = run_main(["--record", target, "--", "sh", "-c", "exit 4"], box=box, user=identity)
    assert ran.rc == 4
    assert "cannot write the run record" in ran.err
    assert "Traceback" not in ran.err


def test_a_record_path_under_a_file_is_refused_before_the_run(identity: Identity, box: Box) -> None:
    blocker = box.share / "a-file"
    blocker.write_text("")
    marker = box.share / "ran"
    target = blocker / "run.json"  # its parent is a file
    ran = run_main(["--record", str(target), "--", "sh", "-c", f"touch {marker}"],
                   box=box, user=identity)  # fmt: skip
    assert ran.rc == 2 and not marker.exists()
    assert ran.err.count("\n") == 1 and "--record" in ran.err


def test_write_atomic_never_shows_half_a_file(tmp_path: Path) -> None:
    """A reader racing many writers only ever sees a whole old or a whole new file."""
    target = tmp_path / "run.json"
    payloads = [json.dumps({"n": i, "pad": "x" * (i * 5000)}).encode() for i in range(40)]
    record.write_atomic(target, payloads[0])
    seen: set[int] = set()
    bad: list[bytes] = []
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            data = target.read_bytes()
            try:
                seen.add(json.loads(data)["n"])
            except ValueError:
                bad.append(data[:80])

    t = threading.Thread(target=reader)
    t.start()
    try:
        for _ in range(5):
            for p in payloads:
                record.write_atomic(target, p)
    finally:
        stop.set()
        t.join()
    assert bad == []
    assert len(seen) > 1
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]


def test_write_atomic_failure_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "run.json"
    record.write_atomic(target, b'{"old": true}\n')
    with pytest.raises(TypeError):
        record.write_atomic(target, "not bytes")  # type: ignore[arg-type]
    assert target.read_bytes() == b'{"old": true}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]


def test_records_of_successive_runs_do_not_collide(identity: Identity, box: Box) -> None:
    def twice(_rc: int) -> int:
        return main(["--cwd", str(box.cwd), "--", "true"])

    ran = run_main(["--", "true"], box=box, user=identity, after=twice)
    assert (ran.rc, ran.after) == (0, 0)
    records = [load_record(p)[1] for p in box.records()]
    assert len(records) == 2
    assert records[0].run_id != records[1].run_id


def test_not_started_record(identity: Identity, box: Box) -> None:
    """A refused run still leaves its record, with the meaning not_started."""
    # Below Landlock ABI 3 every read grant is degraded: refused without --allow-degraded.
    policy = make_policy(box.share)
    ran = run_main(["-p", str(policy), "--", "true"], box=box, user=identity,
                   env={ABI_ENV: "2"})  # fmt: skip
    assert ran.rc == 125
    _, rec = only_record(box)
    assert (rec.exit.meaning, rec.exit.status) == ("not_started", 125)
    assert rec.scratch is None  # none was made
    assert rec.exit.detail
