"""The state directory keeps its records within a bound: the newest N per policy
(CVG_RUNS_KEEP) and M MB in all (CVG_RUNS_MAX_MB), the oldest deleted first when a
new record is written, never the one just written."""

from __future__ import annotations

import json
import os
import pwd
from pathlib import Path

import pytest
from runhelp import Box, make_policy, record, run_main

from cvg_run.record import Bounds, bounds, dumps, prune

Identity = pwd.struct_passwd | None


def _fake(directory: Path, name: str, policy: str, age: int, size: int = 0) -> Path:
    """A record-shaped file whose head names ``policy``, ``age`` seconds old: compact
    as cvg-run writes records, or indented as older ones were (every other name)."""
    path = directory / f"{name}.json"
    head = {"kind": "cvg.run", "schema_version": "1.0", "run_id": name, "policy_digest": policy}
    text = json.dumps(head, indent=2) if sum(map(ord, name)) % 2 else dumps(head).decode()
    path.write_text(text + " " * max(0, size - len(text)))
    t = 1_700_000_000 - age
    os.utime(path, (t, t))
    return path


def _names(directory: Path) -> set[str]:
    return {p.stem for p in directory.iterdir() if p.name != ".policies"}


def test_keeps_the_newest_n_of_each_policy(tmp_path: Path) -> None:
    for i in range(5):
        _fake(tmp_path, f"a{i}", "sha256:aa", age=100 - i)  # a4 newest
        _fake(tmp_path, f"b{i}", "sha256:bb", age=50 - i)
    new = _fake(tmp_path, "new", "sha256:aa", age=0)
    removed = prune(str(tmp_path), str(new), Bounds(keep=3, max_bytes=0))
    assert _names(tmp_path) == {"new", "a4", "a3", "b4", "b3", "b2"}
    assert sorted(Path(p).stem for p in removed) == ["a0", "a1", "a2", "b0", "b1"]


def test_total_size_deletes_oldest_first_but_never_the_new_one(tmp_path: Path) -> None:
    for i in range(4):
        _fake(tmp_path, f"r{i}", f"sha256:{i}", age=10 - i, size=1000)
    # The new record alone is over the bound: it stays, every other goes.
    new = _fake(tmp_path, "new", "sha256:n", age=100, size=5000)  # oldest mtime, still kept
    prune(str(tmp_path), str(new), Bounds(keep=0, max_bytes=2500))
    assert _names(tmp_path) == {"new"}


def test_size_bound_keeps_what_fits(tmp_path: Path) -> None:
    for i in range(4):
        _fake(tmp_path, f"r{i}", "sha256:x", age=10 - i, size=1000)
    new = _fake(tmp_path, "new", "sha256:x", age=0, size=1000)
    prune(str(tmp_path), str(new), Bounds(keep=0, max_bytes=3000))
    assert _names(tmp_path) == {"new", "r3", "r2"}


def test_records_in_the_making_and_other_files_are_left(tmp_path: Path) -> None:
    hidden = tmp_path / ".r9.json.0123456789ab"  # Reserved's temporary name
    hidden.write_text("x" * 5000)
    other = tmp_path / "notes.txt"
    other.write_text("x" * 5000)
    for i in range(3):
        _fake(tmp_path, f"r{i}", "sha256:x", age=10 - i)
    new = _fake(tmp_path, "new", "sha256:x", age=0)
    prune(str(tmp_path), str(new), Bounds(keep=1, max_bytes=1))
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == [".policies", hidden.name, "new.json", "notes.txt"]


def test_bounds_from_the_environment() -> None:
    b = bounds({"CVG_RUNS_KEEP": "7", "CVG_RUNS_MAX_MB": "0"})
    assert (b.keep, b.max_bytes) == (7, 0)
    d = bounds({})
    assert (d.keep, d.max_bytes) == (record.DEFAULT_KEEP, record.DEFAULT_MAX_MB << 20)
    with pytest.raises(ValueError, match=r"CVG_RUNS_KEEP='-1': expected a whole number"):
        bounds({"CVG_RUNS_KEEP": "-1"})


def test_cvg_run_prunes_its_state_directory(identity: Identity, box: Box) -> None:
    other = make_policy(box.share, resources={"wall_clock_seconds": 599})  # another digest
    env = {"CVG_RUNS_KEEP": "2"}
    for argv in (["--", "true"], ["-p", str(other), "--", "true"], ["--", "true"],
                 ["--", "true"], ["-p", str(other), "--", "true"]):  # fmt: skip
        ran = run_main(argv, box=box, user=identity, env=env)
        assert ran.rc == 0, ran.err
    records = box.records()
    policies = [json.loads(p.read_text())["policy_path"] for p in records]
    assert sorted(policies, key=str) == sorted([None, None, str(other), str(other)], key=str)


def test_a_record_path_elsewhere_is_never_pruned(identity: Identity, box: Box) -> None:
    for i in range(3):
        ran = run_main(["--record", str(box.share / f"r{i}.json"), "--", "true"],
                       box=box, user=identity, env={"CVG_RUNS_KEEP": "1"})  # fmt: skip
        assert ran.rc == 0, ran.err
    assert sorted(p.name for p in box.share.glob("r*.json")) == ["r0.json", "r1.json", "r2.json"]


def test_a_bad_bound_is_a_usage_error_before_the_run(box: Box) -> None:
    marker = box.share / "ran"
    ran = run_main(["--", "touch", str(marker)], box=box, env={"CVG_RUNS_MAX_MB": "lots"})
    assert ran.rc == 2
    said = "cvg-run: CVG_RUNS_MAX_MB='lots': expected a whole number (0: no bound)"
    assert ran.err.strip() == said
    assert not marker.exists() and box.records() == []


def test_the_policy_index_spares_reading_every_head_and_is_only_a_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Records' policies are read once and kept in .policies; a damaged index, or one
    that lies, costs a re-read at most of what it lacks, never a record of the wrong
    policy: what the index lacks is read from the record itself."""
    from cvg_run import record as rec

    for i in range(6):
        _fake(tmp_path, f"a{i}", "sha256:aa", age=100 - i)
        _fake(tmp_path, f"b{i}", "sha256:bb", age=50 - i)
    reads: list[str] = []
    real = rec._policy_of
    monkeypatch.setattr(rec, "_policy_of", lambda path: reads.append(path) or real(path))
    first = _fake(tmp_path, "n0", "sha256:aa", age=0)
    prune(str(tmp_path), str(first), Bounds(keep=4, max_bytes=0))
    assert len(reads) == 13 and _names(tmp_path) == {
        "a3",
        "a4",
        "a5",
        "n0",
        *(f"b{i}" for i in range(2, 6)),
    }
    reads.clear()
    second = _fake(tmp_path, "n1", "sha256:bb", age=0)
    prune(str(tmp_path), str(second), Bounds(keep=4, max_bytes=0))
    assert [Path(p).name for p in reads] == ["n1.json"]  # only the new record's head
    assert _names(tmp_path) == {"a3", "a4", "a5", "n0", "b3", "b4", "b5", "n1"}
    (tmp_path / ".policies").write_text("garbage\n\x00\tnot a line\n")
    reads.clear()
    third = _fake(tmp_path, "n2", "sha256:aa", age=0)
    prune(str(tmp_path), str(third), Bounds(keep=4, max_bytes=0))
    assert len(reads) == 9  # rebuilt from the records themselves
    assert _names(tmp_path) == {"a4", "a5", "n0", "n2", "b3", "b4", "b5", "n1"}
