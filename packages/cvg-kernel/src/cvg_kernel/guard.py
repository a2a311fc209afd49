"""Calls the supervisor decides and performs itself, for the seccomp filter's
``supervise`` verdicts (:data:`cvg_kernel.seccomp.SUPERVISED`).

The filter sends such a call to the supervisor through seccomp user notification
(:mod:`cvg_kernel.notify` serves the listener). Whatever the tool's memory or its
other threads do meanwhile, the answer is safe, because the supervisor never lets the
tool's own call go on (no SECCOMP_USER_NOTIF_FLAG_CONTINUE): it takes the very object
the call names with ``pidfd_getfd``, looks at it, and acts on that object itself. A
thread that swaps the descriptor number after the check changes nothing: the check and
the action were made on the same open file.

``listen``: Landlock checks ``bind()``, but listen() on a TCP socket that was never
bound binds an ephemeral port on its own, out of Landlock's sight (measured on 6.18: a
tool granted one bind port accepted a connection on another). The supervisor refuses
listen on an inet stream socket whose local port is 0 (EACCES, what Landlock gives a
refused bind) and performs any other listen on the tool's socket.

With nobody listening (the supervisor gone) the kernel answers ENOSYS: the call fails.
Standard library and ctypes only.
"""

from __future__ import annotations

import ctypes
import errno as _errno
import os
import socket
from collections.abc import Callable

from . import _libc, _syscall_table

_NR = _syscall_table.TABLES.get(_libc.machine(), {})
_INET = (socket.AF_INET, socket.AF_INET6)

__all__ = ["GUARDS", "listen", "take_descriptor", "thread_group"]


def _signed32(word: int) -> int:
    word &= 0xFFFFFFFF
    return word - (1 << 32) if word & 0x80000000 else word


def thread_group(tid: int) -> int:
    """The process (thread group) of thread ``tid``; OSError when it is gone."""
    with open(f"/proc/{tid}/status", "rb") as f:
        for line in f:
            if line.startswith(b"Tgid:"):
                return int(line.split()[1])
    raise ProcessLookupError(_errno.ESRCH, f"no Tgid for {tid}")


def take_descriptor(tid: int, fd: int, still_pending: Callable[[], bool]) -> int:
    """A copy of thread ``tid``'s descriptor ``fd`` (close-on-exec), once its
    notification is known to be still pending (``still_pending()``): the tid was not
    reused between the notification and the pidfd. Raises OSError with the errno the
    tool's own call would have met (EBADF for a bad descriptor)."""
    pidfd = _libc.syscall(_NR["pidfd_open"], ctypes.c_long(thread_group(tid)), ctypes.c_long(0))
    try:
        if not still_pending():
            raise ProcessLookupError(_errno.ESRCH, "the calling thread is gone")
        return _libc.syscall(
            _NR["pidfd_getfd"], ctypes.c_long(pidfd), ctypes.c_long(fd), ctypes.c_long(0)
        )
    finally:
        os.close(pidfd)


def listen(tid: int, args: tuple[int, ...], still_pending: Callable[[], bool]) -> int:
    """Decide and perform ``listen(args[0], args[1])`` for thread ``tid``.

    Returns 0 when the socket now listens, else the errno for the tool's call."""
    fd, backlog = _signed32(args[0]), _signed32(args[1])
    try:
        mine = take_descriptor(tid, fd, still_pending)
    except OSError as e:
        # EPERM: we may not take it (a non-dumpable tool, a ptrace policy): refuse.
        return e.errno or _errno.EPERM
    try:
        try:
            family = _sockopt(mine, socket.SO_DOMAIN)
            kind = _sockopt(mine, socket.SO_TYPE)
        except OSError as e:
            return e.errno or _errno.ENOTSOCK
        if family in _INET and kind == socket.SOCK_STREAM:
            sock = socket.socket(family, kind, fileno=os.dup(mine))
            try:
                port = sock.getsockname()[1]
            finally:
                sock.close()
            if port == 0:
                return _errno.EACCES
        try:
            _libc.syscall(_NR["listen"], ctypes.c_long(mine), ctypes.c_long(backlog))
        except OSError as e:
            return e.errno or _errno.EINVAL
        return 0
    finally:
        os.close(mine)


def _sockopt(fd: int, option: int) -> int:
    value = ctypes.c_int(0)
    size = ctypes.c_uint32(ctypes.sizeof(value))
    _libc.syscall(
        _NR["getsockopt"],
        ctypes.c_long(fd),
        ctypes.c_long(socket.SOL_SOCKET),
        ctypes.c_long(option),
        ctypes.byref(value),
        ctypes.byref(size),
    )
    return value.value


Guard = Callable[[int, tuple[int, ...], Callable[[], bool]], int]

GUARDS: dict[str, Guard] = {"listen": listen}
"""Each supervised call's decision, by name: ``(tid, args, still_pending) -> errno``
(0: performed)."""
