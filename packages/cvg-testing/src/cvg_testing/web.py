"""A loopback HTTP server outside any sandbox, for tests of what a confined tool may
reach: every GET is answered 200 with a text the test chooses, and nothing is logged."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Callable

__all__ = ["TextServer"]


class _Answer(http.server.BaseHTTPRequestHandler):
    server: TextServer

    def do_GET(self) -> None:
        body = self.server.answer(self).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


class TextServer(http.server.ThreadingHTTPServer):
    """Listens on ``address`` once made (an OSError if it cannot), serves on a thread
    inside ``with`` and is shut down and closed at its end. ``answer(request)`` is the
    text of the reply to a GET (``request.path``, ``request.headers``)."""

    def __init__(
        self,
        address: tuple[str, int],
        answer: Callable[[http.server.BaseHTTPRequestHandler], str],
    ) -> None:
        self.answer = answer
        super().__init__(address, _Answer)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def __enter__(self) -> TextServer:
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()
