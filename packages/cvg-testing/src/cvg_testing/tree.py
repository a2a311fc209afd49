"""A per-test directory tree that every test identity can use: a home, XDG state and
cache, a TMPDIR and a working directory, with whatever else a package's tests need."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Tree", "tree_root"]

BASE = ("home", "state", "cache", "tmp", "cwd")


def tree_root(prefix: str, *extra: str, mode: int = 0o777, readonly: tuple[str, ...] = ()) -> Path:
    """A fresh temporary directory of ``mode`` (pytest's tmp_path is 0700 root) holding
    the base directories and ``extra``: each writable by everyone (0777), but those in
    ``readonly``, which only the owner writes (0755). The caller removes it."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    root.chmod(mode)
    for name in (*BASE, *extra):
        d = root / name
        d.mkdir()
        d.chmod(0o755 if name in readonly else 0o777)
    return root


@dataclass
class Tree:
    """The tree made by :func:`tree_root`, by name."""

    root: Path

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def cache(self) -> Path:
        return self.root / "cache"

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"

    @property
    def cwd(self) -> Path:
        return self.root / "cwd"

    @property
    def runs(self) -> Path:
        """Where cvg-run keeps its run records under this tree's state."""
        return self.state / "cvg" / "runs"

    def xdg_env(self) -> dict[str, str]:
        """HOME, the XDG state and cache directories and TMPDIR, all in this tree."""
        return {
            "HOME": str(self.home),
            "XDG_STATE_HOME": str(self.state),
            "XDG_CACHE_HOME": str(self.cache),
            "TMPDIR": str(self.tmp),
        }
