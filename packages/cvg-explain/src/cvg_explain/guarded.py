"""Refusals cvg-run's supervisor made itself: inside a grant narrowed around a denied
entry (the held directories, seccomp ``paths``), and on a socket path outside
``network.unix`` (seccomp ``unix``).

A denied entry is denied on purpose: the explanation names the entry and writes no
fix, since the only change that would let the call through is removing the deny. A
missing right of the grant gets the narrow grant Landlock would need; a socket path,
the path added to ``network.unix``.
"""

from __future__ import annotations

import posixpath

from cvg_schema.run import Denial

from .attribute import Finding, _covering, _fs, variable_form
from .change import Change, Context
from .risk import risk_of

__all__ = ["guarded"]

_OWN_STATE = "cvg's own state"


def guarded(d: Denial, ctx: Context) -> Finding | None:
    """The finding for a refusal by the paths or unix guard; None for any other
    supervisor denial (a limit that ended the run)."""
    rule = d.rule or ""
    if d.path is None or "refused by cvg's supervisor" not in (d.detail or ""):
        return None
    path = posixpath.normpath(d.path)
    if rule == "network.unix":
        return _socket(d, ctx, path)
    verb = _verb(d)
    if rule.startswith("filesystem.deny"):
        entries = _covering(ctx, "deny", path)
        if rule == "filesystem.deny" and entries:  # a plan that did not name the entry
            rule = f"filesystem.deny[{entries[0][0]}]"
        index = _index(rule)
        raw = dict(entries).get(index) if index is not None else None
        named = f"{rule} ({raw})" if raw else rule
        return Finding(
            f"{d.syscall} was refused {verb} {path}: it is denied by {named}, inside a "
            "grant that covers the rest of its directory (cvg-run's supervisor keeps it "
            "out); no policy change is written, the deny is deliberate: remove the entry "
            "only if the tool truly needs it",
            rule,
        )
    if _OWN_STATE in (d.detail or ""):
        return Finding(
            f"{d.syscall} was refused {verb} {path}: it is cvg's own configuration, cache "
            "or state (the plans and run records cvg trusts, the key that seals them), "
            "denied by every policy whatever it grants; no policy can allow it",
            None,
        )
    if d.right is not None:
        # The grant's own rights, served in its held directories: the narrow grant
        # Landlock would need, as for a refusal of its own.
        return _fs(d.model_copy(update={"mechanism": "landlock_fs"}), ctx)
    return Finding(
        f"{d.syscall} was refused {verb} {path}: {(d.detail or '').split(';')[0]}; a protected "
        "entry, or a directory kept to hold a denied one out, stays as it is; no fix is "
        "written",
        d.rule,
    )


def _index(rule: str) -> int | None:
    head, _, rest = rule.partition("[")
    return int(rest.rstrip("]")) if head == "filesystem.deny" and rest[:-1].isdigit() else None


def _verb(d: Denial) -> str:
    return {"read": "reading", "write": "writing", "create": "creating", "remove": "removing",
            "rename": "renaming", "link": "linking"}.get(d.op or "", "using")  # fmt: skip


def _socket(d: Denial, ctx: Context, path: str) -> Finding:
    listed = ctx.policy.network.unix
    if isinstance(listed, list):
        value = variable_form(path, ctx.variables)
        change = Change("add", "network", "unix", value)
        return Finding(
            f"{d.syscall} was refused reaching the UNIX socket {path}: network.unix lists "
            "the sockets the tool may reach, and not this one",
            "network.unix",
            change,
            risk_of(change, ctx),
        )
    return Finding(
        f"{d.syscall} was refused reaching the UNIX socket {path}: network.unix: true "
        "reaches only the sockets beneath the filesystem grants; to reach this one, "
        f"list it: network.unix: [{variable_form(path, ctx.variables)}]",
        "network.unix",
    )
