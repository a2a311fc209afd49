"""One confined run through a warm ``Sandbox``, with its output capped and a way to
end it early.

``Sandbox.run`` blocks a thread and keeps everything the tool writes in memory, so
a tool that prints without end would grow this server until the wall clock stops
it. Here the same helper protocol is driven from the event loop (no thread
hand-off per call), and each stream keeps its first ``cap`` bytes and counts (and
drops) the rest: the tool is never blocked or signalled for writing too much, and
the server's memory stays bounded.

Ending a run early (the client cancelled the call or went away) means asking its
runner to stop: the runner is the helper's child that holds this run's pipes, and
SIGTERM is what it already obeys when its helper dies. It forwards the signal to
the tool and kills the tool's whole tree.

:class:`Child` is the same for the pieces run as commands (cvg-run --trace,
cvg-observe, cvg-generate).
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from cvg_run.api import Sandbox, Started, pump

_MAX_REPLY = 1 << 20
_CHUNK = 65536


@dataclass
class Stream:
    """What the tool wrote on one stream: the first bytes, and how many there were."""

    data: bytearray = field(default_factory=bytearray)
    total: int = 0

    def take(self, chunk: bytes, cap: int) -> None:
        room = cap - len(self.data)
        if room > 0:
            self.data += chunk[:room]
        self.total += len(chunk)

    @property
    def truncated(self) -> bool:
        return self.total > len(self.data)


@dataclass
class Outcome:
    record: dict[str, Any]
    stdout: Stream
    stderr: Stream
    cancelled: bool = False

    @property
    def status(self) -> int:
        return int(self.record["exit"]["status"])


class Run:
    """One run through a warm sandbox, driven from the event loop: its pipes and its
    reply socket are waited on there, so a call costs no thread hand-off."""

    def __init__(
        self,
        box: Sandbox,
        argv: Sequence[str],
        *,
        stdin: bytes | None,
        timeout: float | None,
        cwd: str | None,
        cap: int,
    ) -> None:
        if isinstance(argv, str | bytes) or not argv:
            raise ValueError("argv must be a non-empty list of strings")
        if not all(isinstance(a, str) for a in argv) or not argv[0]:
            raise ValueError("argv must be a non-empty list of strings")
        self.box = box
        self.argv = list(argv)
        self.stdin = stdin
        self.timeout = timeout
        self.cwd = cwd
        self.cap = cap
        self.run_id = ""  # the runner's, once started
        self.started: Started | None = None

    async def go(self) -> Outcome:
        """Start the run and wait for its end. If the awaiting task is cancelled, the
        run is ended too (see :meth:`end`)."""
        started = self.box.start(self.argv, timeout=self.timeout, cwd=self.cwd, nonblocking=True)
        self.started = started
        self.run_id = started.run_id
        out, err = Stream(), Stream()
        try:
            started.reply.setblocking(False)
            streams = {started.stdout: out, started.stderr: err}
            try:
                data = await _exchange(started.stdin, self.stdin, streams, started.reply, self.cap)
            except anyio.get_cancelled_exc_class():
                self.end()
                raise
        finally:
            started.reply.close()
        return Outcome(started.result(data), out, err)

    def end(self) -> None:
        """End the run early (see cvg_run.api.Started.cancel)."""
        if self.started is not None:
            self.started.cancel()


async def _exchange(
    in_w: int,
    data: bytes | None,
    streams: dict[int, Stream],
    reply: socket.socket,
    cap: int,
) -> bytes:
    """Feed stdin, drain every stream to its end, then take the runner's reply, all
    in one waiter on the event loop (one wake-up per burst, not one task per pipe).
    Closes ``in_w``."""
    loop = asyncio.get_running_loop()
    ready = asyncio.Event()
    view = memoryview(data or b"")
    readers = dict(streams)
    watched: list[int] = []
    writing = bool(view)
    if not writing:
        os.close(in_w)
    try:
        for fd in readers:
            loop.add_reader(fd, ready.set)
            watched.append(fd)
        if writing:
            loop.add_writer(in_w, ready.set)
        while True:
            ready.clear()
            if writing:
                try:
                    view = view[os.write(in_w, view[:_CHUNK]) :]
                except BlockingIOError:
                    pass
                except BrokenPipeError:
                    view = view[:0]
                if not view:
                    loop.remove_writer(in_w)
                    os.close(in_w)
                    writing = False
            for fd, stream in list(readers.items()):
                while True:
                    try:
                        chunk = os.read(fd, _CHUNK)
                    except BlockingIOError:
                        break
                    if not chunk:
                        loop.remove_reader(fd)
                        watched.remove(fd)
                        del readers[fd]
                        break
                    stream.take(chunk, cap)
            if not readers:
                # The runner replies once the tool's tree is gone and the pipes with it.
                try:
                    return reply.recv(_MAX_REPLY)
                except BlockingIOError:
                    if reply.fileno() not in watched:
                        loop.add_reader(reply.fileno(), ready.set)
                        watched.append(reply.fileno())
            await ready.wait()
    finally:
        for fd in watched:
            loop.remove_reader(fd)
        if writing:
            loop.remove_writer(in_w)
            os.close(in_w)


def _drain(
    in_w: int,
    out_r: int,
    err_r: int,
    data: bytes | None,
    out: Stream,
    err: Stream,
    cap: int,
) -> None:
    """Feed stdin and drain stdout and stderr together, so no pipe fills up; keep at
    most ``cap`` bytes of each. Closes all three descriptors."""
    pump(in_w, out_r, err_r, data, lambda c: out.take(c, cap), lambda c: err.take(c, cap))


class Child:
    """A helper command (cvg-run --trace, cvg-observe, cvg-generate) run as a plain
    subprocess, with the same capped drain and an early end: SIGTERM, which each of
    them passes on to the tool it supervises, then SIGKILL after ``grace``."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        stdin: bytes | None,
        cwd: str,
        cap: int,
        env: dict[str, str] | None = None,
        grace: float = 5.0,
    ) -> None:
        self.argv = list(argv)
        self.stdin = stdin
        self.cwd = cwd
        self.cap = cap
        self.env = env
        self.grace = grace
        self._proc: subprocess.Popen[bytes] | None = None
        self._signalled = False
        self._cancelled = threading.Event()
        self._lock = threading.Lock()

    def go(self) -> tuple[int, Stream, Stream]:
        in_r, in_w = os.pipe2(os.O_CLOEXEC)
        out_r, out_w = os.pipe2(os.O_CLOEXEC)
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        out, err = Stream(), Stream()
        try:
            with self._lock:
                self._proc = subprocess.Popen(
                    self.argv, stdin=in_r, stdout=out_w, stderr=err_w, cwd=self.cwd, env=self.env
                )
        except OSError:
            for fd in (in_r, in_w, out_r, out_w, err_r, err_w):
                os.close(fd)
            raise
        for fd in (in_r, out_w, err_w):
            os.close(fd)
        if self._cancelled.is_set():
            self.cancel()
        _drain(in_w, out_r, err_r, self.stdin, out, err, self.cap)
        return self._proc.wait(), out, err

    def cancel(self) -> None:
        """Tell the command to stop (once; asking again changes nothing)."""
        self._cancelled.set()
        with self._lock:
            proc = self._proc
            if proc is None or proc.poll() is not None or self._signalled:
                return
            self._signalled = True
        proc.send_signal(signal.SIGTERM)
        threading.Thread(target=self._reap_or_kill, args=(proc,), daemon=True).start()

    def _reap_or_kill(self, proc: subprocess.Popen[bytes]) -> None:
        try:
            proc.wait(self.grace)
        except subprocess.TimeoutExpired:
            proc.kill()
