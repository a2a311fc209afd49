"""Network: TCP connect and bind on ungranted ports, IPv6, TCP fast open, MPTCP, UDP,
raw and packet sockets, netlink. Sinks are loopback listeners the runner owns: the
oracle is whether any byte arrived."""

import os
import socket
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _lib import attack, main, out


def _addr(a):
    return tuple(a["sink"][:2])


@attack("net-tcp", "tcp")
def tcp_connect_ungranted_port(a):
    """connect() to a loopback listener on a port the policy does not grant, and send.
    Stopped by Landlock connect_tcp (ABI 4)."""
    s = socket.create_connection(_addr(a), timeout=2)
    s.sendall(b"exfil")


@attack("net-tcp", "tcp", policy="default")
def tcp_connect_default_policy(a):
    """Connect to a loopback listener under the default policy (no network).
    Stopped by seccomp: AF_INET is not allowed at all."""
    s = socket.create_connection(_addr(a), timeout=2)
    s.sendall(b"exfil")


@attack("net-tcp", "tcp6")
def tcp6_connect_ungranted_port(a):
    """connect() over IPv6 (::1) to an ungranted port. Stopped by Landlock connect_tcp."""
    s = socket.socket(socket.AF_INET6)
    s.settimeout(2)
    s.connect(_addr(a))
    s.sendall(b"exfil")


@attack("net-tcp", "tcp")
def tcp6_v4mapped_connect_ungranted_port(a):
    """An AF_INET6 socket connecting to ::ffff:127.0.0.1 on an ungranted port.
    Stopped by Landlock connect_tcp (it sees the port whatever the family)."""
    s = socket.socket(socket.AF_INET6)
    s.settimeout(2)
    s.connect(("::ffff:127.0.0.1", a["sink"][1]))
    s.sendall(b"exfil")


@attack("net-tcp", "tcp")
def tcp_fastopen_sendto_ungranted_port(a):
    """TCP fast open: sendto(MSG_FASTOPEN) connects implicitly without connect().
    Stopped if Landlock's connect hook covers the fast-open path."""
    s = socket.socket()
    s.sendto(b"exfil", 0x20000000, _addr(a))
    s.sendall(b"more")


def _stream_exfil(a, protocol):
    """A SOCK_STREAM socket of ``protocol`` connected to the sink's port, sending."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, protocol)
    s.settimeout(2)
    s.connect(_addr(a))
    s.sendall(b"exfil")


@attack("net-tcp", "tcp")
def mptcp_connect_ungranted_port(a):
    """An MPTCP stream socket (IPPROTO_MPTCP 262), which Landlock's TCP rules do not
    see. Stopped by seccomp: only protocol 0/6 stream sockets are allowed."""
    _stream_exfil(a, 262)


@attack("net-tcp", "tcp")
def sctp_connect_ungranted_port(a):
    """An SCTP one-to-one socket (SOCK_STREAM, IPPROTO_SCTP 132) to the sink's port.
    Stopped by seccomp's protocol check (and the sink speaks TCP, so unproven)."""
    _stream_exfil(a, 132)


@attack("net-tcp", "bind")
def tcp_bind_listen_ungranted_port(a):
    """bind()+listen() on an ungranted port and wait for a connection from outside.
    Stopped by Landlock bind_tcp (ABI 4)."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", a["ports"]["UNGRANTED_PORT"]))
    s.listen(4)
    import time

    time.sleep(1.5)


@attack("net-tcp", "hosts", limit="hosts")
def tcp_connect_granted_port_other_host(a):
    """Connect to the granted port on another address (127.0.0.2): Landlock filters
    ports, not hosts (documented limit)."""
    s = socket.create_connection(_addr(a), timeout=2)
    s.sendall(b"exfil")


@attack("net-udp", "udp")
def udp_sendto_sink(a):
    """sendto() a UDP datagram to a loopback sink (Landlock has no UDP control before
    ABI 10). Stopped by seccomp: SOCK_DGRAM inet is not granted."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(b"exfil", _addr(a))


@attack("net-udp", "udp", policy="default")
def udp_sendto_default_policy(a):
    """UDP to a loopback sink under the default policy. Stopped by seccomp."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(b"exfil", _addr(a))


@attack("net-udp", "udp")
def icmp_dgram_socket_then_udp_connect(a):
    """A datagram socket with protocol 0 through socket(AF_INET, SOCK_DGRAM|SOCK_CLOEXEC)
    (flags in the type argument). Stopped by seccomp masking the type with 0xf."""
    s = socket.socket(
        socket.AF_INET, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC | socket.SOCK_NONBLOCK
    )
    s.sendto(b"exfil", _addr(a))


def _udp_packet(dst_port, payload):
    udp = struct.pack("!HHHH", 40000, dst_port, 8 + len(payload), 0) + payload
    return udp


@attack("net-raw", "udp")
def raw_socket_forged_udp(a):
    """A raw IPPROTO_UDP socket forging a datagram to the sink. Needs CAP_NET_RAW;
    stopped by seccomp (SOCK_RAW) and the dropped capabilities."""
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP)
    s.sendto(_udp_packet(a["sink"][1], b"exfil"), ("127.0.0.1", 0))


def _ip_checksum(h):
    s = sum(struct.unpack("!10H", h))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return (~s) & 0xFFFF


@attack("net-raw", "udp")
def packet_socket_forged_frame_on_lo(a):
    """An AF_PACKET socket sending a whole Ethernet frame with IP/UDP to the sink on lo.
    Needs CAP_NET_RAW; stopped by seccomp (AF_PACKET) and the dropped capabilities."""
    udp = _udp_packet(a["sink"][1], b"exfil")
    ip = struct.pack(
        "!BBHHHBBH4s4s",
        0x45,
        0,
        20 + len(udp),
        1,
        0,
        64,
        17,
        0,
        socket.inet_aton("127.0.0.1"),
        socket.inet_aton("127.0.0.1"),
    )
    ip = ip[:10] + struct.pack("!H", _ip_checksum(ip)) + ip[12:]
    frame = b"\0" * 12 + b"\x08\x00" + ip + udp
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind(("lo", 0))
    s.send(frame)


@attack("net-netlink", "secret-port")
def netlink_sock_diag_finds_hidden_listener(a):
    """Dump every TCP socket on the host through NETLINK_SOCK_DIAG and print the
    listening ports (a hidden listener's port is the secret). Stopped by seccomp
    (AF_NETLINK)."""
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 4)  # NETLINK_SOCK_DIAG
    req = struct.pack("=BBBBIHHII", 2, 6, 0, 0, 1 << 10, 0, 0, 0, 0) + b"\0" * 32 + b"\0" * 8
    # inet_diag_req_v2: family, protocol, ext, pad, states, id(48 bytes)
    req = struct.pack("=BBBBI", 2, 6, 0, 0, 1 << 10) + b"\0" * 48
    hdr = struct.pack("=IHHII", 16 + len(req), 20, 0x301, 1, 0)  # SOCK_DIAG_BY_FAMILY, DUMP
    s.send(hdr + req)
    ports = set()
    done = False
    while not done:
        data = s.recv(65536)
        off = 0
        while off < len(data):
            ln, typ = struct.unpack_from("=IH", data, off)
            if typ == 3 or ln == 0:
                done = True
                break
            sport = struct.unpack_from("!H", data, off + 16 + 4)[0]
            ports.add(sport)
            off += (ln + 3) & ~3
    out(" ".join(f"port={p}" for p in sorted(ports)))


if __name__ == "__main__":
    main(globals())
