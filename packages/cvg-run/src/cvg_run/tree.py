"""What the supervisor reads about the tool's tree, and how it survives a hostile tool.

One scan reads /proc/PID/stat of every member: tasks (threads count, since a
thread costs the kernel what a process does and RLIMIT_NPROC does not bind
root), CPU time and resident pages. Memory the tool holds outside any
mapping's resident pages (a memfd, or a tmpfs file whose last link is gone,
filled with write()) is found by a slower walk of each member's descriptors
and maps, counted once per inode.

A tool runs as the supervisor's user, so it can lower the supervisor's own
RLIMIT_NOFILE (prlimit64 on its pid). ``Reserve`` is set aside before the tool
starts so that the supervisor can still end the tree when that happens.
"""

from __future__ import annotations

import errno
import os
import resource
import select
import stat

from cvg_kernel import process
from cvg_kernel.libc import prctl

PR_GET_DUMPABLE = 3

_TICK = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")
_SPARE = 4
# Filesystems whose files live in memory: a file there with no link left is
# memory the tool holds, not disk.
_MEMORY_FS = {"tmpfs", "ramfs", "devtmpfs", "shm"}


class Usage:
    __slots__ = ("resident", "seconds", "tasks")

    def __init__(self, tasks: int, seconds: float, resident: int) -> None:
        self.tasks = tasks
        self.seconds = seconds
        self.resident = resident


def _stat_fields(pid: int) -> list[bytes] | None:
    """/proc/PID/stat from field 3 on, or None if ``pid`` is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError as e:
        if process.gone(e):
            return None
        raise
    return data[data.rindex(b")") + 2 :].split()


def usage(members: list[int], reapers: tuple[int, ...] = ()) -> Usage:
    """Tasks, CPU seconds and resident bytes of ``members``, each with what it
    has reaped, plus what ``reapers`` (strace, under --trace) reaped, without
    their own use. Raises OSError when /proc cannot be read (see process.gone)."""
    tasks = ticks = pages = 0
    for reaper in reapers:
        fields = _stat_fields(reaper)
        if fields is not None:
            ticks += int(fields[13]) + int(fields[14])
    for member in members:
        fields = _stat_fields(member)
        if fields is None:
            continue
        # Fields 14-17 are utime, stime, cutime, cstime; 20 num_threads; 24 rss.
        ticks += int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])
        tasks += int(fields[17])
        pages += int(fields[21])
    return Usage(tasks, ticks / _TICK, pages * _PAGE)


def memory_devices() -> frozenset[int]:
    """st_dev of every mounted in-memory filesystem (tmpfs, ramfs, devtmpfs)."""
    devs = set()
    with open("/proc/self/mountinfo", "rb") as f:
        for line in f:
            left, _, right = line.partition(b" - ")
            if right.split()[:1] and right.split()[0].decode() in _MEMORY_FS:
                major, minor = left.split()[2].split(b":")
                devs.add(os.makedev(int(major), int(minor)))
    return frozenset(devs)


def held_memory(
    members: list[int], memory_devs: frozenset[int], hidden: set[int] | None = None
) -> int:
    """Bytes allocated to memfds and unlinked in-memory files that ``members``
    hold open or mapped, each inode once.

    Resident pages of a mapping are in RSS already; this is what write() can
    put in such a file without mapping it. A mapped file whose descriptor was
    closed is sized through /proc/PID/map_files, which needs CAP_SYS_ADMIN;
    without it the mapping's own length is counted instead (a lower bound).

    A member whose descriptors cannot be read (EACCES: it is not dumpable, or
    it is exiting and has let go of its memory) is added to ``hidden``, or
    skipped when ``hidden`` is None.
    """
    sizes: dict[tuple[int, int], int] = {}
    for pid in members:
        if not _held_by_fds(pid, memory_devs, sizes):
            if hidden is not None:
                hidden.add(pid)
            continue
        _held_by_maps(pid, memory_devs, sizes)
    return sum(sizes.values())


def socket_memory(members: list[int], room: int, inet: bool = False) -> int:
    """Bytes in the buffers of the sockets ``members`` hold open (AF_UNIX, or
    with ``inet`` TCP and UDP), each socket once.

    When every such socket of the machine holds no more than ``room`` bytes
    together, that sum is returned without looking at any descriptor: the
    limit cannot be past, whoever holds them. Otherwise each member's
    descriptors are read to find its own. A socket in flight (sent over
    another socket with SCM_RIGHTS and closed) is held by no descriptor and
    is not found."""
    # Imported here: struct and _socket cost every cold start, and a run whose
    # memory a cgroup holds never samples sockets.
    from cvg_kernel import sockmem

    held = sockmem.socket_memory(inet)
    everything = sum(held.values())
    if everything <= room:
        return everything
    inodes: set[int] = set()
    for pid in members:
        try:
            inodes |= sockmem.socket_inodes(pid)
        except OSError as e:
            if process.gone(e) or e.errno == errno.EACCES:
                continue  # a hidden member is refused by the walk of held_memory
            raise
    return sum(held[inode] for inode in inodes if inode in held)


def directory_memory(path: str, memory_devs: frozenset[int]) -> int:
    """Bytes allocated to the files under ``path`` when it is on an in-memory
    filesystem (a tmpfs ${SCRATCH}), each inode once; 0 on disk."""
    try:
        if os.stat(path).st_dev not in memory_devs:
            return 0
    except FileNotFoundError:
        return 0
    sizes: dict[tuple[int, int], int] = {}
    stack = [path]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            continue
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            if stat.S_ISDIR(st.st_mode):
                stack.append(entry.path)
            if st.st_dev in memory_devs:
                sizes[(st.st_dev, st.st_ino)] = st.st_blocks * 512
    return sum(sizes.values())


def refuse_hidden(hidden: set[int], before: set[int]) -> None:
    """Raise PermissionError for a member hidden at two walks in a row: not
    just exiting, but made non-dumpable. What cannot be counted ends the run."""
    still = hidden & before
    if still:
        raise PermissionError(
            errno.EACCES, f"process {min(still)} hides its descriptors (it is not dumpable)"
        )


def _in_memory(target: str, st: os.stat_result, memory_devs: frozenset[int]) -> bool:
    if target.startswith("/memfd:"):
        return True
    return st.st_nlink == 0 and st.st_dev in memory_devs and stat.S_ISREG(st.st_mode)


def _dead(pid: int) -> bool:
    """Whether ``pid`` is a zombie (or gone): its state in /proc/PID/stat."""
    try:
        fields = _stat_fields(pid)
    except OSError:
        return True
    return fields is None or fields[0] in (b"Z", b"X")


def _held_by_fds(pid: int, memory_devs: frozenset[int], sizes: dict[tuple[int, int], int]) -> bool:
    """Add what ``pid`` holds open to ``sizes``; False when it cannot be read."""
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError as e:
        if process.gone(e):
            return True
        if e.errno == errno.EACCES:
            # A zombie holds nothing, and may stay one for a while when its parent
            # is slow to reap it (a loaded machine): not hidden, only dead.
            return _dead(pid)
        raise
    for name in names:
        link = f"/proc/{pid}/fd/{name}"
        try:
            target = os.readlink(link)
            if not (target.startswith("/memfd:") or target.endswith(" (deleted)")):
                continue
            st = os.stat(link)
        except OSError as e:
            if process.gone(e) or e.errno == errno.EACCES:
                continue
            raise
        if _in_memory(target, st, memory_devs):
            sizes[(st.st_dev, st.st_ino)] = st.st_blocks * 512
    return True


def _held_by_maps(pid: int, memory_devs: frozenset[int], sizes: dict[tuple[int, int], int]) -> None:
    try:
        with open(f"/proc/{pid}/maps", "rb") as f:
            lines = f.read().splitlines()
    except OSError as e:
        if process.gone(e) or e.errno == errno.EACCES:
            return
        raise
    for line in lines:
        parts = line.split(maxsplit=5)
        if len(parts) < 6 or not (parts[5].startswith(b"/memfd:") or b" (deleted)" in parts[5]):
            continue
        major, minor = parts[3].split(b":")
        key = (os.makedev(int(major, 16), int(minor, 16)), int(parts[4]))
        if key in sizes:
            continue
        path = parts[5].decode(errors="replace")
        if not path.startswith("/memfd:") and key[0] not in memory_devs:
            continue
        try:
            st = os.stat(f"/proc/{pid}/map_files/{parts[0].decode()}")
        except OSError as e:
            if process.gone(e):
                continue
            if e.errno not in (errno.EPERM, errno.EACCES):
                raise
            start, end = (int(x, 16) for x in parts[0].split(b"-"))
            sizes[key] = max(sizes.get(key, 0), end - start)
            continue
        if _in_memory(path, st, memory_devs):
            sizes[key] = st.st_blocks * 512


class Reserve:
    """Set aside before the tool starts, for ending its tree whatever it does.

    It keeps this process's RLIMIT_NOFILE as it was (root may raise it back
    after the tool lowered it), a few spare descriptors to close when only a
    low limit is left (the kernel hands out the lowest free number), and the
    children files opened ahead (process.OwnChildren), which need no new
    descriptor at all. Its epoll waits with no limit on descriptors (poll()
    fails once RLIMIT_NOFILE is below its count), and the in-memory
    filesystems are listed now, while /proc/self/mountinfo can be opened.
    """

    def __init__(self) -> None:
        self.nofile = resource.getrlimit(resource.RLIMIT_NOFILE)
        self.memory_devs = memory_devices()
        # A member the supervisor cannot inspect hid itself on purpose only if
        # it did not inherit that from us: our children are as dumpable as we
        # are until they exec.
        self.dumpable = os.geteuid() == 0 or prctl(PR_GET_DUMPABLE) == 1
        self.children = process.OwnChildren()
        self.poller = select.epoll(flags=select.EPOLL_CLOEXEC)
        self.spare = [os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC) for _ in range(_SPARE)]

    def tampered(self) -> bool:
        """Whether this process's RLIMIT_NOFILE is no longer what it was."""
        return resource.getrlimit(resource.RLIMIT_NOFILE) != self.nofile

    def relieve(self) -> bool:
        """Raise a lowered RLIMIT_NOFILE back as far as this process may (all
        the way with CAP_SYS_RESOURCE), or else free the lowest spare
        descriptor. Returns whether either made room."""
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        for wanted in (self.nofile, (min(self.nofile[0], hard), hard)):
            if wanted[0] <= soft:
                continue
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, wanted)
                return True
            except (OSError, ValueError):
                continue
        if self.spare:
            os.close(self.spare.pop(0))
            return True
        return False

    def close(self) -> None:
        self.children.close()
        self.poller.close()
        for fd in self.spare:
            os.close(fd)
        self.spare = []
