"""`processes` counts threads, and `memory_mb` counts memfds.

RLIMIT_NPROC counts tasks but does not bind root, and the supervisor used to
count processes only: 3,000 threads ran under ``processes: 4``. Pages written
into a memfd with write() are in no process's RSS nor its address space:
745 MiB were held under ``memory_mb: 64``. Each test first shows the attack
working with the limit lifted, then that the supervisor ends it. Oracles: the
tool's own report, the process table, and Shmem in /proc/meminfo.
"""

from __future__ import annotations

import os
import pwd
import signal

from runhelp import (
    PY,
    Box,
    load_record,
    make_policy,
    proc_field,
    procs_with,
    run_main,
    start,
    token,
    wait_for,
)

from cvg_kernel.libc import prctl

Identity = pwd.struct_passwd | None
PR_SET_DUMPABLE = 4

THREADS = r"""
import os, sys, threading, time
share, n = sys.argv[1], int(sys.argv[2])
threading.stack_size(64 << 10)  # 3,000 default 8 MiB stacks pass any RLIMIT_AS
stop = threading.Event()
started = 0
try:
    for _ in range(n):
        threading.Thread(target=stop.wait, daemon=True).start()
        started += 1
except RuntimeError:  # EAGAIN: RLIMIT_NPROC, the backstop
    open(share + "/eagain", "w").write(str(started))
    sys.exit(3)
print(started, flush=True)
stop.set()
"""

# memfds filled with write(), never mapped, held open: in no RSS.
MEMFD = r"""
import os, sys, time
share, tok, mib = sys.argv[1], sys.argv[2], int(sys.argv[3])
chunk = b"x" * (1 << 20)
fds = []
for i in range(mib // 16):
    fd = os.memfd_create(tok, os.MFD_CLOEXEC | 8)  # 8: MFD_NOEXEC_SEAL
    for _ in range(16):
        os.write(fd, chunk)
    fds.append(fd)
open(share + "/filled", "w").write(str(mib))
time.sleep(2)
print("held", mib, flush=True)
"""


def _shmem_kib() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("Shmem:"):
                return int(line.split()[1])
    raise AssertionError("no Shmem in /proc/meminfo")


def _run(box: Box, identity: Identity, name: str, resources: dict, code: str, *args: str):
    policy = make_policy(
        box.share,
        name=name,
        filesystem={"write": ["${SCRATCH}", "/dev/null", str(box.share)]},
        resources=resources,
    )
    argv = ["-p", str(policy), "--", "python3", "-c", code, str(box.share), *args]
    return run_main(argv, box=box, user=identity, before=_dumpable)


def _dumpable() -> None:
    """As cvg-run is when a user starts it: the test child changed its uid,
    which made it (and its children, until they exec) non-dumpable."""
    prctl(PR_SET_DUMPABLE, 1)


def _records(box: Box) -> list:
    return sorted((load_record(p)[1] for p in box.records()), key=lambda r: r.started)


ROOM = {"memory_mb": 2048, "wall_clock_seconds": 60}


def test_threads_count_against_processes(identity: Identity, box: Box) -> None:
    roomy = _run(box, identity, "roomy.json", {**ROOM, "processes": 4000}, THREADS, "3000")
    assert (roomy.rc, roomy.out) == (0, "3000\n"), roomy.err

    tight = _run(box, identity, "tight.json", {**ROOM, "processes": 4}, THREADS, "3000")
    last = _records(box)[-1]
    assert tight.seconds < 10, tight.err
    assert tight.out == ""
    if (identity is None and last.limits_by == "sampled") or last.exit.meaning == "limit":
        # Root is not bound by RLIMIT_NPROC: without a pids cgroup the supervisor's
        # count stops it.
        assert (tight.rc, last.exit.meaning) == (128 + signal.SIGKILL, "limit"), tight.err
        assert "more than processes=4 tasks running at once" in tight.err
        assert "more than processes=4 tasks" in (last.exit.detail or "")
    else:
        # pids.max in the run's cgroup, or for a user the backstop (RLIMIT_NPROC,
        # counting tasks), refused the fifth task before the supervisor could see it.
        assert (tight.rc, last.exit.meaning) == (3, "exited"), tight.err
        assert int((box.share / "eagain").read_text()) < 4


def test_memfd_counts_against_memory_mb(identity: Identity, box: Box) -> None:
    tok = token()
    # Without the sandbox: 256 MiB show in Shmem, while the process's RSS (what
    # memory_mb summed) stays far under 64 MiB.
    base = _shmem_kib()
    argv = [PY, "-c", MEMFD, str(box.share), tok, "256"]
    plain = start(lambda: os.execv(argv[0], argv), user=identity)
    wait_for(lambda: (box.share / "filled").exists(), what="the memfds to fill")
    held_kib = _shmem_kib() - base
    rss_kib = int((proc_field(plain.pid, "VmRSS") or "0 kB").split()[0])
    ran = plain.finish(30)
    assert (ran.status, ran.stdout) == (0, b"held 256\n"), ran.err
    assert held_kib > 200 * 1024 and rss_kib < 64 * 1024, (held_kib, rss_kib)
    (box.share / "filled").unlink()

    base = _shmem_kib()
    tight = _run(box, identity, "tight.json",
                 {"memory_mb": 64, "wall_clock_seconds": 60}, MEMFD, tok, "256")  # fmt: skip
    last = _records(box)[-1]
    assert (tight.rc, last.exit.meaning) == (128 + signal.SIGKILL, "limit"), tight.err
    assert tight.out == "" and not (box.share / "filled").exists()
    # Counted by the supervisor's walk, or charged by the run's memory cgroup.
    assert "memfds" in tight.err
    assert "more than memory_mb=64" in tight.err
    assert tight.seconds < 10
    assert procs_with(tok) == []
    # Nothing stays allocated: Shmem falls back to where it was (other tests on
    # the machine move it a little; 256 MiB left behind would show).
    wait_for(lambda: _shmem_kib() - base < 48 * 1024, timeout=10, what="Shmem to fall back")


def test_a_non_dumpable_tool_cannot_hide_its_memfds(identity: Identity, box: Box) -> None:
    """PR_SET_DUMPABLE 0 makes /proc/PID/fd unreadable to a supervisor of the
    same unprivileged user: what it cannot count ends the run."""
    tok = token()
    hidden = "import ctypes; ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)\n" + MEMFD  # 4: SET_DUMPABLE
    tight = _run(box, identity, "tight.json",
                 {"memory_mb": 64, "wall_clock_seconds": 60}, hidden, tok, "256")  # fmt: skip
    last = _records(box)[-1]
    assert (tight.rc, last.exit.meaning) == (128 + signal.SIGKILL, "limit"), tight.err
    assert tight.out == "" and procs_with(tok) == []
    if identity is None:
        assert "memfds" in tight.err
    else:
        assert "hides its descriptors (it is not dumpable)" in tight.err


ZOMBIE = r"""
import os, sys, time
for _ in range(3):
    if os.fork() == 0:
        os._exit(0)
time.sleep(1.0)  # never reaped while the supervisor walks the tree ten times
print("done", flush=True)
"""


def test_a_zombie_is_not_a_hidden_process(identity: Identity, box: Box) -> None:
    """A child its parent has not reaped yet holds nothing; to a supervisor of the
    same unprivileged user its /proc/PID/fd is unreadable all the same (EACCES, as
    for a non-dumpable process). It must not end the run as hiding its memory."""
    ran = _run(box, identity, "zombie.json", ROOM, ZOMBIE)
    last = _records(box)[-1]
    assert (ran.rc, last.exit.meaning, ran.out) == (0, "exited", "done\n"), ran.err
