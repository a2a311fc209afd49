"""The warm Python API on the real kernel: Sandbox(policy).run(argv).

Each test judges by an external oracle: the tool's own output, a file it
could or could not read, the process table.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import traceback
from pathlib import Path

import pytest

import cvg_testing
from cvg_run import Sandbox, SandboxError
from cvg_run.api import Started
from cvg_schema import RunRecord
from cvg_schema.io import loads_as


@pytest.fixture(autouse=True)
def private_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


@pytest.fixture(scope="module")
def box() -> Sandbox:
    with Sandbox() as b:
        yield b


def test_runs_with_input_and_captures_output(box: Sandbox) -> None:
    r = box.run(["python3", "-c", "import sys; print(sys.stdin.read().upper())"], input=b"hi")
    assert (r.status, r.stdout, r.stderr, r.meaning) == (0, b"HI\n", b"", "exited")
    assert r.record["kind"] == "cvg.run" and r.record["argv"][0] == "python3"


def test_default_policy_denies_reading_outside_the_system(box: Sandbox, tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("s3cret")
    # Oracle: unconfined, the same command reads it.
    assert subprocess.run(["cat", str(secret)], capture_output=True).stdout == b"s3cret"
    r = box.run(["cat", str(secret)], cwd="/")
    assert r.status == 1 and b"Permission denied" in r.stderr and r.stdout == b""


def test_exit_statuses(box: Sandbox) -> None:
    assert box.run(["sh", "-c", "exit 7"]).status == 7
    r = box.run(["sh", "-c", "kill -USR1 $$"])
    assert (r.status, r.meaning) == (128 + signal.SIGUSR1, "signaled")
    r = box.run(["sleep", "30"], timeout=0.3)
    assert (r.status, r.meaning) == (124, "wall_clock")
    r = box.run(["no-such-command-cvg"])
    assert (r.status, r.meaning) == (127, "not_found")


def test_argv_must_be_a_list_of_strings(box: Sandbox) -> None:
    for bad in ("echo hi", [], ["echo", 1], b"echo"):
        with pytest.raises(ValueError, match="non-empty list of strings"):
            box.run(bad)  # type: ignore[arg-type]


def test_fifty_parallel_runs_do_not_cross_talk(box: Sandbox) -> None:
    results: dict[int, tuple[int, bytes, bytes]] = {}

    def one(i: int) -> None:
        r = box.run(["sh", "-c", f'read x; echo "$x-{i}"; echo e{i} >&2; exit {i % 7}'],
                    input=f"in{i}\n".encode())  # fmt: skip
        results[i] = (r.status, r.stdout, r.stderr)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(50):
        assert results[i] == (i % 7, f"in{i}-{i}\n".encode(), f"e{i}\n".encode())


def test_daemon_is_gone_after_a_warm_run(box: Sandbox) -> None:
    r = box.run(["sh", "-c", "(setsid sleep 300 & echo $!) ; sleep 0.2"])
    pid = int(r.stdout.split()[0])
    assert r.status == 0
    assert not Path(f"/proc/{pid}").exists() or _is_zombie_or_gone(pid)


def _is_zombie_or_gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_closed_sandbox_refuses_and_helper_is_gone() -> None:
    b = Sandbox()
    pid = b._proc.pid
    assert b.run(["true"]).status == 0
    b.close()
    assert b.closed
    with pytest.raises(SandboxError, match="closed"):
        b.run(["true"])
    assert b._proc.poll() is not None and not Path(f"/proc/{pid}/cmdline").exists()


def test_helper_never_outlives_its_owner(tmp_path: Path) -> None:
    """An owner killed with SIGKILL (no cleanup at all) while a run is in
    flight: the helper, the runner and the tool must all go."""
    marker = tmp_path / "pids"
    owner = textwrap.dedent(
        f"""
        import os, sys, threading
        from cvg_run import Sandbox
        box = Sandbox()
        def go():
            box.run(["sh", "-c", "echo $$; sleep 300"])
        threading.Thread(target=go, daemon=True).start()
        import time; time.sleep(1.0)
        open({str(marker)!r}, "w").write(str(box._proc.pid))
        time.sleep(300)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", owner])
    try:
        for _ in range(100):
            if marker.exists() and marker.read_text():
                break
            time.sleep(0.05)
        helper = int(marker.read_text())
        tree = _tree(helper)
        assert tree, "the helper should have a runner and a tool in flight"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 5
        left = [p for p in [helper, *tree] if cvg_testing.alive(p)]
        while left and time.monotonic() < deadline:
            time.sleep(0.05)
            left = [p for p in left if cvg_testing.alive(p)]
        assert left == [], f"left behind: {left}"
    finally:
        if proc.poll() is None:
            proc.kill()


def _tree(root: int) -> list[int]:
    from cvg_kernel.process import descendants

    return descendants(root)


SOURCES = [str(p) for p in sorted(Path(__file__).resolve().parents[2].glob("*/src"))]


@pytest.mark.skipif(os.geteuid() != 0, reason="creating the unprivileged user needs root")
def test_sandbox_as_an_unprivileged_user() -> None:
    """The whole warm path as an unprivileged user: this process forks, drops
    to the test user, and builds a Sandbox whose helper runs under the system
    interpreter (this one lives under /root, mode 0700)."""

    import shutil
    import tempfile

    from cvg_kernel.process import descendants  # imported before the drop

    user = cvg_testing.ensure_unpriv_user()
    # Found before the drop: the clone may sit where the user cannot look.
    pythonpath = cvg_testing.import_path_for(user) or ":".join(SOURCES)
    python = cvg_testing.unpriv_python(user)
    tmp_path = Path(tempfile.mkdtemp(prefix="cvg-sandbox-unpriv-"))  # tmp_path is 0700 root
    state = tmp_path / "state"
    state.mkdir()
    state.chmod(0o777)
    secret = tmp_path / "secret"
    secret.write_text("s3cret")
    secret.chmod(0o644)
    tmp_path.chmod(0o755)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # never returns into pytest
        code = 1
        try:
            os.close(r)
            os.setgroups([])
            os.setresgid(user.pw_gid, user.pw_gid, user.pw_gid)
            os.setresuid(user.pw_uid, user.pw_uid, user.pw_uid)
            os.environ.update(
                HOME=str(state), XDG_CACHE_HOME=str(state), XDG_STATE_HOME=str(state),
                TMPDIR=str(state), PYTHONPATH=pythonpath,
            )  # fmt: skip
            with Sandbox(cwd=str(state), python=python) as b:
                bare_ok = secret.read_text() == "s3cret"  # oracle: readable unconfined
                denied = b.run(["cat", str(secret)])
                ran = b.run(["id", "-u"])
                helper_tree = descendants(b._proc.pid)
            report = [bare_ok, denied.status, ran.stdout.decode().strip(), len(helper_tree) > 0]
            os.write(w, repr(report).encode())
            code = 0
        except BaseException:  # noqa: BLE001 - a forked child never returns into the caller's code
            os.write(w, traceback.format_exc().encode())
        finally:
            os._exit(code)
    os.close(w)
    got = os.read(r, 4096).decode()
    os.close(r)
    _, status = os.waitpid(pid, 0)
    shutil.rmtree(tmp_path, ignore_errors=True)
    assert os.waitstatus_to_exitcode(status) == 0, got
    bare_ok, denied_status, uid, had_runners = eval(got)  # our own repr of plain values
    assert bare_ok and denied_status == 1
    assert uid == str(user.pw_uid)
    assert had_runners


def test_a_hosts_policy_is_refused_not_silently_offline(tmp_path: Path) -> None:
    """network.hosts is enforced by cvg-run's per-run proxy; the warm Sandbox starts
    none, so it says so instead of running the tool with no network at all."""
    policy = tmp_path / "hosts.yaml"
    policy.write_text(
        "version: 1\nnetwork:\n  hosts:\n    - {host: api.example.test, ports: [443]}\n"
    )
    with pytest.raises(SandboxError, match=r"network\.hosts needs the per-run proxy"):
        Sandbox(policy)


def test_a_request_too_large_is_refused_with_the_limit(box: Sandbox) -> None:
    from cvg_run.api import MAX_REQUEST

    with pytest.raises(SandboxError, match=f"more than the {MAX_REQUEST}"):
        box.run(["true", "x" * (10 * 1024 * 1024)])
    # The sandbox still works afterwards.
    assert box.run(["true"]).status == 0


def test_start_hands_back_the_pipes_and_cancel_ends_the_run(box: Sandbox) -> None:
    started = box.start(["sh", "-c", "echo up; exec sleep 30"])
    os.close(started.stdin)
    first = os.read(started.stdout, 16)
    assert first == b"up\n"
    started.cancel()
    rec = _record_within(started, 10)
    assert rec["exit"]["meaning"] in ("signaled", "limit") or rec["exit"]["status"] >= 128, rec


def _record_within(started: Started, seconds: float) -> dict:
    """The run's record, which must come within ``seconds``; this side's pipes closed."""
    t0 = time.monotonic()
    data = started.reply.recv(1 << 20)
    started.reply.close()
    for fd in (started.stdout, started.stderr):
        os.close(fd)
    rec = started.result(data)
    assert time.monotonic() - t0 < seconds
    return rec


def test_cancel_at_once_still_gives_a_record(box: Sandbox) -> None:
    """A cancel sent before the runner has even read the run's details: the runner
    catches it from the moment it is ready, so the run still ends with a record."""
    for _ in range(5):
        started = box.start(["sleep", "30"])
        started.cancel()
        os.close(started.stdin)
        rec = _record_within(started, 10)
        assert rec["exit"]["meaning"] == "signaled" and rec["exit"]["signal"] == 15, rec["exit"]


def test_runners_kept_ready_stay_bounded(box: Sandbox) -> None:
    """Each run's runner is replaced once, when the run ends: after many runs in a
    row and a burst of parallel ones the helper keeps a few runners, not one per run."""
    from cvg_kernel.process import children_of
    from cvg_run.helper import POOL_SIZE

    for _ in range(10):
        assert box.run(["true"]).status == 0
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        assert {r.status for r in pool.map(lambda _: box.run(["true"]), range(16))} == {0}

    def settled() -> int:
        deadline = time.monotonic() + 10
        while len(children_of(box._proc.pid)) != POOL_SIZE and time.monotonic() < deadline:
            time.sleep(0.05)
        return len(children_of(box._proc.pid))

    assert settled() == POOL_SIZE
    for _ in range(10):
        assert box.run(["true"]).status == 0
    assert settled() == POOL_SIZE


def test_a_protected_path_created_in_a_warm_run_is_moved_aside(tmp_path: Path) -> None:
    """Under write on the workspace, a tool makes ``.git/hooks/post-checkout`` where no
    ``.git`` was: bare it stays; in a warm run it is moved aside and the run is 122."""
    make_hook = "import os; os.makedirs('.git/hooks'); open('.git/hooks/post-checkout', 'w')"
    bare = tmp_path / "bare"
    bare.mkdir()
    subprocess.run([sys.executable, "-c", make_hook], cwd=bare, check=True)
    assert (bare / ".git" / "hooks" / "post-checkout").exists()  # oracle: bare, it stays
    ws = tmp_path / "ws"
    ws.mkdir()
    policy = tmp_path / "p.yaml"
    policy.write_text(textwrap.dedent("""\
        version: 1
        filesystem:
          read: [/usr, /etc, /lib, /lib64, /bin]
          write: ["${SCRATCH}", /dev/null, "${CWD}"]
          execute: [/usr, /bin, /lib, /lib64]
    """))  # fmt: skip
    with Sandbox(policy, cwd=str(ws)) as b:
        r = b.run(["python3", "-c", make_hook])
    hooks = ws / ".git" / "hooks"
    assert (r.status, r.meaning) == (122, "protected_created"), r
    [item] = r.record["protected_created"]
    assert item["path"] == str(hooks) and not os.path.lexists(hooks)
    assert (Path(item["moved_to"]) / "post-checkout").exists()
    assert "the tool's status was 0" in r.record["exit"]["detail"]
    loads_as(RunRecord, json.dumps(r.record))  # the record as cvg.run defines it
