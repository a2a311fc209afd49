"""The process table as an oracle: read from /proc, outside the code under test."""

from __future__ import annotations

__all__ = ["alive"]


def alive(pid: int) -> bool:
    """Whether ``pid`` exists and is neither a zombie nor dead."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rindex(b")") + 2 :][:1] not in (b"Z", b"X")
