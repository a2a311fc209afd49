"""The verdicts: each oracle kind's judge says whether it fired and why, and
outcome() turns the bare run's and a sandboxed cell's verdicts into the cell's
outcome."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import later
import probes
import runtime
from census_oracles import (
    CENSUS_ORACLES,
    anon_huge_kb,
    host_state,
    ipc_state,
    mount_line,
    numa_nodes,
    sentinel_attrs,
    sentinel_facts,
)  # fmt: skip
from oracles import diff_snapshots, read
from runtime import RSS_GRACE, SINK_ORACLES

if TYPE_CHECKING:
    from cells import Attempt

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
    # The tree's memory total is enforced by a sampling supervisor (docs/limits.md:
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
        [runtime.PY, "-c", "print(open('/proc/keys').read())"],
        capture_output=True,
        text=True,
        preexec_fn=at.demote,
    ).stdout
    mine = [k for k in keys.splitlines() if f"cvg-escape-{at.tok}" in k]
    for k in mine:
        kid = int(k.split()[0], 16)
        subprocess.run(
            [runtime.PY, "-c", f"import ctypes; ctypes.CDLL(None).syscall(250, 21, {kid})"],
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
        ("tty", _judge_tty), ("later", later.judge),
    ):  # fmt: skip
        judges.setdefault(kind, judge)
    return judges


def judge(at: Attempt) -> tuple[bool, str]:
    judge = _judges().get(at.oracle_kind)
    if judge is None:
        return False, f"unknown oracle {at.oracle_kind}"
    return judge(at)


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
