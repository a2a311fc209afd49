"""How long the observed tree lives: no longer than the observation.

cvg-observe is a child subreaper while it watches, so a daemon that double-forks and
calls setsid re-parents to it rather than to init. The tree is ended (every process
below cvg-observe that the observation started, SIGKILL through a pidfd whose parent is
checked after it was opened, reaped, until a scan finds none) when:

- the command's first process has exited: what it left behind goes with it, as under
  cvg-run;
- the wall clock (``--timeout``) has run out;
- the client has gone: the tool's stdin (a pipe, a socket or a terminal) was closed by
  its writer, and the tree has made no call for ``--idle`` seconds since. A server
  blocked reading a stdin its client still holds is never idle, however long it waits;
  a tool still working through input that has ended (making calls) is not ended either.

strace is not part of the tree (it is cvg-observe's child, outside the learning
sandbox's signal scope): it is spared here and ends on its own once nothing is left
for it to trace.

The tree is this process's descendants but the children it had before the observation
began. A program calling :func:`cvg_observe.observe.observe` while another of its
threads starts children would have those ended too: it should run the ``cvg-observe``
command instead (cvg-mcp does).
"""

from __future__ import annotations

import errno
import os
import select
import signal
import time
from typing import Final

from cvg_kernel import process

__all__ = ["DEFAULT_IDLE", "DEFAULT_TIMEOUT", "Lifetime"]

DEFAULT_TIMEOUT: Final = 24 * 3600.0
DEFAULT_IDLE: Final = 60.0
KILL_SECONDS: Final = 10.0


class Lifetime:
    """The limits of one observation, and the ending of its tree. Made before the
    command's first process is forked: the children this process already had are not
    the observation's."""

    def __init__(self, timeout: float | None, idle: float | None, stdin: str | None) -> None:
        process.set_child_subreaper()
        self.me = os.getpid()
        self.others = set(process.children_of(self.me))
        self.started = time.monotonic()
        self.timeout = timeout
        self.idle = idle
        self._stdin = select.poll() if stdin is not None and idle is not None else None
        if self._stdin is not None:
            self._stdin.register(0, 0)  # no events asked for: only a hangup is reported
        self.hung_up: float | None = None
        self._quiet_since = self.started
        self._calls = -1

    def over(self, calls: int) -> str | None:
        """Why the observation must end now, or None. ``calls`` is how many trace lines
        have been read so far (a change is activity)."""
        now = time.monotonic()
        if self.timeout is not None and now - self.started >= self.timeout:
            return f"the wall clock of {self.timeout:g} s (--timeout) ran out"
        if calls != self._calls:
            self._calls = calls
            self._quiet_since = now
        if self._stdin is not None and self.hung_up is None and self._stdin.poll(0):
            self.hung_up = now
            self._stdin = None
        if self.hung_up is None or self.idle is None:
            return None
        quiet = now - max(self._quiet_since, self.hung_up)
        if quiet >= self.idle:
            return (
                f"the client closed the tool's stdin and the tool made no call for "
                f"{self.idle:g} s (--idle)"
            )
        return None

    def next_check(self) -> float:
        """Seconds until :meth:`over` could next say yes (at most 1)."""
        wait = 1.0
        now = time.monotonic()
        if self.timeout is not None:
            wait = min(wait, self.started + self.timeout - now)
        if self.hung_up is not None and self.idle is not None:
            wait = min(wait, max(self._quiet_since, self.hung_up) + self.idle - now)
        return max(wait, 0.0)

    def members(self, spare: int) -> list[int]:
        """The observation's processes now: this process's descendants but ``spare``
        (strace) and the children it had before, with theirs; and what is below
        ``spare`` (the command strace started, unconfined)."""
        outside = {spare, *self.others}
        out: list[int] = []
        stack = [c for c in process.children_of(self.me) if c not in outside]
        stack += process.children_of(spare)
        while stack:
            pid = stack.pop()
            out.append(pid)
            stack.extend(process.children_of(pid))
        return out

    def end_tree(self, spare: int) -> int:
        """SIGKILL every member (see :meth:`members`) until none is left alive; how many
        were signalled. Reaping is left to the callers: a traced process is reaped only
        once strace, which must go on reading, has seen it end."""
        killed: set[int] = set()
        end = time.monotonic() + KILL_SECONDS
        while True:
            members = self.members(spare)
            live = [p for p in members if not _dead(p)]
            if not live or time.monotonic() > end:
                return len(killed)
            parents = {self.me, spare, *members}
            for pid in live:
                if pid not in killed and _kill(pid, parents):
                    killed.add(pid)
            time.sleep(0.001)

    def reap_orphans(self, spare: set[int]) -> None:
        """Reap what has re-parented here and exited (not ``spare``: strace, the first
        process, whose status their owners read)."""
        for pid in process.children_of(self.me):
            if pid not in spare and pid not in self.others:
                reap(pid)


def reap(pid: int) -> bool:
    """Reap this process's child ``pid`` if it has exited; True once it is gone."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return done != 0


def _dead(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return True
    return data[data.rindex(b")") + 2 :][:1] in (b"Z", b"X")


def _kill(pid: int, parents: set[int]) -> bool:
    """SIGKILL ``pid`` through a pidfd, only if its parent is still one of ``parents``
    once the pidfd pins it (a reused pid is never hit)."""
    try:
        fd = process.pidfd_open(pid)
    except OSError as e:
        if process.gone(e):
            return False
        raise
    try:
        if process.parent_of(pid) in parents:
            process.pidfd_send_signal(fd, signal.SIGKILL)
            return True
        return False
    except OSError as e:
        if e.errno != errno.ESRCH:
            raise
        return False
    finally:
        os.close(fd)
