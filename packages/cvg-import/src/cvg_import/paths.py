"""Where a path from a Divergence report lives, as the observation states it.

Divergence gives the tool a private ``HOME`` and ``TMPDIR`` under a temporary overlay,
``/tmp/divergence-overlay-<pid>-<nanos>-<n>/{home,scratch}``, which is gone by the time
the report is read. The observation says so the way every ``cvg.observation`` does:
its ``home`` is the overlay's ``home`` and its ``scratch`` the overlay's ``scratch``,
and cvg-generate turns paths beneath them into ``${HOME}`` and ``${SCRATCH}``, the
policy variables for the same roles. The same goes for the artifact root (the tool's
working directory while Divergence ran it): it is the observation's ``cwd``, relative
paths are resolved against it, and they become ``${CWD}``. Each event also carries that
policy form in ``source.policy_path`` for a reader.

When the artifact root is not known a relative path stays as reported and is flagged
unresolved: it names no place a policy can grant.

Paths are normalised before anything else, so ``.../home/../../../etc/shadow`` is judged
as ``/etc/shadow`` and never as a path beneath ``${HOME}``.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Final

__all__ = ["OVERLAY_RE", "ArtifactRoot", "Placed", "Placer"]

OVERLAY_RE: Final = re.compile(r"^(/tmp/divergence-overlay-[^/]+)(?:/(home|scratch))?(/.*)?$")
_VARIABLE: Final = {"home": "${HOME}", "scratch": "${SCRATCH}"}


@dataclass(frozen=True)
class ArtifactRoot:
    """The tool's working directory while Divergence ran it.

    ``path`` is the absolute directory when known (``--artifact-root``, or an absolute
    ``source`` in the CLI wrapper's JSON). ``relative`` is the wrapper's ``source`` when
    it is relative to where the wrapper ran: targets that begin with it are the
    artifact's own files, relative to the wrapper's directory.
    """

    path: str | None = None
    relative: str | None = None


@dataclass(frozen=True)
class Placed:
    """A path as the observation carries it, in policy form, and why it could not be
    placed, if so (then ``policy`` is None)."""

    path: str
    policy: str | None
    unresolved: str | None = None
    rewritten: str | None = None


class Placer:
    """Places the paths of one report. The first overlay seen stands for all: one run
    has one overlay, and a forged report with several gets one HOME all the same."""

    def __init__(self, root: ArtifactRoot) -> None:
        self.root = root
        self.overlay: str | None = None

    @property
    def home(self) -> str | None:
        return None if self.overlay is None else self.overlay + "/home"

    @property
    def scratch(self) -> str | None:
        return None if self.overlay is None else self.overlay + "/scratch"

    def place(self, target: str) -> Placed:
        """Place one path from the report (see the module docstring)."""
        if target.startswith("/"):
            return self._absolute(_norm(target))
        root = self.root
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
                    return Placed(target, None, "relative to the divergence CLI's directory")
                placed = self._absolute(_norm(posixpath.join(wrapper, norm)))
                return _relative(placed, "relative to the CLI's directory")
        if root.path is not None:
            placed = self._absolute(_norm(posixpath.join(root.path, rel)))
            return _relative(placed, "relative to the artifact root")
        return Placed(target, None, "relative path and the artifact root is not known")

    def _absolute(self, path: str) -> Placed:
        m = OVERLAY_RE.match(path)
        if m is not None:
            base, role, rest = m.group(1), m.group(2), m.group(3) or ""
            if role is None:
                return Placed(path, None, "beneath Divergence's overlay, not its HOME or TMPDIR")
            if self.overlay is None:
                self.overlay = base
            return Placed(
                f"{self.overlay}/{role}{rest}",
                _VARIABLE[role] + rest,
                None,
                f"Divergence's temporary {'HOME' if role == 'home' else 'TMPDIR'}",
            )
        root = self.root.path
        if root is not None and root != "/":
            if path == root:
                return Placed(path, "${CWD}", None, "the artifact root")
            if path.startswith(root + "/"):
                return Placed(path, "${CWD}" + path[len(root) :], None, "beneath the artifact root")
        return Placed(path, path)


def _relative(placed: Placed, how: str) -> Placed:
    if placed.unresolved is not None:
        return placed
    return Placed(placed.path, placed.policy, None, how)


def _wrapper_dir(root: str | None, source: str) -> str | None:
    """Where the divergence CLI ran: the artifact root less its ``source`` suffix."""
    if root is None or not root.endswith("/" + source):
        return None
    return root[: -len(source) - 1] or "/"


def _norm(path: str) -> str:
    # posixpath keeps a leading "//"; a policy path must not differ from its twin by it.
    out = posixpath.normpath(path)
    return "/" + out.lstrip("/") if out.startswith("/") else out


def _norm_rel(path: str) -> str:
    return posixpath.normpath(path) if path else "."
