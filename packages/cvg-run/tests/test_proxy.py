"""The network.hosts proxy on its own: what it relays, what it refuses, and how it
holds up against many, slow and malformed clients. Loopback only: names are mapped
to 127.0.0.x by the test's resolver, never looked up in DNS."""

from __future__ import annotations

import http.server
import shutil
import socket
import socketserver
import struct
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cvg_run.proxy import BUFFER, Allowlist, Proxy, hosts_file_resolver, normalize_host
from cvg_testing import TextServer

# --- servers the proxy relays to ---------------------------------------------------------


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(65536):
            self.request.sendall(data)


class _Threaded(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256


@pytest.fixture
def echo() -> Iterator[tuple[str, int]]:
    """An echo server on 127.0.0.2."""
    srv = _Threaded(("127.0.0.2", 0), _Echo)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield srv.server_address[0], srv.server_address[1]
    finally:
        srv.shutdown()
        srv.server_close()


def _hello(request: http.server.BaseHTTPRequestHandler) -> str:
    return f"hello {request.path} host={request.headers.get('Host')}"


@pytest.fixture
def web() -> Iterator[int]:
    """An HTTP server on 127.0.0.2; returns its port."""
    with TextServer(("127.0.0.2", 0), _hello) as srv:
        yield srv.port


HOSTS = {"allowed.test": ["127.0.0.2"], "deep.er.wild.test": ["127.0.0.2"]}


def fake_resolver(name: str) -> list[str]:
    if name == "slow.test":
        time.sleep(2.0)
        return ["127.0.0.2"]
    if name not in HOSTS:
        raise OSError(2, f"{name} is not known here")
    return HOSTS[name]


def make_proxy(port: int, **kw: object) -> Proxy:
    rules = [
        ("allowed.test", [port]),
        ("*.wild.test", [port]),
        ("127.0.0.3", [port]),
        ("slow.test", [port]),
        ("missing.test", [port]),
    ]
    return Proxy(Allowlist(rules), resolver=fake_resolver, **kw).start()  # type: ignore[arg-type]


def connect_via(
    proxy: Proxy, host: str, port: int, timeout: float = 5.0
) -> tuple[socket.socket, bytes]:
    """An HTTP CONNECT; returns the socket and the response head."""
    s = socket.create_connection(("127.0.0.1", proxy.port), timeout=timeout)
    s.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
    return s, read_head(s)


def read_head(s: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


def read_all(s: socket.socket) -> bytes:
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    return data


def socks5(
    proxy: Proxy, atyp: int, addr: bytes, port: int, cmd: int = 1
) -> tuple[socket.socket, bytes]:
    s = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
    s.sendall(b"\x05\x01\x00")
    assert s.recv(2) == b"\x05\x00"
    if atyp == 3:
        addr = bytes([len(addr)]) + addr
    s.sendall(bytes([5, cmd, 0, atyp]) + addr + struct.pack("!H", port))
    return s, s.recv(10)


def entries(proxy: Proxy, **match: object) -> list[dict[str, object]]:
    return [e for e in proxy.log if all(e.get(k) == v for k, v in match.items())]


# --- judging ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "port", "rule"),
    [
        ("allowed.test", 443, "network.hosts[0]"),
        ("ALLOWED.Test", 443, "network.hosts[0]"),
        ("allowed.test.", 443, "network.hosts[0]"),
        ("a.wild.test", 443, "network.hosts[1]"),
        ("a.b.c.wild.test", 443, "network.hosts[1]"),
        ("10.0.0.5", 443, "network.hosts[2]"),
        ("::1", 443, "network.hosts[3]"),
        ("[0:0::1]", 443, "network.hosts[3]"),
        ("wild.test", 443, None),  # the wildcard does not cover its apex
        ("xwild.test", 443, None),
        ("allowed.test", 80, None),
        ("notallowed.test", 443, None),
        ("allowed.test.evil", 443, None),
        ("127.0.0.1", 443, None),
        ("::ffff:10.0.0.5", 443, None),  # the same address, not the listed literal
        ("2130706433", 443, None),
        ("127.1", 443, None),
        ("0x7f.0.0.1", 443, None),
        ("0x7f", 443, None),
        ("a..test", 443, None),
        ("", 443, None),
        ("allowed.test\x00", 443, None),
    ],
)
def test_allowlist_judges(host: str, port: int, rule: str | None) -> None:
    allow = Allowlist(
        [("allowed.test", [443]), ("*.wild.test", [443]), ("10.0.0.5", [443]), ("::1", [443])]
    )
    got, reason, _ = allow.judge(host, port)
    assert got == rule, reason


def test_refusal_reasons() -> None:
    allow = Allowlist([("allowed.test", [443])])
    assert allow.judge("allowed.test", 80)[1] == "port 80 is not granted for allowed.test"
    assert "IP literal" in allow.judge("127.0.0.1", 443)[1]
    assert "no network.hosts rule" in allow.judge("x.test", 443)[1]
    assert "not a host name" in allow.judge("127.1", 443)[1]
    assert normalize_host("[::1]") == ("ip", "::1")
    assert normalize_host("Example.COM.") == ("name", "example.com")


def test_hosts_file_resolver(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text("# comment\n127.0.0.2 a.test A2.test # trailing\n::1 a.test\nbogus b.test\n")
    resolve = hosts_file_resolver(str(hosts))
    assert resolve("a.test") == ["127.0.0.2", "::1"]
    assert resolve("a2.test") == ["127.0.0.2"]
    with pytest.raises(OSError, match="not in"):
        resolve("b.test")
    with pytest.raises(OSError):
        resolve("localhost")  # no fallback to the system's resolver


# --- relaying -----------------------------------------------------------------------------


def test_connect_relays_to_an_allowed_host(echo: tuple[str, int]) -> None:
    _, port = echo
    with make_proxy(port) as proxy:
        s, head = connect_via(proxy, "allowed.test", port)
        assert head.startswith(b"HTTP/1.1 200"), head
        s.sendall(b"ping")
        assert s.recv(4) == b"ping"
        s.close()
        s, head = connect_via(proxy, "deep.er.wild.test", port)
        assert head.startswith(b"HTTP/1.1 200"), head
        s.close()
    allowed = entries(proxy, verdict="allowed")
    assert [e["host"] for e in allowed] == ["allowed.test", "deep.er.wild.test"]
    assert allowed[0]["rule"] == "network.hosts[0]"
    assert allowed[0]["address"] == "127.0.0.2"
    assert allowed[0]["bytes_up"] == 4 and allowed[0]["bytes_down"] == 4
    assert allowed[0]["protocol"] == "http-connect"


def test_urllib_plain_http_through_the_proxy(web: int) -> None:
    with make_proxy(web) as proxy:
        opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{proxy.port}"})
        )
        body = opener.open(f"http://allowed.test:{web}/x", timeout=5).read()
        assert body == f"hello /x host=allowed.test:{web}".encode()
        with pytest.raises(urllib.error.HTTPError) as info:
            opener.open(f"http://notallowed.test:{web}/x", timeout=5)
        assert info.value.code == 403
        assert b"no network.hosts rule names this host" in info.value.read()
    assert entries(proxy, protocol="http", verdict="allowed", host="allowed.test")
    assert entries(proxy, protocol="http", verdict="refused", host="notallowed.test")


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
@pytest.mark.parametrize("how", ["http", "connect", "socks5h"])
def test_curl_through_the_proxy(web: int, how: str) -> None:
    with make_proxy(web) as proxy:
        hp = f"127.0.0.1:{proxy.port}"
        opts = {
            "http": ["-x", f"http://{hp}"],
            "connect": ["-p", "-x", f"http://{hp}"],
            "socks5h": ["-x", f"socks5h://{hp}"],
        }[how]
        ok = subprocess.run(
            ["curl", "-fsS", "--max-time", "5", *opts, f"http://allowed.test:{web}/c"],
            capture_output=True,
            timeout=20,
            check=False,
        )
        assert ok.returncode == 0, ok.stderr
        assert ok.stdout == f"hello /c host=allowed.test:{web}".encode()
        bad = subprocess.run(
            ["curl", "-fsS", "--max-time", "5", *opts, f"http://127.0.0.2:{web}/c"],
            capture_output=True,
            timeout=20,
            check=False,
        )
        assert bad.returncode != 0
        assert b"hello" not in bad.stdout
    refused = entries(proxy, verdict="refused", host="127.0.0.2")
    assert refused and "IP literal" in str(refused[0]["reason"])


def test_socks5_names_and_literals(echo: tuple[str, int]) -> None:
    _, port = echo
    with make_proxy(port) as proxy:
        s, reply = socks5(proxy, 3, b"allowed.test", port)
        assert reply[:2] == b"\x05\x00", reply
        s.sendall(b"socks")
        assert s.recv(5) == b"socks"
        s.close()
        s, reply = socks5(proxy, 1, socket.inet_aton("127.0.0.2"), port)
        assert reply[:2] == b"\x05\x02"  # not allowed by the ruleset
        s.close()
        s, reply = socks5(proxy, 4, socket.inet_pton(socket.AF_INET6, "::1"), port)
        assert reply[:2] == b"\x05\x02"
        s.close()
        s, reply = socks5(proxy, 3, b"allowed.test", port, cmd=2)  # BIND
        assert reply[:2] == b"\x05\x07"
        s.close()
        s = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
        s.sendall(b"\x05\x01\x02")  # username/password only
        assert s.recv(2) == b"\x05\xff"
        s.close()
    assert entries(proxy, protocol="socks5", verdict="allowed", host="allowed.test")
    assert entries(proxy, protocol="socks5", verdict="refused", host="127.0.0.2")
    assert entries(proxy, protocol="socks5", verdict="refused", host="::1")


def test_an_ip_literal_is_refused_unless_listed(echo: tuple[str, int]) -> None:
    _, port = echo
    # 127.0.0.3 is listed: an echo there answers through the proxy.
    srv = _Threaded(("127.0.0.3", port), _Echo)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        with make_proxy(port) as proxy:
            s, head = connect_via(proxy, "127.0.0.2", port)
            assert head.startswith(b"HTTP/1.1 403"), head
            assert b"IP literal" in read_all(s) + head
            s.close()
            s, head = connect_via(proxy, "127.0.0.3", port)
            assert head.startswith(b"HTTP/1.1 200"), head
            s.sendall(b"lit")
            assert s.recv(3) == b"lit"
            s.close()
    finally:
        srv.shutdown()
        srv.server_close()
    assert entries(proxy, host="127.0.0.2", verdict="refused")
    assert entries(proxy, host="127.0.0.3", verdict="allowed", rule="network.hosts[2]")


def test_refused_host_and_port(echo: tuple[str, int]) -> None:
    _, port = echo
    with make_proxy(port) as proxy:
        for host, p in (("notallowed.test", port), ("allowed.test", port + 1)):
            s, head = connect_via(proxy, host, p)
            assert head.startswith(b"HTTP/1.1 403"), head
            s.close()
    assert [e["reason"] for e in entries(proxy, verdict="refused")] == [
        "no network.hosts rule names this host",
        f"port {port + 1} is not granted for allowed.test",
    ]


def test_unresolvable_and_unreachable_are_failures(echo: tuple[str, int]) -> None:
    _, port = echo
    closed = socket.socket()
    closed.bind(("127.0.0.2", 0))
    dead_port = closed.getsockname()[1]
    closed.close()
    with Proxy(
        Allowlist([("missing.test", [port]), ("allowed.test", [dead_port])]),
        resolver=fake_resolver,
    ) as proxy:
        s, head = connect_via(proxy, "missing.test", port)
        assert head.startswith(b"HTTP/1.1 502"), head
        s.close()
        s, head = connect_via(proxy, "allowed.test", dead_port)
        assert head.startswith(b"HTTP/1.1 502"), head
        s.close()
    failed = entries(proxy, verdict="failed")
    assert [e["host"] for e in failed] == ["missing.test", "allowed.test"]
    assert "cannot resolve" in str(failed[0]["reason"])
    assert "Connection refused" in str(failed[1]["reason"])


# --- robustness ---------------------------------------------------------------------------


def test_malformed_requests_get_an_error_and_the_proxy_keeps_serving(
    echo: tuple[str, int],
) -> None:
    _, port = echo
    bad = [
        (b"CONNECT\r\n\r\n", b"400"),
        (b"CONNECT allowed.test HTTP/1.1\r\n\r\n", b"400"),
        (b"CONNECT allowed.test:99999 HTTP/1.1\r\n\r\n", b"400"),
        (b"CONNECT allowed.test:http HTTP/1.1\r\n\r\n", b"400"),
        (b"CONNECT [::1 HTTP/1.1\r\n\r\n", b"400"),
        (b"GET /relative HTTP/1.1\r\nHost: allowed.test\r\n\r\n", b"400"),
        (b"GET https://allowed.test/ HTTP/1.1\r\n\r\n", b"400"),
        (b"\x00\x01\x02garbage\r\n\r\n", b"400"),
        (b"CONNECT allowed.test:1 SPDY/3\r\n\r\n", b"400"),
        (b"X" * 20000, b"431"),
    ]
    with make_proxy(port) as proxy:
        for request, status in bad:
            s = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
            try:
                s.sendall(request)
            except OSError:
                pass  # the proxy may close before taking it all
            head = read_head(s)
            assert head.startswith(b"HTTP/1.1 " + status), (request[:40], head)
            s.close()
            ok, head = connect_via(proxy, "allowed.test", port)
            assert head.startswith(b"HTTP/1.1 200"), head
            ok.sendall(b"still")
            assert ok.recv(5) == b"still"
            ok.close()
    refused = entries(proxy, verdict="refused")
    assert len(refused) == len(bad)
    assert all(e["reason"] for e in refused)


def test_100_concurrent_connections(echo: tuple[str, int]) -> None:
    _, port = echo
    with make_proxy(port) as proxy:
        socks = []
        for _ in range(100):
            s, head = connect_via(proxy, "allowed.test", port, timeout=10)
            assert head.startswith(b"HTTP/1.1 200"), head
            socks.append(s)
        # All 100 are open through the proxy at once; each gets its own bytes back.
        assert proxy.connections == 100
        for i, s in enumerate(socks):
            s.sendall(f"conn-{i:03d}".encode())
        for i, s in enumerate(socks):
            assert s.recv(8) == f"conn-{i:03d}".encode()
            s.close()
    assert len(entries(proxy, verdict="allowed")) == 100


def test_100_parallel_clients(echo: tuple[str, int]) -> None:
    _, port = echo
    payload = bytes(range(256)) * 256  # 64 KiB each way, more than one buffer's worth

    def one(i: int) -> bool:
        s, head = connect_via(proxy, "allowed.test", port, timeout=20)
        assert head.startswith(b"HTTP/1.1 200"), head
        s.sendall(payload)
        s.shutdown(socket.SHUT_WR)
        got = read_all(s)
        s.close()
        return got == payload

    with make_proxy(port) as proxy, ThreadPoolExecutor(100) as pool:
        assert all(pool.map(one, range(100)))
    assert all(e["bytes_up"] == len(payload) for e in entries(proxy, verdict="allowed"))


def test_connection_cap_refuses_the_excess(echo: tuple[str, int]) -> None:
    _, port = echo
    with make_proxy(port, max_connections=5) as proxy:
        held = [connect_via(proxy, "allowed.test", port)[0] for _ in range(5)]
        extra = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
        extra.sendall(b"CONNECT allowed.test:1 HTTP/1.1\r\n\r\n")
        try:
            assert extra.recv(100) == b""
        except ConnectionResetError:
            pass
        extra.close()
        for s in held:
            s.close()
        # Slots free up again.
        deadline = time.monotonic() + 5
        while proxy.connections and time.monotonic() < deadline:
            time.sleep(0.01)
        s, head = connect_via(proxy, "allowed.test", port)
        assert head.startswith(b"HTTP/1.1 200")
        s.close()
    assert entries(proxy, reason="more than 5 connections at once")


def test_slowloris_does_not_stall_others_and_is_cut_off(echo: tuple[str, int]) -> None:
    _, port = echo
    with make_proxy(port, handshake_timeout=1.5) as proxy:
        slow = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
        stop = threading.Event()
        cut = threading.Event()

        def drip() -> None:
            for byte in b"CONNECT allowed.test:%d HTTP/1.1\r\nX: " % port + b"a" * 1000:
                if stop.is_set():
                    return
                try:
                    slow.send(bytes([byte]))
                except OSError:
                    cut.set()
                    return
                time.sleep(0.05)

        t = threading.Thread(target=drip, daemon=True)
        t.start()
        # Meanwhile other clients are served at once.
        worst = 0.0
        for _ in range(10):
            t0 = time.monotonic()
            s, head = connect_via(proxy, "allowed.test", port)
            s.sendall(b"x")
            assert s.recv(1) == b"x"
            s.close()
            assert head.startswith(b"HTTP/1.1 200")
            worst = max(worst, time.monotonic() - t0)
        assert worst < 0.5, worst
        # And the slow client is answered and closed after the handshake timeout.
        head = read_head(slow)
        assert head.startswith(b"HTTP/1.1 408") or head == b"", head
        stop.set()
        t.join(5)
        slow.close()
    refused = entries(proxy, verdict="refused")
    assert [e["reason"] for e in refused] == ["no complete request within the handshake timeout"]


def test_slow_resolution_does_not_stall_others(echo: tuple[str, int]) -> None:
    _, port = echo
    with make_proxy(port) as proxy:
        slow = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
        slow.sendall(f"CONNECT slow.test:{port} HTTP/1.1\r\n\r\n".encode())
        time.sleep(0.1)
        t0 = time.monotonic()
        s, head = connect_via(proxy, "allowed.test", port)
        assert head.startswith(b"HTTP/1.1 200")
        assert time.monotonic() - t0 < 0.5
        s.close()
        assert read_head(slow).startswith(b"HTTP/1.1 200")
        slow.close()


def test_idle_relays_are_closed(echo: tuple[str, int]) -> None:
    _, port = echo
    with make_proxy(port, idle_timeout=0.5) as proxy:
        s, head = connect_via(proxy, "allowed.test", port)
        assert head.startswith(b"HTTP/1.1 200")
        t0 = time.monotonic()
        assert s.recv(10) == b""  # closed by the proxy, not by us
        assert 0.4 < time.monotonic() - t0 < 3.0
        s.close()
    assert "idle timeout" in str(entries(proxy, verdict="allowed")[0]["reason"])


def test_buffers_stay_bounded_when_the_far_side_does_not_read() -> None:
    sink = socket.socket()
    sink.bind(("127.0.0.2", 0))
    sink.listen(1)
    port = sink.getsockname()[1]
    with Proxy(Allowlist([("allowed.test", [port])]), resolver=fake_resolver) as proxy:
        s, head = connect_via(proxy, "allowed.test", port)
        assert head.startswith(b"HTTP/1.1 200")
        peer, _ = sink.accept()  # accepted, never read
        s.setblocking(False)
        sent = 0
        chunk = b"z" * 65536
        deadline = time.monotonic() + 10
        stalled_since = None
        while time.monotonic() < deadline:
            try:
                sent += s.send(chunk)
                stalled_since = None
            except BlockingIOError:
                stalled_since = stalled_since or time.monotonic()
                if time.monotonic() - stalled_since > 0.5:
                    break
                time.sleep(0.01)
        assert stalled_since is not None, "the client was never pushed back"
        # What the proxy holds for this connection is at most one buffer.
        held = [len(c.to_up) for c in list(proxy._conns)]
        assert held and max(held) <= BUFFER, held
        # ... and it still serves others.
        other, head = connect_via(proxy, "allowed.test", port)
        assert head.startswith(b"HTTP/1.1 200")
        other.close()
        s.close()
        peer.close()
    sink.close()
    assert sent > BUFFER  # the kernel's buffers took some: the push-back is the proxy's


def test_stop_closes_the_port_and_every_connection(echo: tuple[str, int]) -> None:
    _, port = echo
    proxy = make_proxy(port)
    s, head = connect_via(proxy, "allowed.test", port)
    assert head.startswith(b"HTTP/1.1 200")
    proxy.stop()
    assert s.recv(10) == b""
    s.close()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", proxy.port), timeout=2)
    assert not any(t.name == "cvg-proxy" and t.is_alive() for t in threading.enumerate())


def test_the_log_is_bounded(echo: tuple[str, int]) -> None:
    _, port = echo
    with make_proxy(port, max_log=3) as proxy:
        for _ in range(5):
            s, _head = connect_via(proxy, "nope.test", port)
            s.close()
    assert len(proxy.log) == 3
    assert proxy.omitted == 2


def test_a_fault_in_one_connection_does_not_stop_the_loop(
    echo: tuple[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, port = echo
    real = Allowlist.judge

    def judge(self: Allowlist, host: str, p: int) -> tuple[str | None, str, str | None]:
        if host == "boom.test":
            raise RuntimeError("injected")
        return real(self, host, p)

    monkeypatch.setattr(Allowlist, "judge", judge)
    with make_proxy(port) as proxy:
        s, head = connect_via(proxy, "boom.test", port)
        assert head == b""  # closed without an answer
        s.close()
        s, head = connect_via(proxy, "allowed.test", port)
        assert head.startswith(b"HTTP/1.1 200"), head
        s.close()
