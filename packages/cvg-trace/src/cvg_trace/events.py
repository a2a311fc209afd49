"""Turn parsed strace records into observation events, process by process.

:class:`Tracker` follows every process of the trace: its working directory (through
``chdir``, ``fchdir`` and ``AT_FDCWD</dir>`` as ``-yy`` prints it, shared between
threads and ``CLONE_FS`` children, copied to ``fork``/``vfork``/``clone`` children),
whether it has started being the observed command yet, and how the first process
ended. Relative paths are made absolute against the calling process's own directory,
or against the ``-yy`` path of the directory descriptor of a ``*at()`` call.

It yields :class:`RawEvent` objects, small and without ids: the caller numbers them
(``e1``, ``e2``, ...) as it writes them, so nothing here holds the whole trace.
"""

from __future__ import annotations

import posixpath
import re

from .parse import Record, TraceParser, Value, parse_fd, string_arg, unescape

# typing, collections.abc and dataclasses only for the type checker (see .parse).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import Final

__all__ = ["OPS_BY_SYSCALL", "Proc", "RawEvent", "Tracker", "events_from_lines", "shapes_policy"]


class RawEvent(Value):
    """An event before it has an id (see :class:`cvg_schema.observation.Event`)."""

    __slots__ = _FIELDS = ("pid", "op", "syscall", "result", "time", "path", "path2", "port",
                           "address", "family", "sock_type", "target_pid", "directory")  # fmt: skip

    def __init__(
        self,
        pid: int | None,
        op: str,
        syscall: str,
        result: str,
        time: float | None,
        path: str | None = None,
        path2: str | None = None,
        port: int | None = None,
        address: str | None = None,
        family: str | int | None = None,
        sock_type: str | None = None,
        target_pid: int | None = None,
        directory: bool = False,
    ) -> None:
        self.pid = pid
        self.op = op
        self.syscall = syscall
        self.result = result
        self.time = time
        self.path = path
        self.path2 = path2
        self.port = port
        self.address = address
        self.family = family
        self.sock_type = sock_type
        self.target_pid = target_pid
        self.directory = directory

    def copy(self) -> RawEvent:
        """A shallow copy (copy.copy, without importing copy)."""
        new = RawEvent.__new__(RawEvent)
        for name in self._FIELDS:
            setattr(new, name, getattr(self, name))
        return new


MAX_HELD: Final = 1000
"""Records held back per process while its parent is unknown, at most."""


class Proc:
    """One traced process (or thread): its working directory cell and its state."""

    __slots__ = ("cwd", "recording")

    def __init__(self, cwd: list[str | None], recording: bool) -> None:
        self.cwd = cwd  # a one-item list, shared by processes that share their fs info
        self.recording = recording


# name -> (op, index of the dirfd argument or None, index of the path argument)
_PATH_CALLS: Final[dict[str, tuple[str, int | None, int]]] = {
    "creat": ("create", None, 0),
    "execve": ("execute", None, 0),
    "execveat": ("execute", 0, 1),
    "stat": ("stat", None, 0),
    "lstat": ("stat", None, 0),
    "stat64": ("stat", None, 0),
    "lstat64": ("stat", None, 0),
    "oldstat": ("stat", None, 0),
    "oldlstat": ("stat", None, 0),
    "access": ("stat", None, 0),
    "readlink": ("stat", None, 0),
    "statfs": ("stat", None, 0),
    "statfs64": ("stat", None, 0),
    "getxattr": ("stat", None, 0),
    "lgetxattr": ("stat", None, 0),
    "listxattr": ("stat", None, 0),
    "llistxattr": ("stat", None, 0),
    "newfstatat": ("stat", 0, 1),
    "fstatat64": ("stat", 0, 1),
    "statx": ("stat", 0, 1),
    "faccessat": ("stat", 0, 1),
    "faccessat2": ("stat", 0, 1),
    "readlinkat": ("stat", 0, 1),
    "getxattrat": ("stat", 0, 1),
    "listxattrat": ("stat", 0, 1),
    "inotify_add_watch": ("stat", None, 1),
    "chdir": ("chdir", None, 0),
    "mkdir": ("create", None, 0),
    "mkdirat": ("create", 0, 1),
    "mknod": ("create", None, 0),
    "mknodat": ("create", 0, 1),
    "symlink": ("create", None, 1),
    "symlinkat": ("create", 1, 2),
    "unlink": ("remove", None, 0),
    "rmdir": ("remove", None, 0),
    "unlinkat": ("remove", 0, 1),
    "truncate": ("write", None, 0),
    "truncate64": ("write", None, 0),
    "chmod": ("other", None, 0),
    "chown": ("other", None, 0),
    "lchown": ("other", None, 0),
    "chown32": ("other", None, 0),
    "lchown32": ("other", None, 0),
    "utime": ("other", None, 0),
    "utimes": ("other", None, 0),
    "setxattr": ("other", None, 0),
    "lsetxattr": ("other", None, 0),
    "removexattr": ("other", None, 0),
    "lremovexattr": ("other", None, 0),
    "fchmodat": ("other", 0, 1),
    "fchmodat2": ("other", 0, 1),
    "fchownat": ("other", 0, 1),
    "futimesat": ("other", 0, 1),
    "utimensat": ("other", 0, 1),
    "setxattrat": ("other", 0, 1),
    "removexattrat": ("other", 0, 1),
    "name_to_handle_at": ("other", 0, 1),
    "chroot": ("other", None, 0),
    "acct": ("other", None, 0),
    "swapon": ("other", None, 0),
    "swapoff": ("other", None, 0),
    "umount": ("other", None, 0),
    "umount2": ("other", None, 0),
    "mount": ("other", None, 1),
    "quotactl": ("other", None, 1),
    "uselib": ("other", None, 0),
}
# name -> (op, old dirfd, old path, new dirfd, new path)
_TWO_PATH_CALLS: Final[dict[str, tuple[str, int | None, int, int | None, int]]] = {
    "rename": ("rename", None, 0, None, 1),
    "renameat": ("rename", 0, 1, 2, 3),
    "renameat2": ("rename", 0, 1, 2, 3),
    "link": ("link", None, 0, None, 1),
    "linkat": ("link", 0, 1, 2, 3),
    "pivot_root": ("other", None, 0, None, 1),
}
_OPEN_CALLS: Final[dict[str, tuple[int | None, int]]] = {
    "open": (None, 0),
    "openat": (0, 1),
    "openat2": (0, 1),
    "open_tree": (0, 1),
    "open_tree_attr": (0, 1),
}
_SIGNAL_CALLS: Final = frozenset(
    {"kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_send_signal"}
)
_FORK_CALLS: Final = frozenset({"clone", "clone3", "fork", "vfork"})
_SEND_CALLS: Final = frozenset({"sendto", "sendmsg", "sendmmsg"})

OPS_BY_SYSCALL: Final[dict[str, str]] = {
    **{name: spec[0] for name, spec in _PATH_CALLS.items()},
    **{name: spec[0] for name, spec in _TWO_PATH_CALLS.items()},
    **dict.fromkeys(_OPEN_CALLS, "read"),  # or write/create/stat by the flags
    **dict.fromkeys(_SIGNAL_CALLS, "signal"),
    **dict.fromkeys(_SEND_CALLS, "send"),
    "fchdir": "chdir",
    "socket": "socket",
    "connect": "connect",
    "bind": "bind",
}
"""Which event op each system call becomes (the open calls by their flags)."""

_FAMILIES: Final = {
    "AF_UNIX": "unix",
    "AF_LOCAL": "unix",
    "AF_FILE": "unix",
    "AF_INET": "inet",
    "AF_INET6": "inet6",
    "AF_NETLINK": "netlink",
    "AF_PACKET": "packet",
}
_TYPES: Final = {
    "SOCK_STREAM": "stream",
    "SOCK_DGRAM": "dgram",
    "SOCK_RAW": "raw",
    "SOCK_SEQPACKET": "seqpacket",
}
# What -yy says a socket descriptor is: `TCP:[...]`, `UDPv6:[...]`, `UNIX-STREAM:[...]`.
_FD_SOCK_TYPES: Final = {
    "TCP": "stream",
    "TCPv6": "stream",
    "UDP": "dgram",
    "UDPv6": "dgram",
    "UNIX-STREAM": "stream",
    "UNIX-DGRAM": "dgram",
    "UNIX-SEQPACKET": "seqpacket",
}
_SA_FAMILY_RE: Final = re.compile(r"sa_family=(\w+)")
_PORT_RE: Final = re.compile(r"sin6?_port=htons\((\d+)\)")
_INET_RE: Final = re.compile(r'inet_addr\("([^"]*)"\)|inet_pton\(AF_INET6?, "([^"]*)"')
_SUN_PATH_RE: Final = re.compile(r'sun_path=(@?)"((?:[^"\\]|\\.)*)"')
_MSG_NAME_RE: Final = re.compile(r"msg_name=(\{(?:[^{}\"]|\"(?:[^\"\\]|\\.)*\")*\})")
_HOW_FLAGS_RE: Final = re.compile(r"flags=([A-Z0-9_|]+)")
_PIDFD_RE: Final = re.compile(r"pid:(\d+)")


def family_value(name: str) -> str | int | None:
    """``AF_INET`` -> ``"inet"``; another known ``AF_*`` -> its number; else None."""
    name = name.strip()
    if name in _FAMILIES:
        return _FAMILIES[name]
    if name.isdigit():
        return int(name)
    import socket  # only for rare families: it is slow to import

    value = getattr(socket, name, None)
    return int(value) if isinstance(value, int) else None


def _norm(path: str) -> str:
    """posixpath.normpath, skipped when there is nothing to normalise."""
    if "/." in path or "//" in path or (path.endswith("/") and path != "/"):
        return posixpath.normpath(path)
    return path


def _join(base: str | None, path: str) -> str:
    if path.startswith("/"):
        return _norm(path)
    if base is None:
        return path
    if not path:
        return base
    return _norm(f"{base}/{path}" if base != "/" else f"/{path}")


class Tracker:
    """Follow the processes of one trace and turn their calls into events.

    ``cwd`` is the working directory of the first process. ``skip_execs`` is how many
    successful ``execve`` calls of the first process belong to the launcher rather
    than the command (1 when ``cvg-exec`` runs between strace and the command):
    everything before the next one is dropped. ``attached``: strace attached to the
    first process while it was still the launcher, before it exec'd the command, so
    what it does before its next successful exec is dropped too. ``exit_status`` is set
    when the first process ends (its exit status, or 128 + the signal that killed it).
    """

    def __init__(self, cwd: str | None, *, skip_execs: int = 0, attached: bool = False) -> None:
        self.root_cwd = cwd
        self.skip_execs = skip_execs
        self.attached = attached
        self.root: int | None = None
        self.root_execs = 0
        self.procs: dict[int, Proc] = {}
        self.exit_status: int | None = None
        self.started = False  # the command proper has been exec'd
        self.parser: TraceParser | None = None  # to see in-flight clones, when given
        # Records of processes whose parent is not known yet, replayed once it is.
        self._orphans: dict[int, list[Record]] = {}
        self.orphaned = 0  # processes whose parent was never found

    # ------------------------------------------------------------ processes

    def _proc(self, rec: Record) -> Proc | None:
        pid = rec.pid
        proc = self.procs.get(pid)
        if proc is not None:
            return proc
        if self.root is None:
            self.root = pid
            proc = Proc([self.root_cwd], self.skip_execs == 0 and not self.attached)
            self.procs[pid] = proc
            return proc
        forks = self._forks_in_flight()
        if len(forks) == 1:
            return self._child(forks[0][0], pid, forks[0][1])
        if forks and len(self._orphans.get(pid, ())) < MAX_HELD:
            return None  # several forks in flight: wait for the one that returns this pid
        # No fork in flight (a trace that began mid-way, a process strace attached to),
        # or too much held back: go on without knowing its working directory.
        self.orphaned += 1
        proc = Proc([None], self.started)
        self.procs[pid] = proc
        return proc

    def _forks_in_flight(self) -> list[tuple[int, str]]:
        """The processes in the middle of a clone/fork, with the call's argument text."""
        if self.parser is None:
            return []
        return [
            (pid, text)
            for pid, (_, name, text) in self.parser.in_flight().items()
            if name in _FORK_CALLS and pid in self.procs
        ]

    def _child(self, parent_pid: int, pid: int, flags: str) -> Proc:
        parent = self.procs[parent_pid]
        shared = "CLONE_FS" in flags or "CLONE_THREAD" in flags
        cell = parent.cwd if shared else [parent.cwd[0]]
        proc = Proc(cell, parent.recording)
        self.procs[pid] = proc
        return proc

    # ------------------------------------------------------------ records

    def feed(self, rec: Record) -> Iterator[RawEvent]:
        """The events one record makes (none, one, or a replay of held-back ones)."""
        if rec.kind in ("exit", "killed"):
            if rec.pid == self.root and self.exit_status is None:
                if rec.kind == "exit":
                    self.exit_status = rec.status
                elif rec.status is not None:
                    self.exit_status = 128 + rec.status
            return
        if rec.kind != "syscall":
            return
        proc = self._proc(rec)
        if proc is None:
            self._orphans.setdefault(rec.pid, []).append(rec)
            return
        held = self._orphans.pop(rec.pid, None)
        if held:  # waited too long for its parent: replay, then go on
            for r in held:
                yield from self._syscall(r, proc)
        yield from self._syscall(rec, proc)

    def _syscall(self, rec: Record, proc: Proc) -> Iterator[RawEvent]:
        name = rec.name
        ok = rec.errno is None and rec.ret != "?"
        if name in _FORK_CALLS:
            if ok and rec.ret is not None and rec.ret.isdigit():
                child = int(rec.ret)
                if child not in self.procs:
                    flags = " ".join(rec.args)
                    self._child(rec.pid, child, flags)
                held = self._orphans.pop(child, None)
                if held:
                    for r in held:
                        yield from self._syscall(r, self.procs[child])
            elif rec.errno in ("EPERM", "EACCES") and proc.recording:
                yield RawEvent(rec.pid or None, "other", name, rec.errno, rec.time)
            return
        if name in ("execve", "execveat") and ok and rec.pid == self.root and not self.started:
            self.root_execs += 1
            if self.root_execs > self.skip_execs:
                proc.recording = True
                self.started = True
        event = self._event(rec, proc)
        if event is not None and proc.recording:
            yield event

    def finish(self) -> Iterator[RawEvent]:
        """Replay what is still held back (processes whose parent never showed)."""
        orphans, self._orphans = self._orphans, {}
        for pid, recs in orphans.items():
            self.orphaned += 1
            proc = self.procs.setdefault(pid, Proc([None], self.started))
            for r in recs:
                yield from self._syscall(r, proc)

    # ------------------------------------------------------------ one call

    def _base(self, proc: Proc, arg: str | None) -> str | None:
        """The directory a relative path of this call is relative to."""
        if arg is None:
            return proc.cwd[0]
        fd = parse_fd(arg)
        if fd is None:
            return None
        if fd.number is None:  # AT_FDCWD, printed as AT_FDCWD</cwd> by -yy
            if fd.target is not None and fd.target.startswith("/"):
                proc.cwd[0] = fd.target
                return fd.target
            return proc.cwd[0]
        return fd.path

    def _path(self, rec: Record, proc: Proc, dirfd: int | None, index: int) -> str | None:
        args = rec.args
        if index >= len(args):
            return None
        raw = string_arg(args[index])
        dir_arg = args[dirfd] if dirfd is not None and dirfd < len(args) else None
        if raw is None:
            # NULL (utimensat on a descriptor) or not decoded: the descriptor's path.
            if dir_arg is not None:
                fd = parse_fd(dir_arg)
                return fd.path if fd is not None else None
            return None
        if raw.startswith("/"):
            return _norm(raw)
        return _join(self._base(proc, dir_arg), raw)

    def _event(self, rec: Record, proc: Proc) -> RawEvent | None:
        name = rec.name
        if rec.errno is not None:
            result = rec.errno
        elif rec.ret == "?":
            return None  # never returned (the process is gone)
        else:
            result = "ok"
        pid = rec.pid or None
        args = rec.args

        spec = _PATH_CALLS.get(name)
        if spec is not None:
            op, dirfd, index = spec
            if dirfd is not None and _on_descriptor(args, index):
                return None  # fstat-like: an open descriptor, no path looked up
            path = self._path(rec, proc, dirfd, index)
            if op == "chdir" and result == "ok" and path is not None:
                proc.cwd[0] = path
            return RawEvent(pid, op, name, result, rec.time, path=path)

        open_spec = _OPEN_CALLS.get(name)
        if open_spec is not None:
            dirfd, index = open_spec
            path = self._path(rec, proc, dirfd, index)
            if path is None and rec.ret_fd is not None and rec.ret_fd.startswith("/"):
                path = rec.ret_fd
            flags = _open_flags(name, args, index)
            event = RawEvent(pid, _open_op(flags), name, result, rec.time, path=path)
            event.directory = "O_DIRECTORY" in flags and event.op == "read"
            return event

        two = _TWO_PATH_CALLS.get(name)
        if two is not None:
            op, d1, i1, d2, i2 = two
            return RawEvent(
                pid,
                op,
                name,
                result,
                rec.time,
                path=self._path(rec, proc, d1, i1),
                path2=self._path(rec, proc, d2, i2),
            )

        if name == "fchdir":
            fd = parse_fd(args[0]) if args else None
            path = fd.path if fd is not None else None
            if result == "ok" and path is not None:
                proc.cwd[0] = path
            return RawEvent(pid, "chdir", name, result, rec.time, path=path)

        if name == "socket":
            family = family_value(args[0]) if args else None
            sock_type = _TYPES.get(args[1].split("|")[0].strip()) if len(args) > 1 else None
            return RawEvent(
                pid, "socket", name, result, rec.time, family=family, sock_type=sock_type
            )

        if name in ("connect", "bind"):
            if result == "EINPROGRESS":  # a non-blocking connect the kernel let through
                result = "ok"
            event = RawEvent(pid, name, name, result, rec.time)
            if args:
                event.sock_type = _fd_sock_type(args[0])
            if len(args) > 1:
                self._address(event, args[1], proc)
            return event

        if name in _SEND_CALLS:
            addr: str | None = None
            if name == "sendto":
                addr = args[4] if len(args) > 4 and args[4].startswith("{") else None
            elif len(args) > 1:
                m = _MSG_NAME_RE.search(args[1])
                addr = m.group(1) if m is not None else None
            if addr is None:
                return None  # a send on a connected socket: its connect was the event
            event = RawEvent(pid, "send", name, result, rec.time)
            event.sock_type = _fd_sock_type(args[0]) if args else None
            self._address(event, addr, proc)
            return event

        if name in _SIGNAL_CALLS:
            target: int | None = None
            if args:
                if name == "pidfd_send_signal":
                    m = _PIDFD_RE.search(args[0])
                    target = int(m.group(1)) if m is not None else None
                else:
                    target = _int(args[0])
            return RawEvent(pid, "signal", name, result, rec.time, target_pid=target)

        if name in OTHER_SYSCALLS:
            path = None
            if args:
                raw = string_arg(args[0])
                if raw is not None:
                    path = _join(proc.cwd[0], raw)
            return RawEvent(pid, "other", name, result, rec.time, path=path)
        return None

    def _address(self, event: RawEvent, addr: str, proc: Proc) -> None:
        m = _SA_FAMILY_RE.search(addr)
        if m is not None:
            event.family = family_value(m.group(1))
        p = _PORT_RE.search(addr)
        if p is not None:
            event.port = int(p.group(1))
        a = _INET_RE.search(addr)
        if a is not None:
            event.address = a.group(1) if a.group(1) is not None else a.group(2)
            return
        s = _SUN_PATH_RE.search(addr)
        if s is not None:
            value = unescape(s.group(2))
            if s.group(1):  # abstract: no file
                event.address = "@" + value
            else:
                event.address = value
                event.path = _join(proc.cwd[0], value)


# System calls that become "other" events when traced: the escape- and tamper-prone
# calls cvg's seccomp filter denies (see cvg_kernel.seccomp.DEFAULT_DENY).
OTHER_SYSCALLS: set[str] = set()


def _int(text: str) -> int | None:
    text = text.strip()
    lt = text.find("<")
    if lt >= 0:
        text = text[:lt]
    try:
        return int(text, 0)
    except ValueError:
        return None


def _on_descriptor(args: list[str], index: int) -> bool:
    """A ``*at()`` call with an empty path and AT_EMPTY_PATH: it works on the open
    descriptor itself (``fstat``), which needs no access to any path."""
    return (
        index < len(args)
        and args[index] == '""'
        and any("AT_EMPTY_PATH" in a for a in args[index + 1 :])
    )


def _open_flags(name: str, args: list[str], index: int) -> set[str]:
    if name == "openat2":
        how = args[index + 1] if len(args) > index + 1 else ""
        m = _HOW_FLAGS_RE.search(how)
        return set(m.group(1).split("|")) if m is not None else set()
    if name.startswith("open_tree"):
        return {"O_PATH"}
    text = args[index + 1] if len(args) > index + 1 else ""
    return set(text.split("|"))


def _open_op(flags: set[str]) -> str:
    if "O_PATH" in flags:
        return "stat"
    if "O_CREAT" in flags or "O_TMPFILE" in flags:
        return "create"
    if flags & {"O_WRONLY", "O_RDWR", "O_TRUNC", "O_APPEND"}:
        return "write"
    return "read"


def _fd_sock_type(arg: str) -> str | None:
    fd = parse_fd(arg)
    if fd is None or fd.target is None:
        return None
    kind = fd.target.split(":", 1)[0]
    return _FD_SOCK_TYPES.get(kind)


def _init_other() -> None:
    from cvg_kernel.seccomp import DEFAULT_DENY

    OTHER_SYSCALLS.update(DEFAULT_DENY)
    OTHER_SYSCALLS.difference_update(OPS_BY_SYSCALL)
    OTHER_SYSCALLS.difference_update(_FORK_CALLS)


_init_other()


def shapes_policy(name: str) -> bool:
    """Whether a call of this name can become an event a policy is learned from, so a
    trace line of it that was not understood may have cost the policy a rule."""
    return (
        name in _PATH_CALLS or name in _TWO_PATH_CALLS or name in _OPEN_CALLS
        or name in _SIGNAL_CALLS or name in _FORK_CALLS or name in _SEND_CALLS
        or name in OTHER_SYSCALLS or name in OPS_BY_SYSCALL
        or name in ("execve", "execveat", "fchdir", "socket", "connect", "bind")
    )  # fmt: skip


def events_from_lines(
    lines: Iterable[str], cwd: str | None, *, skip_execs: int = 0
) -> tuple[Iterator[RawEvent], Tracker]:
    """Parse strace lines and track them: an iterator of events, and the tracker (its
    ``exit_status`` and counters are final once the iterator is exhausted)."""
    parser = TraceParser()
    tracker = Tracker(cwd, skip_execs=skip_execs)
    tracker.parser = parser

    def gen() -> Iterator[RawEvent]:
        feed = parser.feed
        track = tracker.feed
        for line in lines:
            rec = feed(line)
            if rec is not None:
                yield from track(rec)
        yield from tracker.finish()

    return gen(), tracker
