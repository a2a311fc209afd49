"""The supervisor ends the tree even when the tool turns on the supervisor itself.

The tool runs as the supervisor's user, so it may lower the supervisor's
RLIMIT_NOFILE (prlimit64 on its pid). Here the same user does it from outside,
which is what the tool would do. Oracles: the process table (every process of
the tool carries a token), waitpid, the record, the stderr line.

Also the one way left to stop the cleanup: SIGKILL of the supervisor, measured.
"""

from __future__ import annotations

import errno
import json
import os
import pwd
import resource
import select
import signal
import threading
from pathlib import Path
from typing import Any

from runhelp import (
    PY,
    Box,
    environ,
    main,
    make_policy,
    procs_with,
    start,
    token,
    wait_for,
)

from cvg_kernel import process
from cvg_testing import alive

Identity = pwd.struct_passwd | None

# The tool, and a setsid double-forked daemon that would outlive it.
DAEMON = r"""
import os, sys, time
share, tok = sys.argv[1], sys.argv[2]
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        with open(share + "/daemon.tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename(share + "/daemon.tmp", share + "/daemon.pid")
        time.sleep(120)
        os._exit(0)
    os._exit(0)
os.wait()
with open(share + "/tool.tmp", "w") as f:
    f.write(str(os.getpid()))
os.rename(share + "/tool.tmp", share + "/tool.pid")
time.sleep(120)
"""


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text())
    except (FileNotFoundError, ValueError):
        return None


def _lower_nofile(pid: int, identity: Identity) -> None:
    """RLIMIT_NOFILE of ``pid`` to 0/0, by ``identity`` (the tool's user)."""

    def lower() -> list[int]:
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (0, 0))
        return list(resource.prlimit(pid, resource.RLIMIT_NOFILE))

    done = start(lower, user=identity).finish(10)
    assert done.error is None and done.value == [0, 0], (done.error, done.err)


def _policy(box: Box) -> Path:
    return make_policy(
        box.share,
        filesystem={"write": ["${SCRATCH}", "/dev/null", str(box.share)]},
        resources={"wall_clock_seconds": 60},
    )


def test_lowering_nofile_really_blinds_a_process(identity: Identity) -> None:
    """The attack without a sandbox: a process of the same user whose limit is
    lowered can no longer poll() or open /proc (what crashed the supervisor)."""
    r, w = os.pipe()
    ready_r, ready_w = os.pipe()

    def victim() -> dict[str, Any]:
        os.close(w)
        os.close(ready_r)
        os.close(ready_w)  # ready: everything start() opens is open
        os.read(r, 1)  # until the limit is lowered
        out: dict[str, Any] = {}
        try:
            poller = select.poll()
            poller.register(r, select.POLLIN)
            poller.poll(0)
            out["poll"] = "ok"
        except OSError as e:
            out["poll"] = e.errno
        try:
            with open(f"/proc/{os.getpid()}/stat", "rb"):
                out["open"] = "ok"
        except OSError as e:
            out["open"] = e.errno
        return out

    run = start(victim, user=identity)
    os.close(r)
    os.close(ready_w)
    assert os.read(ready_r, 1) == b""
    os.close(ready_r)
    _lower_nofile(run.pid, identity)
    os.write(w, b"x")
    os.close(w)
    ran = run.finish(10)
    assert ran.value == {"poll": errno.EINVAL, "open": errno.EMFILE}, (ran.value, ran.error)


def test_nofile_lowered_to_zero_still_ends_the_tree(identity: Identity, box: Box) -> None:
    tok = token()
    policy = _policy(box)

    def child() -> dict[str, Any]:
        rc = main(["--cwd", str(box.cwd), "-p", str(policy), "--",
                   "python3", "-c", DAEMON, str(box.share), tok])  # fmt: skip
        try:
            os.waitpid(-1, os.WNOHANG)
            has_children = True
        except ChildProcessError:
            has_children = False
        return {"rc": rc, "after": {"has_children": has_children}}

    run = start(child, user=identity, env=box.env)
    daemon = wait_for(lambda: _read_int(box.share / "daemon.pid"), what="the daemon's pid")
    tool = wait_for(lambda: _read_int(box.share / "tool.pid"), what="the tool's pid")
    wait_for(lambda: process.parent_of(daemon) == run.pid, timeout=10, what="re-parenting")
    assert alive(daemon) and alive(tool)

    _lower_nofile(run.pid, identity)
    ran = run.finish(30)
    assert ran.seconds < 10, ran.err
    assert ran.rc == 137, ran.err
    assert "ended the run: the supervisor could not watch the tool's processes" in ran.err
    assert "Too many open files; its RLIMIT_NOFILE is now 0/0" in ran.err
    assert ran.after == {"has_children": False}
    assert not alive(daemon) and not alive(tool)
    assert procs_with(tok) == []
    # No descriptor can be made under a hard limit of 0 without CAP_SYS_RESOURCE: the
    # record's file was opened before the tool started, and is written through it.
    (path,) = box.records()
    rec = json.loads(path.read_text())
    assert (rec["exit"]["status"], rec["exit"]["meaning"]) == (137, "limit")
    assert "cannot write the run record" not in ran.err


def test_sigkill_of_the_supervisor_leaves_the_tree_running(identity: Identity, box: Box) -> None:
    """The known limit: nothing runs in a SIGKILLed supervisor, so nothing ends
    the tool's processes; they re-parent to the next subreaper up (or init)."""
    tok = token()
    policy = _policy(box)
    argv = ["--cwd", str(box.cwd), "-p", str(policy), "--", "python3", "-c", DAEMON,
            str(box.share), tok]  # fmt: skip
    run = start(lambda: main(argv), user=identity, env=box.env)
    daemon = wait_for(lambda: _read_int(box.share / "daemon.pid"), what="the daemon's pid")
    tool = wait_for(lambda: _read_int(box.share / "tool.pid"), what="the tool's pid")
    try:
        os.kill(run.pid, signal.SIGKILL)
        _, status = os.waitpid(run.pid, 0)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        wait_for(lambda: process.parent_of(tool) != run.pid, timeout=5, what="re-parenting")
        assert alive(daemon) and alive(tool)
        assert sorted(procs_with(tok)) == sorted([daemon, tool])
        assert box.records() == []
    finally:
        for pid in procs_with(tok):
            os.kill(pid, signal.SIGKILL)
        for fd in (run.out_r, run.err_r, run.rep_r):
            os.close(fd)


def test_warm_runner_survives_nofile_lowered_to_zero(box: Box, as_root: None) -> None:
    """The Sandbox runner, as root (its helper runs this interpreter, which only
    root can read): the record comes back over the reply socket it holds."""
    from cvg_run import Sandbox

    tok = token()
    policy = _policy(box)
    env = {k: v for k, v in box.env.items() if v is not None}
    with environ(env), Sandbox(str(policy)) as sandbox:
        result: dict[str, Any] = {}

        def one() -> None:
            result["r"] = sandbox.run([PY, "-c", DAEMON, str(box.share), tok], timeout=60)

        t = threading.Thread(target=one)
        t.start()
        daemon = wait_for(lambda: _read_int(box.share / "daemon.pid"), what="daemon pid")
        tool = wait_for(lambda: _read_int(box.share / "tool.pid"), what="tool pid")
        runner = process.parent_of(tool)
        assert runner is not None
        wait_for(lambda: process.parent_of(daemon) == runner, timeout=10, what="re-parenting")
        _lower_nofile(runner, None)
        t.join(30)
        assert not t.is_alive()
        r = result["r"]
    assert (r.status, r.meaning) == (137, "limit"), r.record["exit"]
    assert "could not watch the tool's processes" in r.record["exit"]["detail"]
    assert not alive(daemon) and not alive(tool)
    assert procs_with(tok) == []
