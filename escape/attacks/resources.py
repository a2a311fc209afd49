"""Resources and lifetime, under escape/policies/limits.yaml (wall clock 3 s, CPU 1 s,
memory 192 MiB, file size 8 MiB, 64 open files, 16 processes). The oracles measure
from outside: the process table during and after the run, resident memory, CPU time
from wait4, descriptor counts, and the sizes of the files written."""

import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _lib import attack, hold_descriptors, leave_a_daemon, main

LIMITS = {
    "wall": 4.5,
    "processes": 16,
    "memory_mb": 192,
    "cpu_seconds": 1,
    "file_size_mb": 8,
    "open_files": 64,
    "late": 1.5,
}


def _lim(**kw):
    return {"limits": {**LIMITS, **kw}, "deadline": 6.0}


def _cpu_lim():
    # The CPU attacks spin until they have used their CPU time, however long that
    # takes in wall time: on a loaded machine the bare run may need several times
    # its CPU seconds, and a deadline that ended it early left it unproven.
    return {**_lim(), "deadline": 30.0}


@attack("lifetime", "leftover", policy="limits", extra=_lim())
def daemon_double_fork_setsid(a):
    """Double-fork and setsid: a daemon that leaves the session and process group and
    should outlive the run. Stopped by cvg-run's subreaper and kill loop."""
    leave_a_daemon()


@attack("lifetime", "leftover", policy="limits", extra=_lim())
def child_outlives_parent(a):
    """Fork a child that keeps sleeping after the tool's first process exits.
    Stopped by cvg-run killing every descendant at the end."""
    if os.fork() == 0:
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        time.sleep(8)
        os._exit(0)


@attack("lifetime", "leftover", policy="default", extra=_lim())
def daemon_double_fork_default_policy(a):
    """A double-forked setsid daemon under the default policy. Stopped by the subreaper."""
    leave_a_daemon()


@attack("lifetime", "wall", policy="limits", hold=5.5, extra=_lim())
def wall_clock_sleep_past(a):
    """Sleep well past the 3 s wall clock. Stopped by cvg-run's wall clock."""
    time.sleep(10)


@attack("lifetime", "wall", policy="limits", hold=5.5, extra=_lim())
def wall_clock_ignore_signals(a):
    """Ignore SIGTERM, SIGINT and SIGHUP and keep running past the wall clock, in a
    child of its own session. Stopped: the wall clock ends everything with SIGKILL."""
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, signal.SIG_IGN)
    if os.fork() == 0:
        os.setsid()
        time.sleep(10)
        os._exit(0)
    time.sleep(10)


def _fork_storm(*, orphans):
    """Fork 40 children that sleep 4 s (each double-forked first when ``orphans``)."""
    for _ in range(40):
        try:
            if os.fork() == 0:
                if not orphans or os.fork() == 0:
                    time.sleep(4)
                os._exit(0)
        except OSError:
            break
    time.sleep(3)


@attack("resources", "procs", policy="limits", hold=2.5, extra=_lim())
def fork_storm(a):
    """Fork 40 sleeping children (processes: 16). Stopped by the supervisor's count of
    descendants (and, for users, RLIMIT_NPROC)."""
    _fork_storm(orphans=False)


@attack("resources", "procs", policy="limits", hold=2.5, extra=_lim())
def fork_storm_of_orphans(a):
    """Fork 40 double-forked orphans (so the tool's own tree looks small). Stopped: the
    supervisor counts everything re-parented to it."""
    _fork_storm(orphans=True)


@attack("resources", "rss", policy="limits", hold=2.0, extra=_lim())
def memory_one_process(a):
    """Allocate and touch 320 MiB in one process (memory_mb: 192). Stopped by
    RLIMIT_DATA."""
    blob = b"\x01" * (320 << 20)
    time.sleep(2.5)  # held well past RSS_GRACE even when a loaded machine is slow to fill it
    del blob


@attack("resources", "rss", policy="limits", hold=2.5, extra=_lim())
def memory_split_across_processes(a):
    """Four processes each touching 110 MiB: each under memory_mb (192), together
    440 MiB. Stopped only if the memory limit binds the tool as a whole."""
    kids = []
    for _ in range(4):
        pid = os.fork()
        if pid == 0:
            blob = b"\x01" * (110 << 20)
            time.sleep(2)
            del blob
            os._exit(0)
        kids.append(pid)
    for pid in kids:
        os.waitpid(pid, 0)


def _spin(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


@attack("resources", "cpu", policy="cpu", hold=0.0, extra=_cpu_lim())
def cpu_spin(a):
    """Burn 3 s of CPU (cpu_seconds: 1). Stopped by RLIMIT_CPU."""
    _spin(3.0)


@attack("resources", "cpu", policy="cpu", hold=0.0, extra=_cpu_lim())
def cpu_split_across_processes(a):
    """Four processes burning 0.7 s of CPU each: each under cpu_seconds (1), 2.8 s in
    all. Stopped only if the CPU limit binds the tool as a whole."""
    kids = []
    for _ in range(4):
        pid = os.fork()
        if pid == 0:
            _spin(0.7)
            os._exit(0)
        kids.append(pid)
    for pid in kids:
        os.waitpid(pid, 0)


@attack("resources", "fsize", policy="limits", extra=_lim())
def file_size_write(a):
    """Write 20 MiB into one workspace file (file_size_mb: 8). Stopped by RLIMIT_FSIZE."""
    with open(os.path.join(a["ws"], "big"), "wb") as f:
        for _ in range(20):
            f.write(b"\0" * (1 << 20))


@attack("resources", "fsize", policy="limits", extra=_lim())
def file_size_ftruncate_extend(a):
    """Extend a workspace file to 20 MiB with truncate(2). Stopped by RLIMIT_FSIZE."""
    open(os.path.join(a["ws"], "big"), "wb").close()
    os.truncate(os.path.join(a["ws"], "big"), 20 << 20)


@attack("resources", "fsize", policy="limits", extra=_lim())
def file_size_fallocate(a):
    """posix_fallocate 20 MiB in a workspace file. Stopped by RLIMIT_FSIZE."""
    fd = os.open(os.path.join(a["ws"], "big"), os.O_RDWR | os.O_CREAT, 0o600)
    os.posix_fallocate(fd, 0, 20 << 20)


@attack("resources", "fsize", policy="limits", extra=_lim())
def file_size_pwrite_far_offset(a):
    """pwrite one byte at offset 20 MiB (a sparse file of 20 MiB). Stopped by
    RLIMIT_FSIZE."""
    fd = os.open(os.path.join(a["ws"], "big"), os.O_RDWR | os.O_CREAT, 0o600)
    os.pwrite(fd, b"x", 20 << 20)


@attack("resources", "fds", policy="limits", hold=1.0, extra=_lim())
def open_files_beyond_limit(a):
    """Hold 200 descriptors open (open_files: 64). Stopped by RLIMIT_NOFILE."""
    hold_descriptors(200)


if __name__ == "__main__":
    main(globals())
