"""Everything the tool started ends with the run: daemons, TERM-ignorers, fork storms.

Each test first shows the attack working without cvg-run (or with the limit in
question lifted), then that cvg-run ends it. The oracle is the process table:
every process of these tools carries a unique token on its command line, and
the pids they write down are looked up in /proc.
"""

from __future__ import annotations

import os
import pwd
import secrets
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from runhelp import (
    PY,
    Box,
    main,
    make_policy,
    only_record,
    procs_with,
    run_main,
    session_of,
    start,
    token,
    wait_for,
)

from cvg_kernel import process
from cvg_testing import alive

Identity = pwd.struct_passwd | None


def _policy(box: Box, **resources: int) -> Path:
    return make_policy(
        box.share,
        filesystem={"write": ["${SCRATCH}", "/dev/null", str(box.share)]},
        resources=resources,
    )


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    return int(text) if text.strip() else None


def _nothing_left_here(_rc: int) -> dict[str, Any]:
    """In the supervisor's process, right after main() returned."""
    try:
        leftover = os.waitpid(-1, os.WNOHANG)
        has_children = True
    except ChildProcessError:
        leftover, has_children = None, False
    return {
        "descendants": process.descendants(os.getpid()),
        "has_children": has_children,
        "leftover": leftover,
    }


def _exec_plain(argv: list[str]) -> Any:
    """For the controls: run the tool without cvg-run (as the same identity)."""
    os.execv(argv[0], argv)


# --- a setsid double-fork daemon ----------------------------------------------------------

DAEMON = r"""
import os, sys, time
share, tok = sys.argv[1], sys.argv[2]
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        fd = os.open("/dev/null", os.O_RDWR)
        for n in (0, 1, 2):
            os.dup2(fd, n)
        with open(share + "/daemon.tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename(share + "/daemon.tmp", share + "/daemon.pid")
        time.sleep(120)
        os._exit(0)
    os._exit(0)
os.wait()
end = time.time() + 30
while not os.path.exists(share + "/go") and time.time() < end:
    time.sleep(0.01)
print("tool done", flush=True)
"""


def test_daemon_is_gone_after_the_run(identity: Identity, box: Box) -> None:
    tok = token()
    pidfile = box.share / "daemon.pid"

    # Without the sandbox, the daemon outlives the tool.
    tool = start(lambda: _exec_plain([PY, "-c", DAEMON, str(box.share), tok]), user=identity)
    daemon = wait_for(lambda: _read_int(pidfile), what="the daemon's pid")
    (box.share / "go").touch()
    plain = tool.finish(30)
    try:
        assert (plain.status, plain.stdout) == (0, b"tool done\n")
        assert alive(daemon) and daemon in procs_with(tok)
    finally:
        os.kill(daemon, signal.SIGKILL)
    wait_for(lambda: not alive(daemon), what="the control daemon to die")
    pidfile.unlink()
    (box.share / "go").unlink()

    # Under cvg-run it is alive during the run, outside the tool's session,
    # re-parented to the supervisor, and gone when main() returns.
    policy = _policy(box)

    def child() -> dict[str, Any]:
        rc = main(["--cwd", str(box.cwd), "-p", str(policy), "--",
                   "python3", "-c", DAEMON, str(box.share), tok])  # fmt: skip
        pid = _read_int(pidfile)
        return {"rc": rc, "after": {"daemon_alive": pid is not None and alive(pid),
                                    **_nothing_left_here(rc)}}  # fmt: skip

    run = start(child, user=identity, env=box.env)
    daemon = wait_for(lambda: _read_int(pidfile), what="the daemon's pid")
    try:
        assert alive(daemon)
        # Once the middle process has exited, the daemon belongs to the supervisor
        # (a child subreaper), and the tool is the only other process of the run.
        wait_for(lambda: process.parent_of(daemon) == run.pid, timeout=10, what="re-parenting")
        tool_pids = [p for p in procs_with(tok) if p != daemon]
        assert len(tool_pids) == 1, tool_pids
        assert process.parent_of(tool_pids[0]) == run.pid
        assert session_of(daemon) != session_of(tool_pids[0])
    finally:
        (box.share / "go").touch()
    ran = run.finish(30)
    assert ran.rc == 0, ran.err
    assert ran.out == "tool done\n"
    assert ran.after == {"daemon_alive": False, "descendants": [], "has_children": False,
                         "leftover": None}  # fmt: skip
    assert not alive(daemon)
    assert procs_with(tok) == []
    _, rec = only_record(box)
    assert rec.exit.meaning == "exited"


# --- a tool that ignores SIGTERM, at the wall clock --------------------------------------


def _term_ignorer(box: Box, naptime: str) -> list[str]:
    script = (
        f'trap "" TERM; echo $$ > {box.share}/sh.pid; '
        f"sleep {naptime} & echo $! > {box.share}/sleep.pid; wait; wait; sleep {naptime}"
    )
    return ["sh", "-c", script]


def test_term_ignoring_tool_is_killed_at_the_wall_clock(identity: Identity, box: Box) -> None:
    naptime = f"1000.{secrets.randbelow(10**9):09d}1"  # unique on the command line
    sh_pid, sleep_pid = box.share / "sh.pid", box.share / "sleep.pid"
    argv = _term_ignorer(box, naptime)

    # Without the sandbox, SIGTERM does not end it.
    tool = start(lambda: _exec_plain(["/bin/sh", *argv[1:]]), user=identity)
    pids = [wait_for(lambda p=p: _read_int(p), what=str(p)) for p in (sh_pid, sleep_pid)]
    try:
        for p in pids:
            os.kill(p, signal.SIGTERM)
        time.sleep(0.3)
        assert all(alive(p) for p in pids), "SIGTERM ended the control tool"
    finally:
        for p in pids:
            os.kill(p, signal.SIGKILL)
    tool.finish(10)
    sh_pid.unlink()
    sleep_pid.unlink()

    policy = _policy(box, wall_clock_seconds=1)
    ran = run_main(["-p", str(policy), "--", *argv], box=box, user=identity,
                   after=_nothing_left_here)  # fmt: skip
    assert ran.rc == 124, ran.err
    assert ran.seconds < 10
    pids = [_read_int(sh_pid), _read_int(sleep_pid)]
    assert None not in pids
    assert not any(alive(p) for p in pids if p is not None)
    assert procs_with(naptime) == []
    assert ran.after["descendants"] == [] and not ran.after["has_children"]
    _, rec = only_record(box)
    assert (rec.exit.meaning, rec.exit.status) == ("wall_clock", 124)


# --- a fork storm, at `processes` -----------------------------------------------------------

STORM = r"""
import os, sys, time
share, tok, n, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]

def sleeper():
    with open(share + "/pids", "a") as f:
        f.write(f"{os.getpid()}\n")
    time.sleep(100)
    os._exit(0)

forked = 0
for i in range(n):
    try:
        pid = os.fork()
    except BlockingIOError:  # EAGAIN: RLIMIT_NPROC, the backstop
        open(share + "/eagain", "w").write(str(forked))
        sys.exit(3)
    if pid == 0:
        if mode == "orphans":  # the sleeper re-parents to the supervisor (subreaper)
            try:
                if os.fork() != 0:
                    os._exit(0)
            except BlockingIOError:
                open(share + "/eagain", "w").write(str(forked))
                os._exit(3)
        sleeper()
    if mode == "orphans" and os.waitpid(pid, 0)[1] != 0:
        sys.exit(3)
    forked += 1
open(share + "/done", "w").write(str(forked))
time.sleep(1)
"""


def _storm(box: Box, identity: Identity, limit: int, mode: str, tok: str) -> Any:
    policy = _policy(box, processes=limit, wall_clock_seconds=30)
    argv = ["-p", str(policy), "--", "python3", "-c", STORM, str(box.share), tok, "200", mode]
    return run_main(argv, box=box, user=identity, after=_nothing_left_here)


def _sleepers(box: Box) -> list[int]:
    path = box.share / "pids"
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def _clear(box: Box) -> None:
    for name in ("pids", "done", "eagain"):
        (box.share / name).unlink(missing_ok=True)
    for rec in box.records():
        rec.unlink()


@pytest.mark.parametrize("mode", ["children", "orphans"])
def test_fork_storm_is_stopped(identity: Identity, box: Box, mode: str) -> None:
    tok = token()

    # With room for it, the storm runs in full: 200 sleepers at once.
    ran = _storm(box, identity, 1000, mode, tok)
    assert ran.rc == 0, ran.err
    assert _read_int(box.share / "done") == 200
    sleepers = _sleepers(box)
    assert len(sleepers) == 200
    assert not any(alive(p) for p in sleepers)  # and the tree kill ended them
    assert procs_with(tok) == []
    _clear(box)

    ran = _storm(box, identity, 20, mode, tok)
    sleepers = _sleepers(box)
    assert not any(alive(p) for p in sleepers)
    assert procs_with(tok) == []
    assert ran.after["descendants"] == [] and not ran.after["has_children"]
    assert len(sleepers) < 200
    _, rec = only_record(box)
    if identity is None and rec.limits_by == "sampled":
        # RLIMIT_NPROC does not bind uid 0: without a pids cgroup, the supervisor's
        # count is what stops root.
        assert ran.rc == 128 + signal.SIGKILL, ran.err
        assert rec.exit.meaning == "limit"
        assert "processes=20" in (rec.exit.detail or "")
        assert "processes=20" in ran.err
    elif rec.exit.meaning == "limit":
        assert ran.rc == 128 + signal.SIGKILL
    else:
        # pids.max in the run's cgroup, or the backstop RLIMIT_NPROC = the user's
        # processes + 20, refused the fork before the tool's tree passed 20: never
        # more than 20 ran at once.
        assert (ran.rc, rec.exit.meaning) == (3, "exited"), ran.err
        assert _read_int(box.share / "eagain") is not None
        assert len(sleepers) < 20
