"""Below Landlock ABI 6: the signals of the learning sandbox, decided by cvg-observe.

The learning plan keeps signals inside the tool's own tree. From ABI 6 Landlock's
signal scope does that in the kernel; below it the plan's seccomp filter hands every
call that can signal another process to a supervisor (``seccomp.supervise: [signal]``,
:mod:`cvg_kernel.guard`), as under cvg-run. Here cvg-observe is that supervisor: a
thread serves the listener the confined process sends down a socket, and signals only
processes below cvg-observe. strace is cvg-observe's child too, so it is named to the
guard as outside the tree (:func:`cvg_kernel.guard.keep_outside`): the tool can no
more signal strace than any other process.
"""

from __future__ import annotations

import os
import socket
import threading
from typing import Any

from cvg_kernel import guard
from cvg_kernel.notify import serve_handover

__all__ = ["SignalGuard"]


class SignalGuard:
    """``theirs`` goes to ``prepare(notify_sock=...)``; :meth:`start` once the confined
    process is forked, :meth:`stop` once its tree is gone (later calls get ENOSYS)."""

    def __init__(self, calls: tuple[str, ...]) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._ours, self.theirs = ours.detach(), theirs.detach()
        os.set_inheritable(self.theirs, True)
        self._stop_r, self._stop_w = os.pipe2(os.O_CLOEXEC)
        self.calls = calls
        self.error: str | None = None
        self._thread: threading.Thread | None = None

    def start(self, program: Any, arch: str) -> None:
        os.close(self.theirs)
        self.theirs = -1
        self._thread = threading.Thread(
            target=self._serve, args=(program, arch), name="cvg-observe-guard", daemon=True
        )
        self._thread.start()

    @staticmethod
    def spare(pid: int) -> None:
        """``pid`` (strace) is not the tool's: it is never signalled for it."""
        guard.keep_outside(pid)

    def _serve(self, program: Any, arch: str) -> None:
        ours, self._ours = self._ours, -1
        try:
            serve_handover(
                ours, program, arch, lambda call: None, stop_fd=self._stop_r,
                supervised=self.calls,
            )  # fmt: skip
        except Exception as e:  # noqa: BLE001 - said on stderr; the tool's calls fail meanwhile
            self.error = f"{type(e).__name__}: {e}"

    def stop(self) -> None:
        try:
            os.write(self._stop_w, b"x")
        except OSError:
            pass
        if self._thread is not None:
            self._thread.join(5.0)
        for fd in (self._ours, self.theirs, self._stop_r, self._stop_w):
            if fd >= 0:
                os.close(fd)
        self._ours = self.theirs = self._stop_r = self._stop_w = -1
