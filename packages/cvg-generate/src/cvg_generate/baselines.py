"""Runtime baselines: what an interpreter or the C library may read on any input.

One trace under-approximates a runtime. A different input imports another module,
formats a date in another time zone, or runs on a host whose glibc reads
``gconv-modules.d`` instead of ``gconv-modules.cache`` or ``C.utf8`` instead of
``C.UTF-8``. A profile that lets the runtime start on every input is a union over those
versions, so each baseline lists every path any of them reads; the ones that exist here
are granted (read only), each citing the event that showed the runtime was used.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

from cvg_schema import Event, Observation

from .scripts import MAKES, SHELLS

__all__ = [
    "RESOLVER",
    "UTILITIES",
    "Baseline",
    "baselines",
    "interpreter_of",
    "resolver",
    "utilities",
]

GLIBC: Final = (
    "/etc/ld.so.cache",
    "/etc/ld.so.preload",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/nsswitch.conf",
    "/etc/passwd",
    "/etc/group",
    "/usr/share/zoneinfo",
    "/usr/lib/locale",
    "/usr/share/locale/locale.alias",
    "/usr/lib/x86_64-linux-gnu/gconv",
    "/usr/lib/aarch64-linux-gnu/gconv",
    "/usr/lib64/gconv",
    "/usr/lib/gconv",
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
)
"""What glibc's loader and locale code read, across versions: the loader cache and
config, time zone data, the locale archive or per-locale directories, iconv modules,
the name-service files getpwuid() reads (no secrets: those are in /etc/shadow), and the
multiarch library directory: another input dlopen()s another library (Python's ctypes
loads libffi, ssl loads libssl), and one trace names only the libraries it loaded."""

NODE: Final = ("/usr/share/nodejs", "/usr/lib/node_modules", "/usr/share/node_modules")
"""Where Debian and upstream Node keep their bundled modules."""

PERL: Final = (
    "/etc/perl",
    "/usr/share/perl5",
    "/usr/share/perl",
    "/usr/lib/x86_64-linux-gnu/perl5",
    "/usr/lib/x86_64-linux-gnu/perl",
    "/usr/lib/x86_64-linux-gnu/perl-base",
    "/usr/lib/aarch64-linux-gnu/perl5",
    "/usr/lib/aarch64-linux-gnu/perl",
    "/usr/lib/aarch64-linux-gnu/perl-base",
    "/usr/lib64/perl5",
    "/usr/share/perl5/vendor_perl",
    "/usr/local/share/perl",
    "/usr/local/lib/site_perl",
)
"""Perl's module directories (@INC) on Debian, Ubuntu and Fedora: another input uses
another module (JSON::PP where this one used List::Util)."""

_PYTHON_RE: Final = re.compile(r"^python[0-9.]*$")
_PERL_RE: Final = re.compile(r"^perl[0-9.]*$")
_NODE_RE: Final = re.compile(r"^(node|nodejs)$")
_CC1: Final = frozenset({"cc1", "cc1plus", "cc1obj"})
CC_HEADERS: Final = ("/usr/include", "/usr/local/include")
"""Where the C compiler finds the headers a different source file includes."""


@dataclass(frozen=True)
class Baseline:
    """A read grant the runtime needs, the event that showed the runtime, and why."""

    path: str
    event: Event
    why: str


def _names(obs: Observation) -> Iterable[tuple[str, Event | None, str | None]]:
    for exe in obs.executables:
        event = None
        if exe.event_id is not None:
            try:
                event = obs.event(exe.event_id)
            except KeyError:
                event = None
        for path in [exe.path, *exe.shebang]:
            yield posixpath.basename(os.path.realpath(path)), event, exe.interpreter


def baselines(obs: Observation) -> list[Baseline]:
    """The baseline read grants this observation's executables call for (existing
    here), each once."""
    out: dict[str, Baseline] = {}

    def add(path: str, event: Event, why: str) -> None:
        if path not in out and os.path.exists(path):
            out[path] = Baseline(path, event, why)

    for name, event, interp in _names(obs):
        if event is None:
            continue
        loader = posixpath.basename(interp) if interp is not None else ""
        if loader.startswith(("ld-linux", "ld-musl")):
            for path in GLIBC:
                add(path, event, f"C library baseline: {name} is dynamically linked")
        if _PYTHON_RE.match(name):
            for path in _python_stdlib(obs):
                add(path, event, f"python baseline: {name}'s standard library")
        elif _PERL_RE.match(name):
            for path in PERL:
                add(path, event, f"perl baseline: {name}'s module directories")
        elif _NODE_RE.match(name):
            for path in NODE:
                add(path, event, f"node baseline: {name}'s bundled modules")
        elif name in _CC1:
            compiler_dir = posixpath.dirname(os.path.realpath(event.path or "/"))
            for path in (compiler_dir, *CC_HEADERS):
                add(path, event, f"C compiler baseline: {name}'s own files and the headers")
        elif name in SHELLS:
            pass  # a shell reads nothing of its own beyond the C library
    return list(out.values())


def _python_stdlib(obs: Observation) -> list[str]:
    """The standard library directories this python used: where it found ``os.py``
    (its landmark), with lib-dynload beneath it."""
    found = []
    for e in obs.events:
        if e.result == "ok" and e.path and posixpath.basename(e.path) in ("os.py", "os.pyc"):
            d = os.path.realpath(posixpath.dirname(e.path))
            if d not in found:
                found.append(d)
    return found


UTILITIES: Final = (
    "[", "awk", "basename", "cat", "chmod", "cmp", "comm", "cp", "cut", "date", "diff",
    "dirname", "du", "echo", "egrep", "env", "expr", "false", "fgrep", "find", "fold",
    "grep", "gunzip", "gzip", "head", "id", "join", "ln", "ls", "mkdir", "mktemp", "mv",
    "nl", "od", "paste", "printf", "readlink", "realpath", "rm", "rmdir", "sed", "seq",
    "sleep", "sort", "split", "stat", "tail", "tar", "tee", "test", "touch", "tr", "true",
    "uname", "uniq", "wc", "which", "xargs", "zcat",
)  # fmt: skip
"""The standard utilities a shell script (or a Makefile's recipes) runs: another input
takes another branch and runs `rm`, `xargs` or `gunzip` where this one did not. Each is
granted execute as an exact file, and read when it is itself a script (gunzip is one)."""

# env is not among them: it runs the one program its arguments name (a "#!/usr/bin/env
# node" script runs node, which the observation sees), never a script of utilities.
_UTILITY_USERS: Final = SHELLS | MAKES | frozenset({"xargs", "find"})


def utilities(obs: Observation) -> list[Baseline]:
    """The shell baseline: the standard utilities, when a shell or make ran (existing
    here, symlinks resolved, each once), citing the event that ran the shell."""
    out: dict[str, Baseline] = {}
    for name, event, _interp in _names(obs):
        if event is None or name not in _UTILITY_USERS:
            continue
        for util in UTILITIES:
            for d in ("/usr/bin", "/bin"):
                path = posixpath.join(d, util)
                if os.path.exists(path):
                    real = os.path.realpath(path)
                    if real not in out:
                        why = f"shell baseline: {name} may run {util} on another input"
                        out[real] = Baseline(real, event, why)
                    break
    return list(out.values())


RESOLVER: Final = (
    "/etc/hosts",
    "/etc/nsswitch.conf",
    "/etc/resolv.conf",
    "/etc/gai.conf",
    "/etc/host.conf",
    "/etc/services",
)
"""What getaddrinfo() reads to turn a name into an address: a client that connected to
an IP literal on one input connects to ``localhost`` or a host name on another."""

_INET: Final = frozenset({"inet", "inet6"})


def resolver(obs: Observation, grantable: Callable[[Event], bool]) -> list[Baseline]:
    """The resolver baseline (existing here) when the tool connected or sent over TCP or
    UDP, citing the first such connect or send that is ``grantable``."""
    first = next(
        (
            e
            for e in obs.events
            if e.op in ("connect", "send")
            and grantable(e)
            and e.family in _INET
            and (e.result == "ok" or e.result.startswith("ECONN") or e.denied_while_learning)
        ),
        None,
    )
    if first is None:
        return []
    why = "resolver baseline: a network client resolves host names on another input"
    return [Baseline(p, first, why) for p in RESOLVER if os.path.exists(p)]


def interpreter_of(script: str, path_dirs: Iterable[str]) -> list[tuple[str, str, str]]:
    """For a script that was not seen to run: its ``#!`` interpreter (through ``env``,
    found on ``path_dirs``) to execute, and that runtime's trees to read (python's
    standard library and packages, perl's modules, node's), as (path, why, field),
    those existing here."""
    try:
        with open(script, "rb") as f:
            first = f.readline(256)
    except OSError:
        return []
    if not first.startswith(b"#!"):
        return []
    words = first[2:].decode("utf-8", "replace").split()
    if not words:
        return []
    interp = words[0]
    if posixpath.basename(interp) == "env":
        name = next((w for w in words[1:] if not w.startswith("-") and "=" not in w), None)
        found = [posixpath.join(d, name) for d in path_dirs if name] if name else []
        interp = next((p for p in found if os.access(p, os.X_OK)), "")
    if not interp.startswith("/") or not os.path.exists(interp):
        return []
    real = os.path.realpath(interp)
    name = posixpath.basename(real)
    why = f"#! interpreter of {script}"
    out = [(real, why, "execute")]
    trees: tuple[str, ...] = ()
    if _PYTHON_RE.match(name):
        version = name[len("python") :]
        trees = (f"/usr/lib/{name}", f"/usr/local/lib/{name}", "/usr/lib/python3/dist-packages")
        if not version:
            trees = ("/usr/lib/python3/dist-packages",)
    elif _PERL_RE.match(name):
        trees = PERL
    elif _NODE_RE.match(name):
        trees = NODE
    out.extend((t, f"{name} runtime of {script}", "read") for t in trees if os.path.isdir(t))
    return out
