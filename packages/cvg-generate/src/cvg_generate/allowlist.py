"""Syscall allow-list baselines: the calls each runtime makes, measured per host.

One observed run under-approximates what a runtime calls: another input takes another
path, another C library starts up and spawns differently, and a call made in a few runs
out of many refuses a legitimate program now and then. So an allow list is the union of
what was observed and, for each runtime the observation ran, what a corpus of real
programs made with it, over every C library version measured (tools/syscall-baselines
writes one file per runtime, C library and host into ``data/syscalls``).
"""

from __future__ import annotations

import json
import os
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from cvg_schema import Event, Observation

from .scripts import SHELLS

__all__ = [
    "ALWAYS",
    "DATA",
    "FAMILIES",
    "SyscallBaseline",
    "family",
    "load_baselines",
    "runtimes_of",
    "shipped",
]

DATA: Final = Path(__file__).parent / "data" / "syscalls"

ALWAYS: Final = (
    "exit",
    "exit_group",
    "rt_sigreturn",
    "restart_syscall",
    "rt_sigaction",
    "clone",
    "clone3",
    "madvise",
    "getrandom",
    "rseq",
    "execve",
)
"""In every allow list, seen or not. exit_group never returns, so strace -c leaves it
out, and a list without it kills every program at its end; rt_sigreturn and
restart_syscall run on a signal's return, which a short trace may never see. The rest are
what C libraries differ on at start-up and spawn: glibc 2.39 calls rt_sigaction and
spawns with clone, 2.43 calls madvise and getrandom and spawns with clone3 (answered ENOSYS
by cvg, so the clone fallback must be there too); rseq is registered per thread."""

FAMILIES: Final = (
    ("open", "openat", "openat2", "creat"),
    ("stat", "lstat", "fstat", "newfstatat", "statx"),
    ("access", "faccessat", "faccessat2"),
    ("chmod", "fchmod", "fchmodat", "fchmodat2"),
    ("chown", "fchown", "lchown", "fchownat"),
    ("link", "linkat"),
    ("unlink", "unlinkat", "rmdir"),
    ("rename", "renameat", "renameat2"),
    ("mkdir", "mkdirat"),
    ("mknod", "mknodat"),
    ("symlink", "symlinkat"),
    ("readlink", "readlinkat"),
    ("truncate", "ftruncate"),
    ("utime", "utimes", "futimesat", "utimensat"),
    ("getdents", "getdents64"),
    ("dup", "dup2", "dup3"),
    ("pipe", "pipe2"),
    ("fsync", "fdatasync"),
    ("poll", "ppoll", "select", "pselect6"),
    ("epoll_create", "epoll_create1"),
    ("epoll_wait", "epoll_pwait", "epoll_pwait2"),
    ("wait4", "waitid"),
    ("fork", "vfork", "clone", "clone3"),
    ("eventfd", "eventfd2"),
    ("signalfd", "signalfd4"),
    ("inotify_init", "inotify_init1"),
    ("accept", "accept4"),
    ("getrlimit", "prlimit64", "setrlimit"),
    ("sendfile", "copy_file_range"),
)
"""Calls that are one operation under several names: the same kernel code and the same
checks (Landlock sees a path whichever way it is named), and which one a program makes
depends on its C library version and code path, not on what it does (glibc moved from
open to openat, from stat to newfstatat and statx, from fork to clone and clone3). An
allow list holding one member holds them all: a legitimate program is refused on another
host or input for having picked another name, otherwise."""

_FAMILY_OF: Final = {name: family for family in FAMILIES for name in family}


def family(call: str) -> tuple[str, ...]:
    """The calls that are ``call``'s operation under another name (itself included)."""
    return _FAMILY_OF.get(call, (call,))


_PYTHON_RE: Final = re.compile(r"^python[0-9.]*$")
_NODE_RE: Final = re.compile(r"^(node|nodejs)$")


@dataclass(frozen=True)
class SyscallBaseline:
    """One measurement: a runtime on one C library, arch and host."""

    file: str
    runtime: str
    libc: str
    libc_version: str
    arch: str
    host: str
    runs: int
    syscalls: dict[str, int]  # call -> corpus runs that made it


class BaselineError(ValueError):
    """A baseline file that is not what tools/syscall-baselines writes."""


def _load(path: Path) -> SyscallBaseline:
    try:
        data = json.loads(path.read_text())
        counts = data["syscalls"]
        if not isinstance(counts, dict) or not all(
            isinstance(k, str) and isinstance(v, int) for k, v in counts.items()
        ):
            raise TypeError("syscalls must map names to run counts")
        return SyscallBaseline(
            file=path.name,
            runtime=str(data["runtime"]),
            libc=str(data["libc"]),
            libc_version=str(data["libc_version"]),
            arch=str(data["arch"]),
            host=str(data.get("host", "")),
            runs=int(data.get("runs", 0)),
            syscalls=dict(counts),
        )
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise BaselineError(f"{path}: not a syscall baseline: {e}") from None


def load_baselines(directory: Path = DATA) -> list[SyscallBaseline]:
    """Every baseline file in ``directory``, in name order."""
    if not directory.is_dir():
        return []
    return [_load(p) for p in sorted(directory.glob("*.json"))]


def shipped(runtime: str, baselines: Iterable[SyscallBaseline], arch: str) -> set[str]:
    """The union a runtime ships with on ``arch``: every file of it, any C library."""
    out: set[str] = set()
    for b in baselines:
        if b.runtime == runtime and b.arch == arch:
            out.update(b.syscalls)
    return out


def runtimes_of(obs: Observation) -> dict[str, Event]:
    """The runtimes an observation ran (python3, node, sh, and ``native``: any
    dynamically linked program, whose C library starts it up), each with the event that
    showed it: the first execution of it."""
    out: dict[str, Event] = {}
    for exe, event in obs.executions():
        loader = posixpath.basename(exe.interpreter or "")
        if loader.startswith("ld-linux"):
            out.setdefault("native", event)
        for path in [exe.path, *exe.shebang]:
            name = posixpath.basename(os.path.realpath(path))
            if _PYTHON_RE.match(name):
                out.setdefault("python3", event)
            elif _NODE_RE.match(name):
                out.setdefault("node", event)
            elif name in SHELLS:
                out.setdefault("sh", event)
    return out
