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
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager

import anyio

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
