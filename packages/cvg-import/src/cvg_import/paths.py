"""Where a path from a Divergence report lives on the machine that will run the tool.

Divergence gives the tool a private ``HOME`` and ``TMPDIR`` under a temporary overlay,
``/tmp/divergence-overlay-<pid>-<nanos>-<n>/{home,scratch}``, which is gone by the time
the report is read. Paths beneath them become ``${HOME}`` and ``${SCRATCH}``, the
policy variables for the same roles. Paths beneath the artifact root (the tool's
working directory while Divergence ran it) become ``${CWD}``, and so do relative
paths, which Divergence reports as the tool passed them. When the artifact root is not
known a relative path stays as reported and is flagged unresolved: it cannot be granted.

Paths are normalised before anything else, so ``.../home/../../../etc/shadow`` is judged
as ``/etc/shadow`` and never as a path beneath ``${HOME}``.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Final

__all__ = ["OVERLAY_RE", "ArtifactRoot", "Placed", "place"]

OVERLAY_RE: Final = re.compile(r"^/tmp/divergence-overlay-[^/]+(?:/(home|scratch))?(/.*)?$")
_VARIABLE: Final = {"home": "${HOME}", "scratch": "${SCRATCH}"}


@dataclass(frozen=True)
class ArtifactRoot:
    """The tool's working directory while Divergence ran it.

    ``path`` is the absolute directory when known (``--artifact-root``, or an absolute
    ``source`` in the CLI wrapper's JSON). ``relative`` is the wrapper's ``source`` when
    it is relative to where the wrapper ran: targets that begin with it are the
    artifact's own files, even though the directory itself is unknown.
    """

    path: str | None = None
    relative: str | None = None

    @property
    def known(self) -> bool:
        return self.path is not None or self.relative is not None


@dataclass(frozen=True)
class Placed:
    """A path as the observation carries it, and why it could not be placed, if so."""

    path: str
    unresolved: str | None = None
    rewritten: str | None = None


def place(target: str, root: ArtifactRoot) -> Placed:
    """Place one path from the report (see the module docstring)."""
    if target.startswith("/"):
        return _absolute(_norm(target), root)
    rel = target
    if root.relative is not None:
        prefix = _norm_rel(root.relative)
        norm = _norm_rel(rel)
        if prefix not in ("", ".") and (norm == prefix or norm.startswith(prefix + "/")):
            # The wrapper wrote it relative to its own directory, artifact included.
            rel = norm[len(prefix) :].lstrip("/") or "."
        elif prefix not in ("", ".") and norm.split("/")[0] == prefix.split("/")[0]:
            # Beside the artifact in the wrapper's directory, or the tool's own relative
            # path that happens to look alike: only the wrapper's directory can tell.
            wrapper = _wrapper_dir(root.path, prefix)
            if wrapper is None:
                return Placed(target, "relative to the divergence CLI's directory, not known")
            placed = _absolute(_norm(posixpath.join(wrapper, norm)), root)
            return Placed(placed.path, placed.unresolved, "relative to the CLI's directory")
    if root.path is not None:
        placed = _absolute(_norm(posixpath.join(root.path, rel)), root)
        return Placed(placed.path, placed.unresolved, "relative to the artifact root")
    if root.relative is not None:
        norm = _norm_rel(rel)
        if norm == ".":
            return Placed("${CWD}", None, "relative to the artifact root")
        if norm == ".." or norm.startswith("../"):
            return Placed(target, "relative path above the artifact root, whose place is unknown")
        return Placed("${CWD}/" + norm, None, "relative to the artifact root")
    return Placed(target, "relative path and the artifact root is not known (--artifact-root)")


def _wrapper_dir(root: str | None, source: str) -> str | None:
    """Where the divergence CLI ran: the artifact root less its ``source`` suffix."""
    if root is None or not root.endswith("/" + source):
        return None
    return root[: -len(source) - 1] or "/"


def _absolute(path: str, root: ArtifactRoot) -> Placed:
    m = OVERLAY_RE.match(path)
    if m is not None:
        role, rest = m.group(1), m.group(2) or ""
        if role is None:
            return Placed(path, "beneath Divergence's temporary overlay, not its HOME or TMPDIR")
        return Placed(_VARIABLE[role] + rest, None, f"Divergence's temporary {role.upper()}")
    if root.path is not None and root.path != "/":
        if path == root.path:
            return Placed("${CWD}", None, "the artifact root")
        if path.startswith(root.path + "/"):
            return Placed("${CWD}" + path[len(root.path) :], None, "beneath the artifact root")
    return Placed(path)


def _norm(path: str) -> str:
    # posixpath keeps a leading "//"; a policy path must not differ from its twin by it.
    out = posixpath.normpath(path)
    return "/" + out.lstrip("/") if out.startswith("/") else out


def _norm_rel(path: str) -> str:
    return posixpath.normpath(path) if path else "."
