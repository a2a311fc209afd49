"""Denies a broad grant implies: the secrets and protected paths beneath it.

``read: [${HOME}]`` names the home, not ``~/.ssh/id_rsa``. A secret of
:data:`cvg_policy.secrets.SECRET_TABLE` beneath a read, write or execute grant is denied
(no right at all) unless a grant names its own path exactly; a protected path of
:data:`cvg_policy.protected.PROTECTED` beneath a write grant keeps the grant's read
rights and loses every right to change it, unless a write grant names it exactly.

Only entries that exist are denied, so a plan for ``read: [${HOME}]`` grows by the
siblings of each secret, not by the table's length. Patterns (``.env.*``,
``/etc/ssh/ssh_host_*_key``) are matched against what exists when compiling. Each
pattern looked at is returned with what it matched (:attr:`Implied.watched`): cvg-run's
plan cache compares them on every run, so a secret created after a plan was cached is a
new plan, not a grant.

An entry the compiling user cannot read is left to its file permissions (``/etc/shadow``
as an ordinary user): carving it out would split ``/etc`` into hundreds of rules for
nothing. cvg's own directories are denied by :mod:`cvg_policy.own_state`, not here.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .expand import Deny, FsView, Grant, OsView
from .paths import inside
from .protected import protected_paths
from .secrets import SECRET_TABLE, passwd_home

__all__ = ["Implied", "implied_denies", "matches", "secrets_beneath"]


@dataclass
class Implied:
    """The implied denies, what each cites, and what was looked at to find them."""

    denies: list[Deny] = field(default_factory=list)
    # Per implied deny path: (the grant address it lies beneath, the table entry, why).
    cited: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    # Per pattern looked at (a path, or a glob): the paths it matched, sorted.
    watched: dict[str, list[str]] = field(default_factory=dict)


def _secret_candidates(
    tree: str, cwd: str | None, homes: Sequence[str]
) -> list[tuple[str, str, str]]:
    """(pattern, table entry, what it holds) for every secret row that can lie beneath
    ``tree``: home rows beneath each home, workspace rows in the working directory,
    in ``tree`` itself and in each home, system rows as written."""
    out: list[tuple[str, str, str]] = []
    workspaces = list(dict.fromkeys(b for b in (cwd, tree, *homes) if b))
    for _, where, name, what in SECRET_TABLE:
        if where == "home":
            out.extend((posixpath.join(h, name), f"~/{name}", what) for h in homes)
        elif where == "cwd":
            out.extend(
                (posixpath.join(b, name), f"{name} in a workspace", what) for b in workspaces
            )
        else:
            out.append((name, name, what))
    return [c for c in out if inside(c[0], tree) and c[0] != tree]


def _protected_candidates(
    tree: str, cwd: str | None, home: str | None, env: Mapping[str, str] | None
) -> list[tuple[str, str, str]]:
    """(path, table entry, why) for every protected entry that can lie beneath ``tree``."""
    out: list[tuple[str, str, str]] = []
    for i, base in enumerate(dict.fromkeys(b for b in (cwd, tree) if b)):
        for path, entry in protected_paths(base, home, env):
            # The home's entries once; the workspace's for each base.
            if entry.where == "cvg" or (entry.where == "home" and i > 0):
                continue
            if inside(path, tree) and path != tree:
                out.append((path, entry.name, f"{entry.group}: {entry.reason}"))
    return out


def matches(pattern: str, view: FsView) -> list[str]:
    """What exists of ``pattern``: a path, or a directory and a glob of names in it
    (only the last part of a table entry is ever a glob)."""
    parent, name = posixpath.split(pattern)
    if not any(c in name for c in "*?["):
        return [pattern] if view.kind(pattern) != "missing" else []
    try:
        names = view.listdir(parent)
    except OSError:
        return []
    return sorted(posixpath.join(parent, n) for n in names if fnmatch.fnmatchcase(n, name))


def _homes(home: str | None, view: FsView) -> list[str]:
    homes = [view.realpath(h) for h in dict.fromkeys((home, passwd_home())) if h]
    return [h for h in homes if h != "/" and os.path.isabs(h)]


def secrets_beneath(
    tree: str, cwd: str | None, home: str | None, view: FsView | None = None
) -> list[tuple[str, str]]:
    """The secrets that exist strictly beneath the directory ``tree``, as (path, table
    entry): the ones a grant on ``tree`` keeps out unless it names them."""
    view = OsView() if view is None else view
    real_cwd = view.realpath(cwd) if cwd else None
    out: dict[str, str] = {}
    for pattern, entry, _ in _secret_candidates(tree, real_cwd, _homes(home, view)):
        for path in matches(pattern, view):
            out.setdefault(path, entry)
    return list(out.items())


def implied_denies(
    grants: Sequence[Grant],
    named: Mapping[str, Sequence[str]],
    view: FsView,
    *,
    cwd: str | None,
    home: str | None,
    env: Mapping[str, str] | None = None,
    explicit: Sequence[Deny] = (),
) -> Implied:
    """The secrets and protected paths beneath ``grants`` that exist and are not named.

    ``named`` maps "read", "write" and "execute" to the real paths the policy grants in
    each list (before narrowing); ``explicit`` are the policy's own denies, which an
    implied one never repeats."""
    found = Implied()
    homes = _homes(home, view)
    real_cwd = view.realpath(cwd) if cwd else None
    any_named = {p for paths in named.values() for p in paths}
    writes = set(named.get("write", ()))
    taken = {d.path for d in explicit}
    blocked = [d.path for d in explicit if d.mode == "deny"]
    for grant in grants:
        if grant.late_bound or view.kind(grant.path) != "dir":
            continue
        kinds = [("deny", c) for c in _secret_candidates(grant.path, real_cwd, homes)]
        if "write_file" in grant.access:
            own_home = homes[0] if homes else None
            protect = _protected_candidates(grant.path, real_cwd, own_home, env)
            kinds += [("protect", c) for c in protect]
        for mode, (pattern, entry, why) in kinds:
            if pattern not in found.watched:
                found.watched[pattern] = matches(pattern, view)
            for path in found.watched[pattern]:
                real = view.realpath(path)
                exempt = any_named if mode == "deny" else writes
                if real in exempt or real in taken or not inside(real, grant.path):
                    continue
                if any(inside(real, b) for b in blocked):
                    continue
                if real == grant.path or not _readable(view, real):
                    continue
                taken.add(real)
                address = f"implied {mode} {real}"
                found.denies.append(Deny(real, address, mode))  # type: ignore[arg-type]
                found.cited[real] = (grant.addresses[0], entry, why)
    found.denies = _settle(found.denies, blocked)
    return found


def _settle(denies: list[Deny], blocked: Sequence[str]) -> list[Deny]:
    """A protected entry inside a denied one goes (the deny covers it); one holding a
    denied entry (``~/.claude`` holds ``~/.claude/.credentials.json``) is denied whole:
    its read-only rule would cover the secret."""
    secret = [*blocked, *(d.path for d in denies if d.mode == "deny")]
    out = []
    for d in denies:
        if d.mode == "protect":
            if any(inside(d.path, s) for s in secret):
                continue
            if any(inside(s, d.path) for s in secret):
                d = Deny(d.path, d.address.replace("implied protect", "implied deny"), "deny")
        out.append(d)
    return out


def _readable(view: FsView, path: str) -> bool:
    check = getattr(view, "readable", None)
    return True if check is None else bool(check(path))
