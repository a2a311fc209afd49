"""A deterministic synthetic ``cvg.observation`` of N events, for bench_generate.py and
cvg-generate's tests: a Python tool run in a project, reading its stdlib, packages,
/etc and its home, writing outputs and caches, probing missing files, touching secrets
(``~/.ssh``, ``.env``) and broad trees, and a few connects and denials.

100k events name ~30k unique paths, as a real trace does (a test suite's); a longer
observation repeats them, as a longer run of the same tool reuses its files, so 1M events
hold the same ~30k."""

from __future__ import annotations

from typing import Any

CWD = "/home/u/project"
HOME = "/home/u"
SCRATCH = "/tmp/cvg-bench-scratch"

_STDLIB = "/usr/lib/python3.12"
_SITE = "/home/u/project/.venv/lib/python3.12/site-packages"


UNIQUE = 54_000
"""Path numbers: with the kinds' own repeats, ~30k unique paths."""


def _pick(i: int, unique: int) -> int:
    """Event ``i``'s path number, spread over the kinds (7919 is prime)."""
    return (i * 7919) % unique


def _file(op: str, path: str, result: str = "ok", syscall: str = "openat", **more: Any) -> dict:
    """A file event's fields, in the order an observation writes them."""
    return {"op": op, "syscall": syscall, "result": result, "path": path, **more}


_SECRETS = (f"{HOME}/.ssh/id_ed25519", f"{CWD}/.env", f"{HOME}/.aws/credentials", "/etc/shadow")


def _event(i: int, unique: int) -> dict[str, Any]:
    n = _pick(i, unique)
    kind = i % 40
    e: dict[str, Any] = {"id": f"e{i + 2}", "pid": 1000 + i % 24, "time": 1_700_000_000 + i / 1e4}
    if kind < 12:
        e |= _file("read", f"{_STDLIB}/pkg{n % 61}/mod{n}.py")
    elif kind < 18:
        e |= _file("read", f"{_SITE}/lib{n % 113}/m{n}.py")
    elif kind < 22:
        e |= _file("stat", f"{CWD}/src/missing{n}.py", "ENOENT", "newfstatat")
    elif kind < 25:
        e |= _file("read", f"{CWD}/src/f{n % 2000}.py")
    elif kind < 27:
        e |= _file("write", f"{CWD}/out/r{n % 500}.json")
    elif kind == 27:
        e |= _file("read", f"/etc/conf{n % 40}.d/x.conf")
    elif kind == 28:
        e |= _file("read", f"{HOME}/.cache/tool/c{n % 300}", directory=n % 300 == 0)
    elif kind == 29:
        e |= _file("create", f"{HOME}/.cache/tool/new{n % 50}")
    elif kind == 30:
        e |= _file("read", _SECRETS[i // 40 % 4])
    elif kind == 31:
        # Broad trees: listing /usr, writing in /etc or the home as a whole.
        e |= (
            _file("read", "/usr", directory=True),
            _file("create", f"/etc/tool{n % 7}.lock"),
            _file("create", f"{HOME}/.toolrc{n % 5}"),
        )[i // 40 % 3]
    elif kind == 32:
        e |= _file("read", f"/var/lib/tool/s{n % 100}", "EACCES",
                   denied_while_learning=True, denied_by="landlock")  # fmt: skip
    elif kind == 33:
        e |= {
            "op": "connect",
            "syscall": "connect",
            "result": "ok",
            "family": "inet",
            "sock_type": "stream",
            "address": "10.0.0.1",
            "port": (443, 80, 5432)[n % 3],
        }
    elif kind == 34:
        e |= _file("write", f"{SCRATCH}/t{n % 900}")
    elif kind == 35:
        e |= _file("remove", f"{CWD}/out/r{n % 500}.tmp", syscall="unlinkat")
    elif kind == 36:
        e |= _file("read", f"/proc/{1000 + n % 24}/status")
    elif kind == 37:
        e |= _file("stat", f"/usr/share/zoneinfo/Z{n % 80}", syscall="newfstatat")
    elif kind == 38:
        e |= _file("read", f"{HOME}/notes/n{n % 30}.md")
    else:
        e |= {"op": "signal", "syscall": "kill", "result": "ok", "target_pid": 1000 + n % 30}
    return e


def observation(events: int) -> dict[str, Any]:
    """The observation, as the dict its JSON holds (``events`` events, at least 1)."""
    unique = max(1, min(UNIQUE, events * UNIQUE // 100_000))
    evs: list[dict[str, Any]] = [
        {
            "id": "e1",
            "pid": 1000,
            "op": "execute",
            "syscall": "execve",
            "result": "ok",
            "path": "/usr/bin/python3",
            "time": 1_700_000_000.0,
        },
    ]
    evs.extend(_event(i, unique) for i in range(events - 1))
    return {
        "kind": "cvg.observation",
        "schema_version": "1.0",
        "argv": ["python3", "tool.py"],
        "cwd": CWD,
        "home": HOME,
        "scratch": [SCRATCH],
        "strace_version": "6.1",
        "executables": [
            {
                "path": "/usr/bin/python3",
                "interpreter": "/lib64/ld-linux-x86-64.so.2",
                "event_id": "e1",
            }
        ],
        "events": evs,
        "exit_status": 0,
        "peak_rss_kb": 51200,
    }


CORPUS = "/srv/corpus"
"""The tree :func:`tree_walk` walks: outside the project and the home, so each of its
paths is judged and resolved as itself, not folded into the workspace."""

_FANOUT = 12
"""Subdirectories per directory of the walked tree, and :data:`_FILES` files in each."""
_FILES = 24


def _walk_event(n: int, op: str, path: str, **more: Any) -> dict[str, Any]:
    syscall = {"stat": "newfstatat", "write": "openat", "create": "openat"}.get(op, "openat")
    return {
        "id": f"e{n}",
        "pid": 2000 + n % 4,
        "time": 1_700_000_000 + n / 1e4,
        **_file(op, path, syscall=syscall, **more),
    }


def tree_walk(events: int) -> dict[str, Any]:
    """An observation of a tool walking a big tree (an indexer, ``find -exec``, a
    backup): each directory listed, each file stat'ed and most of them read, once
    each; an index written in the project every so many files, a few ENOENT probes.
    Nearly every event names a path of its own: 300k events name ~260k paths."""
    obs = observation(1)
    evs = obs["events"]
    dirs = [CORPUS]
    d = 0
    while len(evs) < events:
        here = dirs[d]
        d += 1
        evs.append(_walk_event(len(evs) + 1, "read", here, directory=True))
        dirs.extend(f"{here}/d{k}" for k in range(_FANOUT))
        for k in range(_FILES):
            if len(evs) >= events:
                break
            path = f"{here}/f{k}.txt"
            n = len(evs) + 1
            if n % 7 == 0:
                evs.append(_walk_event(n, "stat", path))
            elif n % 11 == 0:
                evs.append(_walk_event(n, "stat", path))
                evs.append(_walk_event(n + 1, "read", path))
            elif n % 97 == 0:
                evs.append(_walk_event(n, "stat", path + ".meta", result="ENOENT"))
            else:
                evs.append(_walk_event(n, "read", path))
            if n % 53 == 0:
                evs.append(_walk_event(len(evs) + 1, "write", f"{CWD}/index/part{n % 400}.idx"))
    del evs[events:]
    return obs
