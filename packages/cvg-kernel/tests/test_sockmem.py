"""sock_diag's figures for data parked in socket buffers, by inode."""

from __future__ import annotations

import encodings.idna  # noqa: F401 - getaddrinfo needs it, and the dropped child cannot load it
import os
import pwd
import socket

from cvg_kernel import sockmem
from cvg_testing import in_child


def test_parked_bytes_show_on_the_sender(identity: pwd.struct_passwd | None) -> None:
    def child() -> object:
        a, _b = socket.socketpair()  # _b holds the peer open
        tcp = socket.create_server(("127.0.0.1", 0))
        c = socket.create_connection(tcp.getsockname())
        d, _ = tcp.accept()
        before = sockmem.socket_memory().get(os.fstat(a.fileno()).st_ino, 0)
        a.setblocking(False)
        c.setblocking(False)
        sent = {"unix": 0, "tcp": 0}
        for key, sock in (("unix", a), ("tcp", c)):
            try:
                while True:
                    sent[key] += sock.send(b"x" * 65536)
            except BlockingIOError:
                pass
        unix = sockmem.socket_memory()
        inet = sockmem.socket_memory(inet=True)
        ino = {s: os.fstat(s.fileno()).st_ino for s in (a, c, d)}
        return {
            "before": before,
            "sent": sent,
            "unix": unix.get(ino[a], 0),
            "tcp": inet.get(ino[c], 0) + inet.get(ino[d], 0),
            "mine": sorted(sockmem.socket_inodes(os.getpid()) & set(ino.values()))
            == sorted(ino.values()),
        }

    got = in_child(child, user=identity)
    assert got.error is None, got.error
    v = got.value
    assert v["before"] == 0
    # Buffers are charged by truesize: at least what was written.
    assert v["unix"] >= v["sent"]["unix"] > 0
    assert v["tcp"] >= v["sent"]["tcp"] > 0
    assert v["mine"]
