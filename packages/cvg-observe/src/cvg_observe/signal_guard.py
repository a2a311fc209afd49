"""Below Landlock ABI 6: the signals of the learning sandbox, decided by cvg-observe.

The learning plan keeps signals inside the tool's own tree. From ABI 6 Landlock's
signal scope does that in the kernel; below it the plan's seccomp filter hands every
call that can signal another process to a supervisor (``seccomp.supervise: [signal]``,
:mod:`cvg_kernel.guard`), as under cvg-run. Here cvg-observe is that supervisor: the
confined process sends its listener down a socket before it says it is confined, and
a thread (:class:`cvg_kernel.notify.Serving`) answers each call, signalling only
processes below cvg-observe. strace is cvg-observe's child too, so it is named to the
guard as outside the tree (:func:`cvg_kernel.guard.keep_outside`): the tool can no
more signal strace than any other process.
"""

from __future__ import annotations

import os
import socket
from typing import Any

from cvg_kernel import guard
from cvg_kernel.notify import NotifyError, Serving, receive_listener

__all__ = ["SignalGuard"]

LISTENER_SECONDS = 5.0


class SignalGuard:
    """``theirs`` goes to ``prepare(notify_sock=...)``; :meth:`start` once the confined
    process says it is confined (its listener is on the way), :meth:`stop` once its
    tree is gone (later calls get ENOSYS)."""

    def __init__(self, calls: tuple[str, ...]) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._ours, self.theirs = ours.detach(), theirs.detach()
        os.set_inheritable(self.theirs, True)
        self.calls = calls
        self.error: str | None = None
        self._serving: Serving | None = None

    def start(self, program: Any, arch: str) -> None:
        """Serve the listener; a failure is kept in ``error`` (the calls then fail)."""
        os.close(self.theirs)
        self.theirs = -1
        try:
            listener = receive_listener(self._ours, LISTENER_SECONDS)
        except (NotifyError, OSError) as e:
            self.error = str(e)
            return
        self._serving = Serving(listener, program, arch, lambda call: None, self.calls)

    @staticmethod
    def spare(pid: int) -> None:
        """``pid`` (strace) is not the tool's: it is never signalled for it."""
        guard.keep_outside(pid)

    def stop(self) -> None:
        if self._serving is not None:
            self._serving.stop()
            try:
                self._serving.join(5.0)
            except Exception as e:  # noqa: BLE001 - said on stderr by the caller
                self.error = f"{type(e).__name__}: {e}"
            self._serving = None
        for fd in (self._ours, self.theirs):
            if fd >= 0:
                os.close(fd)
        self._ours = self.theirs = -1
