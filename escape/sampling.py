"""What the runner watches while a run goes on, every SAMPLE seconds, and gathers
after it: the tool's processes, the sentinels and the supervisor, and what only
some oracles need."""

from __future__ import annotations

import os
import socket
import time
from typing import TYPE_CHECKING

import probes
import runtime
from census_oracles import PERSONALITY_FLAGS, ipc_state
from oracles import (
    clear_descendants,
    cpu_ticks,
    descendants,
    fd_count,
    kill_pids,
    kobjs_of,
    ns_of,
    probe_reported_port,
    read,
    reap_all,
    snapshot,
    status_field,
    status_limit,
    task_count,
)  # fmt: skip
from runtime import SAMPLE

if TYPE_CHECKING:
    from cells import Attempt


def observe(at: Attempt) -> None:
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
        if now > max(runtime.HARD_TIMEOUT, hold + 5):
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


def collect(at: Attempt) -> None:
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
