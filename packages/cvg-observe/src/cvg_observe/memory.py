"""How much memory the tool used while it was observed.

Two numbers, because cvg-run bounds memory two ways (docs/policy.md, resources): each
process's private writable memory (RLIMIT_DATA) and the resident memory of the whole
tree (the supervisor's sum). ``peak_rss_kb`` is the largest resident set any one
process reached, from the kernel's high-water mark (``ru_maxrss`` of every reaped
child: strace, and the tool's whole tree; its first process counts what it held as a
fork of this one before its exec, as a launcher's start counted before); ``tree_rss_kb``
is the most the tool's processes held resident at once, sampled every :data:`INTERVAL`
seconds, so a shorter peak than that can be missed.
"""

from __future__ import annotations

import os
import resource
import time
from typing import Final

from cvg_kernel import process

__all__ = ["INTERVAL", "TreeSampler", "peak_rss_kb"]

INTERVAL: Final = 0.25
_PAGE_KB: Final = os.sysconf("SC_PAGE_SIZE") // 1024


def peak_rss_kb() -> int:
    """The largest resident set of any child this process has reaped (KiB)."""
    return int(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)


class TreeSampler:
    """The largest sum of resident memory over the processes below ``root`` (and
    ``root`` itself with ``with_root``)."""

    def __init__(self, root: int, with_root: bool = False) -> None:
        self.root = root
        self.with_root = with_root
        self.peak_kb = 0
        self.next = 0.0

    def sample(self) -> None:
        """Add up the tree's resident memory now, at most once per INTERVAL."""
        now = time.monotonic()
        if now < self.next:
            return
        self.next = now + INTERVAL
        try:
            members = process.descendants(self.root)
            if self.with_root:
                members.append(self.root)
        except OSError:
            return
        total = 0
        for pid in members:
            try:
                with open(f"/proc/{pid}/statm", "rb") as f:
                    total += int(f.read().split()[1]) * _PAGE_KB
            except (OSError, ValueError, IndexError):
                continue  # gone between the scan and the read
        self.peak_kb = max(self.peak_kb, total)
