"""The oracles of the attacks on the calls the syscall census names
(attacks/census_*.py): a sentinel's scheduling facts, IPC and memory, the
machine's settings, a mount outside the grants, a key and a kernel log line."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import time
from pathlib import Path

import probes
import runtime
from oracles import read, status_field
from runtime import libc as _libc

CENSUS_ORACLES = (
    "sentinel-info",
    "sentinel-ipc",
    "sentinel-mem",
    "numa",
    "host",
    "personality",
    "tty-hangup",
    "mounted",
    "none",
)
PERSONALITY_FLAGS = 0x0040000 | 0x0400000  # ADDR_NO_RANDOMIZE | READ_IMPLIES_EXEC
# The sentinel's descriptor pairs kcmp_sentinel_files compares ("fd": its secret file).
KCMP_PAIRS = ((0, "fd"), (1, "fd"), (2, "fd"), (0, 1), (0, 2), (1, 2))


def sentinel_attrs(pid: int) -> dict:
    """probes.sched_attrs and the real-time priority (what sched_setparam changes)."""
    out = probes.sched_attrs(pid)
    f = _stat_fields(pid)
    if f:
        out["rt_priority"] = f[37]
    return out


def _stat_fields(pid: int) -> list[str]:
    s = read(f"/proc/{pid}/stat")
    return s[s.rindex(")") + 2 :].split() if ")" in s else []


def shape_sentinel(pid: int) -> None:
    """Random scheduling facts for a sentinel whose facts a tool reads: a nice value,
    SCHED_RR with a priority, a best-effort I/O priority and a CPU mask."""
    import random

    r = random.SystemRandom()
    os.setpriority(os.PRIO_PROCESS, pid, r.randint(1, 19))
    os.sched_setscheduler(pid, os.SCHED_RR, os.sched_param(r.randint(2, 50)))
    _libc.syscall(251, 1, pid, 2 << 13 | r.randint(0, 7))  # ioprio_set(PROCESS, BE)
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) > 1:
        os.sched_setaffinity(pid, r.sample(cpus, r.randint(1, len(cpus))))


def sentinel_facts(sent: dict) -> dict[str, str]:
    """What the public-info attacks print, read from outside (and as root)."""
    pid = sent["pid"]
    f = _stat_fields(pid)
    if not f:
        return {}
    facts = {"pgid": f[2], "sid": f[3], "nice": f[16], "priority": f[37], "policy": f[38]}
    caps = [int(status_field(pid, k) or "0", 16) for k in ("CapEff", "CapPrm", "CapInh")]
    facts["caps"] = ":".join(f"{c:x}" for c in caps)
    facts["affinity"] = ",".join(str(c) for c in sorted(os.sched_getaffinity(pid)))
    facts["ioprio"] = str(_libc.syscall(252, 1, pid))
    ts = (ctypes.c_long * 2)()
    if _libc.syscall(148, pid, ctypes.byref(ts)) == 0:
        facts["rr_interval"] = str(ts[0] * 10**9 + ts[1])
    head, size = ctypes.c_void_p(), ctypes.c_size_t()
    if _libc.syscall(274, pid, ctypes.byref(head), ctypes.byref(size)) == 0:
        facts["robust"] = f"0x{head.value or 0:x}"
    res = []
    for i, j in KCMP_PAIRS:
        i, j = (sent["fd"] if x == "fd" else x for x in (i, j))
        res.append(str(_libc.syscall(312, pid, pid, 0, i, j)))
    facts["kcmp"] = ",".join(res)
    return facts


def mq_state(name: str, base: Path) -> str:
    """A POSIX queue's line in an mqueue filesystem (QSIZE, NOTIFY, NOTIFY_PID), read
    through a private mount in a mount namespace of its own, gone with it."""
    d = base / "mqueue-view"
    d.mkdir(exist_ok=True)
    r = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c",
         'mount -t mqueue none "$1" && cat "$1/$2"', "sh", str(d), name.lstrip("/")],
        capture_output=True, text=True, timeout=10, check=False,
    )  # fmt: skip
    return " ".join(r.stdout.split()) if r.returncode == 0 else "gone"


def ipc_state(sent: dict, base: Path) -> dict[str, str]:
    """The sentinel's SysV objects' rows in /proc/sysvipc and its POSIX queue's state."""
    st = {}
    for kind, key in (("shm", "shmid"), ("msg", "msqid"), ("sem", "semid")):
        rows = [
            " ".join(line.split())
            for line in read(f"/proc/sysvipc/{kind}").splitlines()[1:]
            if line.split()[1:2] == [str(sent[key])]
        ]
        st[kind] = rows[0] if rows else "gone"
    st["mq"] = mq_state(sent["mq"], base)
    return st


def anon_huge_kb(pid: int) -> int:
    for line in read(f"/proc/{pid}/smaps_rollup").splitlines():
        if line.startswith("AnonHugePages:"):
            return int(line.split()[1])
    return 0


def numa_nodes(pid: int) -> set[str]:
    import re

    return set(re.findall(r"\bN(\d+)=", read(f"/proc/{pid}/numa_maps")))


def host_state(ws: str) -> dict[str, str]:
    """Settings of the whole machine the host attacks aim at."""
    st = {k: read(f"/proc/sys/kernel/{k}").strip() for k in HOST_NAMES}
    st["swaps"] = read("/proc/swaps")
    st["modules"] = " ".join(sorted(x.split()[0] for x in read("/proc/modules").splitlines()))
    for k in ("kexec_loaded", "kexec_crash_loaded"):
        st[k] = read(f"/sys/kernel/{k}").strip()
    tx = ctypes.create_string_buffer(208)
    if _libc.adjtimex(tx) >= 0:  # modes 0: a read
        st["adjtimex tick"] = str(int.from_bytes(tx.raw[88:96], "little", signed=True))
        st["adjtimex status"] = str(int.from_bytes(tx.raw[40:44], "little"))
    acct = Path(ws) / "acct"
    # The attack creates the file itself; only records in it are acct()'s doing.
    st["accounting records"] = str(acct.exists() and acct.stat().st_size > 0)
    return st


HOST_NAMES = ("hostname", "domainname", "ctrl-alt-del")


def mount_line(mnt: Path) -> str:
    for line in read("/proc/self/mountinfo").splitlines():
        f = line.split()
        if f[4] == str(mnt):
            return " ".join(f[4:])
    return "not mounted"


def plant_key(desc: str, secret: str, demote) -> None:
    code = (
        "import ctypes, sys\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "d, p = sys.argv[1].encode(), sys.argv[2].encode()\n"
        "r = libc.syscall(248, b'user', d, p, len(p), -4)\n"  # add_key into @u
        "sys.exit(0 if r > 0 else ctypes.get_errno())\n"
    )
    subprocess.run(
        [runtime.PY, "-c", code, desc, secret], preexec_fn=demote, check=True, timeout=20
    )


def drop_keys(desc: str, demote) -> None:
    """Invalidate every key of the user named ``desc`` (keys outlive the run)."""
    keys = subprocess.run(
        [runtime.PY, "-c", "print(open('/proc/keys').read())"],
        capture_output=True,
        text=True,
        preexec_fn=demote,
    ).stdout
    for k in keys.splitlines():
        if desc in k.split():
            kid = int(k.split()[0], 16)
            subprocess.run(
                [runtime.PY, "-c", f"import ctypes; ctypes.CDLL(None).syscall(250, 21, {kid})"],
                preexec_fn=demote,
                check=False,
            )  # keyctl(KEYCTL_INVALIDATE, id)


def census_prepare(a: dict, *, args, outside, secret, tok, base, demote) -> dict:
    """What the census attacks' oracles need before the run: a tmpfs mount, a line in
    the kernel log, a key in the user's keyring, and the before-states."""
    extra, kind = a["extra"], a["oracle"]
    pre: dict = {"extra": extra}
    if extra.get("mount"):
        # Named with the secret for the attacks that list mounts; a plain name for
        # those that change it (they are told where it is).
        mnt = outside / (f"m-{secret}" if kind == "secret" else "mnt")
        mnt.mkdir()
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=1m,mode=0755", "cvg-escape", str(mnt)],
            check=True,
        )
        pre["mnt"] = mnt
        pre["mount"] = mount_line(mnt)
        if kind != "secret":
            args["mnt"] = str(mnt)
    if extra.get("kmsg"):
        with open("/dev/kmsg", "w") as f:
            f.write(f"cvg-escape: {secret}\n")
    if extra.get("plant_key"):
        pre["key"] = f"cvg-escape-{tok}"
        plant_key(pre["key"], secret, demote)
    if kind == "sentinel-ipc":
        pre["ipc"] = ipc_state(args["sentinel"], base)
    if kind == "sentinel-mem":
        pre["huge"] = anon_huge_kb(args["sentinel"]["pid"])
    if kind == "numa":
        pre["nodes"] = numa_nodes(args["sentinel"]["pid"])
    if kind == "host":
        pre["host"] = host_state(args["ws"])
        pre["clock"] = time.time() - time.monotonic()
    return pre


def census_cleanup(pre: dict, demote) -> None:
    if "key" in pre:
        drop_keys(pre["key"], demote)
    if "host" in pre:
        # Put back any machine name or the ctrl-alt-del setting an attack changed.
        for k in HOST_NAMES:
            was = pre["host"][k]
            if was and read(f"/proc/sys/kernel/{k}").strip() != was:
                with open(f"/proc/sys/kernel/{k}", "w") as f:
                    f.write(was + "\n")
                print(f"RESTORED /proc/sys/kernel/{k} to {was!r}", file=sys.stderr)
