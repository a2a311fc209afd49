"""Memory the kernel holds in socket buffers, per socket inode, from sock_diag.

Data written to a socket nobody reads sits in kernel buffers charged to no
mapping: a process under RLIMIT_DATA can park hundreds of MiB in AF_UNIX
socketpairs. Without a memory cgroup, the supervisor sums these buffers over
the sockets the tool's processes hold. One NETLINK_SOCK_DIAG dump per family
lists every socket in the network namespace with its SK_MEMINFO: for AF_UNIX
the bytes queued at the peer are charged to the sender's ``wmem_alloc``; for
TCP and UDP, ``rmem_alloc`` and ``wmem_queued`` hold what waits to be read or
sent.
"""

from __future__ import annotations

# The C module the socket module wraps: its enums bring in enum, functools and
# collections, milliseconds of every cold start.
import _socket as socket
import os
import struct

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST = 0x1
NLM_F_DUMP = 0x300
NLMSG_ERROR = 2
NLMSG_DONE = 3
UDIAG_SHOW_MEMINFO = 0x20
UNIX_DIAG_MEMINFO = 5
INET_DIAG_SKMEMINFO = 7
_ALL_STATES = 0xFFFFFFFF

_NLMSG = struct.Struct("=IHHII")
_RTA = struct.Struct("=HH")
_UNIX_REQ = struct.Struct("=BBHIIIII")
_UNIX_MSG = struct.Struct("=BBBBIII")
_INET_REQ = struct.Struct("=BBBxI48x")
_INET_MSG_LEN = 72
_INET_INODE = struct.Struct("=I")
# SK_MEMINFO_RMEM_ALLOC, _RCVBUF, _WMEM_ALLOC, _SNDBUF, _FWD_ALLOC, _WMEM_QUEUED, ...
_RMEM_ALLOC, _WMEM_ALLOC, _WMEM_QUEUED = 0, 2, 5


def _held(meminfo: bytes) -> int:
    values: tuple[int, ...] = struct.unpack_from(f"={len(meminfo) // 4}I", meminfo)
    if len(values) <= _WMEM_QUEUED:
        return 0
    return values[_RMEM_ALLOC] + values[_WMEM_ALLOC] + values[_WMEM_QUEUED]


def _attributes(data: bytes, start: int, end: int) -> dict[int, bytes]:
    out: dict[int, bytes] = {}
    while start + _RTA.size <= end:
        length, kind = _RTA.unpack_from(data, start)
        if length < _RTA.size:
            break
        out[kind & 0x3FFF] = data[start + _RTA.size : start + length]
        start += (length + 3) & ~3
    return out


def _dump(sock: socket.socket, request: bytes, parse: object) -> None:
    header = _NLMSG.pack(_NLMSG.size + len(request), SOCK_DIAG_BY_FAMILY,
                         NLM_F_REQUEST | NLM_F_DUMP, 1, 0)  # fmt: skip
    sock.send(header + request)
    while True:
        data = sock.recv(65536)
        offset = 0
        while offset + _NLMSG.size <= len(data):
            length, kind, _, _, _ = _NLMSG.unpack_from(data, offset)
            if length < _NLMSG.size:
                return
            if kind == NLMSG_DONE:
                return
            if kind == NLMSG_ERROR:
                (code,) = struct.unpack_from("=i", data, offset + _NLMSG.size)
                if code:
                    raise OSError(-code, f"sock_diag: {os.strerror(-code)}")
                return
            parse(data, offset + _NLMSG.size, offset + length)  # type: ignore[operator]
            offset += (length + 3) & ~3


def socket_memory(inet: bool = False) -> dict[int, int]:
    """Bytes held in buffers by every AF_UNIX socket of this network namespace
    (with ``inet``, every TCP and UDP one instead), by inode; sockets holding
    nothing are left out. Raises OSError when sock_diag cannot be asked.

    The AF_UNIX dump costs a fraction of a millisecond; a TCP dump walks the
    kernel's whole connection hash table, milliseconds on a large machine
    however few sockets there are, hence ``inet``."""
    held: dict[int, int] = {}

    def add(inode: int, meminfo: bytes | None) -> None:
        size = _held(meminfo) if meminfo else 0
        if size:
            held[inode] = held.get(inode, 0) + size

    def on_unix(data: bytes, start: int, end: int) -> None:
        inode = _UNIX_MSG.unpack_from(data, start)[4]
        add(inode, _attributes(data, start + _UNIX_MSG.size, end).get(UNIX_DIAG_MEMINFO))

    def on_inet(data: bytes, start: int, end: int) -> None:
        (inode,) = _INET_INODE.unpack_from(data, start + _INET_MSG_LEN - 4)
        add(inode, _attributes(data, start + _INET_MSG_LEN, end).get(INET_DIAG_SKMEMINFO))

    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC,
                         NETLINK_SOCK_DIAG)  # fmt: skip
    try:
        if not inet:
            request = _UNIX_REQ.pack(socket.AF_UNIX, 0, 0, _ALL_STATES, 0, UDIAG_SHOW_MEMINFO, 0, 0)
            _dump(sock, request, on_unix)
        ext = 1 << (INET_DIAG_SKMEMINFO - 1)
        for family in (socket.AF_INET, socket.AF_INET6) if inet else ():
            for protocol in (socket.IPPROTO_TCP, socket.IPPROTO_UDP):
                _dump(sock, _INET_REQ.pack(family, protocol, ext, _ALL_STATES), on_inet)
    finally:
        sock.close()
    return held


def socket_inodes(pid: int) -> set[int]:
    """Inodes of the sockets ``pid`` holds open. Raises OSError as os.listdir
    does (ENOENT when the process is gone)."""
    out: set[int] = set()
    base = f"/proc/{pid}/fd"
    for name in os.listdir(base):
        try:
            target = os.readlink(f"{base}/{name}")
        except OSError:
            continue
        if target.startswith("socket:["):
            out.add(int(target[8:-1]))
    return out
