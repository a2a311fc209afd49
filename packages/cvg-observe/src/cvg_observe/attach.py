"""The confined command's first process, forked here and held until strace is attached.

strace cannot start the command in the learning sandbox itself: a process has to
confine itself between fork and exec, and whatever does that under strace has every
call traced (a Python interpreter importing cvg_kernel and adding one Landlock rule
per path: some 2,500 calls, most of an observation's time). So this process forks the
command's first process, which confines itself exactly as cvg-exec does (the same
``Prepared.apply``: rlimits, capabilities, no_new_privs, Landlock, descriptors closed
on exec, seccomp) and then waits on a pipe; strace attaches to it (``strace -p``), and
only then is it let go to exec the command. strace sees every call from the exec on,
and, without ``--seccomp-bpf``, every call cvg's seccomp filter refuses.

strace seizes a process (its ptrace attach) and then interrupts it to start tracing its
calls: in between, which a busy machine can stretch, calls go unseen. So letting go is
not done when the process first shows a tracer, but once a call of the held
process has been seen in the trace: it is probed (a byte it reads and waits on again),
every few milliseconds, until strace prints one of those reads.

Under Yama's ptrace_scope 1 a process may be traced only by its ancestors, and strace
is this process's child, not the command's: so the command first names this process as
its tracer's ancestor (PR_SET_PTRACER), before it is confined.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterable, Iterator
from typing import Final

from cvg_kernel import libc
from cvg_kernel.plan import EXIT_NOT_STARTED, Prepared, child_exec, child_exit

__all__ = ["ATTACH_SECONDS", "Held"]

ATTACH_SECONDS: Final = 30.0
PROBE_SECONDS: Final = 0.005
_PR_SET_PTRACER: Final = 0x59616D61
# The signals the observer catches while the tool runs: the held process gets the
# defaults back, as a freshly started launcher had them.
_CAUGHT: Final = (signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGHUP)


class Held:
    """``argv``'s first process, confined by ``prepared`` and waiting to exec; its
    stdout is ``stdout`` (None: this process's)."""

    def __init__(self, prepared: Prepared, argv: list[str], stdout: int | None) -> None:
        go_r, self._go = os.pipe2(os.O_CLOEXEC)
        self._err, err_w = os.pipe2(os.O_CLOEXEC)
        self._ready, ready_w = os.pipe2(os.O_CLOEXEC)
        self.pid = os.fork()
        if self.pid == 0:
            _child(prepared, argv, stdout, go_r, err_w, ready_w)
        os.close(go_r)
        os.close(err_w)
        os.close(ready_w)
        self.status: int | None = None
        self._probed = 0.0

    def confined(self) -> bool:
        """Wait until it is confined and waiting: True; False when it ended first (a
        confinement that failed: see :meth:`failure`). A tracer started before then
        could find it gone and say so in its own words."""
        try:
            return os.read(self._ready, 1) == b"r"
        finally:
            os.close(self._ready)
            self._ready = -1

    def attached_by(self, tracer: subprocess.Popen[bytes]) -> bool:
        """Wait until it is traced (by ``tracer``, or a strace that a wrapper script
        named as ``tracer`` started: only a line in the trace lets it go), and probe it;
        False when the tracer or the held process ended first, or ATTACH_SECONDS
        passed."""
        deadline = time.monotonic() + ATTACH_SECONDS
        while not _tracer_of(self.pid):
            if tracer.poll() is not None or self.poll() is not None:
                return False
            if time.monotonic() > deadline:
                return False
            time.sleep(0.0005)
        self._probed = 0.0
        self.probe()
        return True

    @property
    def holding(self) -> bool:
        """Still held: no call of it has been seen in the trace yet."""
        return self._go >= 0

    def probe(self) -> None:
        """One byte for it to read, at most every PROBE_SECONDS, while it is held."""
        now = time.monotonic()
        if self.holding and now - self._probed >= PROBE_SECONDS:
            self._probed = now
            self._send(b"p")

    def release_on_trace(self, lines: Iterable[str]) -> Iterator[str]:
        """``lines``, letting the command go at the first line of the held process."""
        mine = f"{self.pid} "
        for line in lines:
            if self.holding and line.startswith(mine):
                self._send(b"g")
                os.close(self._go)
                self._go = -1
            yield line

    def _send(self, byte: bytes) -> None:
        try:
            os.write(self._go, byte)
        except OSError:
            pass  # it has ended: the trace and its status say how

    def poll(self) -> int | None:
        """Its exit status (negative: killed by that signal) once it has ended."""
        if self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(status)
        return self.status

    def wait(self) -> int:
        """Wait for it to end; its exit status (negative: killed by that signal)."""
        if self.status is None:
            _, status = os.waitpid(self.pid, 0)
            self.status = os.waitstatus_to_exitcode(status)
        return self.status

    def abandon(self) -> None:
        """End it before it ever ran the command."""
        if self.status is None:
            os.kill(self.pid, signal.SIGKILL)
            self.wait()

    def failure(self) -> tuple[int, str] | None:
        """Why it never ran the command (its status and one line), once it has ended;
        None when it exec'd it."""
        data = b""
        while chunk := os.read(self._err, 4096):
            data += chunk
        if not data:
            return None
        status, _, message = data.decode("utf-8", "replace").partition(" ")
        return (int(status) if status.isdigit() else EXIT_NOT_STARTED), message

    def close(self) -> None:
        """Its descriptors here; a process still held is ended first."""
        if self.holding:
            self.abandon()
        for fd in (self._go, self._err, self._ready):
            if fd >= 0:
                os.close(fd)
        self._go = self._err = self._ready = -1


def _tracer_of(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"TracerPid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _child(
    prepared: Prepared, argv: list[str], stdout: int | None, go: int, err: int, ready: int
) -> None:
    """Between fork and exec. Never returns; why the command did not start goes up
    ``err`` as ``STATUS message``."""
    try:
        for sig in _CAUGHT:
            signal.signal(sig, signal.SIG_DFL)
        try:
            libc.prctl(_PR_SET_PTRACER, os.getppid())
        except OSError:
            pass  # no Yama: nothing to declare
        if stdout is not None and stdout != 1:
            os.dup2(stdout, 1)
        prepared.apply()
        os.write(ready, b"r")
        os.close(ready)
    except BaseException as e:  # noqa: BLE001 - a forked child never returns into the caller's code
        child_exit(err, EXIT_NOT_STARTED, f"confinement failed: {e}")
    try:
        while (word := os.read(go, 1)) == b"p":
            pass  # a probe: read again, so strace has a call of ours to show
    except BaseException:  # noqa: BLE001 - as above
        word = b""
    if word != b"g":  # the observer gave up (or is gone): the command never runs
        os._exit(EXIT_NOT_STARTED)
    child_exec(prepared, argv, None, err)
