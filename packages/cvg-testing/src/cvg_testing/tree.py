"""A per-test directory tree that every test identity can use: a home, XDG state and
cache, a TMPDIR and a working directory, with whatever else a package's tests need."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, overload

__all__ = ["Tree", "Under", "tree_root"]

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


class Under:
    """A path under an object's ``root``, by name: ``home = Under("home")`` in the
    class body makes ``obj.home`` be ``obj.root / "home"``."""

    def __init__(self, *parts: str) -> None:
        self.parts = parts

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> Under: ...
    @overload
    def __get__(self, obj: _Rooted, owner: type | None = None) -> Path: ...
    def __get__(self, obj: _Rooted | None, owner: type | None = None) -> Path | Under:
        return self if obj is None else obj.root.joinpath(*self.parts)


class _Rooted(Protocol):
    root: Path


@dataclass
class Tree:
    """The tree made by :func:`tree_root`, by name."""

    root: Path

    home = Under("home")
    state = Under("state")
    cache = Under("cache")
    tmp = Under("tmp")
    cwd = Under("cwd")
    runs = Under("state", "cvg", "runs")  # cvg-run's run records

    def xdg_env(self) -> dict[str, str]:
        """HOME, the XDG state and cache directories and TMPDIR, all in this tree."""
        return {
            "HOME": str(self.home),
            "XDG_STATE_HOME": str(self.state),
            "XDG_CACHE_HOME": str(self.cache),
            "TMPDIR": str(self.tmp),
        }
