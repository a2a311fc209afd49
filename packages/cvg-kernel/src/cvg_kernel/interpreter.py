"""The program the kernel also opens to exec a file: a script's ``#!`` interpreter or
an ELF64 file's PT_INTERP (its dynamic loader)."""

from __future__ import annotations

import os

# typing only for the type checker: importing it costs every traced start.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final, Literal

__all__ = ["exec_interpreter"]

_HEAD: Final = 4096
_PT_INTERP: Final = 3
_MAX_PHDRS: Final = 64


def exec_interpreter(path: str) -> str | None:
    """The interpreter exec of ``path`` opens; None when there is none or it cannot be read."""
    try:
        with open(path, "rb") as f:
            head = f.read(_HEAD)
    except (OSError, ValueError):
        return None
    if head.startswith(b"#!"):
        words = head[2:].split(b"\n", 1)[0].split()
        return os.fsdecode(words[0]) if words and words[0].startswith(b"/") else None
    if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2:  # ELF64 only
        return None
    order: Literal["little", "big"] = "little" if head[5] == 1 else "big"
    phoff = int.from_bytes(head[32:40], order)
    phentsize = int.from_bytes(head[54:56], order)
    for i in range(min(int.from_bytes(head[56:58], order), _MAX_PHDRS)):
        off = phoff + i * phentsize
        if off + 56 > len(head):
            return None
        if int.from_bytes(head[off : off + 4], order) == _PT_INTERP:
            start = int.from_bytes(head[off + 8 : off + 16], order)
            size = int.from_bytes(head[off + 32 : off + 40], order)
            try:
                with open(path, "rb") as f:
                    f.seek(start)
                    raw = f.read(min(size, _HEAD))
            except (OSError, ValueError, OverflowError):
                return None
            return os.fsdecode(raw.split(b"\0", 1)[0]) or None
    return None
