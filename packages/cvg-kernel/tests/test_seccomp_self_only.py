"""Calls that act on another process by pid, and socketpair, under the default filter.

Each attack targets a sentinel: a process of the same user outside the filter, forked
here. The oracle is the sentinel's state read from outside (its limits, nice value,
affinity, scheduling policy, I/O priority), never the attacking child's own report. Each
attack is first run without the filter, where it must change the sentinel.
"""

from __future__ import annotations

import ctypes
import errno
import os
import pwd
import signal
import socket
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from cvg_kernel import libc, syscall_table
from cvg_kernel.seccomp import Filter
from cvg_testing import attempt, drop_to, in_child

NR = syscall_table.TABLES[libc.machine()]
PR_SET_NO_NEW_PRIVS = 38
RLIMIT_CPU, RLIMIT_NOFILE = 0, 7
PRIO_PROCESS, PRIO_USER = 0, 2
IOPRIO_WHO_PROCESS, IOPRIO_CLASS_IDLE = 1, 3
SCHED_IDLE = 5
AF_UNIX, SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET = 1, 1, 2, 5

DEFAULT = Filter.build()
# network.unix false, TCP granted: how cvg-policy compiles most policies.
NO_UNIX = Filter.build(sockets=[{"family": "inet", "types": ["stream"]}])
UNIX_DGRAM = Filter.build(sockets=[{"family": "unix", "types": ["dgram"]}])
NO_LISTEN = Filter.build(listen=False)


class RLimit(ctypes.Structure):
    _fields_ = [("cur", ctypes.c_uint64), ("max", ctypes.c_uint64)]


def sc(name: str, *args: int | object) -> int:
    return libc.syscall(NR[name], *(ctypes.c_long(a) if isinstance(a, int) else a for a in args))


@contextmanager
def sentinel(user: pwd.struct_passwd | None) -> Iterator[int]:
    """A sleeping process of ``user`` outside any filter, once it is that user."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            if user is not None:
                drop_to(user)
            os.write(w, b"1")
            while True:
                signal.pause()
        finally:
            os._exit(0)
    os.close(w)
    os.read(r, 1)
    os.close(r)
    try:
        yield pid
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


def attack_on(
    user: pwd.struct_passwd | None,
    filt: Filter | None,
    attack: Callable[[int], object],
    observe: Callable[[int], object],
) -> tuple[int, bool]:
    """(errno of the attack, whether the sentinel changed), on a fresh sentinel."""
    with sentinel(user) as pid:
        before = observe(pid)

        def body() -> int:
            if filt is not None:
                libc.prctl(PR_SET_NO_NEW_PRIVS, 1)
                filt.install()
            return attempt(lambda: attack(pid))

        child = in_child(body, user=user)
        assert child.error is None, child.error
        return child.value, observe(pid) != before


def cpu_limit(pid: int) -> str:
    with open(f"/proc/{pid}/limits") as f:
        return next(line for line in f if line.startswith("Max cpu time"))


def nice(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[16])


def ioprio(pid: int) -> int:
    return sc("ioprio_get", IOPRIO_WHO_PROCESS, pid)


ATTACKS: dict[str, tuple[Callable[[int], object], Callable[[int], object]]] = {
    "prlimit64": (
        lambda pid: sc("prlimit64", pid, RLIMIT_CPU, ctypes.byref(RLimit(1, 1)), None),
        cpu_limit,
    ),
    "setpriority": (lambda pid: os.setpriority(PRIO_PROCESS, pid, 19), nice),
    "sched_setaffinity": (
        lambda pid: os.sched_setaffinity(pid, {0}),
        lambda pid: os.sched_getaffinity(pid),
    ),
    "sched_setscheduler": (
        lambda pid: os.sched_setscheduler(pid, SCHED_IDLE, os.sched_param(0)),
        lambda pid: os.sched_getscheduler(pid),
    ),
    "ioprio_set": (
        lambda pid: sc("ioprio_set", IOPRIO_WHO_PROCESS, pid, IOPRIO_CLASS_IDLE << 13),
        ioprio,
    ),
}


def test_calls_on_another_process_are_refused(identity: pwd.struct_passwd | None) -> None:
    if os.cpu_count() == 1:
        del ATTACKS["sched_setaffinity"]  # {0} is the only set there is: nothing changes
    for name, (attack, observe) in ATTACKS.items():
        assert attack_on(identity, None, attack, observe) == (0, True), f"{name} unproven"
        assert attack_on(identity, DEFAULT, attack, observe) == (errno.EPERM, False), name


def test_setpriority_on_every_process_of_the_user_is_refused(
    identity: pwd.struct_passwd | None,
) -> None:
    # Bare, PRIO_USER with who 0 renices every process of the caller's uid: as root that
    # would be the whole test run, so only the filtered attempt is made, on a sentinel.
    result = attack_on(identity, DEFAULT, lambda _: os.setpriority(PRIO_USER, 0, 19), nice)
    assert result == (errno.EPERM, False)


def test_prlimit64_may_still_read_another_process() -> None:
    limit = RLimit()

    def read(pid: int) -> int:
        sc("prlimit64", pid, RLIMIT_NOFILE, None, ctypes.byref(limit))
        return int(limit.cur)

    assert attack_on(None, DEFAULT, read, cpu_limit) == (0, False)


def test_the_same_calls_on_the_caller_itself_still_work(
    identity: pwd.struct_passwd | None,
) -> None:
    def own() -> dict[str, int]:
        libc.prctl(PR_SET_NO_NEW_PRIVS, 1)
        DEFAULT.install()
        cpus = os.sched_getaffinity(0)
        return {
            "prlimit64": attempt(
                lambda: sc("prlimit64", 0, RLIMIT_CPU, ctypes.byref(RLimit(3600, 3600)), None)
            ),
            "setpriority": attempt(lambda: os.setpriority(PRIO_PROCESS, 0, 5)),
            "sched_setaffinity": attempt(lambda: os.sched_setaffinity(0, cpus)),
            "sched_setscheduler": attempt(
                lambda: os.sched_setscheduler(0, SCHED_IDLE, os.sched_param(0))
            ),
            "ioprio_set": attempt(
                lambda: sc("ioprio_set", IOPRIO_WHO_PROCESS, 0, IOPRIO_CLASS_IDLE << 13)
            ),
            "get_robust_list": attempt(
                lambda: sc(
                    "get_robust_list",
                    0,
                    ctypes.byref(ctypes.c_void_p()),
                    ctypes.byref(ctypes.c_size_t()),
                )
            ),
        }

    child = in_child(own, user=identity)
    assert child.error is None, child.error
    assert child.value == dict.fromkeys(child.value, 0)


def _dgram_sink() -> tuple[socket.socket, str]:
    d = tempfile.mkdtemp()
    os.chmod(d, 0o777)
    path = os.path.join(d, "sink")
    sink = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sink.bind(path)
    os.chmod(path, 0o777)
    sink.settimeout(0.5)
    return sink, path


def _received(sink: socket.socket) -> bytes:
    try:
        return sink.recv(64)
    except TimeoutError:
        return b""


def test_datagram_socketpair_cannot_reach_an_outside_socket(
    identity: pwd.struct_passwd | None,
) -> None:
    sink, path = _dgram_sink()

    def body(filt: Filter | None) -> Callable[[], int]:
        def run() -> int:
            if filt is not None:
                libc.prctl(PR_SET_NO_NEW_PRIVS, 1)
                filt.install()
            a, _ = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
            return a.sendto(b"out", path)

        return run

    try:
        bare = in_child(lambda: attempt(body(None)), user=identity)
        assert (bare.value, _received(sink)) == (0, b"out")
        confined = in_child(lambda: attempt(body(NO_UNIX)), user=identity)
        assert (confined.value, _received(sink)) == (errno.EPERM, b"")
        # Granted unix datagram sockets: the pair is allowed again, as socket() would be.
        granted = in_child(lambda: attempt(body(UNIX_DGRAM)), user=identity)
        assert (granted.value, _received(sink)) == (0, b"out")
    finally:
        sink.close()


def test_stream_and_seqpacket_socketpairs_still_work(identity: pwd.struct_passwd | None) -> None:
    def pairs() -> list[int]:
        libc.prctl(PR_SET_NO_NEW_PRIVS, 1)
        NO_UNIX.install()
        fds = (ctypes.c_int * 2)()
        return [
            attempt(lambda: sc("socketpair", AF_UNIX, SOCK_STREAM, 0, fds)),
            attempt(lambda: sc("socketpair", AF_UNIX, SOCK_SEQPACKET, 0, fds)),
            attempt(lambda: sc("socketpair", 2, SOCK_STREAM, 0, fds)),  # AF_INET
        ]

    child = in_child(pairs, user=identity)
    assert child.value == [0, 0, errno.EAFNOSUPPORT], child.error


def test_listen_is_refused_when_nothing_may_be_listened_on(
    identity: pwd.struct_passwd | None,
) -> None:
    def serve(filt: Filter | None) -> Callable[[], list[int]]:
        def run() -> list[int]:
            if filt is not None:
                libc.prctl(PR_SET_NO_NEW_PRIVS, 1)
                filt.install()
            s = socket.socket()
            # Unbound: listen() would bind an ephemeral port that no bind() asked for.
            return [attempt(lambda: s.listen(1)), s.getsockname()[1]]

        return run

    bare = in_child(serve(None), user=identity)
    assert bare.value[0] == 0 and bare.value[1] > 0, bare.error
    confined = in_child(serve(NO_LISTEN), user=identity)
    assert confined.value == [errno.EPERM, 0], confined.error
