"""Benchmark the network.hosts proxy: what one connection costs through it.

    uv run python benchmarks/bench_proxy.py [--runs N]

One loopback echo server, and cvg-run's proxy in this process allowing it by name
(resolved from an in-memory table: no DNS). Each measured connection opens a TCP
connection, sends 64 bytes, reads them back and closes: directly, through HTTP
CONNECT, and through SOCKS5. The three are interleaved (direct, CONNECT, SOCKS5,
direct, ...) so that drift in the machine's load hits each alike. Then 16 MiB are
pushed through one connection each way, direct and through CONNECT, for throughput.
Median and p95 are written under the key ``"proxy"`` of
``benchmarks/results/<hostname>.json`` (only that key is touched).
"""

from __future__ import annotations

import socket
import socketserver
import statistics
import struct
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import results_file
import timing  # benchmarks/ is on sys.path when run as a script

from cvg_run import __version__
from cvg_run.proxy import Allowlist, Proxy

KEY = "proxy"
MESSAGE = b"m" * 64
BULK = 16 * 1024 * 1024


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(262144):
            self.request.sendall(data)


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 512


def summary(samples: list[float]) -> dict[str, Any]:
    return results_file.summary_seconds(samples, 3)


def _recv_exact(s: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed early")
        data += chunk
    return data


def _head(s: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(1)
        if not chunk:
            raise ConnectionError("closed early")
        data += chunk
    return data


def direct(echo: tuple[str, int]) -> socket.socket:
    return socket.create_connection(echo)


def via_connect(proxy_port: int, port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", proxy_port))
    s.sendall(f"CONNECT echo.bench:{port} HTTP/1.1\r\nHost: echo.bench:{port}\r\n\r\n".encode())
    if not _head(s).startswith(b"HTTP/1.1 200"):
        raise ConnectionError("CONNECT refused")
    return s


def via_socks(proxy_port: int, port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", proxy_port))
    name = b"echo.bench"
    s.sendall(b"\x05\x01\x00")
    _recv_exact(s, 2)
    s.sendall(b"\x05\x01\x00\x03" + bytes([len(name)]) + name + struct.pack("!H", port))
    if _recv_exact(s, 10)[1] != 0:
        raise ConnectionError("SOCKS5 refused")
    return s


def one(open_: Callable[[], socket.socket]) -> float:
    t0 = time.perf_counter()
    s = open_()
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(MESSAGE)
    _recv_exact(s, len(MESSAGE))
    s.close()
    return time.perf_counter() - t0


def bulk(open_: Callable[[], socket.socket]) -> float:
    """MiB/s for BULK bytes sent and echoed back on one connection."""
    s = open_()
    chunk = b"b" * 262144
    got = 0

    def reader() -> None:
        nonlocal got
        while got < BULK:
            data = s.recv(262144)
            if not data:
                return
            got += len(data)

    t0 = time.perf_counter()
    t = threading.Thread(target=reader)
    t.start()
    for _ in range(BULK // len(chunk)):
        s.sendall(chunk)
    t.join()
    elapsed = time.perf_counter() - t0
    s.close()
    if got != BULK:
        raise ConnectionError(f"echoed {got} of {BULK} bytes")
    return BULK / elapsed / (1024 * 1024)


def main() -> int:
    args = timing.runs_args(__doc__, runs=300, what="connections of each kind")

    server = _Server(("127.0.0.1", 0), _Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    echo = server.server_address[0], server.server_address[1]
    port = echo[1]
    proxy = Proxy(
        Allowlist([("echo.bench", [port])]),
        resolver=lambda name: ["127.0.0.1"],
        max_log=args.runs * 3 + 100,
    ).start()
    kinds: dict[str, Callable[[], socket.socket]] = {
        "direct": lambda: direct(echo),
        "http_connect": lambda: via_connect(proxy.port, port),
        "socks5": lambda: via_socks(proxy.port, port),
    }
    samples: dict[str, list[float]] = {k: [] for k in kinds}
    try:
        for open_ in kinds.values():  # warm-up, not measured
            one(open_)
        for _ in range(args.runs):
            for name, open_ in kinds.items():
                samples[name].append(one(open_))
        throughput = {
            "direct_mib_s": round(statistics.median(bulk(kinds["direct"]) for _ in range(3)), 1),
            "http_connect_mib_s": round(
                statistics.median(bulk(kinds["http_connect"]) for _ in range(3)), 1
            ),
            "bytes_each_way": BULK,
        }
    finally:
        proxy.stop()
        server.shutdown()
        server.server_close()

    summaries = {k: summary(v) for k, v in samples.items()}
    base = summaries["direct"]["median_ms"]
    entry = {
        **results_file.machine(),
        "cvg_run": __version__,
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "what": (
            "one loopback TCP connection: open, send 64 bytes, read them back, close; "
            "direct and through the network.hosts proxy, interleaved"
        ),
        "connection": summaries,
        "added_median_ms": {
            k: round(summaries[k]["median_ms"] - base, 3) for k in ("http_connect", "socks5")
        },
        "throughput": throughput,
    }
    path = args.output or results_file.default_path()
    results_file.record(path, KEY, entry, who="bench_proxy")
    for name, s in summaries.items():
        print(results_file.summary_line(name, s, 13, "7.3f"))
    print(
        f"throughput    direct {throughput['direct_mib_s']} MiB/s, "
        f"through CONNECT {throughput['http_connect_mib_s']} MiB/s"
    )
    print(f"written to {path} under {KEY!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
