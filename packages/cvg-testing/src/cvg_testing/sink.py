"""A listener outside any sandbox that keeps every byte reaching it: the oracle of
whether a confined tool got a message out (bytes arrived) or not (none did)."""

from __future__ import annotations

import socket
import threading
from typing import Any

__all__ = ["Sink"]

_SOCKETS = {
    "tcp": (socket.AF_INET, socket.SOCK_STREAM),
    "tcp6": (socket.AF_INET6, socket.SOCK_STREAM),
    "udp": (socket.AF_INET, socket.SOCK_DGRAM),
    "unix": (socket.AF_UNIX, socket.SOCK_STREAM),
    "abstract": (socket.AF_UNIX, socket.SOCK_STREAM),
    "unixdgram": (socket.AF_UNIX, socket.SOCK_DGRAM),
    "abstractdgram": (socket.AF_UNIX, socket.SOCK_DGRAM),
}
_LOOPBACK = {"tcp": ("127.0.0.1", 0), "tcp6": ("::1", 0), "udp": ("127.0.0.1", 0)}


class Sink:
    """Listens on ``addr`` (a free loopback port for tcp, tcp6 and udp when None; a
    path, or a NUL-led abstract name, for the unix kinds) and reads on a thread until
    :meth:`close`. ``received`` is every byte so far, of every connection or datagram.
    Closing first takes what is already queued, so nothing sent before it is lost."""

    def __init__(self, kind: str = "tcp", addr: Any = None) -> None:
        family, type_ = _SOCKETS[kind]
        self.kind = kind
        self.received = b""
        self.sock = socket.socket(family, type_)
        self.sock.bind(_LOOPBACK[kind] if addr is None else addr)
        self.addr: Any = self.sock.getsockname()
        if type_ == socket.SOCK_STREAM:
            self.sock.listen(16)
        self.sock.settimeout(0.2)
        self._stop = False
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self.addr[1])

    def _serve(self) -> None:
        while True:
            try:
                if self.sock.type == socket.SOCK_DGRAM:
                    self.received += self.sock.recv(65536)
                    continue
                conn, _ = self.sock.accept()
            except OSError:  # the timeout among them: nothing is queued
                if self._stop:
                    return
                continue
            with conn:
                conn.settimeout(1.0)
                try:
                    while data := conn.recv(65536):
                        self.received += data
                except OSError:
                    pass

    def close(self) -> bytes:
        """Stop listening; every byte received."""
        self._stop = True
        self._thread.join(5)
        self.sock.close()
        return self.received

    def __enter__(self) -> Sink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
