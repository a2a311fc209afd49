"""What the kernel needs to run a file: its ``#!`` chain and its ELF interpreter.

Standard library only: the ELF header and program headers are read with ``struct``.
"""

from __future__ import annotations

import os
import posixpath
import struct
from typing import Final

__all__ = ["MAX_SHEBANG_DEPTH", "elf_interpreter", "executable_chain", "shebang"]

PT_INTERP: Final = 3
MAX_SHEBANG_DEPTH: Final = 4  # the kernel's own limit on nested interpreters (BINPRM)
_SHEBANG_MAX: Final = 256  # BINPRM_BUF_SIZE: the kernel reads no further


def elf_interpreter(path: str) -> str | None:
    """The PT_INTERP of the ELF file ``path`` (e.g. ``/lib64/ld-linux-x86-64.so.2``);
    None for a static or non-ELF file, or one that cannot be read."""
    try:
        with open(path, "rb") as f:
            ident = f.read(64)
            if len(ident) < 52 or ident[:4] != b"\x7fELF":
                return None
            cls, data = ident[4], ident[5]
            if cls not in (1, 2) or data not in (1, 2):
                return None
            end = "<" if data == 1 else ">"
            if cls == 2:
                (phoff,) = struct.unpack_from(end + "Q", ident, 32)
                phentsize, phnum = struct.unpack_from(end + "HH", ident, 54)
                entry = end + "II QQQ QQQ"  # p_type p_flags p_offset p_vaddr p_paddr p_filesz ..
                off_i, size_i = 2, 5
            else:
                (phoff,) = struct.unpack_from(end + "I", ident, 28)
                phentsize, phnum = struct.unpack_from(end + "HH", ident, 42)
                entry = end + "IIIIIIII"  # p_type p_offset p_vaddr p_paddr p_filesz ...
                off_i, size_i = 1, 4
            need = struct.calcsize(entry.replace(" ", ""))
            if phentsize < need or phnum > 4096:
                return None
            f.seek(phoff)
            table = f.read(phentsize * phnum)
            for i in range(phnum):
                start = i * phentsize
                if start + need > len(table):
                    break
                fields = struct.unpack_from(entry.replace(" ", ""), table, start)
                if fields[0] != PT_INTERP:
                    continue
                offset, size = fields[off_i], fields[size_i]
                if size == 0 or size > 4096:
                    return None
                f.seek(offset)
                raw = f.read(size).split(b"\0", 1)[0]
                return raw.decode("utf-8", "backslashreplace") or None
    except (OSError, struct.error):
        return None
    return None


def shebang(path: str) -> str | None:
    """The interpreter named by the ``#!`` line of ``path``, as written; None when the
    file does not start with ``#!`` or cannot be read."""
    try:
        with open(path, "rb") as f:
            head = f.read(_SHEBANG_MAX)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    line = head[2:].split(b"\n", 1)[0].strip(b" \t\r")
    if not line:
        return None
    interp = line.split(None, 1)[0]
    return interp.decode("utf-8", "backslashreplace")


def executable_chain(path: str, cwd: str | None = None) -> tuple[list[str], str | None]:
    """The ``#!`` chain of ``path`` (outermost first) and the ELF interpreter of the
    file that finally runs: ``/usr/bin/env python3`` gives ``([/usr/bin/env],
    /lib64/ld-linux-x86-64.so.2)``. A relative interpreter is taken against ``cwd``,
    as the kernel does."""
    chain: list[str] = []
    current = path
    for _ in range(MAX_SHEBANG_DEPTH + 1):
        interp = shebang(current)
        if interp is None:
            break
        if not interp.startswith("/") and cwd is not None:
            interp = posixpath.normpath(os.path.join(cwd, interp))
        chain.append(interp)
        current = interp
    return chain, elf_interpreter(current)
