"""A cgroup for one run's tree: exact process counts and memory the kernel charges.

RLIMIT_NPROC does not bind root, and RLIMIT_DATA with a sum of resident pages
misses what the kernel holds for a process outside its mappings: socket and
pipe buffers, files on tmpfs. A memory cgroup charges all of those to the
tool (measured on 6.18 with cgroup v1: AF_UNIX socket buffers, pipe buffers
and tmpfs pages each drove a 64 MiB cgroup to its OOM kill), and a pids
cgroup makes fork fail with EAGAIN at ``pids.max`` however fast the tool forks.

The run's cgroup is made below the supervisor's own, so every limit already
placed on the supervisor still applies. cgroup v2 is used when the
supervisor's cgroup can give a child the memory and pids controllers (the
root cgroup, or a delegated one); otherwise the v1 memory and pids
hierarchies when they are mounted and writable (root). An unprivileged user
without delegation gets None, and the supervisor samples instead.

The tool's first process joins between fork and exec by writing "0" (itself)
to descriptors opened here, before the fork: no path, no allocation.
"""

from __future__ import annotations

import errno
import os
import time

CGROUP2 = "cgroup2"
CGROUP1 = "cgroup1"

_SUPERVISOR_LEAF = "cvg-supervisor"


class RunCgroup:
    """The cgroup directories of one run (one for v2, memory and pids for v1)."""

    def __init__(self, version: str, dirs: list[str], events: str | None) -> None:
        self.version = version
        self.dirs = dirs
        self._events = events
        self.join_fds: list[int] = []
        try:
            for d in dirs:
                self.join_fds.append(os.open(f"{d}/cgroup.procs", os.O_WRONLY | os.O_CLOEXEC))
        except OSError:
            self.close()
            raise

    def enter(self) -> None:
        """Move the calling process in (between fork and exec)."""
        for fd in self.join_fds:
            os.write(fd, b"0")

    def add(self, pid: int) -> None:
        """Move ``pid`` in, from outside: for a process that forks nothing meanwhile."""
        for fd in self.join_fds:
            os.write(fd, str(pid).encode())

    def oom_kills(self) -> int:
        """How many of the run's processes the kernel killed at the memory limit."""
        if self._events is None:
            return 0
        try:
            with open(self._events, "rb") as f:
                text = f.read()
        except OSError:
            return 0
        for line in text.splitlines():
            key, _, value = line.partition(b" ")
            if key == b"oom_kill":
                return int(value)
        return 0

    def close(self) -> None:
        """Close the join descriptors and remove the directories. A directory
        still holding a task that is being torn down is busy for a moment: retried
        briefly, then left (it is empty by then and costs nothing)."""
        for fd in self.join_fds:
            os.close(fd)
        self.join_fds = []
        for d in self.dirs:
            for _ in range(200):
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError as e:
                    if e.errno != errno.EBUSY:
                        break
                    time.sleep(0.001)
        self.dirs = []


def _mounts() -> tuple[str | None, dict[str, str]]:
    """The cgroup2 mount point, and the v1 mount point of each controller."""
    v2: str | None = None
    v1: dict[str, str] = {}
    with open("/proc/self/mountinfo", "rb") as f:
        for line in f:
            left, _, right = line.partition(b" - ")
            fields = right.split()
            if len(fields) < 3:
                continue
            point = left.split()[4].decode()
            if fields[0] == b"cgroup2" and v2 is None:
                v2 = point
            elif fields[0] == b"cgroup":
                for option in fields[2].split(b","):
                    v1.setdefault(option.decode(), point)
    return v2, v1


def _own() -> tuple[str | None, dict[str, str]]:
    """This process's cgroup2 path and its v1 path per controller."""
    v2: str | None = None
    v1: dict[str, str] = {}
    with open("/proc/self/cgroup", "rb") as f:
        for line in f:
            _, controllers, path = line.rstrip(b"\n").split(b":", 2)
            if not controllers:
                v2 = path.decode()
            else:
                for c in controllers.split(b","):
                    v1[c.decode()] = path.decode()
    return v2, v1


def _write(path: str, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def _controllers(directory: str) -> set[str]:
    with open(f"{directory}/cgroup.controllers") as f:
        return set(f.read().split())


def _subtree(directory: str) -> set[str]:
    with open(f"{directory}/cgroup.subtree_control") as f:
        return set(f.read().split())


def _delegate(parent: str, wanted: set[str], root: bool) -> bool:
    """Enable ``wanted`` for the children of ``parent`` (the supervisor's own
    cgroup). A cgroup other than the root may not hold processes and hand
    controllers down, so when it holds only this process, this process first
    moves to a leaf of its own below it."""
    if wanted <= _subtree(parent):
        return True
    if not wanted <= _controllers(parent) or not os.access(parent, os.W_OK):
        return False
    enable = " ".join(f"+{c}" for c in sorted(wanted))
    try:
        _write(f"{parent}/cgroup.subtree_control", enable)
        return True
    except OSError as e:
        if root or e.errno != errno.EBUSY:
            return False
    with open(f"{parent}/cgroup.procs") as f:
        members = f.read().split()
    if members != [str(os.getpid())]:
        return False
    leaf = f"{parent}/{_SUPERVISOR_LEAF}"
    try:
        os.mkdir(leaf)
    except FileExistsError:
        pass
    _write(f"{leaf}/cgroup.procs", str(os.getpid()))
    try:
        _write(f"{parent}/cgroup.subtree_control", enable)
    except OSError:
        return False
    return True


def _name() -> str:
    return f"cvg-run-{os.getpid()}-{os.urandom(4).hex()}"


def make_v2(memory_bytes: int | None, pids: int | None) -> RunCgroup | None:
    mount, _ = _mounts()
    own, _ = _own()
    if mount is None or own is None:
        return None
    parent = os.path.normpath(f"{mount}/{own}")
    if os.path.basename(parent) == _SUPERVISOR_LEAF:
        parent = os.path.dirname(parent)  # moved there by an earlier run of this process
    wanted = {c for c, v in (("memory", memory_bytes), ("pids", pids)) if v is not None}
    try:
        if not _delegate(parent, wanted, root=own == "/"):
            return None
        path = f"{parent}/{_name()}"
        os.mkdir(path)
    except OSError:
        return None
    try:
        if memory_bytes is not None:
            _write(f"{path}/memory.max", str(memory_bytes))
            try:  # swapped-out pages would leave memory.max's count
                _write(f"{path}/memory.swap.max", "0")
            except OSError:
                pass
        if pids is not None:
            _write(f"{path}/pids.max", str(pids))
        events = f"{path}/memory.events" if memory_bytes is not None else None
        return RunCgroup(CGROUP2, [path], events)
    except OSError:
        os.rmdir(path)
        return None


def make_v1(memory_bytes: int | None, pids: int | None) -> RunCgroup | None:
    _, mounts = _mounts()
    _, own = _own()
    wanted = [(c, v) for c, v in (("memory", memory_bytes), ("pids", pids)) if v is not None]
    parents = []
    for controller, _value in wanted:
        if controller not in mounts or controller not in own:
            return None
        parent = os.path.normpath(f"{mounts[controller]}/{own[controller]}")
        if not os.access(parent, os.W_OK):
            return None
        parents.append(parent)
    name = _name()
    made: list[str] = []
    try:
        for parent, (controller, value) in zip(parents, wanted, strict=True):
            path = f"{parent}/{name}"
            os.mkdir(path)
            made.append(path)
            if controller == "memory":
                _write(f"{path}/memory.limit_in_bytes", str(value))
                try:  # with swap accounting, memory and swap together
                    _write(f"{path}/memory.memsw.limit_in_bytes", str(value))
                except OSError:
                    pass
            else:
                _write(f"{path}/pids.max", str(value))
        events = f"{made[0]}/memory.oom_control" if memory_bytes is not None else None
        return RunCgroup(CGROUP1, made, events)
    except OSError:
        for path in made:
            os.rmdir(path)
        return None


def make(memory_bytes: int | None, pids: int | None) -> RunCgroup | None:
    """A cgroup for one run with these limits, or None when none can be made.

    ``CVG_CGROUP=off`` in the environment makes none (the sampled bounds only),
    ``v1`` or ``v2`` only that version: for tests, and to compare the two.
    """
    if memory_bytes is None and pids is None:
        return None
    choice = os.environ.get("CVG_CGROUP", "")
    if choice == "off":
        return None
    found = None
    if choice != "v1":
        found = make_v2(memory_bytes, pids)
    if found is None and choice != "v2":
        found = make_v1(memory_bytes, pids)
    return found


def available() -> str | None:
    """Which cgroup version a run by this process would get, without keeping one."""
    found = make(1 << 40, 1 << 20)
    if found is None:
        return None
    found.close()
    return found.version
