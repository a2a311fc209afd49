"""Seccomp denials reported through user notification: exact, cheap and fail-closed.

strace cannot see the calls cvg's filter refuses: with ``--seccomp-bpf`` its TRACE
loses to cvg's ERRNO, and tracing every call without it costs about twice the run
time. Instead, the launcher can install the same program with every ERRNO denial
replaced by SECCOMP_RET_USER_NOTIF (:meth:`cvg_kernel.seccomp.Filter.with_listener`)
and name the listener descriptor to the supervisor over an inherited AF_UNIX socket,
which takes it with pidfd_getfd (:class:`Handover`, :func:`receive_listener`). The
supervisor's :func:`serve` loop
answers each notification with the errno the plain program gives for that very
``seccomp_data`` (computed by :func:`cvg_kernel.bpf.evaluate`) and reports it.

Why this never allows anything the plain filter refuses, measured on Linux 6.18:

- A refused call's answer is always an error: SECCOMP_USER_NOTIF_FLAG_CONTINUE is sent
  only for a supervised call a guard (:mod:`cvg_kernel.guard`) found aimed at the
  caller's own process, where no argument can change to point elsewhere; and
  a program answer that is not ERRNO (a mismatched program) is answered EPERM.
- Nobody listening means ENOSYS: once the listener's last descriptor is closed (the
  supervisor closed it or died), every notifying call fails with ENOSYS at once,
  and a call already waiting for an answer is woken with ENOSYS. It never runs.
- A supervisor that holds the listener but stops answering leaves the call waiting
  (a hang, never an allow); a signal still interrupts or kills the waiting tool.
- The tool cannot install a listener of its own, which could answer CONTINUE to a
  call ours refused (the newest filter's USER_NOTIF verdict wins): the kernel
  answers EBUSY while ours is open, and the notifying program answers EBUSY itself
  so that this holds after ours is closed too (without it, ``personality`` ran).
- Known limit: a USER_NOTIF filter of the tool's own, without a listener, takes the
  notification away from us. The call fails with ENOSYS and never runs, but the
  denial goes unreported.
- The listener must never reach the tool: whoever holds it could answer CONTINUE.
  The launcher closes its copy and the socket before exec, once the supervisor has
  taken its own.

User notification races on pointer arguments (the tool can change memory while it
waits), which is why it is never a security boundary; here nothing is decided from
memory, only from the registers in ``seccomp_data``, and the kernel only ever hears
"fail with this errno", so the race buys the tool nothing.

Cost, measured on a loaded 2-core x86_64 host (Linux 6.18): a tool denied 10 000
times in a Python loop took 20-60 us per call (median about 30 us) with this
supervisor answering, against 4-12 us under the plain filter. The first time a given
question is asked costs about 120 us more (the interpreter checks the whole program);
answers are then remembered. Calls the filter allows never reach the supervisor; they
only pass seven more BPF instructions (the listener check above).

Standard library and ctypes only; struct sizes and ioctl numbers are from
``linux/seccomp.h`` (checked against SECCOMP_GET_NOTIF_SIZES when serving starts).
"""

from __future__ import annotations

import ctypes
import errno as _errno
import os
import select
import stat
import struct
import threading
from collections.abc import Callable, Mapping, Sequence

from . import libc, syscall_table
from .bpf import (
    LD_W_ABS,
    RET_K,
    SECCOMP_RET_ACTION_FULL,
    SECCOMP_RET_DATA,
    SECCOMP_RET_ERRNO,
    Instruction,
    evaluate,
    ret_errno,
    validate,
)
from .record import Record
from .seccomp import AUDIT_ARCH, GROUP_CALLS

# The guards' types only for the type checker: importing guard costs plans without one.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from .guard import Deferred, Guard, Performed, Refused

# include/uapi/linux/seccomp.h
SECCOMP_GET_NOTIF_SIZES = 3
SECCOMP_USER_NOTIF_FLAG_CONTINUE = 1  # only for guard.CONTINUE, never for a refused call


def _iowr(nr: int, size: int) -> int:
    # _IOWR(SECCOMP_IOC_MAGIC '!', nr, size): direction 3 (read|write) in bits 30-31.
    return (3 << 30) | (size << 16) | (ord("!") << 8) | nr


def _iow(nr: int, size: int) -> int:
    return (1 << 30) | (size << 16) | (ord("!") << 8) | nr


class SeccompData(ctypes.Structure):
    _fields_ = [
        ("nr", ctypes.c_int32),
        ("arch", ctypes.c_uint32),
        ("instruction_pointer", ctypes.c_uint64),
        ("args", ctypes.c_uint64 * 6),
    ]


class SeccompNotif(ctypes.Structure):
    _fields_ = [
        ("id", ctypes.c_uint64),
        ("pid", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
        ("data", SeccompData),
    ]


class SeccompNotifResp(ctypes.Structure):
    _fields_ = [
        ("id", ctypes.c_uint64),
        ("val", ctypes.c_int64),
        ("error", ctypes.c_int32),
        ("flags", ctypes.c_uint32),
    ]


class _NotifSizes(ctypes.Structure):
    _fields_ = [
        ("seccomp_notif", ctypes.c_uint16),
        ("seccomp_notif_resp", ctypes.c_uint16),
        ("seccomp_data", ctypes.c_uint16),
    ]


# 0xc0502100, 0xc0182101, 0x40082102 (compiled against linux/seccomp.h here).
SECCOMP_IOCTL_NOTIF_RECV = _iowr(0, ctypes.sizeof(SeccompNotif))
SECCOMP_IOCTL_NOTIF_SEND = _iowr(1, ctypes.sizeof(SeccompNotifResp))
SECCOMP_IOCTL_NOTIF_ID_VALID = _iow(2, ctypes.sizeof(ctypes.c_uint64))
# Linux 6.6+: wake the caller on this CPU when answered, not through the scheduler.
SECCOMP_IOCTL_NOTIF_SET_FLAGS = _iow(4, ctypes.sizeof(ctypes.c_uint64))
SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP = 1


class SeccompNotifAddfd(ctypes.Structure):
    _fields_ = [
        ("id", ctypes.c_uint64),
        ("flags", ctypes.c_uint32),
        ("srcfd", ctypes.c_uint32),
        ("newfd", ctypes.c_uint32),
        ("newfd_flags", ctypes.c_uint32),
    ]


# Linux 5.9 (ADDFD) and 5.14 (FLAG_SEND): place a descriptor in the caller's table and
# answer the call with its number in one step.
SECCOMP_IOCTL_NOTIF_ADDFD = _iow(3, ctypes.sizeof(SeccompNotifAddfd))
SECCOMP_ADDFD_FLAG_SEND = 1 << 1

# What /proc/self/fd/N reads for a listener: how a received descriptor is checked.
LISTENER_LINK = "anon_inode:seccomp notify"

_ioctl = libc.libc.ioctl
_ioctl.restype = ctypes.c_int
_ioctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p]

_HANDOVER_BYTE = b"L"
_TAKEN_BYTE = b"K"
_REFUSED_BYTE = b"N"  # the supervisor could not take it: the launcher stops waiting
_PR_SET_DUMPABLE = 4


class NotifyError(RuntimeError):
    """The listener could not be handed over, received, or served."""


class NotifiedCall(Record):
    """One refused call, as the supervisor answered it."""

    pid: int  # the calling thread's id, in the supervisor's pid namespace
    nr: int
    name: str  # from the syscall table; "syscall_N" for a number it lacks
    args: tuple[int, ...]  # all six registers, unsigned 64-bit
    errno: str  # the errno name the call got, e.g. "EPERM"
    arch: str
    # A guard's refusal (cvg_kernel.guard.Refused): what it checked and why it refused.
    path: str | None = None
    refused: str | None = None  # "denied", "protected", "held", "right", "unix"
    entry: str | None = None
    right: str | None = None


class Served(Record):
    """What a :func:`serve` loop did, once it ended."""

    answered: int  # denials answered and reported
    abandoned: int  # notifications whose caller was gone (signal) before the answer
    ended: str  # "hangup": no filtered process is left; "stopped": asked to stop


class Handover:
    """The launcher's half: name the listener on an inherited socket, wait until the
    supervisor has taken it, then close both.

    The listener does not travel in an SCM_RIGHTS message: it exists only once the
    filter is installed, and with ``unix`` supervised the filter sends sendmsg() to a
    supervisor that has no listener yet (the launcher would wait for ever). The
    launcher writes ``L PID FD`` with write(2) instead, which no filter supervises, and
    the supervisor takes the descriptor itself with pidfd_getfd (it is the launcher's
    ancestor: ptrace's access check, Yama's ptrace_scope 1 included, lets it), then
    writes one byte back. Until that byte the launcher keeps its copy open: nothing
    races its close.

    Made before confinement (:func:`cvg_kernel.plan.prepare`), so that sending
    imports and opens nothing: after Landlock, the interpreter's own library may
    no longer be readable.
    """

    def __init__(self, sock_fd: int) -> None:
        if sock_fd < 3:
            # It is closed before exec: that would take the command's stdio away.
            raise ValueError(f"notify socket {sock_fd} is one of the command's stdio (0-2)")
        mode = os.fstat(sock_fd).st_mode
        if not stat.S_ISSOCK(mode):
            raise OSError(_errno.ENOTSOCK, f"descriptor {sock_fd} is not a socket")
        self.sock_fd = sock_fd
        self._pid = 0

    def ready(self) -> None:
        """Before the filter: what ``send`` needs that an allow list would refuse.

        A process whose ids changed without an exec is not dumpable, and then its
        unprivileged parent may not take a descriptor from it; the exec that follows
        makes it dumpable anyway (unless the program is unreadable)."""
        libc.prctl(_PR_SET_DUMPABLE, 1)
        self._pid = os.getpid()

    def send(self, listener_fd: int) -> None:
        """Name ``listener_fd``, wait for the supervisor to take it, and close it and
        the socket, even when that fails (write, read and close only: the filter is
        in place). Raises OSError when the supervisor could not take it (the tool's
        supervised calls would all fail)."""
        try:
            os.write(self.sock_fd, b"%s%d %d" % (_HANDOVER_BYTE, self._pid, listener_fd))
            if os.read(self.sock_fd, 1) != _TAKEN_BYTE:
                raise OSError(_errno.ECONNRESET, "the supervisor did not take the seccomp listener")
        finally:
            os.close(self.sock_fd)
            os.close(listener_fd)


def receive_listener(sock_fd: int, timeout: float | None = None) -> int:
    """The supervisor's half: take the listener the launcher named on ``sock_fd``.

    Returns the listener descriptor (close-on-exec). Raises :class:`NotifyError`
    if the other end closed without naming one (the launcher failed before
    confining; close your own copy of its end first, or this waits for ever),
    if ``timeout`` seconds pass, if it cannot be taken, or if what it names is not
    a seccomp listener. The launcher waits, holding its copy, until this answers.
    """
    if timeout is not None:
        ready, _, _ = select.select([sock_fd], [], [], timeout)
        if not ready:
            raise NotifyError(f"no seccomp listener arrived within {timeout:g}s")
    try:
        msg = os.read(sock_fd, 64)
    except ConnectionResetError:  # closed with our last answer unread
        msg = b""
    if not msg:
        raise NotifyError("the launcher closed the socket without sending a seccomp listener")
    try:
        listener = _take_named(msg)
    except NotifyError:
        # The launcher may hold a copy of our end (it was forked, not exec'd): closing
        # ours would not wake it.
        try:
            os.write(sock_fd, _REFUSED_BYTE)
        except OSError:
            pass
        raise
    try:
        os.write(sock_fd, _TAKEN_BYTE)
    except OSError:
        pass  # the launcher is gone: serving ends at once on the listener's hangup
    return listener


def _take_named(msg: bytes) -> int:
    words = msg[1:].split(b" ")
    if msg[:1] != _HANDOVER_BYTE or len(words) != 2 or not all(w.isdigit() for w in words):
        raise NotifyError(f"expected 'L PID FD' naming a seccomp listener, got {msg[:40]!r}")
    pid, fd = int(words[0]), int(words[1])
    table = syscall_table.TABLES[libc.machine()]
    try:
        pidfd = libc.syscall(table["pidfd_open"], ctypes.c_long(pid), ctypes.c_long(0))
        try:
            listener = libc.syscall(
                table["pidfd_getfd"], ctypes.c_long(pidfd), ctypes.c_long(fd), ctypes.c_long(0)
            )
        finally:
            os.close(pidfd)
    except OSError as e:
        raise NotifyError(
            f"could not take descriptor {fd} of process {pid}: {e.strerror}"
        ) from None
    try:
        link = os.readlink(f"/proc/self/fd/{listener}")
    except OSError as e:
        link = f"unreadable ({e.strerror})"
    if link != LISTENER_LINK:
        os.close(listener)
        raise NotifyError(f"the descriptor named is {link}, not a seccomp listener")
    return listener


def kernel_sizes() -> tuple[int, int, int]:
    """``(seccomp_notif, seccomp_notif_resp, seccomp_data)`` as the running kernel has them."""
    sizes = _NotifSizes()
    nr = syscall_table.TABLES[libc.machine()]["seccomp"]
    libc.syscall(
        nr, ctypes.c_ulong(SECCOMP_GET_NOTIF_SIZES), ctypes.c_ulong(0), ctypes.byref(sizes)
    )
    return sizes.seccomp_notif, sizes.seccomp_notif_resp, sizes.seccomp_data


def answer(program: Sequence[Instruction], data: SeccompData) -> int:
    """The errno the plain ``program`` gives this call; EPERM if it would not refuse it.

    Never 0: a reply with error 0 would make the call "succeed" without running.
    """
    action = evaluate(program, data.nr, data.arch, tuple(data.args), data.instruction_pointer)
    err = action & SECCOMP_RET_DATA
    if (action & SECCOMP_RET_ACTION_FULL) != SECCOMP_RET_ERRNO or err == 0:
        return _errno.EPERM
    return err


class _Answers:
    """:func:`answer`, remembered by the words of ``seccomp_data`` the program reads.

    The interpreter checks the whole program on every run (about 120 us here); a
    tool repeating a denied call in a loop asks the same question each time. The
    program is a pure function of the words it loads, so keying on exactly those
    words (not the instruction pointer, not the high halves it never reads) gives
    the same answers.
    """

    LIMIT = 1 << 16

    def __init__(self, program: Sequence[Instruction]) -> None:
        self.program = tuple(program)
        fmt, pos = "<", 0
        for offset in sorted({k for code, _, _, k in self.program if code == LD_W_ABS}):
            fmt += f"{offset - pos}xI"
            pos = offset + 4
        self._key = struct.Struct(fmt)
        self._cache: dict[tuple[int, ...], int] = {}

    def __call__(self, data: SeccompData) -> int:
        key = self._key.unpack_from(data)
        err = self._cache.get(key)
        if err is None:
            if len(self._cache) >= self.LIMIT:
                self._cache.clear()
            err = self._cache[key] = answer(self.program, data)
        return err


def serve(
    listener_fd: int,
    program: Sequence[Instruction],
    arch: str,
    on_denial: Callable[[NotifiedCall], object],
    *,
    stop_fd: int | None = None,
    supervised: Sequence[str] = (),
    guards: Mapping[str, Guard] | None = None,
) -> Served:
    """Answer every notification on ``listener_fd`` until no filtered process is left.

    ``program`` is the plain ERRNO program (``Filter.errno_program``) for ``arch``;
    each call is answered with the errno it gives (see :func:`answer`), then
    ``on_denial`` is called with the :class:`NotifiedCall`. The loop ends on
    POLLHUP (every process under the filter has exited; zombies do not count,
    measured) or when ``stop_fd`` becomes readable. It takes ownership of
    ``listener_fd`` and closes it on the way out, whatever the reason, so a tool
    that outlives the loop gets ENOSYS for its denied calls instead of waiting for
    an answer. An exception from ``on_denial`` or the kernel ends the loop the
    same way and propagates; a guard's OSError (its caller vanished mid-call)
    refuses that one call with its errno, and serving goes on.

    A tool cannot hang this loop: it is woken only for notifications that are
    there to take, answering never blocks, and a stop request is seen between any
    two answers.

    ``supervised`` names the calls the filter sends here to be decided and performed
    (:mod:`cvg_kernel.guard`); each is answered with what its guard did, and reported
    to ``on_denial`` only when refused. ``guards`` gives, by call name, the guards that
    need the plan (made by the module of their group); they take the place of
    :data:`cvg_kernel.guard.GUARDS`. A supervised call with no guard is refused (EPERM).
    """
    try:
        return _serve(listener_fd, program, arch, on_denial, stop_fd, supervised, guards)
    finally:
        os.close(listener_fd)


def _serve(
    listener_fd: int,
    program: Sequence[Instruction],
    arch: str,
    on_denial: Callable[[NotifiedCall], object],
    stop_fd: int | None,
    supervised: Sequence[str] = (),
    given: Mapping[str, Guard] | None = None,
) -> Served:
    validate(program)
    # The notifying program starts with the listener check, whose 7th instruction
    # answers EBUSY; the plain program never does.
    if len(program) > 6 and tuple(program[6]) == (RET_K, 0, 0, ret_errno(_errno.EBUSY)):
        raise NotifyError("serve needs the plain ERRNO program, not the notifying one")
    from .guard import CONTINUE, GUARDS, SIGNAL_CALLS, Deferred, Performed, Refused

    table = syscall_table.TABLES.get(arch, {})
    names_of = {"signal": (*SIGNAL_CALLS, "fcntl", "ioctl"), **GROUP_CALLS}
    known = {**GUARDS, **(given or {})}
    guards = {
        table[name]: known.get(name, _refuse)
        for group in supervised
        for name in names_of.get(group, (group,))
        if name in table
    }
    if arch not in AUDIT_ARCH:
        raise NotifyError(f"unsupported architecture {arch!r}")
    ours = (
        ctypes.sizeof(SeccompNotif),
        ctypes.sizeof(SeccompNotifResp),
        ctypes.sizeof(SeccompData),
    )
    theirs = kernel_sizes()
    if theirs != ours:
        # Larger structs would come with new ioctl numbers; refuse rather than guess.
        raise NotifyError(f"kernel's seccomp_unotify structs are {theirs} bytes, expected {ours}")
    # Only a speed-up, and older kernels refuse it (EINVAL): the result is not checked.
    _ioctl(listener_fd, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP)
    names = {nr: name for name, nr in syscall_table.TABLES[arch].items()}
    answers = _Answers(program)
    notif = SeccompNotif()
    resp = SeccompNotifResp()
    notif_ptr = ctypes.addressof(notif)
    resp_ptr = ctypes.addressof(resp)
    size = ctypes.sizeof(notif)
    poller = select.poll()
    poller.register(listener_fd, select.POLLIN)
    if stop_fd is not None:
        poller.register(stop_fd, select.POLLIN)
    answered = abandoned = 0
    while True:
        events = dict(poller.poll())
        if stop_fd is not None and stop_fd in events:
            return Served(answered, abandoned, "stopped")
        revents = events.get(listener_fd, 0)
        if revents & select.POLLIN:
            # RECV refuses a buffer that is not all zeroes (EINVAL).
            ctypes.memset(notif_ptr, 0, size)
            if _ioctl(listener_fd, SECCOMP_IOCTL_NOTIF_RECV, notif_ptr) < 0:
                err = ctypes.get_errno()
                # ENOENT: the caller was interrupted between poll and receive.
                if err in (_errno.ENOENT, _errno.EINTR):
                    continue
                raise OSError(err, f"SECCOMP_IOCTL_NOTIF_RECV: {os.strerror(err)}")
            guard = guards.get(notif.data.nr)
            after = None
            refusal = None
            if guard is not None:
                decided = _decide(guard, listener_fd, notif)
                if isinstance(decided, Refused):
                    refusal, decided = decided, decided.err
                if isinstance(decided, Performed):
                    if _performed(listener_fd, notif.id, decided, resp_ptr, resp):
                        answered += 1
                    else:
                        abandoned += 1
                    continue
                if isinstance(decided, Deferred):
                    err_answer, after = decided.err, decided.after
                else:
                    err_answer = decided
            else:
                err_answer = answers(notif.data)
            resp.id = notif.id
            resp.val = 0
            resp.error = -err_answer
            # Never CONTINUE for a refused call; only where a guard found that nothing
            # the call could change under it reaches outside (cvg_kernel.guard).
            resp.flags = 0
            if err_answer == CONTINUE:
                resp.error, resp.flags, err_answer = 0, SECCOMP_USER_NOTIF_FLAG_CONTINUE, 0
            if _ioctl(listener_fd, SECCOMP_IOCTL_NOTIF_SEND, resp_ptr) < 0:
                err = ctypes.get_errno()
                if err == _errno.ENOENT:  # the caller was interrupted or killed meanwhile
                    abandoned += 1
                    continue
                raise OSError(err, f"SECCOMP_IOCTL_NOTIF_SEND: {os.strerror(err)}")
            answered += 1
            if after is not None:
                try:
                    after()
                except OSError:
                    pass  # the target went away after the answer: nothing left to do
            nr = notif.data.nr
            if err_answer == 0:
                continue  # a supervised call performed: nothing was refused
            on_denial(_notified(notif, names.get(nr, f"syscall_{nr}"), err_answer, arch, refusal))
        elif revents & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
            return Served(answered, abandoned, "hangup")


def _notified(notif: SeccompNotif, name: str, err: int, arch: str,
              refusal: Refused | None) -> NotifiedCall:  # fmt: skip
    said = () if refusal is None else (refusal.path, refusal.kind, refusal.entry or None,
                                       refusal.right)  # fmt: skip
    return NotifiedCall(notif.pid, notif.data.nr, name, tuple(notif.data.args),
                        _errno.errorcode.get(err, str(err)), arch, *said)  # fmt: skip


def _decide(
    guard: Guard, listener_fd: int, notif: SeccompNotif
) -> int | Deferred | Performed | Refused:
    nid = ctypes.c_uint64(notif.id)

    def pending() -> bool:
        return bool(_ioctl(listener_fd, SECCOMP_IOCTL_NOTIF_ID_VALID, ctypes.addressof(nid)) == 0)

    try:
        return guard(notif.pid, tuple(notif.data.args), pending)
    except OSError as e:
        # The caller vanished or its memory could not be read: refuse this call and
        # keep serving, or every later supervised call of the tool would end as ENOSYS.
        return e.errno or _errno.EPERM


def _refuse(tid: int, args: tuple[int, ...], still_pending: Callable[[], bool]) -> int:
    # A group's call whose guard was not given: nothing decides it, so it fails.
    return _errno.EPERM


def _performed(listener_fd: int, nid: int, answer: Performed, resp_ptr: int,
               resp: SeccompNotifResp) -> bool:  # fmt: skip
    """Answer a performed call: place ``answer.install`` in the caller's table (the
    call returns its number), or return ``answer.value``. False when the caller went
    away before its answer. The supervisor's copy of the descriptor is closed."""
    try:
        if answer.install is not None:
            addfd = SeccompNotifAddfd(
                nid, SECCOMP_ADDFD_FLAG_SEND, answer.install, 0,
                os.O_CLOEXEC if answer.cloexec else 0,
            )  # fmt: skip
            if _ioctl(listener_fd, SECCOMP_IOCTL_NOTIF_ADDFD, ctypes.addressof(addfd)) >= 0:
                return True
            err = ctypes.get_errno()
            if err == _errno.ENOENT:
                return False
            # EMFILE (the caller's RLIMIT_NOFILE) and the like: the call fails with it.
            resp.id, resp.val, resp.error, resp.flags = nid, 0, -err, 0
        else:
            resp.id, resp.val, resp.error, resp.flags = nid, answer.value, 0, 0
        if _ioctl(listener_fd, SECCOMP_IOCTL_NOTIF_SEND, resp_ptr) < 0:
            err = ctypes.get_errno()
            if err == _errno.ENOENT:
                return False
            raise OSError(err, f"SECCOMP_IOCTL_NOTIF_SEND: {os.strerror(err)}")
        return True
    finally:
        if answer.install is not None:
            os.close(answer.install)


def serve_handover(
    sock_fd: int,
    program: Sequence[Instruction],
    arch: str,
    on_denial: Callable[[NotifiedCall], object],
    *,
    stop_fd: int | None = None,
    supervised: Sequence[str] = (),
    guards: Mapping[str, Guard] | None = None,
) -> Served | None:
    """Take the listener the launcher names on ``sock_fd`` (closed here either way)
    and :func:`serve` it. None when no listener came: the launcher failed before
    confining, so nothing ran and nothing was refused."""
    try:
        listener = receive_listener(sock_fd)
    except (NotifyError, OSError):
        return None
    finally:
        os.close(sock_fd)
    return serve(
        listener, program, arch, on_denial, stop_fd=stop_fd, supervised=supervised, guards=guards
    )


class Serving:
    """:func:`serve` in a daemon thread: ``stop()`` ends it, ``join()`` returns its result.

    ``join`` re-raises what ended the loop, if anything did (an exception from the
    callback included), so a failure in reporting is never silent.
    """

    def __init__(
        self,
        listener_fd: int,
        program: Sequence[Instruction],
        arch: str,
        on_denial: Callable[[NotifiedCall], object],
        supervised: Sequence[str] = (),
        guards: Mapping[str, Guard] | None = None,
    ) -> None:
        self._stop_r, self._stop_w = os.pipe2(os.O_CLOEXEC)
        self._supervised = tuple(supervised)
        self._guards = dict(guards or {})
        self._result: Served | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._run,
            args=(listener_fd, tuple(program), arch, on_denial),
            name="cvg-seccomp-notify",
            daemon=True,
        )
        self._thread.start()

    def _run(
        self,
        listener_fd: int,
        program: Sequence[Instruction],
        arch: str,
        on_denial: Callable[[NotifiedCall], object],
    ) -> None:
        try:
            self._result = serve(
                listener_fd,
                program,
                arch,
                on_denial,
                stop_fd=self._stop_r,
                supervised=self._supervised,
                guards=self._guards,
            )
        except BaseException as e:  # noqa: BLE001 - re-raised by join(): a failure in reporting is never silent
            self._error = e

    def stop(self) -> None:
        """Ask the loop to end; it closes the listener (later denials get ENOSYS)."""
        try:
            os.write(self._stop_w, b"x")
        except OSError:
            pass  # already closed by join

    def join(self, timeout: float | None = None) -> Served:
        """Wait for the loop to end (after POLLHUP or :meth:`stop`); its result."""
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError("the seccomp notification loop is still running")
        for fd in (self._stop_r, self._stop_w):
            try:
                os.close(fd)
            except OSError:
                pass
        self._stop_r = self._stop_w = -1
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result
