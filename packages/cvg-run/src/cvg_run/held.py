"""What the tool's tree holds against memory_mb besides its resident pages.

Always: memfds and unlinked in-memory files (tree.held_memory), found by a
walk of every member's descriptors and maps. Without a memory cgroup, which
would charge them itself, also what the kernel holds for the tool: AF_UNIX
socket buffers and the files of a ${SCRATCH} on tmpfs at every scan (either
fills at hundreds of MiB a second), and at the walk's pace TCP and UDP
buffers (a TCP dump walks the kernel's whole connection table).
"""

from __future__ import annotations

import time

from . import tree
from .tree import Reserve

# Memfds and unlinked in-memory files are found by walking every member's
# descriptors and maps: slower than the stat scan (about 0.7 ms per member of
# 30 descriptors), so at most this often, and spaced so that the walk takes
# at most a fifth of the supervisor's time however large the tree.
HELD_INTERVAL = 0.1
HELD_SHARE = 0.2


class Held:
    """The walk's last findings and when the next walk is due."""

    def __init__(
        self, limit: int | None, scratch: str | None, sampled: bool, reserve: Reserve, t0: float
    ) -> None:
        self.limit = limit
        self.scratch = scratch
        self.sampled = sampled
        self.reserve = reserve
        self.walked = 0  # memfds and in-memory files; sampled: TCP and UDP too
        self.sockets = 0  # sampled: AF_UNIX buffers and the scratch files
        # The first walk one interval in, like every later one: a run that ends
        # sooner (most tool calls) pays nothing for it, and RLIMIT_FSIZE and
        # RLIMIT_NOFILE already bound what its memfds can hold meanwhile.
        self.next = t0 + HELD_INTERVAL
        self.was_hidden: set[int] = set()

    def scan(self, members: list[int], resident: int, now: float) -> int:
        """Bytes held now, besides ``resident``. Raises OSError as the walks do,
        and PermissionError for a member that hides its descriptors."""
        if self.limit is None:
            return 0
        if now >= self.next:
            began = time.monotonic()
            hidden: set[int] | None = set() if self.reserve.dumpable else None
            self.walked = tree.held_memory(members, self.reserve.memory_devs, hidden)
            if self.sampled:
                room = self.limit - resident - self.walked
                self.walked += tree.socket_memory(members, room, inet=True)
            took = time.monotonic() - began
            self.next = now + max(HELD_INTERVAL, took / HELD_SHARE)
            tree.refuse_hidden(hidden or set(), self.was_hidden)
            self.was_hidden = hidden or set()
        if self.sampled:
            files = 0
            if self.scratch is not None:
                files = tree.directory_memory(self.scratch, self.reserve.memory_devs)
            room = self.limit - resident - self.walked - files
            self.sockets = files + tree.socket_memory(members, room)
        return self.walked + self.sockets

    def near(self, resident: int) -> bool:
        """Whether a sampled limit is half used: then the scans come faster."""
        if not self.sampled or self.limit is None:
            return False
        return 2 * (resident + self.walked + self.sockets) > self.limit
