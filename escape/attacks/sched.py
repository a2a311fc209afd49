"""Limits, priorities and scheduling of processes outside the sandbox: a sentinel of
the same user (started by the runner) and cvg-run itself. The runner reads the
sentinel's limits, nice value, scheduling policy, CPU affinity and I/O priority from
/proc (and ioprio_get) before and after the run."""

import ctypes
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _lib import attack, leave_a_daemon, main, out, sys_call

NR_PRLIMIT64, NR_SCHED_SETATTR, NR_IOPRIO_SET = 302, 314, 251
RLIMIT_CPU, RLIMIT_NOFILE = 0, 7


def _prlimit(pid, resource, soft, hard):
    new = ctypes.create_string_buffer(struct.pack("QQ", soft, hard))
    sys_call(NR_PRLIMIT64, pid, resource, ctypes.addressof(new), 0)


@attack("sched", "sentinel-attrs")
def prlimit_cpu_sentinel(a):
    """prlimit64(sentinel, RLIMIT_CPU, 1): cap another process's CPU time so the kernel
    kills it. Should be stopped by seccomp (prlimit64 on a pid other than 0 or self)."""
    _prlimit(a["sentinel"]["pid"], RLIMIT_CPU, 1, 1)


@attack("sched", "supervisor-fate", extra={"deadline": 12.0})
def prlimit_nofile_supervisor(a):
    """prlimit64(cvg-run, RLIMIT_NOFILE, 0) so the supervisor cannot open /proc or its
    run record, then double-fork a daemon it must kill at the end. Should be stopped by
    seccomp (prlimit64 on another pid)."""
    _prlimit(os.getppid(), RLIMIT_NOFILE, 0, 0)
    leave_a_daemon()


@attack("sched", "sentinel-attrs")
def setpriority_sentinel(a):
    """setpriority(PRIO_PROCESS, sentinel, 10): renice a process outside the sandbox.
    Should be stopped by seccomp (setpriority on another process)."""
    os.setpriority(os.PRIO_PROCESS, a["sentinel"]["pid"], 10)


@attack("sched", "sentinel-attrs", extra={"renice_all": True, "alone": True})
def setpriority_user_all(a):
    """setpriority(PRIO_USER, 0, 7): renice every process of the user, the sentinel
    among them (the runner puts every nice value back). Should be stopped by seccomp
    (PRIO_USER and PRIO_PGRP)."""
    try:
        os.setpriority(os.PRIO_USER, 0, 7)
    except OSError as e:  # some processes could not be changed; the rest were
        out(f"setpriority: {e}")


@attack("sched", "sentinel-attrs")
def sched_setaffinity_sentinel(a):
    """sched_setaffinity(sentinel, {0}): pin a process outside the sandbox to one CPU.
    Should be stopped by seccomp (another pid)."""
    os.sched_setaffinity(a["sentinel"]["pid"], {0})


@attack("sched", "sentinel-attrs")
def sched_setscheduler_sentinel(a):
    """sched_setscheduler(sentinel, SCHED_IDLE): starve a process outside the sandbox.
    Should be stopped by seccomp (another pid)."""
    os.sched_setscheduler(a["sentinel"]["pid"], os.SCHED_IDLE, os.sched_param(0))


@attack("sched", "sentinel-attrs")
def sched_setattr_sentinel(a):
    """sched_setattr(sentinel, {SCHED_BATCH, nice 5}). Should be stopped by seccomp
    (another pid)."""
    attr = ctypes.create_string_buffer(struct.pack("IIQiIQQQII", 56, 3, 0, 5, 0, 0, 0, 0, 0, 0))
    sys_call(NR_SCHED_SETATTR, a["sentinel"]["pid"], ctypes.addressof(attr), 0)


@attack("sched", "sentinel-attrs")
def ioprio_set_sentinel(a):
    """ioprio_set(IOPRIO_WHO_PROCESS, sentinel, class idle): starve another process's
    I/O. Should be stopped by seccomp (another pid, or a user or group)."""
    sys_call(NR_IOPRIO_SET, 1, a["sentinel"]["pid"], 3 << 13)


if __name__ == "__main__":
    main(globals())
