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

``signal`` (below Landlock ABI 6, which scopes signals in the kernel): kill, tkill,
tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo, pidfd_send_signal, and setting a file's
owner for SIGIO (fcntl F_SETOWN/F_SETOWN_EX, ioctl FIOSETOWN/SIOCSPGRP). A target
inside the tool's own tree (this supervisor's descendants) is signalled by the
supervisor through a pidfd opened first and checked after, so a reused pid is never
hit; a process group or "every process" is signalled member by member, inside the tree
only; any other target gets EPERM. Two cases go on as the tool's own call
(:data:`CONTINUE`), because nothing in them can change under the check: a call whose
target register names the caller's own process (``kill(getpid())``, ``tgkill(getpid(),
tid)``: tgkill itself refuses a tid outside that group), and an owner set to the caller
or to nobody. Signals the supervisor sends carry its pid as the sender (si_pid).

With nobody listening (the supervisor gone) the kernel answers ENOSYS: the call fails.
Standard library and ctypes only.
"""

from __future__ import annotations

# _socket, not socket: the wrapper imports enum and selectors (see cvg_kernel.notify).
import _socket as socket
import ctypes
import errno as _errno
import os
from collections.abc import Callable

from . import libc, syscall_table
from .seccomp import F_SETOWN, F_SETOWN_EX, SIGNAL_CALLS

_NR = syscall_table.TABLES.get(libc.machine(), {})
_INET = (socket.AF_INET, socket.AF_INET6)

__all__ = [
    "CONTINUE", "GUARDS", "SIGNAL_CALLS", "Deferred", "Guard", "Performed", "Refused",
    "keep_outside",
    "listen", "read_memory", "take_descriptor", "thread_group",
]  # fmt: skip

CONTINUE = -1
"""A guard's answer that lets the tool's own call go on (only where it is safe, above)."""


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
    pidfd = libc.syscall(_NR["pidfd_open"], ctypes.c_long(thread_group(tid)), ctypes.c_long(0))
    try:
        if not still_pending():
            raise ProcessLookupError(_errno.ESRCH, "the calling thread is gone")
        return libc.syscall(
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
            libc.syscall(_NR["listen"], ctypes.c_long(mine), ctypes.c_long(backlog))
        except OSError as e:
            return e.errno or _errno.EINVAL
        return 0
    finally:
        os.close(mine)


def _sockopt(fd: int, option: int) -> int:
    value = ctypes.c_int(0)
    size = ctypes.c_uint32(ctypes.sizeof(value))
    libc.syscall(
        _NR["getsockopt"],
        ctypes.c_long(fd),
        ctypes.c_long(socket.SOL_SOCKET),
        ctypes.c_long(option),
        ctypes.byref(value),
        ctypes.byref(size),
    )
    return value.value


Guard = Callable[[int, tuple[int, ...], Callable[[], bool]], "int | Deferred | Performed | Refused"]


# ------------------------------------------------------------------------ signals

F_OWNER_TID, F_OWNER_PID, F_OWNER_PGRP = 0, 1, 2
_SIGINFO_SIZE = 128


def _stat_fields(pid: int) -> list[bytes]:
    with open(f"/proc/{pid}/stat", "rb") as f:
        data = f.read()
    return data[data.rindex(b")") + 2 :].split()


# Children of the supervisor that are not the tool's (cvg-observe's strace): neither
# they nor what is below them count as the tool's tree.
_OUTSIDE: set[int] = set()


def keep_outside(pid: int) -> None:
    """``pid``, a child of this supervisor, is not the tool's: no signal reaches it, nor
    anything below it, for the tool."""
    _OUTSIDE.add(pid)


def _in_tree(pid: int) -> bool:
    """Whether ``pid`` is below this supervisor (the tool's tree), now."""
    me = os.getpid()
    for _ in range(4096):
        if pid <= 1 or pid in _OUTSIDE:
            return False
        try:
            pid = int(_stat_fields(pid)[1])
        except (OSError, ValueError, IndexError):
            return False
        if pid == me:
            return True
    return False


def _pin(pid: int) -> int:
    """A pidfd for the process ``pid`` names, checked to be in the tree after it was
    opened (a pid reused by another process fails the check). OSError otherwise."""
    tgid = thread_group(pid)
    pidfd = libc.syscall(_NR["pidfd_open"], ctypes.c_long(tgid), ctypes.c_long(0))
    if not _in_tree(tgid):
        os.close(pidfd)
        raise PermissionError(_errno.EPERM, f"{pid} is outside the sandbox")
    return pidfd


def _pidfd_signal(pidfd: int, sig: int, info: ctypes.Array[ctypes.c_char] | None) -> None:
    libc.syscall(
        _NR["pidfd_send_signal"],
        ctypes.c_long(pidfd),
        ctypes.c_long(sig),
        info if info is not None else None,
        ctypes.c_long(0),
    )


def _signal_pid(pid: int, sig: int, info: ctypes.Array[ctypes.c_char] | None = None) -> int:
    try:
        pidfd = _pin(pid)
    except OSError as e:
        return _errno.ESRCH if e.errno in (_errno.ENOENT, _errno.ESRCH) else _errno.EPERM
    try:
        _pidfd_signal(pidfd, sig, info)
        return 0
    except OSError as e:
        return e.errno or _errno.EPERM
    finally:
        os.close(pidfd)


def _tree_members() -> list[int]:
    from .process import descendants

    return descendants(os.getpid())


def _signal_group(members: list[int], sig: int) -> int | Deferred:
    """Signal each member (inside the tree only) once the call is answered; ESRCH when
    none could be pinned."""
    pinned: list[int] = []
    for pid in members:
        try:
            pinned.append(_pin(pid))
        except OSError:
            continue
    if not pinned:
        return _errno.ESRCH

    def send() -> None:
        for pidfd in pinned:
            try:
                if sig:
                    _pidfd_signal(pidfd, sig, None)
            except OSError:
                pass
            finally:
                os.close(pidfd)

    return Deferred(0, send)


def read_memory(tid: int, address: int, size: int) -> bytes:
    """``size`` bytes of thread ``tid``'s memory at ``address`` (fewer where the
    mapping ends; OSError when none can be read). What a guard reads there may change
    the moment after: a guard decides on these bytes and acts on them itself, never
    lets the tool's call go on reading the same memory again.

    process_vm_readv, not /proc/TID/mem: that file is mode 0600 and the tool's, so a
    root supervisor serving another user's tool could open it only with
    CAP_DAC_OVERRIDE, which the paths guards drop (they meet the file modes the tool
    meets); every read after that failed, and the calls went on unserved. Both need
    the same ptrace access, which the supervisor, the tool's ancestor, has."""
    if size <= 0:
        return b""
    buf = ctypes.create_string_buffer(size)
    local = _Iovec(ctypes.addressof(buf), size)
    remote = _Iovec(address, size)
    got = libc.syscall(_NR["process_vm_readv"], ctypes.c_long(tid), ctypes.byref(local),
                       ctypes.c_ulong(1), ctypes.byref(remote), ctypes.c_ulong(1),
                       ctypes.c_ulong(0))  # fmt: skip
    return buf.raw[:got]


class _Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def _read(tid: int, address: int, size: int) -> ctypes.Array[ctypes.c_char]:
    data = read_memory(tid, address, size)
    if len(data) != size:
        raise OSError(_errno.EFAULT, "short read of the caller's memory")
    return ctypes.create_string_buffer(data, size)


def _signal_after(pid: int, sig: int) -> int | Deferred:
    """Answer first, then signal: the signal may make the kernel send the caller one
    (SIGCHLD from a child it kills), which would interrupt the very call (EINTR)."""
    try:
        pidfd = _pin(pid)
    except OSError as e:
        return _errno.ESRCH if e.errno in (_errno.ENOENT, _errno.ESRCH) else _errno.EPERM

    def send() -> None:
        try:
            _pidfd_signal(pidfd, sig, None)
        except OSError:
            pass  # gone since it was pinned: as if it had died right after the signal
        finally:
            os.close(pidfd)

    if sig == 0:
        os.close(pidfd)
        return 0  # only asked whether it exists
    return Deferred(0, send)


def kill(tid: int, args: tuple[int, ...], still_pending: Callable[[], bool]) -> int | Deferred:
    pid, sig = _signed32(args[0]), _signed32(args[1])
    me = thread_group(tid)
    if pid == me:
        return CONTINUE
    if pid > 0:
        return _signal_after(pid, sig)
    members = [m for m in _tree_members() if m != me]
    if pid == 0 or pid < -1:
        group = int(_stat_fields(me)[2]) if pid == 0 else -pid
        members = [m for m in members if _pgid(m) == group]
        if _pgid(me) == group:
            members.append(me)  # signalled last, once its own call has its answer
    return _signal_group(members, sig)


class Deferred:
    """A guard's answer with something to do once the tool's call has its answer."""

    def __init__(self, err: int, after: Callable[[], object]) -> None:
        self.err = err
        self.after = after


class Performed:
    """A guard's answer for a call it performed that returns something: ``value`` (a
    byte count, say), or, with ``install``, a descriptor of the supervisor's to be
    placed in the caller's table; the call then returns the new number there
    (SECCOMP_IOCTL_NOTIF_ADDFD with SECCOMP_ADDFD_FLAG_SEND: placing it and answering
    are one step, so no other thread of the tool can see the number first).
    ``cloexec`` sets close-on-exec on the caller's copy. The server closes
    ``install`` once the call is answered, whatever happened."""

    def __init__(
        self, value: int = 0, *, install: int | None = None, cloexec: bool = False
    ) -> None:
        self.value = value
        self.install = install
        self.cloexec = cloexec


class Refused:
    """A guard's refusal that says what it refused: ``err`` for the tool's call, the
    absolute ``path`` the guard checked (the tool's memory is read once, so only the
    guard knows it), ``entry`` the plan's entry that keeps it out (a denied or
    protected path, the held directory, the socket path), ``kind`` which one
    ("denied", "protected", "held", "right", "unix") and, for "right", the missing
    ``right``. The seccomp notification carries only registers: without this the
    refusal could be recorded, but not named."""

    def __init__(self, err: int, path: str, kind: str, entry: str = "",
                 right: str | None = None) -> None:  # fmt: skip
        self.err = err
        self.path = path
        self.kind = kind
        self.entry = entry
        self.right = right


def _pgid(pid: int) -> int:
    try:
        return int(_stat_fields(pid)[2])
    except (OSError, ValueError, IndexError):
        return -1


def tkill(tid: int, args: tuple[int, ...], still_pending: Callable[[], bool]) -> int:
    target, sig = _signed32(args[0]), _signed32(args[1])
    try:
        group = thread_group(target)
        pidfd = _pin(group)
    except OSError:
        return _errno.ESRCH if target > 0 else _errno.EINVAL
    try:
        # tgkill from here: the kernel refuses a tid that left that group meanwhile.
        libc.syscall(_NR["tgkill"], ctypes.c_long(group), ctypes.c_long(target), ctypes.c_long(sig))
        return 0
    except OSError as e:
        return e.errno or _errno.EPERM
    finally:
        os.close(pidfd)


def tgkill(tid: int, args: tuple[int, ...], still_pending: Callable[[], bool]) -> int:
    group, target, sig = _signed32(args[0]), _signed32(args[1]), _signed32(args[2])
    if group == thread_group(tid):
        return CONTINUE  # tgkill refuses a tid outside the caller's own group
    return tkill(tid, (target, sig), still_pending) if _group_of(target) == group else _errno.ESRCH


def _group_of(tid: int) -> int:
    try:
        return thread_group(tid)
    except OSError:
        return -1


def rt_sigqueueinfo(tid: int, args: tuple[int, ...], still_pending: Callable[[], bool]) -> int:
    pid, sig = _signed32(args[0]), _signed32(args[1])
    if pid == thread_group(tid):
        return CONTINUE
    try:
        info = _read(tid, args[2], _SIGINFO_SIZE)
    except OSError:
        return _errno.EFAULT
    return _signal_pid(pid, sig, info) if pid > 0 else _errno.EINVAL


def rt_tgsigqueueinfo(tid: int, args: tuple[int, ...], still_pending: Callable[[], bool]) -> int:
    group, target, sig = _signed32(args[0]), _signed32(args[1]), _signed32(args[2])
    if group == thread_group(tid):
        return CONTINUE
    try:
        pidfd = _pin(group)
    except OSError:
        return _errno.EPERM
    try:
        info = _read(tid, args[3], _SIGINFO_SIZE)
        libc.syscall(_NR["rt_tgsigqueueinfo"], ctypes.c_long(group), ctypes.c_long(target),
                      ctypes.c_long(sig), info)  # fmt: skip
        return 0
    except OSError as e:
        return e.errno or _errno.EPERM
    finally:
        os.close(pidfd)


def pidfd_send_signal(tid: int, args: tuple[int, ...], still_pending: Callable[[], bool]) -> int:
    try:
        mine = take_descriptor(tid, _signed32(args[0]), still_pending)
    except OSError as e:
        return e.errno or _errno.EPERM
    try:
        target = _fdinfo_pid(mine)
        if target is None:
            return _errno.EBADF  # not a pidfd
        if target <= 0:
            return _errno.ESRCH  # the process it names is gone
        if target != thread_group(tid) and not _in_tree(target):
            return _errno.EPERM
        info = None
        if args[2]:
            try:
                info = _read(tid, args[2], _SIGINFO_SIZE)
            except OSError:
                return _errno.EFAULT
        sig, flags = ctypes.c_long(_signed32(args[1])), ctypes.c_long(args[3] & 0xFFFFFFFF)
        libc.syscall(_NR["pidfd_send_signal"], ctypes.c_long(mine), sig, info, flags)
        return 0
    except OSError as e:
        return e.errno or _errno.EPERM
    finally:
        os.close(mine)


def _fdinfo_pid(fd: int) -> int | None:
    try:
        with open(f"/proc/self/fdinfo/{fd}", "rb") as f:
            for line in f:
                if line.startswith(b"Pid:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def _owner_allowed(tid: int, kind: int, target: int) -> bool:
    """Whether SIGIO to ``target`` (a thread, process or group) stays in the tree."""
    if target == 0:
        return True
    if kind == F_OWNER_PGRP:
        members = _tree_members()
        return any(_pgid(m) == target for m in members) and _group_closed(target, members)
    return target == thread_group(tid) or _in_tree(_group_of(target))


def _group_closed(group: int, members: list[int]) -> bool:
    # Every process of the group must be the tool's: read from /proc's whole table.
    inside = set(members)
    for entry in os.listdir("/proc"):
        if entry.isdigit() and _pgid(int(entry)) == group and int(entry) not in inside:
            return False
    return True


def fcntl(tid: int, args: tuple[int, ...], still_pending: Callable[[], bool]) -> int:
    fd, cmd = _signed32(args[0]), args[1] & 0xFFFFFFFF
    if cmd == F_SETOWN:
        owner = _signed32(args[2])
        if owner == 0 or owner == thread_group(tid):
            return CONTINUE  # to itself or nobody: whichever file it lands on
        kind, target = (F_OWNER_PGRP, -owner) if owner < 0 else (F_OWNER_PID, owner)
        if not _owner_allowed(tid, kind, target):
            return _errno.EPERM
        return _on_copy(tid, fd, still_pending, _NR["fcntl"], F_SETOWN, owner)
    try:
        raw = _read(tid, args[2], 8)
    except OSError:
        return _errno.EFAULT
    kind, target = ctypes.c_int.from_buffer(raw, 0).value, ctypes.c_int.from_buffer(raw, 4).value
    if not _owner_allowed(tid, kind, target):
        return _errno.EPERM
    return _on_copy(tid, fd, still_pending, _NR["fcntl"], F_SETOWN_EX, raw)


def ioctl(tid: int, args: tuple[int, ...], still_pending: Callable[[], bool]) -> int:
    fd, request = _signed32(args[0]), args[1] & 0xFFFFFFFF
    try:
        raw = _read(tid, args[2], 4)
    except OSError:
        return _errno.EFAULT
    owner = ctypes.c_int.from_buffer(raw, 0).value
    # FIOSETOWN takes a pid (negative: a group); SIOCSPGRP a group (or a pid).
    kind, target = (F_OWNER_PGRP, -owner) if owner < 0 else (F_OWNER_PID, owner)
    if not _owner_allowed(tid, kind, target):
        return _errno.EPERM
    return _on_copy(tid, fd, still_pending, _NR["ioctl"], request, raw)


def _on_copy(
    tid: int, fd: int, still_pending: Callable[[], bool], nr: int, op: int, arg: object
) -> int:
    """Make the call on this supervisor's copy of the tool's descriptor: the owner is a
    property of the open file, which both share."""
    try:
        mine = take_descriptor(tid, fd, still_pending)
    except OSError as e:
        return e.errno or _errno.EPERM
    try:
        value = ctypes.c_long(arg) if isinstance(arg, int) else arg
        libc.syscall(nr, ctypes.c_long(mine), ctypes.c_long(op), value)
        return 0
    except OSError as e:
        return e.errno or _errno.EPERM
    finally:
        os.close(mine)


GUARDS: dict[str, Guard] = {
    "listen": listen,
    "kill": kill,
    "tkill": tkill,
    "tgkill": tgkill,
    "rt_sigqueueinfo": rt_sigqueueinfo,
    "rt_tgsigqueueinfo": rt_tgsigqueueinfo,
    "pidfd_send_signal": pidfd_send_signal,
    "fcntl": fcntl,
    "ioctl": ioctl,
}
"""Each supervised call's decision, by name: ``(tid, args, still_pending) -> errno``
(0: performed; :data:`CONTINUE`: the tool's own call goes on; a :class:`Deferred` or
a :class:`Performed`). Guards that need the plan (the ``paths`` and ``unix`` groups)
are made from it by their modules and handed to :func:`cvg_kernel.notify.serve`."""
