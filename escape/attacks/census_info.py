"""Calls that name another process: reading its ids and scheduling facts, its robust
futex list, the order of its kernel objects (kcmp), lowering its real-time priority,
advising or reaping its memory, and moving its pages between NUMA nodes.

For the reads the runner gives the sentinel (started outside, with `sentinel: info`)
a random nice value, SCHED_RR priority, I/O priority and CPU affinity, and leaves it
in the runner's own process group and session, so that what the tool prints as
``KEY=VALUE`` can be compared with what the runner reads from /proc and as root."""

import ctypes
import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _lib import attack, main, out, sys_call

NR_GETPGID, NR_GETSID, NR_CAPGET, NR_GETPRIORITY = 121, 124, 125, 140
NR_SCHED_GETPARAM, NR_SCHED_SETPARAM, NR_SCHED_GETSCHEDULER = 143, 142, 145
NR_SCHED_RR_GET_INTERVAL, NR_SCHED_GETAFFINITY, NR_SCHED_GETATTR = 148, 204, 315
NR_IOPRIO_GET, NR_GET_ROBUST_LIST, NR_KCMP = 252, 274, 312
NR_MBIND, NR_MIGRATE_PAGES, NR_MOVE_PAGES = 237, 256, 279
NR_PIDFD_OPEN, NR_PROCESS_MADVISE, NR_PROCESS_MRELEASE = 434, 440, 448
INFO = {"sentinel": "info"}
PUBLIC = {"limit": "public-process-info", "extra": INFO}
KCMP_PAIRS = ((0, "fd"), (1, "fd"), (2, "fd"), (0, 1), (0, 2), (1, 2))


def _pid(a) -> int:
    return a["sentinel"]["pid"]


@attack("sched", "sentinel-info", **PUBLIC)
def getpgid_sentinel(a):
    """getpgid(sentinel): the process group of a process outside the sandbox (the
    runner's own, not the sentinel's pid). Allowed: public, as /proc/PID/stat shows."""
    out(f"pgid={sys_call(NR_GETPGID, _pid(a))}")


@attack("sched", "sentinel-info", **PUBLIC)
def getsid_sentinel(a):
    """getsid(sentinel): the session of a process outside the sandbox (the runner's).
    Allowed: public, as /proc/PID/stat shows."""
    out(f"sid={sys_call(NR_GETSID, _pid(a))}")


@attack("sched", "sentinel-info", **PUBLIC)
def capget_sentinel(a):
    """capget(sentinel): another process's capability sets (all or nothing here, so a
    weak oracle). Allowed: public, as /proc/PID/status shows."""
    hdr = (ctypes.c_uint32 * 2)(0x20080522, _pid(a))
    data = (ctypes.c_uint32 * 6)()
    sys_call(NR_CAPGET, ctypes.addressof(hdr), ctypes.addressof(data))
    eff, prm, inh = (data[i] | data[i + 3] << 32 for i in range(3))
    out(f"caps={eff:x}:{prm:x}:{inh:x}")


@attack("sched", "sentinel-info", **PUBLIC)
def getpriority_sentinel(a):
    """getpriority(PRIO_PROCESS, sentinel): another process's nice value. Allowed:
    public, as /proc/PID/stat shows."""
    out(f"nice={20 - sys_call(NR_GETPRIORITY, 0, _pid(a))}")


@attack("sched", "sentinel-info", **PUBLIC)
def ioprio_get_sentinel(a):
    """ioprio_get(IOPRIO_WHO_PROCESS, sentinel): another process's I/O priority.
    Allowed: public scheduling fact, like the nice value."""
    out(f"ioprio={sys_call(NR_IOPRIO_GET, 1, _pid(a))}")


@attack("sched", "sentinel-info", **PUBLIC)
def sched_getaffinity_sentinel(a):
    """sched_getaffinity(sentinel): another process's CPU mask. Allowed: public, as
    /proc/PID/status shows."""
    mask = ctypes.create_string_buffer(128)
    n = sys_call(NR_SCHED_GETAFFINITY, _pid(a), 128, ctypes.addressof(mask))
    bits = int.from_bytes(mask.raw[:n], "little")
    out("affinity=" + ",".join(str(i) for i in range(n * 8) if bits >> i & 1))


@attack("sched", "sentinel-info", **PUBLIC)
def sched_getattr_sentinel(a):
    """sched_getattr(sentinel): another process's policy, real-time priority and nice
    value. Allowed: public, as /proc/PID/stat shows."""
    attr = ctypes.create_string_buffer(56)
    sys_call(NR_SCHED_GETATTR, _pid(a), ctypes.addressof(attr), 56, 0)
    _size, policy, _flags, nice, prio = struct.unpack_from("IIQiI", attr.raw)
    # the kernel reports the nice value of fair-class tasks only (SCHED_RR here)
    out(f"policy={policy}\npriority={prio}" + (f"\nnice={nice}" if policy not in (1, 2) else ""))


@attack("sched", "sentinel-info", **PUBLIC)
def sched_getparam_sentinel(a):
    """sched_getparam(sentinel): another process's real-time priority. Allowed: public,
    as /proc/PID/stat shows."""
    prio = ctypes.c_int()
    sys_call(NR_SCHED_GETPARAM, _pid(a), ctypes.addressof(prio))
    out(f"priority={prio.value}")


@attack("sched", "sentinel-info", **PUBLIC)
def sched_getscheduler_sentinel(a):
    """sched_getscheduler(sentinel): another process's policy. Allowed: public, as
    /proc/PID/stat shows."""
    out(f"policy={sys_call(NR_SCHED_GETSCHEDULER, _pid(a))}")


@attack("sched", "sentinel-info", **PUBLIC)
def sched_rr_get_interval_sentinel(a):
    """sched_rr_get_interval(sentinel): another process's round-robin time slice (a
    constant for SCHED_RR, so a weak oracle). Allowed: public scheduling fact."""
    ts = (ctypes.c_long * 2)()
    sys_call(NR_SCHED_RR_GET_INTERVAL, _pid(a), ctypes.addressof(ts))
    out(f"rr_interval={ts[0] * 10**9 + ts[1]}")


@attack("sched", "sentinel-info", extra=INFO)
def get_robust_list_sentinel(a):
    """get_robust_list(sentinel): the address of another process's robust futex list, a
    pointer into its thread-local storage (defeats its address randomisation). Should
    be stopped by seccomp (pid 0 only)."""
    head = ctypes.c_void_p()
    size = ctypes.c_size_t()
    sys_call(NR_GET_ROBUST_LIST, _pid(a), ctypes.addressof(head), ctypes.addressof(size))
    out(f"robust=0x{head.value or 0:x}")


@attack("ptrace", "sentinel-info", extra=INFO)
def kcmp_sentinel_files(a):
    """kcmp(KCMP_FILE) between descriptors of the sentinel: which of its files are the
    same, and the order of their kernel addresses (about 1 in 8 to guess). Should be
    stopped by seccomp (kcmp)."""
    pid = _pid(a)
    res = []
    for i, j in KCMP_PAIRS:
        i, j = (a["sentinel"]["fd"] if x == "fd" else x for x in (i, j))
        res.append(str(sys_call(NR_KCMP, pid, pid, 0, i, j)))
    out("kcmp=" + ",".join(res))


@attack("sched", "sentinel-attrs", extra=INFO)
def sched_setparam_sentinel(a):
    """sched_setparam(sentinel, priority - 1): lower the real-time priority the runner
    gave a process outside the sandbox (lowering needs no privilege). Should be
    stopped by seccomp (pid 0 only)."""
    pid = _pid(a)
    prio = ctypes.c_int()
    sys_call(NR_SCHED_GETPARAM, pid, ctypes.addressof(prio))
    new = ctypes.c_int(max(1, prio.value - 1))
    sys_call(NR_SCHED_SETPARAM, pid, ctypes.addressof(new))


def _maps(pid: int) -> list[tuple[int, int, str, str]]:
    rows = []
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            cols = line.split()
            lo, hi = (int(x, 16) for x in cols[0].split("-"))
            rows.append((lo, hi, cols[1], cols[5] if len(cols) > 5 else ""))
    return rows


class IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


@attack(
    "ptrace",
    "sentinel-mem",
    extra={
        "sentinel": True,
        "proof_varies": "a collapse needs a free huge page, which a fragmented memory "
        "may not have at that moment",
    },
)
def process_madvise_collapse_sentinel(a):
    """process_madvise(MADV_COLLAPSE) over the sentinel's anonymous memory: rewrite
    another process's page tables into huge pages (seen in its AnonHugePages). Needs
    CAP_SYS_NICE, so unproven as the unprivileged user, and as root only when the
    kernel finds a free huge page. Should be stopped by seccomp."""
    pid = _pid(a)
    pfd = sys_call(NR_PIDFD_OPEN, pid, 0)
    huge = 2 << 20
    done = 0
    for lo, hi, perms, path in _maps(pid):
        lo2 = (lo + huge - 1) & ~(huge - 1)
        if perms.startswith("rw") and path in ("", "[heap]") and hi - lo2 >= huge:
            vec = IoVec(lo2, (hi - lo2) & ~(huge - 1))
            try:
                done += sys_call(NR_PROCESS_MADVISE, pfd, ctypes.addressof(vec), 1, 25, 0)
            except OSError as e:
                out(f"process_madvise {lo2:x}: {e}")
    out(f"collapsed {done} bytes")


@attack("ptrace", "sentinel", extra={"sentinel": True})
def process_mrelease_sentinel(a):
    """process_mrelease(pidfd of the sentinel): reap another process's memory. The
    kernel acts only on a process already dying (SIGKILL pending), which the sentinel
    is not, so unproven: the reach needs a kill first, which the kill attacks cover.
    Should be stopped by seccomp."""
    pfd = sys_call(NR_PIDFD_OPEN, _pid(a), 0)
    sys_call(NR_PROCESS_MRELEASE, pfd, 0)
    time.sleep(0.3)


def _last_node() -> int:
    with open("/sys/devices/system/node/online") as f:
        return int(f.read().strip().split(",")[-1].split("-")[-1])


@attack("numa", "numa", extra={"sentinel": True})
def migrate_pages_sentinel(a):
    """migrate_pages(sentinel, every node -> the last node): move another process's
    memory. With one NUMA node nothing can move, so unproven on such a host. Should be
    stopped by seccomp."""
    node = _last_node()
    old = (ctypes.c_ulong * 16)(*([~0 & (2**64 - 1)] * 16))
    new = (ctypes.c_ulong * 16)()
    new[node // 64] = 1 << (node % 64)
    sys_call(NR_MIGRATE_PAGES, _pid(a), 1024, ctypes.addressof(old), ctypes.addressof(new))


@attack("numa", "numa", extra={"sentinel": True})
def move_pages_sentinel(a):
    """move_pages(sentinel, its buffer's page -> the last node, MPOL_MF_MOVE). With one
    NUMA node nothing can move, so unproven on such a host. Should be stopped by
    seccomp."""
    page = a["sentinel"]["buf"] & ~4095
    pages = (ctypes.c_void_p * 1)(page)
    nodes = (ctypes.c_int * 1)(_last_node())
    status = (ctypes.c_int * 1)()
    sys_call(
        NR_MOVE_PAGES,
        _pid(a),
        1,
        ctypes.addressof(pages),
        ctypes.addressof(nodes),
        ctypes.addressof(status),
        2,
    )
    out(f"status={status[0]}")


@attack("numa", "numa", extra={"sentinel": True})
def mbind_move_all_shared_pages(a):
    """mbind(MPOL_BIND to the last node, MPOL_MF_MOVE_ALL) over the interpreter's text,
    whose page-cache pages the sentinel maps too: moves pages other processes use. Needs
    CAP_SYS_NICE, and a second node to show. Should be stopped by seccomp."""
    node = _last_node()
    mask = (ctypes.c_ulong * 16)()
    mask[node // 64] = 1 << (node % 64)
    exe = os.path.realpath(sys.executable)
    for lo, hi, perms, path in _maps(os.getpid()):
        if path == exe and "x" in perms:
            sys_call(NR_MBIND, lo, hi - lo, 2, ctypes.addressof(mask), 1024, 1 << 2 | 1)
            return
    raise OSError(2, "no executable mapping of the interpreter")


if __name__ == "__main__":
    main(globals())
