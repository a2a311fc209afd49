"""Path containment, by name: small enough for programs that never compile a policy
(cvg-run's plan cache, the secrets' judge) to import without the expansion's weight."""

from __future__ import annotations

__all__ = ["inside"]


def inside(path: str, parent: str) -> bool:
    """True when ``path`` is ``parent`` or beneath it (both normalised, absolute)."""
    if parent == "/":
        return True
    return path == parent or path.startswith(parent + "/")
