"""Deny inside allow: narrow grants so each ``filesystem.deny`` path stays unreachable.

Landlock can only allow. A grant on a directory covers everything beneath it, so the
only way to keep ``~/.ssh`` out of ``read: [~]`` is to not grant ``~`` at all and grant
each of its children except ``.ssh`` instead, recursively down to the denied path's
parent. The plan records each expansion in ``expansions``: the directories left without a rule
(held), the grant's rights, the denied and protected entries. Landlock alone would deny
listing a held directory and creating anything in it; the supervisor serves those calls
instead (seccomp ``paths``, :mod:`cvg_kernel.paths_guard`), so the directory keeps
working as the grant says and the denied entries stay out.

Everything here works on real paths (symlinks resolved), because Landlock attaches a
rule to the inode its path resolves to. The filesystem is read through a
:class:`FsView`, so the expansion is a pure function of a listing: tests use a tmp tree
or a :class:`DictView`.
"""

from __future__ import annotations

import os
import posixpath
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from cvg_kernel.landlock import FILE_RIGHTS

from .errors import Finding, PolicyError
from .paths import inside

# The schema's models only for the type checker and where an expansion is made: the
# secrets' list and ``inside`` are wanted by programs that never compile a policy.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from cvg_schema.plan import Expansion, FsRight

__all__ = [
    "DEFAULT_MAX_RULES",
    "DenyResult",
    "DictView",
    "FsView",
    "Grant",
    "Kind",
    "OsView",
    "apply_denies",
    "inside",
]

DEFAULT_MAX_RULES = 4096

Kind = Literal["dir", "file", "symlink", "missing"]


class FsView(Protocol):
    """What the expansion needs to know about the filesystem."""

    def kind(self, path: str) -> Kind:
        """What ``path`` itself is (a symlink is not followed)."""

    def listdir(self, path: str) -> list[str]:
        """The names in directory ``path``. OSError when it cannot be listed."""

    def realpath(self, path: str) -> str:
        """``path`` with every symlink resolved (a missing tail kept as written)."""

    def inode(self, path: str) -> tuple[int, int, int] | None:
        """``path``'s (st_dev, st_ino, st_nlink), a symlink not followed; None when
        it is missing or unknown."""


class OsView:
    """The real filesystem."""

    def kind(self, path: str) -> Kind:
        try:
            mode = os.lstat(path).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return "missing"
        if stat.S_ISLNK(mode):
            return "symlink"
        return "dir" if stat.S_ISDIR(mode) else "file"

    def listdir(self, path: str) -> list[str]:
        return os.listdir(path)

    def realpath(self, path: str) -> str:
        return os.path.realpath(path)

    def readable(self, path: str) -> bool:
        return os.access(path, os.R_OK)

    def inode(self, path: str) -> tuple[int, int, int] | None:
        try:
            st = os.lstat(path)
        except OSError:
            return None
        return st.st_dev, st.st_ino, st.st_nlink


class DictView:
    """A filesystem described by a mapping, for tests: ``{"/h": "dir", "/h/a": "file",
    "/h/l": "-> /h/.ssh"}``. Parents of listed paths are directories."""

    def __init__(self, entries: Mapping[str, str]) -> None:
        self._entries: dict[str, str] = {}
        for path, what in entries.items():
            path = posixpath.normpath(path)
            self._entries[path] = what
            parent = posixpath.dirname(path)
            while parent not in self._entries:
                self._entries[parent] = "dir"
                if parent == "/":
                    break
                parent = posixpath.dirname(parent)

    def kind(self, path: str) -> Kind:
        what = self._entries.get(posixpath.normpath(path))
        if what is None:
            return "missing"
        if what.startswith("->"):
            return "symlink"
        return "dir" if what == "dir" else "file"

    def listdir(self, path: str) -> list[str]:
        path = posixpath.normpath(path)
        if self._entries.get(path) != "dir":
            raise NotADirectoryError(path)
        prefix = path.rstrip("/") + "/"
        return [
            p[len(prefix) :]
            for p in self._entries
            if p.startswith(prefix) and "/" not in p[len(prefix) :] and p != path
        ]

    def inode(self, path: str) -> tuple[int, int, int] | None:
        return None

    def realpath(self, path: str) -> str:
        parts = [p for p in posixpath.normpath(path).split("/") if p]
        out = "/"
        for _ in range(40):  # ELOOP, as the kernel counts
            for i, part in enumerate(parts):
                candidate = posixpath.join(out, part)
                what = self._entries.get(candidate, "")
                if what.startswith("->"):
                    target = what[2:].strip()
                    base = target if target.startswith("/") else posixpath.join(out, target)
                    parts = [p for p in posixpath.normpath(base).split("/") if p] + parts[i + 1 :]
                    out = "/"
                    break
                out = candidate
            else:
                return out
        return out


@dataclass(frozen=True)
class Grant:
    """One allow rule before narrowing: a real path (or a late-bound one such as
    ``${SCRATCH}/out``, which cannot be looked at), its rights, and the policy rules
    that asked for it."""

    path: str
    access: frozenset[str]
    addresses: tuple[str, ...]
    late_bound: bool = False


@dataclass(frozen=True)
class Deny:
    """One entry kept out of the grants around it, resolved to a real path.

    ``mode`` "deny" (a ``filesystem.deny`` entry, a secret): no right at all.
    "protect" (a protected path, such as ``.git/config``): the grants' read and execute
    rights stay and every right to change it goes."""

    path: str
    address: str
    mode: Literal["deny", "protect"] = "deny"


@dataclass
class DenyResult:
    grants: list[Grant]
    expansions: list[Expansion] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    # Per deny address: the grants (addresses) it narrowed or removed; empty = no-op.
    effect: dict[str, list[str]] = field(default_factory=dict)


# What a protected entry keeps of the grant around it: reading it, listing it and
# running it; never writing, truncating, removing, creating or renaming beneath it.
_KEPT_BY_PROTECT = frozenset({"read_file", "read_dir", "execute"})


def _order_rights(access: frozenset[str]) -> list[FsRight]:
    from typing import cast

    from cvg_schema import FS_RIGHTS

    return cast("list[FsRight]", [r for r in FS_RIGHTS if r in access])


def _rights_for(kind: Kind, access: frozenset[str]) -> frozenset[str]:
    # A rule on a non-directory may carry only the file rights (EINVAL otherwise).
    return access if kind == "dir" else access & FILE_RIGHTS


def _expand_one(
    grant: Grant,
    denied: Sequence[Deny],
    all_denied: Sequence[Deny],
    view: FsView,
    findings: list[Finding],
    held: list[str],
) -> list[Grant]:
    """The rules replacing ``grant`` so that no path in ``denied`` (all strictly inside
    it) is covered. ``held`` gets each directory left without a rule of its own."""
    out: list[Grant] = []
    address = grant.addresses[0]
    protected = {d.path for d in denied if d.mode == "protect"}
    # A rule is on an inode: one on a hard link of a denied file would grant the file.
    secret = set()
    for d in denied:
        known = view.inode(d.path) if d.mode == "deny" else None
        if known is not None:
            secret.add(known[:2])
            if known[2] > 1 and view.kind(d.path) == "file":
                findings.append(
                    Finding(
                        "warning",
                        d.address,
                        f"{d.path} has {known[2]} hard links: one directly in a directory "
                        "on the way to it is denied too, one deeper in the grant is not",
                    )
                )

    def walk(directory: str, below: list[str]) -> None:
        held.append(directory)
        try:
            names = sorted(view.listdir(directory))
        except OSError as e:
            raise PolicyError(
                f"cannot list {directory} to narrow {grant.path} around "
                f"{', '.join(below)}: {e.strerror or e}",
                address=address,
            ) from None
        for name in names:
            child = posixpath.join(directory, name)
            toward = [d for d in below if inside(d, child)]
            if child in toward:
                if child in protected:
                    kept = _rights_for(view.kind(child), grant.access & _KEPT_BY_PROTECT)
                    if kept:
                        out.append(Grant(child, kept, grant.addresses))
                continue  # the denied path itself: no rule
            try:
                kind = view.kind(child)
            except OSError as e:
                raise PolicyError(
                    f"cannot look at {child} to narrow {grant.path}: {e.strerror or e}",
                    address=address,
                ) from None
            if toward and kind == "dir":
                walk(child, toward)
                continue
            if kind == "symlink":
                # No rule for a symlink child. Landlock would attach a rule on the link
                # to its target, and the grant never covered the target by way of the
                # link (access through a link is checked where it resolves): a target
                # inside the grant is covered by its own sibling rule already, and one
                # outside it must not be widened into. A rule by the link's own path
                # would also let a retargeted link (changed between compile and apply)
                # grant the denied path.
                target = view.realpath(child)
                hits = [
                    d.path for d in all_denied if inside(target, d.path) or inside(d.path, target)
                ]
                if hits:
                    findings.append(
                        Finding(
                            "warning",
                            address,
                            f"symlink {child} -> {target} reaches denied {hits[0]}: not granted",
                        )
                    )
                continue
            if kind == "missing":
                continue  # vanished while listing
            if kind == "file" and secret:
                known = view.inode(child)
                if known is not None and known[:2] in secret:
                    continue  # another name of a denied file: no rule
            rights = _rights_for(kind, grant.access)
            if rights:
                out.append(Grant(child, rights, grant.addresses))

    walk(grant.path, [d.path for d in denied])
    return out


def apply_denies(
    grants: Sequence[Grant],
    denies: Iterable[Deny],
    *,
    view: FsView | None = None,
    max_rules: int = DEFAULT_MAX_RULES,
) -> DenyResult:
    """Narrow ``grants`` around ``denies``.

    - a grant equal to or inside a denied path is removed; one equal to or inside a
      protected path keeps only the rights to read, list and execute;
    - a directory grant with denied paths strictly inside is replaced by rules on each
      of its children except those toward a denied path, recursively down to each
      denied path's parent (symlink children get no rule, see ``_expand_one``); a
      protected path among them gets a rule with only those rights;
    - a deny that is inside no grant changes nothing and is reported as a warning;
    - late-bound grants (``${SCRATCH}``) are kept as they are: they cannot be listed.

    The total number of rules may not exceed ``max_rules`` (PolicyError naming the
    directory being expanded).
    """
    from cvg_schema.plan import Expansion

    view = OsView() if view is None else view
    deny_list = list(denies)
    result = DenyResult(grants=[])
    result.effect = {d.address: [] for d in deny_list}
    findings = result.findings
    total = 0
    for grant in grants:
        if grant.late_bound:
            result.grants.append(grant)
            total += 1
            continue
        narrowing = [d for d in deny_list if d.mode == "protect" and inside(grant.path, d.path)]
        if narrowing:
            # A grant on or beneath a protected path keeps only what protect keeps.
            for d in narrowing:
                result.effect[d.address].extend(grant.addresses)
            kept = _rights_for(view.kind(grant.path), grant.access & _KEPT_BY_PROTECT)
            if not kept:
                continue
            grant = Grant(grant.path, kept, grant.addresses, grant.late_bound)
        covering = [d for d in deny_list if d.mode == "deny" and inside(grant.path, d.path)]
        if covering:
            for d in covering:
                result.effect[d.address].extend(grant.addresses)
            findings.append(
                Finding(
                    "warning",
                    grant.addresses[0],
                    f"{grant.path} is inside denied {covering[0].path} "
                    f"({covering[0].address}): the grant is removed",
                )
            )
            continue
        within = [d for d in deny_list if inside(d.path, grant.path) and d.path != grant.path]
        if not within or view.kind(grant.path) != "dir":
            # Nothing beneath a file: a deny "inside" one names a path that cannot exist.
            result.grants.append(grant)
            total += 1
            continue
        held: list[str] = []
        rules = _expand_one(grant, within, deny_list, view, findings, held)
        if total + len(rules) > max_rules:
            # The walk only lists the directories on the way to each denied path, so
            # counting them all before refusing stays cheap and the count is exact.
            raise PolicyError(
                f"narrowing {grant.path} around {', '.join(d.path for d in within)} needs "
                f"{len(rules)} rules, more than max_rules {max_rules} allows"
                + (f" with the {total} other rules" if total else "")
                + "; deny a path closer to the grant, or grant narrower paths",
                address=grant.addresses[0],
            )
        for d in within:
            result.effect[d.address].extend(grant.addresses)
        result.expansions.append(
            Expansion(
                rule=grant.addresses[0],
                path=grant.path,
                denied=[d.path for d in within if d.mode == "deny"],
                denied_by=[d.address for d in within if d.mode == "deny"],
                rules=len(rules),
                access=_order_rights(grant.access),
                held=held,
                protected=[d.path for d in within if d.mode == "protect"],
            )
        )
        result.grants.extend(rules)
        total += len(rules)
    for d in deny_list:
        if not result.effect[d.address]:
            findings.append(
                Finding(
                    "warning",
                    d.address,
                    f"{d.path} is inside no grant: it is denied anyway, this entry changes nothing",
                )
            )
    if total > max_rules:
        raise PolicyError(f"the plan needs {total} filesystem rules, more than {max_rules}")
    return result
