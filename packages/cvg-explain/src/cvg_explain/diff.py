"""Unified diffs of a policy's text that ``patch -p0`` and ``git apply -p0`` accept."""

from __future__ import annotations

import difflib

__all__ = ["unified_diff"]

_NO_NEWLINE = "\\ No newline at end of file\n"


def unified_diff(old: str, new: str, name: str, context: int = 3) -> str:
    """The diff from ``old`` to ``new``, both sides named ``name`` (the policy file's
    name, relative: run ``patch -p0`` in the policy's directory). Empty when equal."""
    old_lines = old.splitlines(keepends=True)
    new_lines = new.splitlines(keepends=True)
    out: list[str] = []
    for line in difflib.unified_diff(old_lines, new_lines, fromfile=name, tofile=name, n=context):
        if line.startswith(("---", "+++")) and not line.endswith("\n"):
            line += "\n"
        out.append(line)
        if not line.endswith("\n"):
            # The last line of a file without a final newline.
            out[-1] = line + "\n"
            out.append(_NO_NEWLINE)
    return "".join(out)
