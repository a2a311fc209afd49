"""Resource limits around their edges: threads under a process limit, and memory
that lives outside the private memory RLIMIT_DATA bounds."""

import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _lib import attack, main, out


@attack(
    "resources",
    "tasks",
    policy="threads",
    hold=2.5,
    extra={"limits": {"processes": 4, "late": 1.5}, "deadline": 8.0},
)
def threads_past_processes(a):
    """processes: 4, then 3,000 threads: each thread is a task like a process, and
    the supervisor's count sees processes only. Should be stopped by counting tasks
    (for users, RLIMIT_NPROC counts threads too)."""
    threading.stack_size(64 << 10)
    stop = threading.Event()
    started = 0
    for _ in range(3000):
        try:
            threading.Thread(target=stop.wait, args=(4,), daemon=True).start()
        except RuntimeError:
            break
        started += 1
    out(f"threads started: {started}")
    time.sleep(3.5)
    stop.set()


@attack(
    "resources",
    "shmem",
    policy="memfd",
    hold=1.0,
    extra={"limits": {"memory_mb": 64, "late": 1.5}, "alone": True, "deadline": 10.0},
)
def memfd_past_memory_mb(a):
    """memory_mb: 64, then 512 MiB written into memfds with write(): page cache of an
    anonymous file counts against neither RLIMIT_DATA nor resident memory. Should be
    stopped by a limit on the tool's memory as a whole (a cgroup) or by seccomp
    (memfd_create)."""
    chunk = b"\x01" * (1 << 20)
    fds = []
    for i in range(16):  # 32 MiB each: file_size_mb (64) bounds one file
        fd = os.memfd_create(f"cvg-{i}")
        for _ in range(32):
            os.write(fd, chunk)
        fds.append(fd)
    out(f"memfds: {len(fds)} x 32 MiB")
    time.sleep(2)


if __name__ == "__main__":
    main(globals())
