"""Evidence that the tool serves a client: it waits for input from outside.

A server's lifetime is its client's: an MCP server over stdio reads requests from its
stdin until the client closes it, a network server accepts on a listening socket. Both
show in the trace: ``accept`` on a listening socket (decoded, ``-yy`` names the socket;
a ``listen`` alone is not counted: a script that listens for one callback and ends is
no server), and ``read`` of descriptor 0 when the observer's own stdin, which the tool
inherits, is a pipe, a socket or a terminal (a file or /dev/null never waits), or of a
copy of it (dup, dup2, dup3, fcntl F_DUPFD: mcp 2.x's stdio server reads its requests
from a copy above fd 2 and points fd 0 elsewhere). Each
becomes a ``wait`` event, a few per process and call, for ``cvg-generate`` to cite.
"""

from __future__ import annotations

import os
import stat
from typing import Final

from cvg_trace.events import RawEvent
from cvg_trace.parse import Record, parse_fd

__all__ = ["InputWaits", "stdin_kind"]

_SOCKET_WAITS: Final = frozenset({"accept", "accept4"})
_STDIN_READS: Final = frozenset({"read", "readv", "recvfrom", "recvmsg", "recvmmsg"})
_DUPS: Final = frozenset({"dup", "dup2", "dup3"})
_F_DUPFD: Final = frozenset({0, 0x406})  # F_DUPFD, F_DUPFD_CLOEXEC
_PER_CALL: Final = 3
"""Wait events kept per process and call: evidence, not a transcript."""


def stdin_kind(fd: int = 0) -> str | None:
    """What descriptor ``fd`` is, when reading it waits on someone: "pipe", "socket" or
    "terminal"; None for a file, a device that is not a terminal, or a closed one."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return None
    if stat.S_ISFIFO(mode):
        return "pipe"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) and os.isatty(fd):
        return "terminal"
    return None


class InputWaits:
    """Turns the records that wait for input into ``wait`` events."""

    def __init__(self, stdin: str | None) -> None:
        self.stdin = stdin
        self.counts: dict[tuple[int, str], int] = {}
        # Copies of stdin: a server may read its requests from one (mcp 2.x's stdio
        # server moves stdin above 2 and points fd 0 elsewhere). Any process's copy
        # counts, a heuristic like the rest of this evidence.
        self.copies: set[int] = {0}

    def see(self, rec: Record) -> RawEvent | None:
        """The ``wait`` event ``rec`` makes, if it waits for input (and is not past the
        few kept for its process and call)."""
        name = rec.name
        if rec.kind != "syscall" or not rec.args:
            return None
        if name in _SOCKET_WAITS:
            fd = parse_fd(rec.args[0])
            what = fd.target if fd is not None and fd.target else "a socket"
        elif name in _STDIN_READS and self.stdin is not None:
            if _number(rec.args[0]) not in self.copies:
                return None
            what = f"stdin ({self.stdin})"
        elif self.stdin is not None and self._copied(rec):
            return None
        else:
            return None
        key = (rec.pid, name)
        n = self.counts.get(key, 0)
        if n >= _PER_CALL:
            return None
        self.counts[key] = n + 1
        result = rec.errno if rec.errno is not None else "ok"
        if rec.ret == "?":
            result = "ok"  # still waiting when the process ended
        return RawEvent(rec.pid or None, "wait", name, result, rec.time, address=what)

    def _copied(self, rec: Record) -> bool:
        """Note a copy of stdin that ``rec`` made (dup, dup2, dup3, fcntl F_DUPFD)."""
        name, args = rec.name, rec.args
        if name not in _DUPS and name != "fcntl":
            return False
        if rec.errno is not None or _number(args[0]) not in self.copies:
            return False
        if name == "fcntl" and (len(args) < 2 or _number(args[1]) not in _F_DUPFD):
            return False
        copy = _number(rec.ret or "")
        if copy is not None:
            self.copies.add(copy)
        return True


def _number(arg: str) -> int | None:
    """A descriptor or flag as strace prints it: decoded (``3``, ``3</x>``) or raw
    (``0x3``)."""
    head = arg.split("<", 1)[0].strip()
    try:
        return int(head, 16) if head.startswith("0x") else int(head)
    except ValueError:
        return None
