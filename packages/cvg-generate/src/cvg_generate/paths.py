"""Paths as a policy writes them: symlinks resolved, ``${CWD}``, ``${SCRATCH}``, ``${HOME}``.

An observation names paths as the tool used them. A policy wants the file the kernel
will check (Landlock attaches a rule to the inode a path resolves to, so a rule on the
link or the target is the same rule, but the target is what a reader can review and
what sibling counting must see: ``/lib/x86_64-linux-gnu`` and
``/usr/lib/x86_64-linux-gnu`` are one directory on a merged-/usr system), with the
run-specific parts replaced by variables so the policy works in another working
directory, another scratch directory and for another home.
"""

from __future__ import annotations

import functools
import os
import posixpath
import re
from collections.abc import Iterable
from typing import Final

from cvg_policy.defaults import BROAD_TREES, is_per_process
from cvg_schema import Observation

__all__ = [
    "BROAD",
    "PathContext",
    "installed_tree",
    "is_broad",
    "is_per_process",
    "parent",
    "within",
]

BROAD: Final = BROAD_TREES | {"${HOME}"}
"""Directories no generated rule covers as a whole: the system's top-level trees (a
rule there would grant far more than any tool used) and the home directory."""


def within(inner: str, outer: str) -> bool:
    """True when ``inner`` is ``outer`` or beneath it (both normalised)."""
    if outer == "/":
        return inner.startswith("/")
    return inner == outer or inner.startswith(outer + "/")


def parent(path: str) -> str:
    """The directory holding ``path`` (``${CWD}`` for ``${CWD}/x``)."""
    head = posixpath.dirname(path)
    return head or "/"


SHARED_ROOTS: Final = (
    "/usr/share",
    "/usr/lib",
    "/usr/lib64",
    "/usr/lib32",
    "/usr/libexec",
    "/usr/local/share",
    "/usr/local/lib",
)
"""Where every installed program keeps its data and modules, each in a tree of its own:
``/usr/share/perl``, ``/usr/share/groff``, ``/usr/lib/x86_64-linux-gnu/perl``."""
_TRIPLET: Final = re.compile(r"^[a-z0-9_]+-linux-[a-z0-9_]+$")
_SHARED_BY_MANY: Final = frozenset(
    {
        "doc",
        "man",
        "info",
        "locale",
        "fonts",
        "icons",
        "pixmaps",
        "applications",
        "mime",
        "misc",
        "common-licenses",
        "dict",
        "X11",
        "pkgconfig",
        "bash-completion",
    }
)
"""Directories below a shared root where every package puts its own part: the tree is
one level further down (``/usr/share/doc/tar``, not all the documentation)."""


SYSTEM_TOP: Final = "/usr/"
"""Installed trees resolve beneath this (a tree that leads elsewhere is not one)."""


@functools.lru_cache(maxsize=4)
def _shared_roots(top: str) -> tuple[str, ...]:
    """:data:`SHARED_ROOTS` beneath ``top`` (:data:`SYSTEM_TOP`, which tests move)."""
    return tuple(os.path.join(top, os.path.relpath(root, "/usr")) for root in SHARED_ROOTS)


def installed_tree(path: str) -> str | None:
    """The installed tree ``path`` (a file read, existing here) lies in: the first
    directory below a shared root (or below its multiarch directory, or below a
    directory many packages share), when ``path`` is beneath it and both resolve inside
    it; else None (a file directly in a shared directory, such as a library in
    ``/usr/lib/x86_64-linux-gnu``, is no tree)."""
    p = posixpath.normpath(path)
    if not p.startswith(SYSTEM_TOP):
        return None
    for root in _shared_roots(SYSTEM_TOP):
        if not p.startswith(root + "/"):
            continue
        rest = p[len(root) + 1 :].split("/")
        if "/lib" in root and _TRIPLET.match(rest[0]):
            root, rest = f"{root}/{rest[0]}", rest[1:]
        if rest[0] in _SHARED_BY_MANY:
            root, rest = f"{root}/{rest[0]}", rest[1:]
        if len(rest) < 2 or not os.path.exists(p):
            return None
        tree = f"{root}/{rest[0]}"
        real = os.path.realpath(tree)
        if not real.startswith(SYSTEM_TOP) or not os.path.isdir(real):
            return None
        # A link out of the tree (/usr/share/locale/locale.alias is /etc/locale.alias)
        # is read where it leads: Landlock checks the file it resolves to.
        if not os.path.realpath(p).startswith(real + "/"):
            return None
        return tree
    return None


def is_broad(path: str) -> bool:
    """True for a directory no generated rule may cover as a whole (see BROAD)."""
    return path in BROAD or (path.startswith("/") and os.path.realpath(path) in BROAD)


class PathContext:
    """How one observation's paths become policy paths."""

    def __init__(self, obs: Observation, *, cwd: bool = True) -> None:
        roots: list[tuple[str, str]] = []
        for scratch in obs.scratch:
            roots.extend(_both(scratch, "${SCRATCH}"))
        if obs.cwd and cwd:
            roots.extend(_both(obs.cwd, "${CWD}"))
        if obs.home and obs.home != "/":
            roots.extend(_both(obs.home, "${HOME}"))
        # Longest first: the working directory may lie inside the home, scratch in /tmp.
        self.roots = sorted(set(roots), key=lambda r: len(r[0]), reverse=True)
        self.home = obs.home
        self.created_dirs: set[str] = set()
        self.parents: set[str] = set()
        # Each directory's resolution, made once from its parent's: a tree walk names
        # each of its hundreds of thousands of files once, their directories many times.
        self._dirs: dict[str, str] = {}

    def learn(self, paths: Iterable[str]) -> None:
        """Note which paths are directories: every parent of a path seen."""
        for p in paths:
            d = posixpath.dirname(p)
            while d and d not in self.parents:
                self.parents.add(d)
                if d == "/":
                    break
                d = posixpath.dirname(d)

    def resolve(self, path: str, *, follow: bool = True) -> str:
        """The path with symlinks resolved as far as it exists here; the last component
        is kept as it is when ``follow`` is false (a name being created or removed)."""
        return self._resolve(path, follow)

    def _resolve(self, given: str, follow: bool) -> str:
        path = posixpath.normpath(given)
        if not path.startswith("/") or is_per_process(path):
            return path
        cut = path.rfind("/")
        tail = path[cut + 1 :]
        if not tail:  # "/" or "//"
            return os.path.realpath(path) if follow else path
        head = self._real_dir(path[:cut] or "/")
        joined = head + tail if head.endswith("/") else f"{head}/{tail}"
        # realpath resolves one component after another, so the directory's resolution
        # is realpath's own up to the last component, which only a link changes.
        if follow and os.path.islink(joined):
            return os.path.realpath(path)
        # The string the event holds when nothing changed: one copy of each path.
        return given if joined == given else joined

    def is_broad(self, path: str) -> bool:
        """:func:`is_broad`, its realpath the directories' own (resolved once each)."""
        return path in BROAD or (
            path.startswith("/") and self._real_dir(posixpath.normpath(path)) in BROAD
        )

    def _real_dir(self, directory: str) -> str:
        """``os.path.realpath(directory)`` (normalised, absolute), each directory
        resolved once, from its parent's resolution."""
        found = self._dirs.get(directory)
        if found is not None:
            return found
        pending = []
        d = directory
        while found is None:
            head, tail = posixpath.split(d)
            if not tail:
                found = self._dirs[d] = os.path.realpath(d)  # "/", or "//"
                break
            pending.append((d, tail))
            d = head
            found = self._dirs.get(d)
        for d, tail in reversed(pending):
            joined = posixpath.join(found, tail)
            found = self._dirs[d] = os.path.realpath(d) if os.path.islink(joined) else joined
        return found

    def to_policy(self, path: str) -> str:
        """A resolved path in policy form (``${CWD}/out/a.txt``)."""
        for root, var in self.roots:
            if path == root:
                return var
            if path.startswith(root + "/"):
                return var + path[len(root) :]
        return path

    def to_concrete(self, policy_path: str) -> str | None:
        """A policy path back on this machine (None for ``${SCRATCH}``, gone by now)."""
        for root, var in self.roots:
            if var == "${SCRATCH}":
                continue
            if policy_path == var or policy_path.startswith(var + "/"):
                return root + policy_path[len(var) :]
        if "${" in policy_path:
            return None
        return policy_path

    def is_dir(self, concrete: str) -> bool:
        """Whether ``concrete`` was a directory: it is one here, the tool made it with
        mkdir, or another path of the run lies beneath it."""
        if concrete in self.created_dirs or concrete in self.parents:
            return True
        try:
            return os.path.isdir(concrete)
        except (OSError, ValueError):
            return False


def _both(path: str, var: str) -> list[tuple[str, str]]:
    norm = posixpath.normpath(path)
    out = [(norm, var)]
    real = os.path.realpath(norm)
    if real != norm:
        out.append((real, var))
    return out
