"""Below Landlock ABI 6 the supervisor scopes signals (cvg_kernel.guard).

The ABI is capped at 4 with CVG_LANDLOCK_ABI_MAX (a simulation on a newer kernel: the
real-kernel runs are the kernels session's). The oracle is a sentinel outside the
sandbox, of the same user, that logs every signal it gets to a file the tool cannot
write. Each signal is first sent bare, where the sentinel logs it.
"""

from __future__ import annotations

import os
import pwd
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from runhelp import ABI_ENV, Box, make_policy, run_main

from cvg_testing import drop_to

Identity = pwd.struct_passwd | None

# The handlers write with os.write: a signal arriving while another handler is in a
# buffered file's write() made that write re-entrant, and the sentinel died of it.
SENTINEL = """
import os, signal, sys, time
log = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
for s in (signal.SIGUSR1, signal.SIGUSR2, signal.SIGIO, signal.SIGTERM):
    signal.signal(s, lambda n, f: os.write(log, f"got {n}\\n".encode()))
os.write(log, b"ready\\n")
while True:
    time.sleep(1)
"""

# Every way the tool could reach the sentinel, then the same calls on its own tree.
TOOL = """
import fcntl, os, signal, sys, threading, time
sentinel = int(sys.argv[1])
def attempt(name, fn):
    try:
        fn()
        print(name, "ok", flush=True)
    except OSError as e:
        print(name, "refused", e.errno, flush=True)
attempt("kill", lambda: os.kill(sentinel, signal.SIGUSR1))
attempt("probe", lambda: os.kill(sentinel, 0))
attempt("group", lambda: os.killpg(os.getpgid(sentinel), signal.SIGUSR1))
try:
    fd = os.pidfd_open(sentinel)
    attempt("pidfd", lambda: signal.pidfd_send_signal(fd, signal.SIGUSR1))
except OSError as e:
    print("pidfd_open refused", e.errno, flush=True)
r, w = os.pipe()
attempt("setown", lambda: fcntl.fcntl(r, fcntl.F_SETOWN, sentinel))
fcntl.fcntl(r, fcntl.F_SETFL, os.O_ASYNC)
os.write(w, b"x")
got = []
signal.signal(signal.SIGUSR2, lambda *a: got.append(1))
attempt("self", lambda: os.kill(os.getpid(), signal.SIGUSR2))
attempt("raise", lambda: signal.raise_signal(signal.SIGUSR2))
attempt("thread", lambda: signal.pthread_kill(threading.get_ident(), signal.SIGUSR2))
attempt("own-group", lambda: os.kill(0, signal.SIGUSR2))
child = os.fork()
if child == 0:
    time.sleep(10)
    os._exit(0)
attempt("child", lambda: os.kill(child, signal.SIGTERM))
print("child", os.waitpid(child, 0)[1], flush=True)
print("self-signals", len(got), flush=True)
if sys.argv[2:] == ["everyone"] and os.getuid() != 0:  # never as root, never bare
    attempt("everyone", lambda: os.kill(-1, signal.SIGUSR1))
"""


@contextmanager
def sentinel(user: Identity, log: Path) -> Iterator[int]:
    python = _python()
    proc = subprocess.Popen(
        [python, "-c", SENTINEL, str(log)],
        preexec_fn=(lambda: drop_to(user)) if user is not None else None,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 10
        while "ready" not in (log.read_text() if log.exists() else ""):
            assert time.monotonic() < deadline, "the sentinel did not start"
            time.sleep(0.02)
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def _python() -> str:
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3", sys.executable):
        if os.access(candidate, os.X_OK) and os.stat(candidate).st_mode & 0o001:
            return candidate
    pytest.fail("no python3 every test identity can run")


def _log(box: Box, name: str, user: Identity) -> Path:
    d = box.root / name
    d.mkdir()
    log = d / "signals.log"
    log.touch()
    if user is not None:
        os.chown(d, user.pw_uid, user.pw_gid)
        os.chown(log, user.pw_uid, user.pw_gid)
    return log


def _signals(log: Path) -> list[str]:
    time.sleep(0.3)  # a SIGIO or a late kill lands within this
    return [line for line in log.read_text().splitlines() if line.startswith("got")]


def test_the_sentinel_is_reachable_bare(identity: Identity, box: Box) -> None:
    log = _log(box, "bare", identity)
    with sentinel(identity, log) as pid:
        done = subprocess.run(
            [_python(), "-c", TOOL, str(pid)],
            preexec_fn=(lambda: drop_to(identity)) if identity is not None else None,
            capture_output=True,
            text=True,
            timeout=30,
            start_new_session=True,  # its kill(0) must stay in its own group
        )
        assert "kill ok" in done.stdout, done
        # SIGUSR1 from kill, the group and the pidfd may merge while pending; SIGIO too.
        # The sentinel logs from its handlers: on a loaded machine that can take a while.
        deadline = time.monotonic() + 10
        while not {"got 10", "got 29"} <= set(_signals(log)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert {"got 10", "got 29"} <= set(_signals(log)), (log.read_text(), done.stdout)


def test_below_abi_6_the_tool_signals_only_its_own_tree(identity: Identity, box: Box) -> None:
    log = _log(box, "confined", identity)
    policy = make_policy(box.share, filesystem={"read": ["/proc"]})
    with sentinel(identity, log) as pid:
        ran = run_main(
            ["-p", str(policy), "--", _python(), "-c", TOOL, str(pid), "everyone"],
            box=box,
            user=identity,
            env={ABI_ENV: "4"},
        )
        assert ran.rc == 0, (ran.out, ran.err)
        assert _signals(log) == [], (log.read_text(), ran.out)
    out = ran.out
    lines = out.splitlines()
    for refused in ("kill refused 1", "probe refused 1", "setown refused 1", "pidfd refused 1"):
        assert refused in lines, out
    assert "group ok" not in lines, out
    for allowed in ("self ok", "raise ok", "thread ok", "own-group ok", "child ok"):
        assert allowed in lines, out
    assert f"child {signal.SIGTERM}" in out and "self-signals 4" in out, out
    if identity is not None:
        assert "everyone refused 3" in lines, out  # ESRCH: no other process in the tree
    # The plan ran without --allow-degraded: signal scoping is not degraded there.
    assert "degraded" not in ran.err, ran.err
