"""Standard input and output as truly asynchronous streams, for the SDK's stdio transport.

``mcp.server.stdio.stdio_server`` reads and writes through ``anyio.wrap_file``,
which sends every line read, every write and every flush to a worker thread: four
thread hand-offs per call on a busy two-core machine. It accepts any async line
iterator and writer instead, so these wait for the descriptors to be ready in the
event loop and read or write them without blocking. The framing and the JSON-RPC
handling stay the SDK's.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

_CHUNK = 1 << 16
# The largest message accepted (an observation may be tens of MiB); a line longer
# than this ends the session rather than growing the buffer without bound.
MAX_LINE = 96 << 20


class LineReader:
    """Lines (str, with their newline) from a non-blocking descriptor."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buffer = bytearray()
        self._eof = False

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line = bytes(self._buffer[: end + 1])
                del self._buffer[: end + 1]
                yield line.decode("utf-8", "replace")
                continue
            if self._eof:
                if self._buffer:
                    rest = bytes(self._buffer)
                    self._buffer.clear()
                    yield rest.decode("utf-8", "replace")
                return
            try:
                chunk = os.read(self.fd, _CHUNK)
            except BlockingIOError:
                await anyio.wait_readable(self.fd)
                continue
            if chunk:
                self._buffer += chunk
                if len(self._buffer) > MAX_LINE and b"\n" not in chunk:
                    sys.stderr.write(
                        f"cvg-mcp: a message longer than {MAX_LINE} bytes: closing the session\n"
                    )
                    self._buffer.clear()
                    return
            else:
                self._eof = True


class Writer:
    """``write`` buffers, ``flush`` writes it all out without blocking the loop."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._pending = bytearray()

    async def write(self, text: str) -> None:
        self._pending += text.encode("utf-8")

    async def flush(self) -> None:
        while self._pending:
            try:
                n = os.write(self.fd, self._pending)
            except BlockingIOError:
                await anyio.wait_writable(self.fd)
                continue
            del self._pending[:n]


@contextmanager
def nonblocking(*fds: int) -> Iterator[None]:
    """Make ``fds`` non-blocking for the duration, then restore them: a terminal's
    descriptor is shared with the shell that started us."""
    before = [(fd, os.get_blocking(fd)) for fd in fds]
    try:
        for fd in fds:
            os.set_blocking(fd, False)
        yield
    finally:
        for fd, blocking in before:
            try:
                os.set_blocking(fd, blocking)
            except OSError:
                pass


# At most this many bad-message lines a second on stderr; the rest are counted.
BAD_LINES_PER_SECOND = 5


class BadInput:
    """Says, one line each, which messages on stdin were not JSON-RPC, at most
    ``per_second`` lines a second; past that it counts them and says the count.

    Without it the SDK logs a three-line validation dump per bad line (and sends the
    client an "Internal Server Error" for each): 100 KB of garbage made over a
    thousand lines of stderr.
    """

    def __init__(
        self,
        per_second: int = BAD_LINES_PER_SECOND,
        clock: Callable[[], float] = time.monotonic,
        say: Callable[[str], None] | None = None,
    ) -> None:
        self.per_second = per_second
        self.clock = clock
        self.say = say or _say
        self.window = clock()
        self.shown = 0
        self.hidden = 0
        self.total = 0

    def report(self, exc: Exception) -> None:
        self.total += 1
        now = self.clock()
        if now - self.window >= 1.0:
            self.flush()
            self.window = now
            self.shown = 0
        if self.shown < self.per_second:
            self.shown += 1
            self.say(f"dropped a message on stdin that is not JSON-RPC: {_why(exc)}")
        else:
            self.hidden += 1

    def flush(self) -> None:
        if self.hidden:
            many = "message" if self.hidden == 1 else "messages"
            self.say(
                f"{self.hidden} more {many} on stdin were not JSON-RPC and were dropped "
                f"(at most {self.per_second} lines a second are shown)"
            )
            self.hidden = 0


def _say(line: str) -> None:
    sys.stderr.write(f"cvg-mcp: {line}\n")
    sys.stderr.flush()


def _why(exc: Exception) -> str:
    """The first problem of a validation error, without its input dump and URL."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            first = errors(include_url=False, include_input=False)[0]
        except Exception:  # noqa: BLE001 - any other shape: fall back to the text
            first = None
        if isinstance(first, dict):
            where = ".".join(str(p) for p in first.get("loc", ()))
            msg = " ".join(str(first.get("msg", "")).split())
            return f"{where}: {msg}" if where else msg
    text = " ".join(str(exc).split())
    return text[:200]


async def drop_bad_input(
    source: MemoryObjectReceiveStream[Any],
    sink: MemoryObjectSendStream[Any],
    bad: BadInput,
) -> None:
    """Pass the SDK's parsed messages on to the server, minus the parse failures,
    each said once on stderr (see :class:`BadInput`)."""
    try:
        async with sink:
            async for item in source:
                if isinstance(item, Exception):
                    bad.report(item)
                    continue
                await sink.send(item)
    finally:
        bad.flush()
