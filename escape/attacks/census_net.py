"""TCP fast open through sendmsg and sendmmsg: like sendto(MSG_FASTOPEN), the send
connects implicitly, with no connect() call for a port rule to see."""

import ctypes
import os
import socket
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _lib import attack, main, sys_call

MSG_FASTOPEN = 0x20000000
NR_SENDMMSG = 307


def _addr(a):
    return tuple(a["sink"][:2])


@attack("net-tcp", "tcp")
def tcp_fastopen_sendmsg_ungranted_port(a):
    """sendmsg(MSG_FASTOPEN) to a loopback listener on an ungranted port: connects
    inside the send. Should be stopped by seccomp (MSG_FASTOPEN refused) and Landlock
    connect_tcp."""
    s = socket.socket()
    s.sendmsg([b"exfil"], [], MSG_FASTOPEN, _addr(a))
    s.sendall(b"more")


class IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


class MsgHdr(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_void_p),
        ("namelen", ctypes.c_uint32),
        ("iov", ctypes.c_void_p),
        ("iovlen", ctypes.c_size_t),
        ("control", ctypes.c_void_p),
        ("controllen", ctypes.c_size_t),
        ("flags", ctypes.c_int),
    ]


class MMsgHdr(ctypes.Structure):
    _fields_ = [("hdr", MsgHdr), ("len", ctypes.c_uint)]


@attack("net-tcp", "tcp")
def tcp_fastopen_sendmmsg_ungranted_port(a):
    """sendmmsg(MSG_FASTOPEN) of one message to a loopback listener on an ungranted
    port: connects inside the send. Should be stopped by seccomp (MSG_FASTOPEN refused)
    and Landlock connect_tcp."""
    host, port = _addr(a)
    sa = ctypes.create_string_buffer(
        struct.pack("=H", socket.AF_INET) + struct.pack("!H", port) + socket.inet_aton(host),
        16,
    )
    data = ctypes.create_string_buffer(b"exfil")
    iov = IoVec(ctypes.addressof(data), 5)
    msg = MMsgHdr(MsgHdr(ctypes.addressof(sa), 16, ctypes.addressof(iov), 1, None, 0, 0), 0)
    s = socket.socket()
    sys_call(NR_SENDMMSG, s.fileno(), ctypes.addressof(msg), 1, MSG_FASTOPEN)
    s.sendall(b"more")


if __name__ == "__main__":
    main(globals())
