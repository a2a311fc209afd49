"""cvg's own config, cache and state, denied by every compiled policy.

The plan cache and the run records are what cvg trusts on its next run and in
``cvg-explain --apply``; the key that seals them lives in the state directory. A grant
that covers any of these directories (``write: [${HOME}/.cache]``, ``read: [${HOME}]``)
is narrowed around them like a ``filesystem.deny`` entry, so a tool can neither read
the key nor write the cache or a record, whatever its policy grants. The directories
are the ones cvg itself uses (:func:`cvg_kernel.seal.own_dirs`: the XDG variables of
the process that compiles).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from cvg_kernel.seal import own_dirs

from .expand import Deny, FsView, Grant
from .paths import inside

__all__ = ["OWN_STATE", "own_state_denies"]

OWN_STATE: Final = "cvg's own state"
"""The address of these denies in findings (a grant inside one is removed)."""


def own_state_denies(grants: Sequence[Grant], view: FsView) -> list[Deny]:
    """A deny for each of cvg's directories that a grant covers or lies inside; one no
    grant reaches is denied by Landlock already and is left out (it would only be
    reported as changing nothing)."""
    out = []
    for path in own_dirs():
        real = view.realpath(path)
        if any(not g.late_bound and (inside(real, g.path) or inside(g.path, real)) for g in grants):
            out.append(Deny(real, OWN_STATE))
    return out
