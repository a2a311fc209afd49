"""Supervised calls (cvg_kernel.guard) on the real kernel: listen() and signals.

The tool runs in a forked child under a plan with ``seccomp.supervise``; this process
serves the listener with the guards. Oracles are outside the child: a connection made
from here to the port the tool listens on, and a sentinel (an orphan, so outside this
process's tree) that records the signals it gets. Each attack is first made bare.
"""

from __future__ import annotations

import errno
import os
import pwd
import signal
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from test_notify import ARCH, plan_with, run_tool

from cvg_kernel.notify import Serving, receive_listener
from cvg_testing import drop_to

SUPERVISED = plan_with(supervise=["listen", "signal"])
# No Landlock port rules: any port binds, so the bound-socket listen is the guard's alone.
SUPERVISED["landlock"] = {**SUPERVISED["landlock"], "handled_net": []}


def serve_guards(calls: list[Any]) -> Callable[[int, int], None]:
    def supervisor(sock_fd: int, pid: int) -> None:
        from cvg_kernel.plan import prepare

        program = prepare(SUPERVISED, {}).filter.errno_program
        listener = receive_listener(sock_fd, timeout=10)
        os.close(sock_fd)
        Serving(listener, program, ARCH, calls.append, supervised=["listen", "signal"])

    return supervisor


def unbound_listen() -> list[int]:
    s = socket.socket()
    try:
        s.listen(1)
        result = 0
    except OSError as e:
        result = e.errno or -1
    b = socket.socket()
    b.bind(("127.0.0.1", 0))
    b.listen(1)
    return [result, s.getsockname()[1], b.getsockname()[1]]


def test_listen_on_an_unbound_socket(identity: pwd.struct_passwd | None) -> None:
    bare = run_tool(unbound_listen, identity, "bare")
    assert bare.value[0] == 0 and bare.value[1] > 0
    calls: list[Any] = []
    run = run_tool(unbound_listen, identity, "notify", plan=SUPERVISED,
                   supervisor=serve_guards(calls))  # fmt: skip
    assert run.value[0] == errno.EACCES and run.value[1] == 0
    assert run.value[2] > 0  # a bound socket listens: performed by the supervisor


@contextmanager
def orphan_sentinel(user: pwd.struct_passwd | None) -> Iterator[tuple[int, int]]:
    """A process outside this test's tree (double-forked) that writes each signal
    number it receives to a pipe read here."""
    r, w = os.pipe()
    ready_r, ready_w = os.pipe()
    first = os.fork()
    if first == 0:
        if os.fork() == 0:
            try:
                if user is not None:
                    drop_to(user)
                for sig in (signal.SIGUSR1, signal.SIGIO):
                    signal.signal(sig, lambda n, f: os.write(w, bytes([n])))
                os.write(ready_w, str(os.getpid()).encode())
                while True:
                    time.sleep(1)
            finally:
                os._exit(0)
        os._exit(0)
    os.waitpid(first, 0)
    os.close(w)
    os.close(ready_w)
    pid = int(os.read(ready_r, 16))
    os.close(ready_r)
    os.set_blocking(r, False)
    try:
        yield pid, r
    finally:
        os.kill(pid, signal.SIGKILL)
        os.close(r)


def received(r: int) -> bytes:
    time.sleep(0.2)
    try:
        return os.read(r, 64)
    except BlockingIOError:
        return b""


def test_signals_reach_only_the_tools_own_tree(identity: pwd.struct_passwd | None) -> None:
    with orphan_sentinel(identity) as (pid, r):

        def attack() -> dict[str, int]:
            out = {}
            for name, fn in {
                "kill": lambda: os.kill(pid, signal.SIGUSR1),
                "pidfd": lambda: signal.pidfd_send_signal(os.pidfd_open(pid), signal.SIGUSR1),
                "self": lambda: os.kill(os.getpid(), 0),
            }.items():
                try:
                    fn()
                    out[name] = 0
                except OSError as e:
                    out[name] = e.errno or -1
            return out

        bare = run_tool(attack, identity, "bare")
        assert bare.value == {"kill": 0, "pidfd": 0, "self": 0}
        assert signal.SIGUSR1 in received(r)  # the two may merge while pending
        calls: list[Any] = []
        run = run_tool(attack, identity, "notify", plan=SUPERVISED,
                       supervisor=serve_guards(calls))  # fmt: skip
        assert run.value == {"kill": errno.EPERM, "pidfd": errno.EPERM, "self": 0}
        assert received(r) == b""
        assert {c.name for c in calls} == {"kill", "pidfd_send_signal"}


def test_nobody_serving_means_enosys(identity: pwd.struct_passwd | None) -> None:
    def supervisor(sock_fd: int, pid: int) -> None:
        os.close(receive_listener(sock_fd, timeout=10))  # taken, never served
        os.close(sock_fd)

    def call() -> int:
        try:
            socket.socket().listen(1)
        except OSError as e:
            return e.errno or -1
        return 0

    run = run_tool(call, identity, "notify", plan=SUPERVISED, supervisor=supervisor)
    assert run.value == errno.ENOSYS


def test_a_supervised_plan_refuses_to_apply_without_a_listener() -> None:
    from cvg_kernel.plan import PlanError, prepare

    prepared = prepare(SUPERVISED, {})
    pid = os.fork()
    if pid == 0:
        try:
            prepared.apply()
            os._exit(0)
        except PlanError:
            os._exit(3)
        except BaseException:  # noqa: BLE001 - a forked child never returns into the caller's code
            os._exit(4)
    prepared.close()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 3


def test_a_guard_that_fails_refuses_that_call_and_serving_goes_on(
    identity: pwd.struct_passwd | None, monkeypatch: Any
) -> None:
    """A guard can fail on a caller that vanished mid-call (its /proc entry gone): that
    call is refused with the guard's errno, and the next supervised calls are still
    decided, not left to ENOSYS."""
    from cvg_kernel import guard

    real = guard.GUARDS["kill"]
    failed: list[int] = []

    def vanishing(tid: int, args: tuple[int, ...], pending: Callable[[], bool]) -> Any:
        if not failed:
            failed.append(tid)
            raise ProcessLookupError(errno.ESRCH, f"no Tgid for {tid}")
        return real(tid, args, pending)

    monkeypatch.setitem(guard.GUARDS, "kill", vanishing)

    def calls() -> list[int]:
        out = []
        for _ in range(3):
            try:
                os.kill(os.getpid(), 0)
                out.append(0)
            except OSError as e:
                out.append(e.errno or -1)
        return out

    run = run_tool(calls, identity, "notify", plan=SUPERVISED, supervisor=serve_guards([]))
    assert run.value == [errno.ESRCH, 0, 0]
