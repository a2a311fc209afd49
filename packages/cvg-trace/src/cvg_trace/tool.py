"""Finding strace, and which version it is."""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # subprocess only when strace is asked: cvg-run --trace's start
    import subprocess

__all__ = ["StraceNotFound", "find_strace", "start_version", "strace_version", "version_of"]


class StraceNotFound(RuntimeError):
    """No strace to run: one line saying how to get one."""


def find_strace(name: str | None = None) -> str:
    """The strace to use: ``name``, $CVG_STRACE, or ``strace`` on PATH."""
    name = name or os.environ.get("CVG_STRACE") or "strace"
    found = _which(name)
    if found is None:
        raise StraceNotFound(
            f"strace not found ({name!r}): install it (e.g. apt-get install strace) "
            "or set CVG_STRACE to its path"
        )
    return found


def _which(name: str) -> str | None:
    """shutil.which, without importing shutil on cvg-run --trace's start."""
    if "/" in name:
        candidates = [name]
    else:
        path = os.environ.get("PATH") or os.defpath
        candidates = [os.path.join(d or ".", name) for d in path.split(os.pathsep)]
    for candidate in candidates:
        if os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            return candidate
    return None


def strace_version(strace: str) -> str | None:
    """``"6.1"`` from ``strace -V``; None when it cannot be told."""
    return version_of(start_version(strace))


def start_version(strace: str) -> subprocess.Popen[str] | None:
    """``strace -V``, started: its answer is :func:`version_of` it, so a caller can do
    something else meanwhile. None when it cannot be started."""
    import subprocess

    try:
        return subprocess.Popen(
            [strace, "-V"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
    except OSError:
        return None


def version_of(proc: subprocess.Popen[str] | None) -> str | None:
    """The version a started ``strace -V`` printed (waited for); None when it cannot be
    told."""
    import subprocess

    if proc is None:
        return None
    try:
        out = proc.communicate(timeout=10)[0]
    except subprocess.SubprocessError:
        proc.kill()
        proc.wait()
        return None
    first = out.splitlines()[0] if out else ""
    words = first.split()
    if "version" in words:
        i = words.index("version")
        if i + 1 < len(words):
            return words[i + 1][:100]
    return None
