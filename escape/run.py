"""The escape matrix runner: every attack, judged by external oracles only.

    uv run python escape/run.py [--matrix] [--only PATTERN] [--identity root|unpriv]
                                [--abi N] [--report-only] [--jobs N]

For each attack and identity it first runs the attack with no sandbox (the same
user, the same command, under a plain fork-exec-wait parent: support/passthru.py)
and counts the attack only if its oracle fires there ("proven"). Then it runs it
through the real `cvg-run -p POLICY -- PYTHON ATTACK.py NAME` at
each Landlock ABI of the cell (the native one, and with --matrix 4 and 6
through CVG_LANDLOCK_ABI_MAX: a simulation on a newer kernel).

Outcomes per cell: contained (the attack's attempted marker arrived and the oracle
stayed silent), escaped, documented-limit (the oracle fired, but only through a
limit docs/design.md documents), refused (cvg-run exited 125 before the tool
started), timed-out (the runner ended the run), not-attempted (the marker never
arrived), not-proven (the oracle did not fire even without a sandbox on this host).

Must run as root: it runs every attack as root and as the unprivileged user
(`cvgtest`, created if missing). Everything runs under one interpreter of the
runner's Python version that `cvgtest` can execute (probes.find_python), from a
staged, world-readable copy of the packages and of support/.

It exits 1 on any escape, runner error or not-attempted cell, and on what gates.py
finds against escape/results/results.json: a proof lost, an attack deleted, a
contained cell now refused, timed out or not attempted; 2 when --only matches nothing.
"""

from __future__ import annotations

import argparse
import ctypes
import fnmatch
import importlib.util
import json
import multiprocessing
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ATTACKS_DIR = HERE / "attacks"
SUPPORT_DIR = HERE / "support"
POLICIES_DIR = HERE / "policies"
RESULTS_DIR = HERE / "results"
PY = ""  # set by main(): the interpreter every run uses (probes.find_python)
UNPRIV = "cvgtest"
CVG_MAIN = "import sys; from cvg_run.cli import main; sys.argv[0] = 'cvg-run'; sys.exit(main())"
SAMPLE = 0.02
# How long the tool's resident total may stay above memory_mb: fifty of the
# root supervisor's scans, ten of the unprivileged one's, and the teardown of
# the processes it ends.
RSS_GRACE = 0.5
HARD_TIMEOUT = 40.0
ABI_MATRIX = (4, 6)
SINK_ORACLES = (
    "tcp",
    "tcp6",
    "udp",
    "unix",
    "abstract",
    "unixdgram",
    "abstractdgram",
    "inherit-socket",
)
REFUSED = 125  # cvg-run's status when it refuses to start the tool (bad or degraded policy)

sys.path.insert(0, str(HERE))
import gates  # noqa: E402
import probes  # noqa: E402

from cvg_testing import Sink  # noqa: E402

sys.path.insert(0, str(ATTACKS_DIR))
from _lib import attempted_marker  # noqa: E402

# The limits docs/design.md ("What is enforced, and what is not") documents. An oracle
# that fires in a cell counts as documented-limit only when the attack names one
# of these and it applies in that cell.
LIMITS = {
    "loader": (
        "an execute grant does not stop the dynamic loader from running a file the "
        "tool can only read",
        lambda abi, pol: True,
    ),
    "hosts": ("hosts are not filtered (only ports)", lambda abi, pol: True),
    "metadata": (
        "file metadata (stat, chmod, chown, utime, extended attributes) is outside Landlock",
        lambda abi, pol: True,
    ),
    "signal": (
        "below ABI 6 a tool can signal same-user processes outside the sandbox",
        lambda abi, pol: abi < 6,
    ),
    "supervisor-kill": (
        "below ABI 6 the tool can signal cvg-run (same user), and a supervisor "
        "killed with SIGKILL can leave the tool's children behind",
        lambda abi, pol: abi < 6,
    ),
    "unix-abstract": (
        "abstract UNIX sockets are scoped from Landlock ABI 6; below it a policy with "
        "network.unix: true is degraded, listed as such, and runs only with "
        '--allow-degraded (README, "What cvg does not enforce")',
        lambda abi, pol: abi < 6 and pol == "unix",
    ),
    "public-process-info": (
        "scheduling facts and ids of other processes are public, as in /proc (the census "
        "allows getpgid, getsid, capget, getpriority, ioprio_get and the sched_get* calls)",
        lambda abi, pol: True,
    ),
    "unix-path": (
        "pathname UNIX sockets are not path-checked below ABI 9 when network.unix "
        "is granted (docs/policy.md, network; docs/kernel-notes.md, Landlock)",
        lambda abi, pol: abi < 9 and pol == "unix",
    ),
}
LIMIT_DOC = 'docs/design.md, "What is enforced, and what is not"'


# --------------------------------------------------------------------------- attacks


def load_attacks() -> dict:
    sys.path.insert(0, str(ATTACKS_DIR))
    import _lib

    for path in sorted(ATTACKS_DIR.glob("*.py")):
        if path.name.startswith("_"):
            continue
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)
    return dict(_lib.REGISTRY)


# --------------------------------------------------------------------------- staging


def stage_python(base: Path) -> str:
    """A world-readable copy of the cvg packages and the third-party modules they
    import, so cvg-run runs as the unprivileged user under a system interpreter even
    when the venv lives under an unreadable home. Returns the PYTHONPATH."""
    dest = base / "py"
    dest.mkdir()
    for src in sorted((ROOT / "packages").glob("*/src/*")):
        if src.is_dir() and not src.name.startswith("."):
            shutil.copytree(src, dest / src.name, ignore=shutil.ignore_patterns("__pycache__"))
    probe = (
        "import sys, json, cvg_run.cli, cvg_run.planning, cvg_policy.compile, cvg_policy.load,"
        " cvg_policy.variables, cvg_policy.errors, cvg_schema\n"
        "print(json.dumps(sorted({getattr(m, '__file__', None) or ''"
        " for m in sys.modules.values()})))"
    )
    files = json.loads(subprocess.check_output([sys.executable, "-c", probe], cwd=ROOT))
    import sysconfig

    sites = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    tops = set()
    for f in files:
        for site in sites:
            if f.startswith(site + "/"):
                tops.add(f[len(site) + 1 :].split("/")[0])
    for site in sites:
        for top in tops:
            src = Path(site) / top
            if src.is_dir() and not (dest / top).exists():
                shutil.copytree(src, dest / top, ignore=shutil.ignore_patterns("__pycache__"))
            elif src.is_file() and not (dest / top).exists():
                shutil.copy2(src, dest / top)
    subprocess.run(["chmod", "-R", "a+rX", str(dest)], check=True)
    return str(dest)


def ensure_unpriv_user() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(UNPRIV)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "-s", "/usr/sbin/nologin", UNPRIV],
            check=True,
        )
        return pwd.getpwnam(UNPRIV)


# --------------------------------------------------------------------------- oracles


def snapshot(paths: list[Path], skip: tuple[str, ...] = ("__pycache__", "ws")) -> dict:
    out = {}
    for top in paths:
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = [d for d in dirnames if d not in skip]
            for name in [*dirnames, *filenames, ""]:
                p = os.path.join(dirpath, name) if name else dirpath
                try:
                    st = os.lstat(p)
                except OSError:
                    continue
                content = None
                if os.path.isfile(p) and not os.path.islink(p) and st.st_size < 65536:
                    try:
                        with open(p, "rb") as f:
                            content = f.read()
                    except OSError:
                        pass
                out[p] = (
                    st.st_mode,
                    st.st_size,
                    st.st_mtime_ns,
                    st.st_ctime_ns,
                    st.st_ino,
                    content,
                    os.readlink(p) if os.path.islink(p) else None,
                )
    return out


def diff_snapshots(before: dict, after: dict, new_ok: tuple[str, ...] = ()) -> list[str]:
    changes = []
    for p, v in before.items():
        if p not in after:
            changes.append(f"removed {p}")
        elif after[p] != v:
            if any(p == n.rstrip("/") for n in new_ok) and after[p][4] == v[4]:
                continue  # cvg-run itself writes its plan cache and run records here
            what = [
                n
                for n, a, b in zip(
                    ("mode", "size", "mtime", "ctime", "inode", "content", "target"),
                    v,
                    after[p],
                    strict=True,
                )
                if a != b
            ]
            changes.append(f"changed {p} ({', '.join(what)})")
    for p in after:
        if p not in before and not any(p.startswith(n) for n in new_ok):
            changes.append(f"created {p}")
    return changes


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def proc_children() -> dict[int, int]:
    out = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    s = f.read()
                out[int(d)] = int(s[s.rindex(")") + 2 :].split()[1])
            except (OSError, ValueError):
                pass
    return out


def descendants(root: int) -> list[int]:
    parents = proc_children()
    kids: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        kids.setdefault(ppid, []).append(pid)
    out, stack = [], [root]
    while stack:
        for k in kids.get(stack.pop(), []):
            out.append(k)
            stack.append(k)
    return out


def read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def status_field(pid: int, field: str) -> str:
    for line in read(f"/proc/{pid}/status").splitlines():
        if line.startswith(field + ":"):
            return line.split(":", 1)[1].strip()
    return ""


NS_TYPES = ("user", "net", "mnt", "pid", "uts", "ipc", "cgroup", "time")
KOBJ = ("[perf_event]", "[userfaultfd]", "[io_uring]", "bpf-map", "bpf-prog", "bpf_link")


def ns_of(pid: int) -> dict:
    out = {}
    for t in NS_TYPES:
        try:
            out[t] = os.readlink(f"/proc/{pid}/ns/{t}")
        except OSError:
            pass
    try:
        out["root"] = os.readlink(f"/proc/{pid}/root")
    except OSError:
        pass
    return out


def kobjs_of(pid: int) -> set[str]:
    found = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            for k in KOBJ:
                if k in target:
                    found.add(target)
    except OSError:
        pass
    return found


def cpu_ticks(pid: int) -> int:
    s = read(f"/proc/{pid}/stat")
    try:
        f = s[s.rindex(")") + 2 :].split()
        return int(f[11]) + int(f[12]), int(f[13]) + int(f[14])  # own, reaped children
    except (ValueError, IndexError):
        return 0, 0


def fd_count(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def task_count(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return 0


def status_limit(pid: int, name: str) -> str:
    for line in read(f"/proc/{pid}/limits").splitlines():
        if line.startswith(name):
            return line[26:].split()[0]
    return ""


def probe_reported_port(out_f, granted: int):
    """The port the tool says it listens on ("listening port=N"), and whether a
    connection from outside to it was accepted; None until it says."""
    import re

    m = re.search(rb"listening port=(\d+)", os.pread(out_f.fileno(), 4096, 0))
    if not m:
        return None
    port = int(m.group(1))
    if port == granted:
        return (port, False)
    try:
        c = socket.create_connection(("127.0.0.1", port), timeout=0.5)
        c.sendall(b"probe")
        c.close()
        return (port, True)
    except OSError:
        return (port, False)


def kill_pids(pids) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def reap_all() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def clear_descendants(keep: set[int], within: float = 10.0) -> None:
    """Kill and reap every process below this worker but ``keep``, until none is left.

    One round is not enough: processes still forking outrun a single kill, and
    killed ones stay zombies until reaped. A run that left any behind would have
    them counted as the next run's tool processes (the worker is a subreaper)."""
    end = time.monotonic() + within
    while True:
        reap_all()
        rest = [p for p in descendants(os.getpid()) if p not in keep]
        if not rest or time.monotonic() > end:
            return
        kill_pids(rest)
        time.sleep(0.01)


# --------------------------------------------------------------------------- one run

_libc = ctypes.CDLL(None, use_errno=True)


def _worker_init() -> None:
    _libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans of a run come here
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def make_elf(msg: bytes) -> bytes:
    """A minimal x86_64 ELF (ET_DYN with an empty dynamic section, so ld.so loads
    it too) that writes ``msg`` to stdout and exits 0."""
    import struct

    code = (
        b"\xb8\x01\x00\x00\x00\xbf\x01\x00\x00\x00\x48\x8d\x35"
        + struct.pack("<i", 16)
        + b"\xba"
        + struct.pack("<I", len(msg))
        + b"\x0f\x05\xb8\x3c\x00\x00\x00\x31\xff\x0f\x05"
    )
    start = 64 + 2 * 56
    body = code + msg
    body += b"\0" * (-(start + len(body)) % 8)
    dyn_off = start + len(body)
    body += b"\0" * 16
    size = start + len(body)
    ehdr = struct.pack(
        "<4sBBBBB7xHHIQQQIHHHHHH",
        b"\x7fELF",
        2,
        1,
        1,
        0,
        0,
        3,
        62,
        1,
        start,
        64,
        0,
        0,
        64,
        56,
        2,
        64,
        0,
        0,
    )
    load = struct.pack("<IIQQQQQQ", 1, 5, 0, 0, 0, size, size, 0x1000)
    dyn = struct.pack("<IIQQQQQQ", 2, 4, dyn_off, dyn_off, dyn_off, 16, 16, 8)
    return ehdr + load + dyn + body


def policy_text(name: str, ports: dict) -> str:
    text = (POLICIES_DIR / f"{name}.yaml").read_text()
    for key, value in ports.items():
        text = text.replace(f"@{key}@", str(value))
    return text


def run_job(job: dict) -> dict:
    """Run one attack once (baseline or sandboxed) and judge it by its oracle."""
    try:
        return _run_job(job)
    except Exception as e:  # noqa: BLE001 - a job's own failure is reported as its result, never a crash of the matrix
        import traceback

        return {
            "fired": False,
            "evidence": f"runner error: {e!r}",
            "error": True,
            "trace": traceback.format_exc()[-2000:],
            "status": None,
            "stderr": "",
        }


@dataclass(eq=False)
class Attempt:
    """One attack run once (baseline or sandboxed): what it was given, what was seen
    while it ran, and what it left. The steps of _run_job fill it in turn."""

    job: dict
    a: dict
    uid: int
    gid: int
    base: Path
    tok: str
    secret: str
    exec_token: str
    ports: dict
    policy: Path
    args: dict
    env: dict
    saved_nices: dict
    sysv_before: dict
    sinks: dict = field(default_factory=dict)
    sentinels: list = field(default_factory=list)
    attrs_before: dict = field(default_factory=dict)
    fds_to_pass: list = field(default_factory=list)
    pty_master: int | None = None
    pty_slave: int | None = None
    census_pre: dict | None = None
    cmd: list = field(default_factory=list)
    run1: int | None = None
    records_before: set = field(default_factory=set)
    shmem_before: int = 0
    before: dict = field(default_factory=dict)
    out_f: Any = None
    err_f: Any = None
    t0: float = 0.0
    proc: Any = None
    sentinel_pids: set = field(default_factory=set)
    obs: dict = field(default_factory=dict)
    status: int | None = None
    rusage: Any = None
    sup_own: int = 0
    leftovers: list = field(default_factory=list)
    stdout: str = ""
    stderr: str = ""
    after: dict = field(default_factory=dict)
    cpu: float = 0.0

    @property
    def oracle_kind(self) -> str:
        return self.a["oracle"]

    @property
    def extra(self) -> dict:
        return self.a["extra"]

    @property
    def lim(self) -> dict:
        return self.a["extra"].get("limits", {})

    def dir(self, name: str) -> Path:
        """work, work/ws, outside, oracle, state or policy, under the attack's base."""
        return self.base / {"ws": "work/ws", "poldir": "policy"}.get(name, name)

    def demote(self) -> None:
        os.setgroups([])
        os.setgid(self.gid)
        os.setuid(self.uid)


def _run_job(job: dict) -> dict:
    at = _setup(job)
    try:
        _arrange(at)
        _start(at)
        _observe(at)
        _collect(at)
        fired, evidence = _judge(at)
        return _result(at, fired, evidence)
    finally:
        _cleanup(at)


def _setup(job: dict) -> Attempt:
    """The attack's directory tree (canaries, secrets, the marker programs, its
    arguments), its policy and its environment, all owned by the identity it runs as."""
    a = job["attack"]
    clear_descendants(set())  # nothing of an earlier run may count as this one's
    uid, gid = job["uid"], job["gid"]
    base = Path(tempfile.mkdtemp(prefix=f"{a['name']}-", dir=job["tmp"]))
    os.chmod(base, 0o755)
    work, ws, outside, oracle, state, poldir = (
        base / n for n in ("work", "work/ws", "outside", "oracle", "state", "policy")
    )
    for d in (work, ws, outside, oracle, state, poldir):
        d.mkdir(parents=True, exist_ok=True)
    tok = os.urandom(6).hex()
    secret = f"SECRET-{tok}"
    exec_token = f"EXEC-{os.urandom(6).hex()}"
    # Attack code and its arguments, readable by the tool.
    shutil.copytree(ATTACKS_DIR, work / "attacks", ignore=shutil.ignore_patterns("__pycache__"))
    _plant(a, work, ws, outside, state, tok, secret, exec_token)
    ports = {"GRANTED_PORT": free_port(), "BIND_PORT": free_port(), "UNGRANTED_PORT": free_port()}
    policy = poldir / "policy.yaml"
    if a["policy"] != "default":
        policy.write_text(policy_text(a["policy"], ports))
    else:
        policy.write_text("# the embedded default policy is used\n")
    subprocess.run(["chown", "-R", f"{uid}:{gid}", str(base)], check=True)
    os.chmod(oracle, 0o700)

    args: dict = {
        "work": str(work),
        "ws": str(ws),
        "outside": str(outside),
        "canary": str(outside / "canary.txt"),
        "secret_path": str(outside / "secret.txt"),
        "marker": str(work / "bin" / "marker"),
        "marker_sh": str(work / "bin" / "marker.sh"),
        "policy": str(policy),
        "state": str(state),
        "ports": ports,
        "tok": tok,
        "ipc_key": int(tok[:7], 16),
    }
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(state / "home"),
        "XDG_CACHE_HOME": str(state / "cache"),
        "XDG_STATE_HOME": str(state / "state"),
        "PYTHONPATH": job["pythonpath"],
        "PYTHONDONTWRITEBYTECODE": "1",
        "LANG": "C.UTF-8",
        "CVG_ESCAPE_SECRET": secret,
        "AWS_SECRET_ACCESS_KEY": secret,
    }
    if job["abi"] is not None and job["abi_sim"]:
        env["CVG_LANDLOCK_ABI_MAX"] = str(job["abi"])
    if a["extra"].get("home"):
        env["HOME"] = str(work)
    saved_nices = probes.user_nices(uid) if a["extra"].get("renice_all") else {}
    sysv_before = probes.sysv_objects()
    return Attempt(
        job, a, uid, gid, base, tok, secret, exec_token, ports, policy, args, env,
        saved_nices, sysv_before,
    )  # fmt: skip


def _plant(
    a: dict, work: Path, ws: Path, outside: Path, state: Path, tok: str, secret: str,
    exec_token: str,
) -> None:  # fmt: skip
    """Canaries and secrets outside every grant, the marker programs, seeded state."""
    (outside / "canary.txt").write_text(f"canary {tok}\n")
    (outside / "secret.txt").write_text(secret + "\n")
    (outside / "dir").mkdir()
    (outside / "dir" / "inner.txt").write_text("inner\n")
    (outside / "emptydir").mkdir()
    (outside / "listing").mkdir()
    (outside / "listing" / secret).write_text("")
    (outside / "exec").mkdir()
    marker = outside / "exec" / "marker"
    marker.write_bytes(make_elf(f"{exec_token}\n".encode()))
    marker.chmod(0o755)
    script = outside / "exec" / "marker.sh"
    script.write_text(f"#!/bin/sh\necho {exec_token}\n")
    script.chmod(0o755)
    # Copies the tool may read but not execute (work/ is read-only to it).
    (work / "bin").mkdir()
    shutil.copy2(marker, work / "bin" / "marker")
    shutil.copy2(script, work / "bin" / "marker.sh")
    for sub in ("cache/cvg/plans", "state/cvg/runs", "home"):
        (state / sub).mkdir(parents=True, exist_ok=True)
    (state / "cache/cvg/plans/seed.json").write_text('{"seed": "plan"}\n')
    (state / "state/cvg/runs/seed.json").write_text('{"seed": "record"}\n')
    extra = a["extra"]
    if extra.get("home"):
        # The working directory doubles as the user's home (cvg-run started from ~).
        (work / ".ssh").mkdir(mode=0o700)
        (work / ".ssh" / "id_rsa").write_text(f"-----BEGIN KEY-----\n{secret}\n")
        (work / ".ssh" / "id_rsa").chmod(0o600)
        (work / ".env").write_text(f"API_TOKEN={secret}\n")
    if extra.get("ro"):
        (work / "ro").mkdir()
        (work / "ro" / "canary.txt").write_text(f"canary {tok}\n")
    if extra.get("nested"):
        (ws / "data").mkdir()
        (ws / "data" / "note.txt").write_text("granted data\n")
    if a["oracle"] == "secret" and extra.get("watch"):
        (outside / "watched").mkdir()


def _arrange(at: Attempt) -> None:
    """What the oracle watches (sinks, sentinels, inherited descriptors, a terminal,
    the census's plants), the arguments file and the command; a first run when the
    attack needs two; the state before the judged run."""
    _listen(at)
    if at.extra.get("sentinel") or at.oracle_kind in ("sentinel", "sentinel-attrs"):
        _start_sentinel(at)
    _inherit(at)
    if at.oracle_kind in ("tty", "tty-hangup"):
        _open_terminal(at)
    work, state = at.dir("work"), at.dir("state")
    at.census_pre = census_prepare(
        at.a, args=at.args, outside=at.dir("outside"), secret=at.secret, tok=at.tok,
        base=at.base, demote=at.demote,
    )  # fmt: skip
    (work / "args.json").write_text(json.dumps(at.args))
    os.chown(work / "args.json", at.uid, at.gid)
    at.cmd = _command(at)
    if at.extra.get("runs") == 2:
        _first_run(at)
    at.records_before = set(os.listdir(state / "state/cvg/runs"))
    if at.oracle_kind == "shmem":
        probes.settle_shmem()  # the previous run's memory may still be being freed
    at.shmem_before = probes.shmem_kb()
    at.before = snapshot([at.dir("outside"), work, at.dir("poldir"), state])


def _listen(at: Attempt) -> None:
    """The listeners outside the sandbox that the network oracles read."""
    oracle_kind, outside, tok = at.oracle_kind, at.dir("outside"), at.tok
    if oracle_kind in SINK_ORACLES:
        kind = {"inherit-socket": "tcp"}.get(oracle_kind, oracle_kind)
        addr = None
        if kind == "unix":
            addr = str(outside / "sink.sock")
        elif kind == "unixdgram":
            addr = str(outside / "sink.dgram")
        elif kind in ("abstract", "abstractdgram"):
            addr = f"\0cvg-escape-{tok}"
        at.sinks["main"] = Sink(kind, addr)
        if kind in ("unix", "unixdgram"):
            os.chown(addr, at.uid, at.gid)
        abstract = kind in ("abstract", "abstractdgram")
        at.args["sink"] = f"@cvg-escape-{tok}" if abstract else at.sinks["main"].addr
    if oracle_kind == "hosts":
        at.sinks["main"] = Sink("tcp", ("127.0.0.2", at.ports["GRANTED_PORT"]))
        at.args["sink"] = at.sinks["main"].addr
    if oracle_kind == "secret-port":
        at.sinks["hidden"] = Sink("tcp", ("127.0.0.1", 0))
        at.args["hint"] = "find a listening TCP socket you were not told about"


def _start_sentinel(at: Attempt) -> None:
    """A process of the same user outside the sandbox, for the attack to reach for."""
    oracle, outside = at.dir("oracle"), at.dir("outside")
    netns = at.extra.get("sentinel") == "netns"
    ipc = at.extra.get("sentinel") == "ipc"
    # "info": in the runner's own session and process group, so that the ids a
    # tool reads are not its pid again
    info_mode = at.extra.get("sentinel") == "info"
    info_path = oracle / "sentinel.json"
    at.sentinels.append(
        subprocess.Popen(
            [
                PY,
                str(Path(at.job["support"]) / "sentinel.py"),
                str(oracle / "sentinel.log"),
                str(info_path),
                str(outside / "secret.txt"),
                *(["--netns"] if netns else []),
                *(["--ipc"] if ipc else []),
            ],
            env={"CVG_SENTINEL_SECRET": at.secret, "PATH": "/usr/bin"},
            preexec_fn=at.demote,
            start_new_session=not info_mode,
            stdin=subprocess.DEVNULL,
        )
    )
    t_end = time.time() + 10
    while not info_path.exists() and time.time() < t_end:
        time.sleep(0.01)
    at.args["sentinel"] = json.loads(info_path.read_text())
    if info_mode:
        shape_sentinel(at.args["sentinel"]["pid"])
    at.attrs_before = sentinel_attrs(at.args["sentinel"]["pid"])


def _inherit(at: Attempt) -> None:
    """Descriptors the tool is started holding: a secret file and its directory, or a
    socket connected to the sink."""
    outside = at.dir("outside")
    if at.oracle_kind == "secret" and at.extra.get("inherit"):
        fd = os.open(outside / "secret.txt", os.O_RDONLY)
        dfd = os.open(outside, os.O_RDONLY | os.O_DIRECTORY)
        at.fds_to_pass += [fd, dfd]
        at.args["inherited"] = {"file": fd, "dir": dfd}
    if at.oracle_kind == "inherit-socket":
        c = socket.create_connection(at.sinks["main"].addr)
        at.fds_to_pass.append(c.detach())
        at.args["inherited"] = {"socket": at.fds_to_pass[-1]}


def _open_terminal(at: Attempt) -> None:
    """A raw pseudo-terminal, no echo, owned by the tool's user: its controlling one."""
    import termios
    import tty

    at.pty_master, at.pty_slave = os.openpty()
    tty.setraw(at.pty_slave)
    attrs = termios.tcgetattr(at.pty_slave)
    attrs[3] &= ~termios.ECHO
    termios.tcsetattr(at.pty_slave, termios.TCSANOW, attrs)
    os.chown(os.ttyname(at.pty_slave), at.uid, at.gid)
    at.args["inject"] = f"echo INJECTED-{at.tok}\n"


def _command(at: Attempt) -> list:
    """The attack under passthru (the baseline) or under cvg-run."""
    work, job, a = at.dir("work"), at.job, at.a
    attack_cmd = [
        PY,
        str(work / "attacks" / f"{a['module']}.py"),
        a["name"],
        str(work / "args.json"),
    ]
    if job["abi"] is None:
        shutil.copy(Path(job["support"]) / "passthru.py", at.base / "passthru.py")
        return [PY, str(at.base / "passthru.py"), "--", *attack_cmd]
    cmd = [PY, "-c", CVG_MAIN]
    if a["policy"] != "default":
        cmd += ["-p", str(at.policy)]
        # A policy this kernel (or simulated ABI) cannot enforce fully runs degraded,
        # so the cell tests what is still enforced and the documented limit decides;
        # no_degraded attacks test the refusal itself.
        if not at.extra.get("no_degraded"):
            cmd.append("--allow-degraded")
    return [*cmd, "--", *attack_cmd]


def _first_run(at: Attempt) -> None:
    """The first run prepares what the second exploits: same policy, same plan
    cache, same state directories. Only the second run is judged."""
    work = at.dir("work")
    for n in (1, 2):
        (work / "args.json").write_text(json.dumps({**at.args, "run": n}))
        if n == 1:
            r1 = subprocess.run(
                at.cmd,
                cwd=work,
                env=at.env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                preexec_fn=lambda: (os.setsid(), at.demote()),
                timeout=HARD_TIMEOUT,
            )
            at.run1 = r1.returncode
    reap_all()


def _start(at: Attempt) -> None:
    """Start the judged run, in a session of its own, as the tool's user."""
    pty_slave = at.pty_slave

    def preexec():
        os.setsid()
        if pty_slave is not None:
            import fcntl
            import termios

            fcntl.ioctl(pty_slave, termios.TIOCSCTTY, 0)
        at.demote()

    at.out_f = tempfile.TemporaryFile()  # noqa: SIM115 (closed with the job)
    at.err_f = tempfile.TemporaryFile()  # noqa: SIM115
    at.t0 = time.monotonic()
    at.proc = subprocess.Popen(
        at.cmd,
        cwd=at.dir("work"),
        env=at.env,
        stdin=pty_slave if pty_slave is not None else subprocess.DEVNULL,
        stdout=at.out_f,
        stderr=at.err_f,
        pass_fds=at.fds_to_pass,
        preexec_fn=preexec,
    )
    for fd in at.fds_to_pass:
        os.close(fd)
    at.sentinel_pids = {s.pid for s in at.sentinels}


def _observe(at: Attempt) -> None:
    """Sample, every SAMPLE seconds, everything the oracles watch, until the run has
    ended and been held for the attack's ``hold`` (or is ended at a deadline)."""
    me = os.getpid()
    base_ns = ns_of(me)
    at.obs = {
        "max_procs_late": 0,
        "max_rss_kb": 0,
        "rss_over_from": None,
        "rss_over_longest": 0.0,
        "max_fds": 0,
        "ns": [],
        "kobj": set(),
        "traced": [],
        "stopped": [],
        "cpu": {},
        "bind": False,
        "sup_state": set(),
        "alive_late": [],
        "max_tasks_late": 0,
        "shmem_peak": at.shmem_before,
        "shmem_late": at.shmem_before,
        "autobind": None,
        "watched": False,
        "sup_nofile": [],
        "personality": [],
        "ipc_during": None,
        "ipc_sampled": 0.0,
    }
    obs, proc, hold = at.obs, at.proc, at.a["hold"]
    t_tool = None
    while True:
        now = time.monotonic() - at.t0
        if at.status is None:
            pid, st, ru = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                at.status, at.rusage = st, ru
                proc.returncode = os.waitstatus_to_exitcode(st)
        else:
            reap_all()
        tool = [p for p in descendants(me) if p not in at.sentinel_pids and p != proc.pid]
        if tool and t_tool is None:
            t_tool = now  # limits count from the tool's start, not cvg-run's
        since = now - t_tool if t_tool is not None else 0.0
        _sample_tool(at, tool, base_ns, since)
        _sample_outside(at)
        _sample_oracle(at, tool, now, since, started=t_tool is not None)
        if at.status is not None and (t_tool is None or since >= hold):
            break
        deadline = at.extra.get("deadline")
        if deadline and since > deadline and at.status is None:
            kill_pids([proc.pid, *tool])  # the attack has been judged; end it
        if now > max(HARD_TIMEOUT, hold + 5):
            kill_pids([proc.pid, *tool])
            obs["timeout"] = True
        time.sleep(SAMPLE)


def _sample_tool(at: Attempt, tool: list[int], base_ns: dict, since: float) -> None:
    """The tool's processes: namespaces, kernel objects, memory, descriptors, CPU."""
    obs, lim = at.obs, at.lim
    rss = 0
    for p in tool:
        n = ns_of(p)
        for k, v in n.items():
            if base_ns.get(k) != v and (k, v) not in obs["ns"]:
                obs["ns"].append((k, v))
        obs["kobj"] |= kobjs_of(p)
        try:
            rss += int(status_field(p, "VmRSS").split()[0] or 0)
        except (ValueError, IndexError):
            pass
        obs["max_fds"] = max(obs["max_fds"], fd_count(p))
        own, reaped = cpu_ticks(p)
        old = obs["cpu"].get(p, (0, 0))
        obs["cpu"][p] = (max(own, old[0]), max(reaped, old[1]))
    obs["max_rss_kb"] = max(obs["max_rss_kb"], rss)
    if "memory_mb" in lim:
        if rss > lim["memory_mb"] << 10:
            if obs["rss_over_from"] is None:
                obs["rss_over_from"] = since
            start = obs["rss_over_from"]
            obs["rss_over_longest"] = max(obs["rss_over_longest"], since - start)
        else:
            obs["rss_over_from"] = None
    if since >= lim.get("late", 1.5):
        obs["max_procs_late"] = max(obs["max_procs_late"], len(tool))
    if "wall" in lim and since >= lim["wall"] and tool and not obs["alive_late"]:
        obs["alive_late"] = [(p, read(f"/proc/{p}/cmdline").replace("\0", " ")[:80]) for p in tool]


def _sample_outside(at: Attempt) -> None:
    """The sentinels and the supervisor: traced or stopped, and its own CPU time."""
    obs, proc = at.obs, at.proc
    for s in at.sentinels:
        tp = status_field(s.pid, "TracerPid")
        if tp not in ("", "0"):
            obs["traced"].append(tp)
        if status_field(s.pid, "State")[:1] in ("T", "t"):
            obs["stopped"].append(s.pid)
    if at.status is None:
        at.sup_own = cpu_ticks(proc.pid)[0] or at.sup_own
        st = status_field(proc.pid, "State")[:1]
        if st in ("T", "t"):
            obs["sup_state"].add("stopped")
        if status_field(proc.pid, "TracerPid") not in ("", "0"):
            obs["sup_state"].add("traced")


def _sample_oracle(
    at: Attempt, tool: list[int], now: float, since: float, *, started: bool
) -> None:
    """What only some oracles watch while the run goes on."""
    obs, lim, kind, proc = at.obs, at.lim, at.oracle_kind, at.proc
    if kind == "tasks" and since >= lim.get("late", 1.5):
        tasks = sum(task_count(p) for p in tool)
        obs["max_tasks_late"] = max(obs["max_tasks_late"], tasks)
    if kind == "shmem":
        kb = probes.shmem_kb()
        obs["shmem_peak"] = max(obs["shmem_peak"], kb)
        if since >= lim.get("late", 1.5):
            obs["shmem_late"] = max(obs["shmem_late"], kb)
    if kind == "supervisor-fate" and at.status is None:
        nofile = status_limit(proc.pid, "Max open files")
        if nofile and nofile not in obs["sup_nofile"]:
            obs["sup_nofile"].append(nofile)
    if kind == "personality":
        for p in tool:
            v = read(f"/proc/{p}/personality").strip()
            if v and int(v, 16) & PERSONALITY_FLAGS and v not in obs["personality"]:
                obs["personality"].append(v)
    if (
        kind == "sentinel-ipc"
        and started
        and obs["ipc_during"] is None
        and now - obs["ipc_sampled"] >= 0.3
    ):
        obs["ipc_sampled"] = now
        st = ipc_state(at.args["sentinel"], at.base)
        if st != at.census_pre["ipc"]:
            obs["ipc_during"] = st
    if kind == "autobind" and obs["autobind"] is None:
        obs["autobind"] = probe_reported_port(at.out_f, at.ports["BIND_PORT"])
    if (
        at.extra.get("watch")
        and not obs["watched"]
        and started
        and (b"WATCHING" in os.pread(at.out_f.fileno(), 4096, 0) or since > 4)
    ):
        (at.dir("outside") / "watched" / at.secret).write_text("")
        obs["watched"] = True
    if kind == "bind" and not obs["bind"]:
        try:
            c = socket.create_connection(("127.0.0.1", at.ports["UNGRANTED_PORT"]), timeout=0.1)
            c.close()
            obs["bind"] = True
        except OSError:
            pass


def _collect(at: Attempt) -> None:
    """After the run: what of the tool is still alive, its output, the files, the CPU."""
    # The process table after the run: anything of the tool's still alive?
    time.sleep(0.05)
    reap_all()
    at.leftovers = [
        (p, read(f"/proc/{p}/cmdline").replace("\0", " ")[:80])
        for p in descendants(os.getpid())
        if p not in at.sentinel_pids
    ]
    clear_descendants(at.sentinel_pids)
    if at.sinks:
        time.sleep(0.05)  # let the sink threads take the last bytes
    at.out_f.seek(0)
    at.err_f.seek(0)
    at.stdout = at.out_f.read().decode(errors="replace")
    at.stderr = at.err_f.read().decode(errors="replace")
    at.after = snapshot([at.dir("outside"), at.dir("work"), at.dir("poldir"), at.dir("state")])
    # CPU of the tool's own processes, sampled from /proc (not cvg-run's own).
    # (the processes' own time, or one process's own plus its reaped children's).
    per = at.obs["cpu"].values()
    ticks = max(sum(o for o, _ in per), max((o + r for o, r in per), default=0))
    at.cpu = ticks / os.sysconf("SC_CLK_TCK")
    if at.rusage is not None:
        # Or: everything the supervisor (cvg-run, or the baseline's passthru) and
        # the processes it reaped used, minus its own last-sampled time.
        total = at.rusage.ru_utime + at.rusage.ru_stime
        at.cpu = max(at.cpu, total - at.sup_own / os.sysconf("SC_CLK_TCK"))


# ---- the verdict, by the attack's oracle: each judge says whether it fired, and why


def _judge_canary(at: Attempt) -> tuple[bool, str]:
    new_ok = (
        str(at.dir("state") / "cache/cvg/plans/"),
        str(at.dir("state") / "state/cvg/runs/"),
        str(at.dir("outside") / "sink."),
    )
    changes = diff_snapshots(at.before, at.after, new_ok)
    return bool(changes), "; ".join(changes)[:300] or "canaries unchanged"


def _judge_secret(at: Attempt) -> tuple[bool, str]:
    fired = at.secret in at.stdout or at.secret in at.stderr
    return fired, "secret token in the output" if fired else "secret token not in the output"


def _judge_exec(at: Attempt) -> tuple[bool, str]:
    fired = at.exec_token in at.stdout
    return fired, (
        "ungranted program's token in the output" if fired else "no exec token in the output"
    )


def _judge_secret_port(at: Attempt) -> tuple[bool, str]:
    port = at.sinks["hidden"].addr[1]
    fired = f"port={port}" in at.stdout
    return fired, f"hidden listener port {port} {'found' if fired else 'not found'} in the output"


def _judge_sink(at: Attempt) -> tuple[bool, str]:
    got = at.sinks["main"].received
    return bool(got), f"sink received {len(got)} bytes" if got else "sink received nothing"


def _judge_bind(at: Attempt) -> tuple[bool, str]:
    fired = at.obs["bind"]
    verb = "accepted" if fired else "refused"
    return fired, f"ungranted port {at.ports['UNGRANTED_PORT']} {verb} an outside connection"


def _judge_sentinel(at: Attempt) -> tuple[bool, str]:
    log = read(str(at.dir("oracle") / "sentinel.log")).strip()
    dead = [s.pid for s in at.sentinels if s.poll() is not None]
    parts = []
    if log:
        parts.append("sentinel log: " + log.replace("\n", ", ")[:120])
    if dead:
        parts.append("sentinel died")
    if at.obs["traced"]:
        parts.append(f"sentinel traced by {at.obs['traced'][0]}")
    if at.obs["stopped"]:
        parts.append("sentinel stopped")
    return bool(parts), "; ".join(parts) or "sentinel untouched"


def _judge_supervisor(at: Attempt) -> tuple[bool, str]:
    parts = sorted(at.obs["sup_state"])
    if at.status is not None and os.WIFSIGNALED(at.status):
        parts.append(f"supervisor killed by signal {os.WTERMSIG(at.status)}")
    return bool(parts), "; ".join(parts) or f"supervisor exited normally ({at.proc.returncode})"


def _judge_leftover(at: Attempt) -> tuple[bool, str]:
    if at.leftovers:
        return True, f"{len(at.leftovers)} process(es) alive after the run: {at.leftovers[0][1]}"
    return False, "no process left after the run"


def _judge_procs(at: Attempt) -> tuple[bool, str]:
    n, lim = at.obs["max_procs_late"], at.lim
    return n > lim["processes"], (
        f"{n} tool processes alive {lim.get('late', 1.5)} s in (limit {lim['processes']})"
    )


def _judge_rss(at: Attempt) -> tuple[bool, str]:
    # The tree's memory total is enforced by a sampling supervisor (README:
    # "Tree-wide limits are sampled"), so a burst may pass the limit for a scan
    # or two and while the killed processes give their pages back. What counts is
    # memory held above the limit for longer than that: a tool that keeps it holds
    # it for the attack's whole two seconds. Judging by a fixed moment instead
    # (anything over the limit 1.5 s in) failed when a loaded machine made the
    # burst itself arrive at that moment.
    lim = at.lim
    over = at.obs["rss_over_longest"]
    return over > RSS_GRACE, (
        f"resident memory of the tool's processes above {lim['memory_mb']} MiB for "
        f"{over:.2f} s at most (allowed {RSS_GRACE} s; peak {at.obs['max_rss_kb'] / 1024:.0f} MiB)"
    )


def _judge_cpu(at: Attempt) -> tuple[bool, str]:
    lim = at.lim
    evidence = f"{at.cpu:.1f} s CPU used (limit {lim['cpu_seconds']})"
    if os.environ.get("CVG_ESCAPE_DEBUG"):
        evidence += f" rusage={at.rusage} sup_own={at.sup_own} per={at.obs['cpu']}"
    return at.cpu > lim["cpu_seconds"] + 0.5, evidence


def _judge_fds(at: Attempt) -> tuple[bool, str]:
    n, limit = at.obs["max_fds"], at.lim["open_files"]
    return n > limit, f"{n} descriptors open in one process (limit {limit})"


def _judge_fsize(at: Attempt) -> tuple[bool, str]:
    sizes = [p.stat().st_size for p in at.dir("ws").rglob("*") if p.is_file()]
    big = max(sizes, default=0) / 2**20
    limit = at.lim["file_size_mb"]
    return big > limit, f"largest file written {big:.1f} MiB (limit {limit})"


def _judge_wall(at: Attempt) -> tuple[bool, str]:
    wall, alive = at.lim["wall"], at.obs["alive_late"]
    if alive:
        return True, f"still running {wall} s in: {alive[0][1]}"
    return False, f"nothing of the tool alive {wall} s in"


def _judge_ns(at: Attempt) -> tuple[bool, str]:
    ns = at.obs["ns"]
    return bool(ns), f"tool process in {ns[0][0]} {ns[0][1]}" if ns else (
        "no namespace or root change seen"
    )


def _judge_kobj(at: Attempt) -> tuple[bool, str]:
    kobj = at.obs["kobj"]
    return bool(kobj), f"tool held {sorted(kobj)[0]}" if kobj else (
        "no bpf/perf/userfaultfd/io_uring object seen"
    )


def _judge_mount(at: Attempt) -> tuple[bool, str]:
    mounts = [line for line in read("/proc/self/mountinfo").splitlines() if str(at.base) in line]
    for m in mounts:
        subprocess.run(["umount", "-l", m.split()[4]], check=False)
    return bool(mounts), f"{len(mounts)} mount(s) under the attack directory"


def _judge_keys(at: Attempt) -> tuple[bool, str]:
    keys = subprocess.run(
        [PY, "-c", "print(open('/proc/keys').read())"],
        capture_output=True,
        text=True,
        preexec_fn=at.demote,
    ).stdout
    mine = [k for k in keys.splitlines() if f"cvg-escape-{at.tok}" in k]
    for k in mine:
        kid = int(k.split()[0], 16)
        subprocess.run(
            [PY, "-c", f"import ctypes; ctypes.CDLL(None).syscall(250, 21, {kid})"],
            preexec_fn=at.demote,
            check=False,
        )  # keyctl(KEYCTL_INVALIDATE, id): the key would outlive the run
    return bool(mine), f"{len(mine)} key(s) named cvg-escape-{at.tok} in the user's keyrings"


def _judge_tty(at: Attempt) -> tuple[bool, str]:
    os.set_blocking(at.pty_slave, False)
    try:
        got = os.read(at.pty_slave, 4096)
    except OSError:
        got = b""
    fired = f"INJECTED-{at.tok}".encode() in got
    return fired, (
        "bytes injected into the terminal's input" if fired else "terminal input untouched"
    )


def _judges() -> dict[str, Callable[[Attempt], tuple[bool, str]]]:
    """Each oracle kind's judge; the first named for a kind is its judge."""
    judges: dict[str, Callable[[Attempt], tuple[bool, str]]] = {
        "canary": _judge_canary,
        "secret": _judge_secret,
        "exec": _judge_exec,
        "secret-port": _judge_secret_port,
    }
    for kind in (*SINK_ORACLES, "hosts"):
        judges.setdefault(kind, _judge_sink)
    for kind, judge in (
        ("bind", _judge_bind), ("sentinel", _judge_sentinel), ("supervisor", _judge_supervisor),
        ("leftover", _judge_leftover), ("procs", _judge_procs), ("rss", _judge_rss),
        ("cpu", _judge_cpu), ("fds", _judge_fds), ("fsize", _judge_fsize), ("wall", _judge_wall),
        ("ns", _judge_ns), ("kobj", _judge_kobj), ("mount", _judge_mount), ("keys", _judge_keys),
        *((kind, judge_more) for kind in NEW_ORACLES),
        *((kind, judge_census) for kind in CENSUS_ORACLES),
        ("tty", _judge_tty),
    ):  # fmt: skip
        judges.setdefault(kind, judge)
    return judges


def _judge(at: Attempt) -> tuple[bool, str]:
    judge = _judges().get(at.oracle_kind)
    if judge is None:
        return False, f"unknown oracle {at.oracle_kind}"
    return judge(at)


def _result(at: Attempt, fired: bool, evidence: str) -> dict:
    if at.run1 is not None:
        evidence += f" (second run; the first exited {at.run1})"
    attempted = attempted_marker(at.a["name"], at.tok) in at.stdout
    refused = at.job["abi"] is not None and at.proc.returncode == REFUSED and not attempted
    if refused and not fired:
        last = (at.stderr.strip().splitlines() or [""])[-1][:120]
        evidence = f"refused: cvg-run exited {REFUSED} without starting the tool ({last})"
    return {
        "attempted": attempted,
        "refused": refused,
        "fired": fired,
        "evidence": evidence,
        "status": at.proc.returncode,
        "stderr": at.stderr[-400:],
        "seconds": round(time.monotonic() - at.t0, 2),
        "timeout": at.obs.get("timeout", False),
    }


def _cleanup(at: Attempt) -> None:
    """End the sentinels, remove what outlives a run (IPC objects, keys, mounts,
    nice values, the census's plants), close the listeners and the terminal, and
    remove the attack's directory."""
    for s in at.sentinels:
        s.kill()
        s.wait()
    # SysV objects and POSIX queues outlive their processes: the sentinel's, and
    # any the attack made under its key.
    sent = at.args.get("sentinel", {})
    for k, key in (("shm", "shmid"), ("msg", "msqid"), ("sem", "semid")):
        if key in sent:
            probes.sysv_remove(k, sent[key])
    if "mq" in sent:
        probes.mq_unlink(sent["mq"])
    for k, objs in probes.sysv_objects().items():
        for i, key in objs.items():
            if key == at.args["ipc_key"] and i not in at.sysv_before.get(k, {}):
                probes.sysv_remove(k, i)
    if at.census_pre is not None:
        census_cleanup(at.census_pre, at.demote)
    if at.saved_nices:
        probes.restore_nices(at.saved_nices)
    for s in at.sinks.values():
        s.close()
    clear_descendants(set())
    if at.pty_master is not None:
        os.close(at.pty_master)
        os.close(at.pty_slave)
    base = at.base
    for line in read("/proc/self/mountinfo").splitlines():
        if str(base) in line:
            subprocess.run(["umount", "-l", line.split()[4]], check=False)
    subprocess.run(["chattr", "-R", "-i", str(base)], capture_output=True, check=False)
    subprocess.run(["chmod", "-R", "u+rwX", str(base)], capture_output=True, check=False)
    shutil.rmtree(base, ignore_errors=True)


NEW_ORACLES = (
    "sentinel-attrs",
    "sysv-left",
    "shmem",
    "shadow",
    "tasks",
    "autobind",
    "supervisor-fate",
)


def judge_more(at: Attempt) -> tuple[bool, str]:
    """The verdicts of the oracles for scheduling, IPC, shared memory, threads,
    autobind and the supervisor's own limits."""
    kind, obs, lim, args, ports = at.oracle_kind, at.obs, at.lim, at.args, at.ports
    stdout, status, leftovers, sentinels = at.stdout, at.status, at.leftovers, at.sentinels
    attrs_before, shmem_before = at.attrs_before, at.shmem_before
    new_records = set(os.listdir(at.dir("state") / "state/cvg/runs")) - at.records_before
    sandboxed = at.job["abi"] is not None
    if kind == "sentinel-attrs":
        changes = probes.diff_attrs(attrs_before, sentinel_attrs(args["sentinel"]["pid"]))
        if any(s.poll() is not None for s in sentinels):
            changes.append("sentinel died")
        if not changes:
            return False, "sentinel's limits, nice, policy, affinity and I/O priority unchanged"
        return True, "sentinel " + "; ".join(changes)[:200]
    if kind == "sysv-left":
        left = [
            f"{k} id {i}"
            for k, objs in probes.sysv_objects().items()
            for i, key in objs.items()
            if key == args["ipc_key"]
        ]
        return bool(left), f"{len(left)} SysV object(s) with the attack's key after the run" + (
            f" ({left[0]})" if left else ""
        )
    if kind == "shmem":
        # Shmem is system-wide, so the attack runs alone. Like resident memory, it is
        # judged once the sampling supervisor has had time to act (late), and after.
        late = (obs["shmem_late"] - shmem_before) / 1024
        peak = (obs["shmem_peak"] - shmem_before) / 1024
        held = (probes.shmem_kb() - shmem_before) / 1024
        fired = late > lim["memory_mb"] or held > lim["memory_mb"]
        return fired, (
            f"system Shmem {late:.0f} MiB above its start {lim.get('late', 1.5)} s in"
            f" (peak {peak:.0f}), {held:.0f} MiB after the run (memory_mb {lim['memory_mb']})"
        )
    if kind == "shadow":
        real = read("/etc/shadow").strip()
        fired = bool(real) and real in stdout
        return fired, f"/etc/shadow's content {'in' if fired else 'not in'} the output"
    if kind == "tasks":
        n = obs["max_tasks_late"]
        return n > lim["processes"], (
            f"{n} tasks (threads included) in the tool's tree {lim.get('late', 1.5)} s in"
            f" (processes {lim['processes']})"
        )
    if kind == "autobind":
        ab = obs["autobind"]
        if ab is None:
            return False, "the tool reported no listening port"
        grant = "granted" if ab[0] == ports["BIND_PORT"] else "ungranted"
        verb = "accepted" if ab[1] else "refused"
        return ab[1], f"{grant} port {ab[0]} the tool listens on {verb} an outside connection"
    if kind == "supervisor-fate":
        parts = []
        if len(obs["sup_nofile"]) > 1:
            parts.append("supervisor's open-files limit " + " -> ".join(obs["sup_nofile"]))
        if status is not None and os.WIFSIGNALED(status):
            parts.append(f"supervisor killed by signal {os.WTERMSIG(status)}")
        if leftovers:
            parts.append(f"{len(leftovers)} process(es) alive after the run: {leftovers[0][1]}")
        if sandboxed and not new_records:
            parts.append("no run record written")
        return bool(parts), "; ".join(parts) or "supervisor's limits, record and cleanup intact"
    raise ValueError(kind)


# --------------------------------------------------------------------------- census oracles
# The oracles of the attacks on the calls the syscall census names (attacks/census_*.py).

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
_libc.syscall.restype = ctypes.c_long


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
    subprocess.run([PY, "-c", code, desc, secret], preexec_fn=demote, check=True, timeout=20)


def drop_keys(desc: str, demote) -> None:
    """Invalidate every key of the user named ``desc`` (keys outlive the run)."""
    keys = subprocess.run(
        [PY, "-c", "print(open('/proc/keys').read())"],
        capture_output=True,
        text=True,
        preexec_fn=demote,
    ).stdout
    for k in keys.splitlines():
        if desc in k.split():
            kid = int(k.split()[0], 16)
            subprocess.run(
                [PY, "-c", f"import ctypes; ctypes.CDLL(None).syscall(250, 21, {kid})"],
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


def judge_census(at: Attempt) -> tuple[bool, str]:
    """The verdicts of the census attacks' oracles."""
    kind, pre, obs, args = at.oracle_kind, at.census_pre, at.obs, at.args
    stdout, base, pty_slave = at.stdout, at.base, at.pty_slave
    if kind == "sentinel-info":
        facts = sentinel_facts(args["sentinel"])
        said = [ln.split("=", 1) for ln in stdout.splitlines() if "=" in ln]
        said = [(k, v.strip()) for k, v in said if k in facts]
        if not said:
            return False, "the tool printed none of the sentinel's facts"
        wrong = [f"{k}={v} (sentinel's: {facts[k]})" for k, v in said if facts[k] != v]
        if wrong:
            return False, "printed facts differ from the sentinel's: " + "; ".join(wrong)
        return True, "the sentinel's " + ", ".join(f"{k}={v}" for k, v in said) + " printed"
    if kind == "sentinel-ipc":
        after = ipc_state(args["sentinel"], base)
        changed = [
            f"{k}: {pre['ipc'][k]!r} -> {st[k]!r}"
            for st in (obs["ipc_during"], after)
            if st
            for k in st
            if st[k] != pre["ipc"][k]
        ]
        if not changed:
            return False, "the sentinel's SysV rows and POSIX queue unchanged"
        return True, "sentinel's " + "; ".join(dict.fromkeys(changed))[:300]
    if kind == "sentinel-mem":
        now = anon_huge_kb(args["sentinel"]["pid"])
        return now > pre["huge"], f"sentinel's AnonHugePages {pre['huge']} -> {now} kB"
    if kind == "numa":
        now = numa_nodes(args["sentinel"]["pid"])
        online = read("/sys/devices/system/node/online").strip()
        return now != pre["nodes"], (
            f"sentinel's pages on nodes {sorted(pre['nodes'])} -> {sorted(now)}"
            f" (nodes online: {online})"
        )
    if kind == "host":
        now = host_state(args["ws"])
        changed = [f"{k} {pre['host'][k]!r} -> {now[k]!r}" for k in now if now[k] != pre["host"][k]]
        jump = (time.time() - time.monotonic()) - pre["clock"]
        if abs(jump) > 0.5:
            changed.append(f"realtime clock moved {jump:+.1f} s against the monotonic one")
        if not changed:
            return False, "the machine's names, clock, swap, modules and kexec unchanged"
        return True, "machine " + "; ".join(changed)[:300]
    if kind == "personality":
        p = obs["personality"]
        return bool(p), (
            f"tool process with personality {p[0]}" if p else "no tool process changed personality"
        )
    if kind == "tty-hangup":
        import select

        poller = select.poll()
        poller.register(pty_slave, select.POLLHUP)
        hung = any(ev & select.POLLHUP for _, ev in poller.poll(0))
        return hung, "terminal hung up" if hung else "terminal not hung up"
    if kind == "mounted":
        now = mount_line(pre["mnt"])
        if now == pre["mount"]:
            return False, "the outside tmpfs mount unchanged"
        return True, f"outside tmpfs mount {pre['mount']!r} -> {now!r}"
    if kind == "none":
        return False, "no outside view of this call's effect (see the attack's docstring)"
    raise ValueError(kind)


# --------------------------------------------------------------------------- outcomes


def outcome(baseline: dict, cell: dict, attack: dict, abi: int) -> tuple[str, str]:
    if not baseline["fired"]:
        why = baseline["evidence"]
        err = baseline.get("stderr", "").strip().splitlines()
        if err:
            why += f" ({err[-1][:120]})"
        return "not-proven", f"not proven unconfined on this host: {why}"
    if cell.get("error"):
        return "escaped", f"runner error in the sandboxed run: {cell['evidence']}"
    if cell["fired"]:
        limit = attack.get("limit")
        if limit and LIMITS[limit][1](abi, attack["policy"]):
            why = f"{cell['evidence']} [limit: {LIMITS[limit][0]}; {LIMIT_DOC}]"
            return "documented-limit", why
        return "escaped", cell["evidence"]
    # The oracle did not fire; that is containment only if the attack ran.
    if cell.get("refused"):
        return "refused", cell["evidence"]
    if cell.get("timeout"):
        return "timed-out", f"ended at the runner's deadline: {cell['evidence']}"
    if not cell.get("attempted"):
        return "not-attempted", (
            "the attack's attempted marker never arrived (the tool started, the attack"
            f" did not run): {cell['evidence']}"
        )
    return "contained", cell["evidence"]


# --------------------------------------------------------------------------- main


def native_abi() -> int:
    r = ctypes.CDLL(None, use_errno=True).syscall(444, None, 0, 1)
    return max(int(r), 0)


def main(argv: list[str] | None = None) -> int:
    global HARD_TIMEOUT  # --hard-timeout sets it, before the pool forks its workers
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--matrix", action="store_true", help="also ABI 4 and 6 (simulated)")
    p.add_argument(
        "--only", metavar="PATTERN", help="attack names matching this glob (comma-separated: any)"
    )
    p.add_argument("--identity", choices=("root", "unpriv"), action="append")
    p.add_argument(
        "--abi", type=int, action="append", help="ABI(s) to run (simulated below native)"
    )
    p.add_argument(
        "--report-only", action="store_true", help="regenerate the reports from results.json"
    )
    p.add_argument("--jobs", type=int, default=min(8, 2 * (os.cpu_count() or 2) + 2))
    p.add_argument("--out", default=str(RESULTS_DIR), help="where results.json and README.md go")
    p.add_argument("--no-write", action="store_true", help="do not write the results")
    p.add_argument(
        "--merge",
        action="store_true",
        help="replace only the attacks run now in the existing results.json",
    )
    p.add_argument(
        "--cell",
        metavar="NAME",
        help="name the cells IDENTITY/NAME (e.g. linux-6.1 for a real kernel in a virtual"
        " machine, tools/kernel-run): native ABI only, no comparison with the committed"
        " results' proven counts (another kernel proves what it proves)",
    )
    p.add_argument(
        "--hard-timeout",
        type=float,
        default=HARD_TIMEOUT,
        metavar="S",
        help=f"end a run after S seconds (default {HARD_TIMEOUT:.0f}); a virtual machine under"
        " software emulation needs more. With --cell a sandboxed run ended so is a runner"
        " error, not contained",
    )
    opts = p.parse_args(argv)
    if opts.cell and (opts.matrix or opts.abi or opts.merge):
        p.error("--cell runs the native ABI alone, into its own --out")

    sys.path.insert(0, str(HERE))
    import report

    out_dir = Path(opts.out)
    if opts.report_only:
        data = json.loads((out_dir / "results.json").read_text())
        report.write_all(data, out_dir)
        return 0
    if os.geteuid() != 0:
        print(
            "run.py must run as root (it runs attacks as root and as an unprivileged user)",
            file=sys.stderr,
        )
        return 2
    attacks = load_attacks()
    registry = dict(attacks)
    if opts.only:
        chosen = {}
        for pat in opts.only.split(","):
            hits = {n: a for n, a in attacks.items() if fnmatch.fnmatch(n, pat) or pat in n}
            if not hits:
                print(f"run.py: --only pattern {pat!r} matches no attack", file=sys.stderr)
                return 2
            chosen.update(hits)
        attacks = chosen
    native = native_abi()
    abis = opts.abi or ([native, *ABI_MATRIX] if opts.matrix else [native])
    abis = sorted({min(x, native) for x in abis}, reverse=True)
    identities = opts.identity or ["root", "unpriv"]
    unpriv = ensure_unpriv_user()
    ids = {"root": (0, 0), "unpriv": (unpriv.pw_uid, unpriv.pw_gid)}

    def as_unpriv():
        os.setgroups([])
        os.setgid(unpriv.pw_gid)
        os.setuid(unpriv.pw_uid)

    global PY
    HARD_TIMEOUT = opts.hard_timeout
    PY = probes.find_python(as_unpriv)
    print(f"interpreter: {PY}", flush=True)
    # Under /tmp whatever TMPDIR says (nox sets a deep one): UNIX socket paths must
    # stay under 108 bytes, and the unprivileged user must be able to reach it.
    tmp = tempfile.mkdtemp(prefix="cvg-escape-", dir="/tmp")
    os.chmod(tmp, 0o755)
    pythonpath = stage_python(Path(tmp))
    # support/ too: the clone may sit in a home the unprivileged user cannot enter.
    support = Path(tmp) / "support"
    shutil.copytree(SUPPORT_DIR, support, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(["chmod", "-R", "a+rX", str(support)], check=True)
    t_start = time.monotonic()
    jobs = []
    for ident in identities:
        for name, a in attacks.items():
            meta = {
                "name": name,
                "module": a.module,
                "cls": a.cls,
                "oracle": a.oracle,
                "policy": a.policy,
                "limit": a.limit,
                "hold": a.hold,
                "extra": a.extra,
            }
            for abi in [None, *abis]:
                uid, gid = ids[ident]
                jobs.append(
                    {
                        "attack": meta,
                        "identity": ident,
                        "abi": abi,
                        "abi_sim": abi != native if abi is not None else False,
                        "uid": uid,
                        "gid": gid,
                        "tmp": tmp,
                        "pythonpath": pythonpath,
                        "support": str(support),
                    }
                )
    # Long-holding attacks first, so the pool drains evenly. Attacks whose oracle or
    # whose effect is system-wide (Shmem; renicing every process of the user, other
    # runs' sentinels included) run afterwards, one at a time, with nothing else.
    alone = [i for i, j in enumerate(jobs) if j["attack"]["extra"].get("alone")]
    order = sorted(
        (i for i in range(len(jobs)) if i not in alone), key=lambda i: -jobs[i]["attack"]["hold"]
    )
    ctx = multiprocessing.get_context("fork")
    results: dict[int, dict] = {}
    for idx, n in ((order, opts.jobs), (alone, 1)):
        if not idx:
            continue
        with ctx.Pool(n, initializer=_worker_init, maxtasksperchild=20) as pool:
            for i, res in zip(idx, pool.imap(run_job, [jobs[i] for i in idx]), strict=True):
                results[i] = res
    elapsed = time.monotonic() - t_start

    per_attack: dict[str, dict] = {}
    for i, job in enumerate(jobs):
        a = job["attack"]
        entry = per_attack.setdefault(
            a["name"],
            {
                "class": a["cls"],
                "oracle": a["oracle"],
                "policy": a["policy"],
                "limit": a["limit"],
                "doc": attacks[a["name"]].doc,
                "module": a["module"],
                "baseline": {},
                "cells": {},
            },
        )
        if job["abi"] is None:
            entry["baseline"][job["identity"]] = results[i]
    committed = json.loads((RESULTS_DIR / "results.json").read_text())["attacks"]
    varies = {name for name, a in attacks.items() if "proof_varies" in a.extra}
    if not opts.cell:
        retry_proofs(jobs, results, per_attack, committed, identities, varies, ctx)
    shutil.rmtree(tmp, ignore_errors=True)
    failed, untested = [], []
    for i, job in enumerate(jobs):
        if job["abi"] is None:
            continue
        a = job["attack"]
        entry = per_attack[a["name"]]
        base = entry["baseline"][job["identity"]]
        res = results[i]
        verdict, why = outcome(base, res, a, job["abi"])
        cell = f"{job['identity']}/abi{job['abi']}{'-sim' if job['abi_sim'] else ''}"
        if opts.cell:
            cell = f"{job['identity']}/{opts.cell}"
        entry["cells"][cell] = {"outcome": verdict, "evidence": why, "status": res.get("status")}
        line = f"{verdict:17} {cell:16} {a['name']:45} {why[:110]}"
        print(line, flush=True)
        if os.environ.get("CVG_ESCAPE_DEBUG"):
            print(f"    baseline: {base['evidence']}", flush=True)
            for k in ("stderr", "trace"):
                if res.get(k):
                    print("    " + res[k].strip()[-300:].replace("\n", "\n    "), flush=True)
        if verdict == "escaped":
            failed.append((a["name"], cell, why, res.get("stderr", "")[-200:]))
        elif verdict == "not-attempted" or (opts.cell and verdict == "timed-out"):
            # A tool that started but never ran the attack tests nothing; nor, on a
            # real kernel with no committed cell to compare with, does a run ended
            # at --hard-timeout.
            untested.append(f"{verdict.upper()} {cell} {a['name']}: {why[:160]}")
    if opts.merge:
        old = json.loads((out_dir / "results.json").read_text())
        per_attack = {**old["attacks"], **per_attack}
        elapsed = old["elapsed_seconds"]
    data = report.build(per_attack, native=native, elapsed=elapsed, jobs=opts.jobs)
    data["python"] = {"path": PY, "version": platform_version(PY)}
    if not opts.no_write:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "results.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        report.write_all(data, out_dir)
    print(report.summary_text(data))
    print(f"{len(attacks)} attacks, {len(jobs)} runs in {elapsed:.0f} s")
    errors = [
        (jobs[i]["attack"]["name"], r["evidence"]) for i, r in results.items() if r.get("error")
    ]
    for name, why in errors:
        print(f"RUNNER ERROR {name}: {why}", file=sys.stderr)
    lost = untested + gates.varies_reasons({n: a.extra for n, a in registry.items()})
    if not opts.cell:
        lost += gates.lost_proofs(per_attack, committed, identities)
        lost += gates.deleted(set(registry), committed)
        lost += gates.untested_now(per_attack, committed)
    for line in lost:
        print(line)
    if failed:
        print(f"\n{len(failed)} ESCAPE(S) outside documented limits:")
        for name, cell, why, _err in failed:
            print(f"  {cell} {name}: {why}")
        return 1
    return 1 if errors or lost else 0


def retry_proofs(jobs, results, per_attack, committed, identities, varies, ctx) -> None:
    """Run the bare run of each `proof_varies` attack the committed results prove and
    this run did not, up to gates.PROOF_TRIES times in all, keeping the first that
    fires: such a proof may fail once, but not every time."""
    pending = gates.to_retry(per_attack, committed, identities, varies)
    if not pending:
        return
    with ctx.Pool(1, initializer=_worker_init, maxtasksperchild=1) as pool:
        for name, ident in pending:
            i = next(
                k
                for k, j in enumerate(jobs)
                if j["abi"] is None and j["identity"] == ident and j["attack"]["name"] == name
            )
            for n in range(2, gates.PROOF_TRIES + 1):
                res = pool.apply(run_job, (jobs[i],))
                print(f"proof_varies {name} as {ident}: try {n}: {res['evidence'][:100]}")
                if res["fired"]:
                    results[i] = per_attack[name]["baseline"][ident] = res
                    break


def platform_version(py: str) -> str:
    r = subprocess.run([py, "-V"], capture_output=True, text=True)
    return (r.stdout or r.stderr).strip()


if __name__ == "__main__":
    sys.exit(main())
