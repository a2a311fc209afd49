"""The runner's outside views that need more than a file read: the interpreter the
unprivileged user can run, a sentinel's scheduling attributes and limits, SysV IPC
objects, POSIX message queues, the system's shared memory, and the nice values of
every process of a user (restored after an attack that renices them all)."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
IOPRIO_GET = 252
IPC_RMID = 0
SYSV_KINDS = ("shm", "msg", "sem")


def find_python(demote) -> str:
    """A python3 of the runner's own version (the staged packages hold compiled
    extensions for it) that the unprivileged user can execute: sys.executable when
    others may run it, else the first such interpreter on a system PATH."""
    want = "{}.{}".format(*sys.version_info[:2])
    seen = []
    for c in [sys.executable] + [
        f"{d}/{n}"
        for d in ("/usr/local/bin", "/usr/bin", "/bin")
        for n in (f"python{want}", "python3")
    ]:
        if c in seen or not os.path.exists(c):
            continue
        seen.append(c)
        try:
            r = subprocess.run(
                [c, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                capture_output=True,
                text=True,
                timeout=20,
                preexec_fn=demote,
                env={"PATH": "/usr/bin:/bin"},
                cwd="/",
            )
        except OSError:
            continue
        if r.returncode == 0 and r.stdout.strip() == want:
            return c
    raise SystemExit(
        f"run.py: no python{want} the unprivileged user can execute (tried {', '.join(seen)})"
    )


def _stat_fields(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
    except OSError:
        return []
    return s[s.rindex(")") + 2 :].split()  # field 3 of proc(5) is index 0


def sched_attrs(pid: int) -> dict:
    """What the scheduling attacks try to change in another process, read from
    outside: limits, nice, policy, CPU affinity and I/O priority."""
    f = _stat_fields(pid)
    out = {}
    if f:
        out["nice"] = f[16]
        out["policy"] = f[38]
    try:
        with open(f"/proc/{pid}/limits") as fh:
            for line in fh.read().splitlines()[1:]:
                name = line[:26].strip()
                out[f"limit {name}"] = " ".join(line[26:].split()[:2])
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("Cpus_allowed_list:"):
                    out["affinity"] = line.split(":", 1)[1].strip()
    except OSError:
        pass
    r = _libc.syscall(IOPRIO_GET, 1, pid)  # IOPRIO_WHO_PROCESS
    out["ioprio"] = str(r if r >= 0 else f"error {ctypes.get_errno()}")
    return out


def diff_attrs(before: dict, after: dict) -> list[str]:
    return [f"{k} {before[k]} -> {after.get(k)}" for k in before if after.get(k) != before[k]]


def user_nices(uid: int) -> dict[int, int]:
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            if os.stat(f"/proc/{d}").st_uid != uid:
                continue
            tasks = os.listdir(f"/proc/{d}/task")
        except OSError:
            continue
        for t in tasks:
            f = _stat_fields(int(t))
            if f:
                out[int(t)] = int(f[16])
    return out


def restore_nices(saved: dict[int, int]) -> int:
    """Put back the nice value of every task an attack reniced (as root). Returns how
    many were changed."""
    n = 0
    for tid, nice in saved.items():
        f = _stat_fields(tid)
        if f and int(f[16]) != nice:
            try:
                os.setpriority(os.PRIO_PROCESS, tid, nice)
                n += 1
            except OSError:
                pass
    return n


def sysv_objects() -> dict[str, dict[int, int]]:
    """key -> id of every SysV object, per kind, from /proc/sysvipc."""
    out: dict[str, dict[int, int]] = {}
    for kind in SYSV_KINDS:
        objs = {}
        try:
            with open(f"/proc/sysvipc/{kind}") as f:
                for line in f.read().splitlines()[1:]:
                    cols = line.split()
                    objs[int(cols[1])] = int(cols[0])  # id -> key
        except (OSError, ValueError, IndexError):
            pass
        out[kind] = objs
    return out


def sysv_remove(kind: str, ident: int) -> None:
    fn = {"shm": _libc.shmctl, "msg": _libc.msgctl, "sem": _libc.semctl}[kind]
    if kind == "sem":
        fn(ident, 0, IPC_RMID)
    else:
        fn(ident, IPC_RMID, None)


def mq_unlink(name: str) -> None:
    _libc.mq_unlink(name.encode())


def settle_shmem(timeout: float = 5.0) -> None:
    """Wait until the system's Shmem stops falling (memory of a run just ended)."""
    import time

    end = time.monotonic() + timeout
    last = shmem_kb()
    while time.monotonic() < end:
        time.sleep(0.2)
        now = shmem_kb()
        if now >= last - 1024:
            return
        last = now


def shmem_kb() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("Shmem:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0
