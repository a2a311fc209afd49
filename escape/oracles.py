"""The runner's outside views of files and processes: snapshots of the canaries and
state directories, the tool's process tree read from /proc (namespaces, kernel
objects, CPU, descriptors, tasks, limits), and ending what a run left behind."""

from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path


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
