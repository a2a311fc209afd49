"""One attack run once, in a worker of the pool: the baseline (no sandbox) or one
sandboxed cell. Its directory tree, canaries and policy; the sinks, sentinels,
descriptors and terminal its oracle watches; the command; the run, watched by
sampling.py and judged by judges.py; and the cleanup of whatever outlives it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import later
import probes
import runtime
from _lib import attempted_marker
from census_oracles import census_cleanup, census_prepare, sentinel_attrs, shape_sentinel
from judges import judge
from oracles import clear_descendants, free_port, read, reap_all, snapshot
from runtime import ATTACKS_DIR, CVG_MAIN, POLICIES_DIR, REFUSED, SINK_ORACLES
from sampling import collect, observe

from cvg_kernel.seal import KEY_BYTES
from cvg_testing import Sink


def worker_init() -> None:
    runtime.libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans of a run come here
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
    later: dict = field(default_factory=dict)

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
        observe(at)
        collect(at)
        if at.extra.get("later"):
            later.run(at)
        fired, evidence = judge(at)
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
    # cvg-run makes the user's sealing key on its first run: made here first, so the
    # snapshot's state already holds it and its creation is not taken for the tool's.
    key = state / "state/cvg/key"
    key.mkdir(mode=0o700)
    (key / "seal").write_bytes(os.urandom(KEY_BYTES))
    (key / "seal").chmod(0o600)
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
    if at.extra.get("later"):
        later.prepare(at)
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
                runtime.PY,
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
        runtime.PY,
        str(work / "attacks" / f"{a['module']}.py"),
        a["name"],
        str(work / "args.json"),
    ]
    if at.extra.get("inline"):
        # The policy grants nothing of the working directory (a home under the
        # default policy): the attack's code and arguments come on the command line,
        # or the interpreter could not read them and the attack would never run.
        attack_cmd = [runtime.PY, "-c", inline_program(a["module"]), a["name"], json.dumps(at.args)]
    if job["abi"] is None:
        shutil.copy(Path(job["support"]) / "passthru.py", at.base / "passthru.py")
        return [runtime.PY, str(at.base / "passthru.py"), "--", *attack_cmd]
    cmd = [runtime.PY, "-c", CVG_MAIN]
    if a["policy"] != "default":
        cmd += ["-p", str(at.policy)]
        # A policy this kernel (or simulated ABI) cannot enforce fully runs degraded,
        # so the cell tests what is still enforced and the documented limit decides;
        # no_degraded attacks test the refusal itself.
        if not at.extra.get("no_degraded"):
            cmd.append("--allow-degraded")
    return [*cmd, "--", *attack_cmd]


def inline_program(module: str) -> str:
    """attacks/_lib.py and the attack's module as one program for ``python -c``,
    without the module's import of _lib (its names are already defined)."""
    lib = (ATTACKS_DIR / "_lib.py").read_text()
    body = [
        line
        for line in (ATTACKS_DIR / f"{module}.py").read_text().splitlines()
        if not line.startswith(("from _lib import", "sys.path.insert(0, os.path.dirname("))
    ]
    return lib + "\n" + "\n".join(body) + "\n"


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
                timeout=runtime.HARD_TIMEOUT,
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
