"""The network.hosts proxy: HTTP CONNECT, plain HTTP and SOCKS5 on one loopback port.

It runs in cvg-run's own process, outside the sandbox, as one thread with a
selector loop, and relays only the host:port pairs the policy lists. Names are
resolved here, never by the tool (which has no DNS), so what is judged is the
name the tool asked for; an IP literal is refused unless a rule lists that very
address. Landlock lets the tool connect to this port alone, so a tool that
ignores the proxy variables reaches nothing else (except other hosts on this
same port number, which is why the port is chosen per run).

Robustness: every connection has a handshake deadline and an idle deadline,
the number of connections is capped, and each direction of a relay holds at
most ``BUFFER`` bytes before the other side is no longer read. One slow client
therefore costs one slot and a few kilobytes, never the loop.

Standard library only: it is imported on cvg-run's path.
"""

from __future__ import annotations

import errno
import functools
import ipaddress
import os
import re
import selectors
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

__all__ = [
    "BUFFER",
    "MAX_LOG",
    "Allowlist",
    "Proxy",
    "hosts_file_resolver",
    "normalize_host",
    "system_resolver",
]

BUFFER = 64 * 1024  # per direction of one relay
HEADER_LIMIT = 16 * 1024  # an HTTP request head, or a SOCKS5 handshake
MAX_LOG = 10_000
HANDSHAKE_TIMEOUT = 10.0
CONNECT_TIMEOUT = 10.0
IDLE_TIMEOUT = 300.0
MAX_CONNECTIONS = 256

Resolver = Callable[[str], list[str]]
"""A name to the addresses to try, in order; raises OSError when it has none."""

_LABEL_RE = re.compile(r"[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?")
_TOKEN_RE = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


def normalize_host(host: str) -> tuple[str, str] | None:
    """(kind, canonical form) of a requested host: ``ip`` with the address in its
    standard form, or ``name`` in lower case without a trailing dot. None when it is
    neither (``127.1``, ``0x7f.1``, an empty label): such forms are refused rather
    than handed to a resolver that might read them as an address."""
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        return "ip", str(ipaddress.ip_address(host))
    except ValueError:
        pass
    if not host.isascii() or len(host) > 254:
        return None
    name = host.lower()
    if name.endswith("."):
        name = name[:-1]
    labels = name.split(".")
    if not name or not all(_LABEL_RE.fullmatch(label) for label in labels):
        return None
    if labels[-1].isdigit() or labels[-1].startswith("0x"):
        return None
    return "name", name


class Allowlist:
    """The listed host:port pairs. ``rules`` is (host pattern, ports) per rule in
    policy order; a match names the rule as ``network.hosts[i]``."""

    def __init__(self, rules: Iterable[tuple[str, Sequence[int]]]) -> None:
        self.rules: list[tuple[str, str, frozenset[int]]] = []
        for host, ports in rules:
            if host.startswith("*."):
                kind, value = "wildcard", "." + host[2:].lower()
            else:
                norm = normalize_host(host)
                if norm is None:
                    raise ValueError(f"{host!r} is not a host name, wildcard or IP address")
                kind, value = norm
            self.rules.append((kind, value, frozenset(ports)))

    def judge(self, host: str, port: int) -> tuple[str | None, str, str | None]:
        """(rule address or None, reason, canonical host or None)."""
        norm = normalize_host(host)
        if norm is None:
            return None, "not a host name or IP address", None
        kind, value = norm
        named = False
        for i, (rkind, rvalue, ports) in enumerate(self.rules):
            if kind == "ip":
                hit = rkind == "ip" and rvalue == value
            elif rkind == "name":
                hit = rvalue == value
            else:
                hit = rkind == "wildcard" and value.endswith(rvalue)
            if hit:
                named = True
                if port in ports:
                    return f"network.hosts[{i}]", f"granted by network.hosts[{i}]", value
        if named:
            return None, f"port {port} is not granted for {value}", value
        if kind == "ip":
            return None, "an IP literal is refused unless network.hosts lists it", value
        return None, "no network.hosts rule names this host", value


def system_resolver(name: str) -> list[str]:
    """The system's resolver (getaddrinfo), IPv4 and IPv6, in its order."""
    infos = socket.getaddrinfo(name, None, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def hosts_file_resolver(path: str) -> Resolver:
    """A resolver that reads only a hosts(5) file: names it does not list do not
    resolve (no DNS at all). Read once, now."""
    table: dict[str, list[str]] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            fields = line.split("#", 1)[0].split()
            if len(fields) < 2:
                continue
            try:
                address = str(ipaddress.ip_address(fields[0]))
            except ValueError:
                continue
            for name in fields[1:]:
                table.setdefault(name.lower().rstrip("."), []).append(address)

    def resolve(name: str) -> list[str]:
        found = table.get(name)
        if not found:
            raise OSError(errno.ENOENT, f"{name} is not in {path}")
        return list(found)

    return resolve


class _Conn:
    """One client and, once allowed, its upstream."""

    __slots__ = (
        "addresses",
        "client",
        "client_eof",
        "client_shut",
        "closed",
        "deadline",
        "entry",
        "events",
        "greeted",
        "host",
        "inbuf",
        "on_connect",
        "port",
        "protocol",
        "state",
        "to_client",
        "to_up",
        "up_eof",
        "up_shut",
        "upstream",
    )

    def __init__(self, client: socket.socket, now: float) -> None:
        self.client = client
        self.upstream: socket.socket | None = None
        self.inbuf = bytearray()
        self.to_up = bytearray()
        self.to_client = bytearray()
        self.client_eof = False
        self.up_eof = False
        self.up_shut = False
        self.client_shut = False
        self.state = "handshake"  # handshake, resolving, connecting, relay, closing
        self.deadline = now + HANDSHAKE_TIMEOUT
        self.protocol = "unknown"
        self.entry: dict[str, object] | None = None
        self.addresses: list[str] = []
        self.port = 0
        self.on_connect: bytes = b""
        self.events: dict[int, int] = {}
        self.closed = False
        self.host: str | None = None
        self.greeted = False


class Proxy:
    """A running proxy. ``start()`` binds and starts the loop thread; ``stop()``
    ends it and every connection; ``log`` then holds one entry per connection."""

    def __init__(
        self,
        allow: Allowlist,
        *,
        resolver: Resolver | None = None,
        bind: str = "127.0.0.1",
        handshake_timeout: float = HANDSHAKE_TIMEOUT,
        connect_timeout: float = CONNECT_TIMEOUT,
        idle_timeout: float = IDLE_TIMEOUT,
        max_connections: int = MAX_CONNECTIONS,
        max_log: int = MAX_LOG,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.allow = allow
        self.resolver = resolver or system_resolver
        self.handshake_timeout = handshake_timeout
        self.connect_timeout = connect_timeout
        self.idle_timeout = idle_timeout
        self.max_connections = max_connections
        self.max_log = max_log
        self.clock = clock
        self.log: list[dict[str, object]] = []
        self.omitted = 0
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((bind, 0))
        self.listener.listen(1024)
        self.listener.setblocking(False)
        self.port: int = self.listener.getsockname()[1]
        self._sel = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._done: deque[tuple[_Conn, list[str] | BaseException]] = deque()
        self._pool: ThreadPoolExecutor | None = None
        self._conns: set[_Conn] = set()
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name="cvg-proxy", daemon=True)

    # -- life ------------------------------------------------------------------------

    def start(self) -> Proxy:
        if self._thread.is_alive() or self._stopping:
            return self
        self._sel.register(self.listener, selectors.EVENT_READ, None)
        self._sel.register(self._wake_r, selectors.EVENT_READ, None)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping = True
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass
        self._thread.join(5)
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        for sock in (self.listener, self._wake_r, self._wake_w):
            sock.close()

    def __enter__(self) -> Proxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def connections(self) -> int:
        return len(self._conns)

    # -- the loop --------------------------------------------------------------------

    def _loop(self) -> None:
        try:
            while not self._stopping:
                timeout = self._next_deadline() - time.monotonic()
                for key, mask in self._sel.select(max(0.0, min(timeout, 1.0))):
                    if key.fileobj is self.listener:
                        self._accept()
                    elif key.fileobj is self._wake_r:
                        self._drain_wake()
                    else:
                        conn = key.data
                        if not conn.closed:
                            self._ready(conn, key.fileobj, mask)
                self._expire()
        finally:
            for conn in list(self._conns):
                self._close(conn, "the run ended")
            self._sel.close()

    def _next_deadline(self) -> float:
        if not self._conns:
            return time.monotonic() + 1.0
        return min(c.deadline for c in self._conns)

    def _expire(self) -> None:
        now = time.monotonic()
        for conn in [c for c in self._conns if c.deadline <= now]:
            if conn.state == "handshake":
                reply = b"" if conn.protocol == "socks5" else b"408 Request Timeout"
                self._refuse(conn, "no complete request within the handshake timeout", reply)
            elif conn.state in ("resolving", "connecting"):
                self._fail(conn, "timed out connecting")
            else:
                self._close(conn, "idle timeout")

    def _drain_wake(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, InterruptedError):
            pass
        while self._done:
            conn, result = self._done.popleft()
            if conn.closed:
                continue
            if isinstance(result, BaseException):
                self._fail(conn, f"cannot resolve {conn.host}: {_why(result)}")
            else:
                conn.addresses = result
                self._connect_next(conn)

    def _accept(self) -> None:
        for _ in range(64):
            try:
                client, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return  # EMFILE and the like: the backlog waits
            client.setblocking(False)
            if len(self._conns) >= self.max_connections:
                self._record(
                    {
                        "protocol": "unknown",
                        "verdict": "refused",
                        "reason": f"more than {self.max_connections} connections at once",
                    }
                )
                client.close()
                continue
            conn = _Conn(client, time.monotonic())
            conn.deadline = time.monotonic() + self.handshake_timeout
            self._conns.add(conn)
            self._watch(conn, client, selectors.EVENT_READ)

    # -- selector bookkeeping --------------------------------------------------------

    def _watch(self, conn: _Conn, sock: socket.socket, events: int) -> None:
        fd = sock.fileno()
        old = conn.events.get(fd, 0)
        if events == old:
            return
        if old and events:
            self._sel.modify(sock, events, conn)
        elif events:
            self._sel.register(sock, events, conn)
        else:
            self._sel.unregister(sock)
        conn.events[fd] = events

    def _update(self, conn: _Conn) -> None:
        if conn.closed or conn.state != "relay":
            return
        up = conn.upstream
        assert up is not None
        c_ev = 0
        if not conn.client_eof and len(conn.to_up) < BUFFER:
            c_ev |= selectors.EVENT_READ
        if conn.to_client:
            c_ev |= selectors.EVENT_WRITE
        u_ev = 0
        if not conn.up_eof and len(conn.to_client) < BUFFER:
            u_ev |= selectors.EVENT_READ
        if conn.to_up:
            u_ev |= selectors.EVENT_WRITE
        self._watch(conn, conn.client, c_ev)
        self._watch(conn, up, u_ev)
        done_up = conn.client_eof and not conn.to_up
        done_down = conn.up_eof and not conn.to_client
        if done_up and not conn.up_shut:
            conn.up_shut = True
            _shutdown(up)
        if done_down and not conn.client_shut:
            conn.client_shut = True
            _shutdown(conn.client)
        if done_up and done_down:
            self._close(conn, None)

    # -- events ----------------------------------------------------------------------

    def _ready(self, conn: _Conn, sock: object, mask: int) -> None:
        try:
            if conn.state == "handshake":
                self._handshake(conn)
            elif conn.state == "connecting" and sock is conn.upstream:
                self._connected(conn)
            elif conn.state == "relay":
                self._relay(conn, sock, mask)
            elif conn.state == "closing":
                self._flush_and_close(conn)
        except (BlockingIOError, InterruptedError):
            return  # readiness that did not hold: the next event will come
        except OSError as e:
            if conn.state == "connecting":
                self._connect_next(conn, e)
            else:
                self._close(conn, f"connection error: {_why(e)}")
        except Exception as e:  # noqa: BLE001 - reported, never silent
            # A fault here must cost this connection, never the loop every other
            # connection of the run depends on.
            self._close(conn, f"internal error: {type(e).__name__}: {e}")

    def _relay(self, conn: _Conn, sock: object, mask: int) -> None:
        up = conn.upstream
        assert up is not None
        if sock is conn.client:
            if mask & selectors.EVENT_READ:
                data = conn.client.recv(BUFFER - len(conn.to_up))
                if data:
                    conn.to_up += data
                    _add(conn.entry, "bytes_up", len(data))
                else:
                    conn.client_eof = True
            if mask & selectors.EVENT_WRITE and conn.to_client:
                del conn.to_client[: conn.client.send(conn.to_client)]
        else:
            if mask & selectors.EVENT_READ:
                data = up.recv(BUFFER - len(conn.to_client))
                if data:
                    conn.to_client += data
                    _add(conn.entry, "bytes_down", len(data))
                else:
                    conn.up_eof = True
            if mask & selectors.EVENT_WRITE and conn.to_up:
                del conn.to_up[: up.send(conn.to_up)]
        conn.deadline = time.monotonic() + self.idle_timeout
        self._update(conn)

    def _handshake(self, conn: _Conn) -> None:
        data = conn.client.recv(HEADER_LIMIT + 1 - len(conn.inbuf))
        if not data:
            self._refuse(conn, "the client closed before a complete request")
            return
        conn.inbuf += data
        if conn.inbuf[0] == 5:
            conn.protocol = "socks5"
            self._socks(conn)
        else:
            self._http(conn)

    # -- HTTP ------------------------------------------------------------------------

    def _http(self, conn: _Conn) -> None:
        end = conn.inbuf.find(b"\r\n\r\n")
        if end < 0:
            if len(conn.inbuf) > HEADER_LIMIT:
                self._refuse(conn, "request head too long", b"431 Request Header Fields Too Large")
            return
        head, rest = bytes(conn.inbuf[:end]), bytes(conn.inbuf[end + 4 :])
        lines = head.split(b"\r\n")
        parts = lines[0].split(b" ")
        if (
            len(parts) != 3
            or not _TOKEN_RE.fullmatch(parts[0])
            or not parts[2].startswith(b"HTTP/1.")
        ):
            self._refuse(conn, "malformed request line", b"400 Bad Request")
            return
        method, target = parts[0], parts[1].decode("latin-1")
        if method == b"CONNECT":
            conn.protocol = "http-connect"
            hostport = _split_hostport(target, None)
            if hostport is None:
                self._refuse(conn, "malformed CONNECT target", b"400 Bad Request")
                return
            conn.on_connect = b"HTTP/1.1 200 Connection established\r\n\r\n"
            self._judge(conn, hostport[0], hostport[1], rest)
            return
        conn.protocol = "http"
        if not target.lower().startswith("http://"):
            self._refuse(
                conn,
                "only CONNECT and absolute http:// requests are relayed",
                b"400 Bad Request",
            )
            return
        authority, _, path = target[7:].partition("/")
        hostport = _split_hostport(authority.rpartition("@")[2], 80)
        if hostport is None:
            self._refuse(conn, "malformed URL in the request", b"400 Bad Request")
            return
        # Origin form for the server; the proxy's own headers stay here.
        first = method + b" /" + path.encode("latin-1") + b" " + parts[2]
        kept = [
            line
            for line in lines[1:]
            if not line.lower().startswith((b"proxy-connection:", b"proxy-authorization:"))
        ]
        conn.on_connect = b""
        self._judge(
            conn, hostport[0], hostport[1], b"\r\n".join([first, *kept]) + b"\r\n\r\n" + rest
        )

    # -- SOCKS5 ----------------------------------------------------------------------

    def _socks(self, conn: _Conn) -> None:
        buf = conn.inbuf
        if len(buf) < 2 or len(buf) < 2 + buf[1]:
            return
        methods = buf[2 : 2 + buf[1]]
        if 0 not in methods:
            self._refuse(conn, "SOCKS5 without the no-authentication method", b"\x05\xff")
            return
        if not conn.greeted:
            # Clients wait for this before sending their request; a few bytes always
            # fit in a fresh socket's send buffer.
            conn.greeted = True
            conn.client.send(b"\x05\x00")
        req = buf[2 + buf[1] :]
        if len(req) < 5:
            return
        if req[0] != 5 or req[2] != 0:
            self._refuse(conn, "malformed SOCKS5 request", _socks_reply(1))
            return
        atyp = req[3]
        if atyp == 1:
            need, host = 10, None
        elif atyp == 4:
            need, host = 22, None
        elif atyp == 3:
            need, host = 7 + req[4], None
        else:
            self._refuse(conn, "malformed SOCKS5 address type", _socks_reply(8))
            return
        if len(req) < need:
            return
        if atyp == 1:
            host = socket.inet_ntop(socket.AF_INET, bytes(req[4:8]))
        elif atyp == 4:
            host = socket.inet_ntop(socket.AF_INET6, bytes(req[4:20]))
        else:
            host = bytes(req[5 : 5 + req[4]]).decode("latin-1")
        port = struct.unpack("!H", req[need - 2 : need])[0]
        if req[1] != 1:
            self._entry(conn, host, port)
            self._refuse(conn, "only the SOCKS5 CONNECT command is relayed", _socks_reply(7))
            return
        conn.on_connect = _socks_reply(0)
        self._judge(conn, host, port, bytes(req[need:]))

    # -- judging and connecting ------------------------------------------------------

    def _entry(self, conn: _Conn, host: str, port: int) -> dict[str, object]:
        conn.entry = {"protocol": conn.protocol, "host": host[:300], "port": port}
        return conn.entry

    def _judge(self, conn: _Conn, host: str, port: int, early: bytes) -> None:
        self._entry(conn, host, port)
        rule, reason, canonical = self.allow.judge(host, port)
        if rule is None or canonical is None:
            self._refuse(conn, reason, _refusal(conn.protocol))
            return
        assert conn.entry is not None
        conn.entry["rule"] = rule
        conn.entry["reason"] = reason
        conn.entry["bytes_up"] = len(early)
        conn.to_up += early
        conn.port = port
        conn.host = canonical
        self._watch(conn, conn.client, 0)
        conn.deadline = time.monotonic() + self.connect_timeout
        if normalize_host(canonical) == ("ip", canonical):
            conn.addresses = [canonical]
            self._connect_next(conn)
            return
        conn.state = "resolving"
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="cvg-proxy-dns")
        future = self._pool.submit(self.resolver, canonical)
        future.add_done_callback(functools.partial(self._resolved, conn))

    def _resolved(self, conn: _Conn, future: Future[list[str]]) -> None:
        # On a resolver thread: hand the answer to the loop.
        try:
            result: list[str] | BaseException = list(future.result())
        except BaseException as e:  # noqa: BLE001 - any failure is an answer
            result = e
        self._done.append((conn, result))
        try:
            self._wake_w.send(b"r")
        except OSError:
            pass

    def _connect_next(self, conn: _Conn, error: BaseException | None = None) -> None:
        if conn.upstream is not None:
            self._watch(conn, conn.upstream, 0)
            conn.upstream.close()
            conn.upstream = None
        if not conn.addresses:
            why = _why(error) if error else "no address"
            self._fail(conn, f"cannot connect to {conn.host}:{conn.port}: {why}")
            return
        address = conn.addresses.pop(0)
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        conn.state = "connecting"
        up = socket.socket(family, socket.SOCK_STREAM)
        up.setblocking(False)
        conn.upstream = up
        assert conn.entry is not None
        conn.entry["address"] = address
        err = up.connect_ex((address, conn.port))
        if err not in (0, errno.EINPROGRESS):
            self._connect_next(conn, OSError(err, os.strerror(err)))
            return
        self._watch(conn, up, selectors.EVENT_WRITE)

    def _connected(self, conn: _Conn) -> None:
        up = conn.upstream
        assert up is not None
        err = up.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if err:
            self._connect_next(conn, OSError(err, os.strerror(err)))
            return
        conn.state = "relay"
        assert conn.entry is not None
        conn.entry["verdict"] = "allowed"
        conn.entry.setdefault("bytes_up", 0)
        conn.entry.setdefault("bytes_down", 0)
        self._record(conn.entry)
        conn.to_client += conn.on_connect
        conn.deadline = time.monotonic() + self.idle_timeout
        self._update(conn)

    # -- endings ---------------------------------------------------------------------

    def _refuse(self, conn: _Conn, reason: str, reply: bytes = b"") -> None:
        entry = conn.entry or {"protocol": conn.protocol}
        entry.update(verdict="refused", reason=reason)
        self._record(entry)
        self._answer_and_close(conn, _http_error(reply, reason))

    def _fail(self, conn: _Conn, reason: str) -> None:
        entry = conn.entry or {"protocol": conn.protocol}
        entry.update(verdict="failed", reason=reason)
        self._record(entry)
        reply = _socks_reply(4) if conn.protocol == "socks5" else b"502 Bad Gateway"
        self._answer_and_close(conn, _http_error(reply, reason))

    def _answer_and_close(self, conn: _Conn, reply: bytes) -> None:
        if conn.upstream is not None:
            self._watch(conn, conn.upstream, 0)
            conn.upstream.close()
            conn.upstream = None
        if not reply:
            self._close(conn, None)
            return
        conn.state = "closing"
        conn.to_client = bytearray(reply)
        conn.deadline = time.monotonic() + 2.0
        self._flush_and_close(conn)

    def _flush_and_close(self, conn: _Conn) -> None:
        try:
            if conn.to_client:
                del conn.to_client[: conn.client.send(conn.to_client)]
        except OSError:
            conn.to_client.clear()
        if conn.to_client:
            self._watch(conn, conn.client, selectors.EVENT_WRITE)
        else:
            _shutdown(conn.client)
            # Closing with unread input sends a reset, which can destroy the reply
            # before the client reads it: take what is already there first.
            try:
                for _ in range(16):
                    if not conn.client.recv(65536):
                        break
            except OSError:
                pass
            self._close(conn, None)

    def _close(self, conn: _Conn, reason: str | None) -> None:
        if conn.closed:
            return
        conn.closed = True
        self._conns.discard(conn)
        for sock in (conn.client, conn.upstream):
            if sock is None:
                continue
            if conn.events.get(sock.fileno(), 0):
                self._sel.unregister(sock)
            sock.close()
        conn.events.clear()
        if reason and conn.entry is not None and conn.entry.get("verdict") == "allowed":
            conn.entry["reason"] = f"{conn.entry['reason']}; closed: {reason}"

    def _record(self, entry: dict[str, object]) -> None:
        if "time" in entry:
            return
        entry["time"] = round(self.clock(), 6)
        if len(self.log) < self.max_log:
            self.log.append(entry)
        else:
            self.omitted += 1


def _add(entry: dict[str, object] | None, key: str, n: int) -> None:
    if entry is not None:
        old = entry.get(key, 0)
        entry[key] = (old if isinstance(old, int) else 0) + n


def _shutdown(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def _why(e: BaseException) -> str:
    if isinstance(e, OSError) and e.strerror:
        return e.strerror
    return str(e) or type(e).__name__


def _split_hostport(text: str, default: int | None) -> tuple[str, int] | None:
    if text.startswith("["):
        host, bracket, rest = text[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            return None
        port_text = rest[1:] if rest else ""
    else:
        host, colon, port_text = text.rpartition(":")
        if not colon:
            host, port_text = text, ""
    if not port_text:
        if default is None:
            return None
        return (host, default) if host else None
    if not port_text.isdigit() or len(port_text) > 5 or not host:
        return None
    port = int(port_text)
    return (host, port) if 0 < port < 65536 else None


def _socks_reply(code: int) -> bytes:
    return bytes([5, code, 0, 1, 0, 0, 0, 0, 0, 0])


def _refusal(protocol: str) -> bytes:
    return _socks_reply(2) if protocol == "socks5" else b"403 Forbidden"


def _http_error(reply: bytes, reason: str) -> bytes:
    # A status line becomes a whole response naming the reason; SOCKS bytes stay bytes.
    if not reply or reply[:1] == b"\x05":
        return reply
    body = f"cvg-run proxy: {reason}\n".encode()
    return (
        b"HTTP/1.1 " + reply + b"\r\nContent-Type: text/plain\r\nConnection: close\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )
