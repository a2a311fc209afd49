"""Refusals the supervisor made itself: the ``paths`` guards in the held directories of
an expanded grant, the ``unix`` guards on socket paths.

The notification carries only the registers; the guard that refused the call says
what it checked (cvg_kernel.guard.Refused), and this names the plan entry behind it:
the ``filesystem.deny`` entry (or cvg's own state) a denied path comes from, the grant
whose rights the supervisor gives in its held directories, the ``network.unix`` list.

The same call, seen by strace, failed with EACCES on a path the supervisor decides:
:meth:`Served.decided` tells the trace to leave it to the notification, which knows why.
"""

from __future__ import annotations

import os
import posixpath

from .judge import Verdict

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["OWN_STATE", "Served", "call_op"]

OWN_STATE = "cvg's own state"  # cvg_policy.own_state.OWN_STATE: an expansion's denied_by

# Calls by what they do to their path; open flags decide the rest.
_OPS = {
    "mkdir": "create", "mkdirat": "create", "mknod": "create", "mknodat": "create",
    "creat": "create", "symlink": "create", "symlinkat": "create",
    "unlink": "remove", "unlinkat": "remove", "rmdir": "remove",
    "rename": "rename", "renameat": "rename", "renameat2": "rename",
    "link": "link", "linkat": "link", "truncate": "write",
    "connect": "connect", "sendto": "send", "sendmsg": "send", "sendmmsg": "send",
}  # fmt: skip
_OPEN_FLAGS = {"open": 1, "openat": 2}


def call_op(name: str, args: tuple[int, ...]) -> tuple[str, str]:
    """(op, what) of a refused call on ``{path}``: ``open {path} for write``."""
    op = _OPS.get(name)
    if op == "create":
        return op, "create {path}"
    if op in ("connect", "send"):
        return op, f"{op} unix socket {{path}}"
    if op is not None:
        return op, f"{op} {{path}}"
    index = _OPEN_FLAGS.get(name)
    flags = args[index] if index is not None and index < len(args) else 0
    if flags & os.O_CREAT:
        return "create", "create {path}"
    mode = flags & os.O_ACCMODE
    if mode == os.O_WRONLY:
        return "write", "open {path} for write"
    if mode == os.O_RDWR:
        return "write", "open {path} for read and write"
    return "read", "open {path} for read"


class _Tree:
    def __init__(self, spec: Mapping[str, Any]) -> None:
        self.root = str(spec.get("path", ""))
        self.rule = spec.get("rule")
        self.held = frozenset(str(h) for h in spec.get("held") or ()) | {self.root}
        denied = [str(d) for d in spec.get("denied") or ()]
        by = [str(a) for a in spec.get("denied_by") or ()]
        # A plan cached before denied_by was recorded names no entry: filesystem.deny.
        self.denied = dict(zip(denied, by + ["filesystem.deny"] * (len(denied) - len(by)),
                               strict=False))  # fmt: skip
        self.protected = tuple(str(p) for p in spec.get("protected") or ())

    def entry(self, path: str, entries: Any) -> str | None:
        return next((e for e in entries if _inside(path, e)), None)


def _inside(path: str, base: str) -> bool:
    return path == base or path.startswith(base.rstrip("/") + "/")


class Served:
    """What the plan hands to the supervisor: its expanded grants, its socket paths."""

    def __init__(self, plan: Mapping[str, Any]) -> None:
        trees = [_Tree(s) for s in plan.get("expansions") or () if isinstance(s, dict)]
        # The deepest root first, as the guards decide.
        self.trees = sorted(trees, key=lambda t: len(t.root), reverse=True)
        spec = plan.get("seccomp")
        supervised = spec.get("supervise") or () if isinstance(spec, dict) else ()
        self.paths = "paths" in supervised
        self.unix = "unix" in supervised

    def _tree(self, path: str) -> _Tree | None:
        return next((t for t in self.trees if _inside(path, t.root)), None)

    def decided(self, op: str | None, path: str | None, family: object = None) -> bool:
        """Whether the supervisor decided a call on ``path`` (so that its refusal
        comes with the notification): a denied or protected entry, a held directory or
        a name directly in one; a UNIX socket path, when the plan lists them."""
        if op in ("connect", "send") and family == "unix":
            return self.unix and path is not None and not path.startswith("@")
        if not self.paths or path is None or not path.startswith("/"):
            return False
        path = posixpath.normpath(path)
        tree = self._tree(path)
        if tree is None:
            return False
        return (
            tree.entry(path, tree.denied) is not None
            or tree.entry(path, tree.protected) is not None
            or path in tree.held
            or posixpath.dirname(path) in tree.held
        )

    def verdict(self, call: Any, what: str) -> Verdict:
        """The verdict on a call a guard refused (a NotifiedCall with ``refused``)."""
        path = str(call.path)
        kind = call.refused
        entry = call.entry
        if kind == "unix":
            return Verdict("supervisor", None, "network.unix",
                           f"network.unix does not name {path}; refused by cvg's supervisor",
                           what)  # fmt: skip
        tree = self._tree(path)
        grant = tree.rule if tree is not None and tree.rule else None
        if kind == "denied":
            address = None
            if tree is not None:
                entry = entry or (next(iter(tree.denied)) if len(tree.denied) == 1 else None)
                address = tree.denied.get(entry) if entry else None
            if address == OWN_STATE:
                return Verdict("supervisor", None, None,
                               f"{entry} is cvg's own state, denied by every policy; refused "
                               "by cvg's supervisor", what)  # fmt: skip
            named = f"{address} denies {entry}" if address else "a denied file (a hard link)"
            inside = f" inside the grant {grant}" if grant else ""
            return Verdict("supervisor", None, address or "filesystem.deny",
                           f"{named}{inside}; refused by cvg's supervisor", what)  # fmt: skip
        if kind == "protected":
            return Verdict("supervisor", None, None,
                           f"{entry or path} is protected: it is read, never changed; refused "
                           "by cvg's supervisor", what)  # fmt: skip
        if kind == "right":
            return Verdict("supervisor", call.right, grant,
                           f"{grant or 'the grant'} does not give {call.right}; refused by "
                           "cvg's supervisor", what)  # fmt: skip
        return Verdict("supervisor", None, grant,
                       f"{entry or path} is held to keep a denied entry out of "
                       f"{grant or 'its grant'}; refused by cvg's supervisor", what)  # fmt: skip
