"""Process-level primitives: no_new_privs, rlimits, descriptors, reaping, pidfds.

The supervisor uses the reaping half (subreaper, pidfds, the /proc scan); the
child uses the confinement half between fork and exec.
"""

from __future__ import annotations

# The C module the signal module wraps: its enums bring in enum, functools and
# collections, milliseconds of every cold start.
import _signal as signal
import errno
import os
import resource

from .libc import machine, prctl, syscall
from .syscall_table import TABLES

PR_SET_NO_NEW_PRIVS = 38
PR_GET_NO_NEW_PRIVS = 39
PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37
CLOSE_RANGE_CLOEXEC = 1 << 2
_FD_MAX = 0xFFFFFFFF

_NR = TABLES.get(machine(), {})

RLIMITS: dict[str, int] = {
    name[len("RLIMIT_") :].lower(): getattr(resource, name)
    for name in dir(resource)
    # RLIMIT_OFILE is the BSD alias of RLIMIT_NOFILE.
    if name.startswith("RLIMIT_") and name != "RLIMIT_OFILE"
}
UNLIMITED = resource.RLIM_INFINITY


class RlimitError(ValueError):
    """A requested limit is unknown or would raise a hard limit."""


def set_no_new_privs() -> None:
    prctl(PR_SET_NO_NEW_PRIVS, 1)


def no_new_privs() -> bool:
    return prctl(PR_GET_NO_NEW_PRIVS) == 1


def prepare_rlimits(spec: dict[str, object]) -> list[tuple[int, int, int]]:
    """Turn ``{"cpu": 30, "as": [soft, hard], ...}`` into setrlimit arguments.

    Done before fork so the child only loops over ready-made tuples. A request
    above the current hard limit is refused here: an unprivileged child would
    fail to raise it anyway, and root silently raising it is never intended.
    """
    out: list[tuple[int, int, int]] = []
    for name, value in spec.items():
        if name not in RLIMITS:
            raise RlimitError(f"unknown rlimit {name!r} (known: {', '.join(sorted(RLIMITS))})")
        soft, hard = _limit_pair(name, value)
        res = RLIMITS[name]
        _, cur_hard = resource.getrlimit(res)
        if cur_hard != UNLIMITED and (hard == UNLIMITED or hard > cur_hard):
            shown = "unlimited" if hard == UNLIMITED else str(hard)
            raise RlimitError(f"rlimit {name}: {shown} is above the current hard limit {cur_hard}")
        out.append((res, soft, hard))
    return out


def _limit_pair(name: str, value: object) -> tuple[int, int]:
    def one(v: object) -> int:
        if v == "unlimited":
            return UNLIMITED
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise RlimitError(f"rlimit {name}: {v!r} is not a non-negative integer or 'unlimited'")
        return v

    if isinstance(value, list | tuple):
        if len(value) != 2:
            raise RlimitError(f"rlimit {name}: expected [soft, hard], got {value!r}")
        soft, hard = one(value[0]), one(value[1])
    else:
        soft = hard = one(value)
    if hard != UNLIMITED and (soft == UNLIMITED or soft > hard):
        raise RlimitError(f"rlimit {name}: soft limit above hard limit")
    return soft, hard


def apply_rlimits(prepared: list[tuple[int, int, int]]) -> None:
    for res, soft, hard in prepared:
        resource.setrlimit(res, (soft, hard))


def count_user_processes(uid: int) -> int:
    """Processes (not threads) currently owned by ``uid``, as RLIMIT_NPROC counts them.

    The kernel counts tasks per real uid; threads count too, so this errs low,
    which only makes the backstop tighter.
    """
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    count += 1
            except OSError:
                continue
    return count


def cloexec_from(first: int = 3) -> None:
    """Mark every descriptor >= ``first`` close-on-exec.

    Marking instead of closing keeps a supervisor's error pipe usable until the
    exec succeeds, and still guarantees nothing inherited reaches the tool.
    """
    try:
        syscall(_NR["close_range"], first, _FD_MAX, CLOSE_RANGE_CLOEXEC)
    except OSError:
        # Kernels before 5.11: walk what is open instead.
        for name in os.listdir("/proc/self/fd"):
            fd = int(name)
            if fd >= first:
                try:
                    os.set_inheritable(fd, False)
                except OSError:
                    pass


def set_child_subreaper() -> None:
    """Orphans of our descendants (double-forked daemons) re-parent to us, not init."""
    prctl(PR_SET_CHILD_SUBREAPER, 1)


def pidfd_open(pid: int) -> int:
    return syscall(_NR["pidfd_open"], pid, 0)


def pidfd_send_signal(pidfd: int, sig: int = signal.SIGKILL) -> None:
    syscall(_NR["pidfd_send_signal"], pidfd, sig, None, 0)


# A process that exited (or was reaped) between listing and reading: not an error.
_GONE = (errno.ENOENT, errno.ESRCH)


def gone(e: OSError) -> bool:
    """Whether ``e`` only says the process it was about no longer exists.

    Anything else (EMFILE when our descriptor limit was lowered, ENFILE, ENOMEM)
    means the scan could not look, and must never be taken for "no process".
    """
    return e.errno in _GONE


def parent_of(pid: int) -> int | None:
    """The ppid of ``pid`` from /proc, or None if it is gone.

    Raises OSError when /proc could not be read at all (see ``gone``).
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError as e:
        if gone(e):
            return None
        raise
    # comm may hold spaces and parentheses: the fields start after the last ')'.
    fields = stat[stat.rindex(b")") + 2 :].split()
    return int(fields[1])


_HAVE_CHILDREN_FILE = os.path.exists(f"/proc/self/task/{os.getpid()}/children")


def children_of(pid: int) -> list[int]:
    """Direct children of ``pid`` (every thread's), from /proc/PID/task/TID/children.

    [] when ``pid`` is gone; OSError when /proc could not be read (see ``gone``).
    """
    out: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError as e:
        if gone(e):
            return out
        raise
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                out.extend(int(c) for c in f.read().split())
        except OSError as e:
            if gone(e):
                continue
            raise
    return out


class OwnChildren:
    """This process's direct children, readable with no new descriptor.

    Opened ahead of time (one descriptor per thread's children file), then read
    with pread at offset 0, which makes the kernel generate the list afresh. A
    supervisor whose RLIMIT_NOFILE was lowered to 0 can still find, kill and
    reap its children this way: as a subreaper it then inherits their
    children, and so on down the tree.
    """

    def __init__(self, tids: tuple[int, ...] = ()) -> None:
        me = os.getpid()
        self.fds: list[int] = []
        for tid in dict.fromkeys((me, *tids)):
            self.fds.append(os.open(f"/proc/{me}/task/{tid}/children", os.O_RDONLY | os.O_CLOEXEC))

    def read(self) -> list[int]:
        out: list[int] = []
        for fd in self.fds:
            chunks: list[bytes] = []
            while True:
                chunk = os.pread(fd, 65536, sum(map(len, chunks)))
                if not chunk:
                    break
                chunks.append(chunk)
            out.extend(int(c) for c in b"".join(chunks).split())
        return out

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds = []


def descendants(root: int) -> list[int]:
    """Every live process below ``root`` (not ``root`` itself).

    Walks the children files when the kernel has them (CONFIG_PROC_CHILDREN,
    as Debian and Ubuntu do): the cost follows the size of the tree, not of
    the whole process table. Either way it is a racy snapshot, so callers
    that kill loop until a scan comes back empty. Raises OSError when /proc
    could not be read: an empty list always means "none".
    """
    if _HAVE_CHILDREN_FILE:
        out: list[int] = []
        stack = [root]
        while stack:
            for child in children_of(stack.pop()):
                out.append(child)
                stack.append(child)
        return out
    return descendants_by_scan(root)


def descendants_by_scan(root: int) -> list[int]:
    """``descendants`` from one scan of every /proc/PID/stat (the portable way).

    Raises OSError when /proc could not be read (see ``gone``)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            ppid = parent_of(int(entry))
            if ppid is not None:
                children.setdefault(ppid, []).append(int(entry))
    out: list[int] = []
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), ()):
            out.append(child)
            stack.append(child)
    return out


def signal_name(sig: int) -> str:
    """``SIGTERM`` for 15; ``signal 99`` for a number that names none."""
    import signal as named  # the enums, only when a name is wanted

    try:
        return named.Signals(sig).name
    except ValueError:
        return f"signal {sig}"
