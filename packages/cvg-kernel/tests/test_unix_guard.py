"""Pathname UNIX sockets by path (cvg_kernel.unix_guard), on the real kernel.

Sentinel servers in this process stand in for docker.sock or the D-Bus bus: a stream
socket whose accept queue and a datagram socket whose receive queue are the outside
oracle. Each case first runs bare (the tool reaches the sentinel), then under a plan
that supervises ``unix`` with the guards made from its ``unix`` section, in forked
children, as root and as the unprivileged user. That the supervised runs start at all
shows the listener's handover needs no supervised call.
"""

from __future__ import annotations

import ctypes
import errno
import os
import pwd
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from test_guard_answers import serve_with
from test_notify import BASE_PLAN, run_tool, sc

from cvg_kernel.unix_guard import make_guards
from cvg_testing import shared_dir


@dataclass
class Sockets:
    root: Path
    allowed: Path  # a tree the plan names
    sentinel: socket.socket  # stream, outside the tree
    sentinel_path: str
    named: socket.socket  # stream, inside the tree
    named_path: str
    dgram_out: socket.socket
    dgram_out_path: str
    dgram_in: socket.socket
    dgram_in_path: str


def _server(path: Path, kind: int) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, kind)
    s.bind(str(path))
    path.chmod(0o777)  # the unprivileged tool may connect: only the plan decides
    if kind == socket.SOCK_STREAM:
        s.listen(512)
    s.setblocking(False)
    return s


@pytest.fixture
def socks() -> Iterator[Sockets]:
    with shared_dir("cvg-unix-", 0o777) as d:
        allowed = d / "allowed"
        allowed.mkdir()
        allowed.chmod(0o777)
        made = Sockets(
            d, allowed,
            _server(d / "sentinel.sock", socket.SOCK_STREAM), str(d / "sentinel.sock"),
            _server(allowed / "named.sock", socket.SOCK_STREAM), str(allowed / "named.sock"),
            _server(d / "log.sock", socket.SOCK_DGRAM), str(d / "log.sock"),
            _server(allowed / "dgram.sock", socket.SOCK_DGRAM), str(allowed / "dgram.sock"),
        )  # fmt: skip
        try:
            yield made
        finally:
            for s in (made.sentinel, made.named, made.dgram_out, made.dgram_in):
                s.close()


def accepted(server: socket.socket) -> int:
    """How many connections wait in ``server``'s queue (taken off it)."""
    count = 0
    while True:
        try:
            conn, _ = server.accept()
        except BlockingIOError:
            return count
        conn.close()
        count += 1


def received(server: socket.socket) -> list[bytes]:
    out = []
    while True:
        try:
            out.append(server.recv(4096))
        except BlockingIOError:
            return out


def unix_plan(reach: list[dict[str, Any]]) -> dict[str, Any]:
    return {**BASE_PLAN, "seccomp": {"supervise": ["unix"]}, "unix": {"reach": reach}}


def supervised(identity: pwd.struct_passwd | None, tool: Callable[[], Any],
               reach: list[dict[str, Any]]) -> Any:  # fmt: skip
    plan = unix_plan(reach)
    guards = make_guards(plan["unix"], {})
    run = run_tool(tool, identity, "notify", plan=plan,
                   supervisor=serve_with(plan, "unix", guards, []))  # fmt: skip
    return run.value


def connector(path: str, payload: bytes = b"") -> Callable[[], list[Any]]:
    def tool() -> list[Any]:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
            if payload:
                s.send(payload)  # sendto without an address: the tool's own call
            peer = s.getpeername()  # bytes for an abstract name
            return ["connected", peer if isinstance(peer, str) else repr(peer)]
        except OSError as e:
            return ["refused", e.errno]
        finally:
            s.close()

    return tool


def test_a_socket_outside_the_plan_is_refused(identity: pwd.struct_passwd | None,
                                              socks: Sockets) -> None:  # fmt: skip
    bare = run_tool(connector(socks.sentinel_path), identity, "bare")
    assert bare.value[0] == "connected" and accepted(socks.sentinel) == 1
    value = supervised(identity, connector(socks.sentinel_path),
                       [{"path": str(socks.allowed), "beneath": True}])  # fmt: skip
    assert value == ["refused", errno.EACCES]
    assert accepted(socks.sentinel) == 0
    # A relative address resolves from the tool's cwd; a symlink is followed and the
    # socket it leads to is what is checked.
    link = socks.allowed / "to-sentinel"
    link.symlink_to(socks.sentinel_path)
    value = supervised(identity, connector(str(link)),
                       [{"path": str(socks.allowed), "beneath": True}])  # fmt: skip
    assert value == ["refused", errno.EACCES]
    assert accepted(socks.sentinel) == 0


def test_a_named_stream_socket_works(identity: pwd.struct_passwd | None,
                                     socks: Sockets) -> None:  # fmt: skip
    value = supervised(identity, connector(socks.named_path, b"hello"),
                       [{"path": socks.named_path, "beneath": False}])  # fmt: skip
    assert value == ["connected", socks.named_path]
    conn, _ = socks.named.accept()
    conn.settimeout(5)
    assert conn.recv(100) == b"hello"
    conn.close()


def sender(path: str, how: str) -> Callable[[], list[Any]]:
    def tool() -> list[Any]:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            if how == "sendto":
                return ["sent", s.sendto(b"datagram", path)]
            return ["sent", s.sendmsg([b"data", b"gram"], [], 0, path)]
        except OSError as e:
            return ["refused", e.errno]
        finally:
            s.close()

    return tool


@pytest.mark.parametrize("how", ["sendto", "sendmsg"])
def test_datagrams_by_path(identity: pwd.struct_passwd | None, socks: Sockets,
                           how: str) -> None:  # fmt: skip
    bare = run_tool(sender(socks.dgram_out_path, how), identity, "bare")
    assert bare.value == ["sent", 8] and received(socks.dgram_out) == [b"datagram"]
    reach = [{"path": str(socks.allowed), "beneath": True}]
    assert supervised(identity, sender(socks.dgram_out_path, how), reach) == [
        "refused", errno.EACCES]  # fmt: skip
    assert received(socks.dgram_out) == []
    assert supervised(identity, sender(socks.dgram_in_path, how), reach) == ["sent", 8]
    assert received(socks.dgram_in) == [b"datagram"]


def test_abstract_addresses_are_refused(identity: pwd.struct_passwd | None) -> None:
    name = f"\0cvg-test-{os.getpid()}"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(name)
    server.listen(8)
    server.setblocking(False)
    try:
        assert run_tool(connector(name), identity, "bare").value[0] == "connected"
        assert accepted(server) == 1
        assert supervised(identity, connector(name), []) == ["refused", errno.EPERM]
        assert accepted(server) == 0
    finally:
        server.close()


SWAPPER = """
import os, sys
swap, good, bad = sys.argv[1:]
while True:
    for target in (good, bad):
        try:
            os.symlink(target, swap + ".new")
            os.rename(swap + ".new", swap)
        except OSError:
            pass
"""


def test_a_symlink_swapped_under_the_check_never_reaches_the_sentinel(
    identity: pwd.struct_passwd | None, socks: Sockets
) -> None:
    """The address names ``allowed/s``, which another process keeps swapping between a
    link to the named socket and a link to the sentinel (as a second process of the
    tool could). Bare, both are reached; supervised, the socket connected is the one
    checked."""
    swap = str(socks.allowed / "s")
    # A process of its own (exec'd, not forked from this threaded one), as a second
    # process of the tool could be.
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, swap, socks.named_path,
                                socks.sentinel_path])  # fmt: skip
    for _ in range(500):
        if os.path.lexists(swap):
            break
        time.sleep(0.01)

    def tool() -> dict[str, int]:
        # Until both were reached or two seconds pass (the swapper needs the CPU too),
        # and fewer times than a backlog holds: nobody accepts meanwhile.
        seen: dict[str, int] = {}
        deadline = time.monotonic() + 3
        for _ in range(400):
            if time.monotonic() > deadline or len(seen) == 3:
                break
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(swap)
                peer = s.getpeername()
            except OSError as e:
                peer = errno.errorcode[e.errno]
            finally:
                s.close()
            seen[peer] = seen.get(peer, 0) + 1
            time.sleep(0.002)  # on a busy machine the swapper may share this CPU
        return seen

    reach = [{"path": socks.named_path, "beneath": False}]
    try:
        bare = run_tool(tool, identity, "bare")
        assert accepted(socks.sentinel) > 0 and accepted(socks.named) > 0, bare.value
        seen = supervised(identity, tool, reach)
    finally:
        swapper.kill()
        swapper.wait()
    assert accepted(socks.sentinel) == 0
    assert socks.sentinel_path not in seen, seen
    assert accepted(socks.named) == seen.get(socks.named_path, 0) > 0, seen
    assert seen.get("EACCES", 0) > 0, seen  # the swap was seen, and refused


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A loopback TCP listener whose queue is the oracle."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    s.listen(4)
    s.setblocking(False)
    yield s
    s.close()


def test_other_families_and_pairs_still_work(identity: pwd.struct_passwd | None,
                                             listener: socket.socket) -> None:  # fmt: skip
    """connect() on an inet socket is performed by the supervisor; sendmsg on a stream
    pair (with SCM_RIGHTS) goes on as the tool's own call."""
    port = listener.getsockname()[1]

    def tool() -> list[Any]:
        c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        c.connect(("127.0.0.1", port))
        c.close()
        a, b = socket.socketpair()
        r, w = os.pipe()
        a.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, ctypes.c_int(r))])
        msg, anc, _, _ = b.recvmsg(1, socket.CMSG_SPACE(4))
        os.close(w)
        return [msg.decode(), len(anc)]

    assert supervised(identity, tool, []) == ["x", 1]
    assert accepted(listener) == 1


def test_a_tcp_connect_meets_the_plans_port_rules(identity: pwd.struct_passwd | None,
                                                  listener: socket.socket) -> None:  # fmt: skip
    """Performed by the supervisor, a TCP connect is still held to Landlock's port rules."""
    port = listener.getsockname()[1]

    def tool() -> list[Any]:
        c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            c.connect(("127.0.0.1", port))
            return ["connected"]
        except OSError as e:
            return ["refused", e.errno]
        finally:
            c.close()

    plan = unix_plan([])
    assert run_tool(tool, identity, "bare").value == ["connected"]
    assert accepted(listener) == 1
    for rules, expected in (([], ["refused", errno.EACCES]), ([port], ["connected"])):
        landlock = {
            "handled_net": ["connect_tcp"],
            "net_rules": [{"port": p, "access": ["connect_tcp"]} for p in rules],
        }
        guards = make_guards(plan["unix"], {}, landlock)
        run = run_tool(
            tool, identity, "notify", plan=plan, supervisor=serve_with(plan, "unix", guards, [])
        )
        assert run.value == expected
        assert accepted(listener) == (1 if rules else 0)


def mmsg_sender(path: str) -> Callable[[], list[Any]]:
    """sendmmsg() of two datagrams to ``path`` (Python has no wrapper: raw structs)."""

    def tool() -> list[Any]:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        name = struct.pack("=H", socket.AF_UNIX) + path.encode() + b"\0"
        addr = ctypes.create_string_buffer(name, len(name))
        keep = [addr]
        vec = bytearray()
        for payload in (b"one", b"second"):
            data = ctypes.create_string_buffer(payload, len(payload))
            iov = ctypes.create_string_buffer(struct.pack("=QQ", ctypes.addressof(data),
                                                          len(payload)), 16)  # fmt: skip
            keep += [data, iov]
            vec += struct.pack("=QI4xQQQQi4xI4x", ctypes.addressof(addr), len(name),
                               ctypes.addressof(iov), 1, 0, 0, 0, 0)  # fmt: skip
        msgs = ctypes.create_string_buffer(bytes(vec), len(vec))
        try:
            count = sc("sendmmsg", s.fileno(), ctypes.addressof(msgs), 2, 0)
            lens = [struct.unpack_from("=I", msgs, 56 + 64 * i)[0] for i in range(2)]
            return ["sent", count, lens]
        except OSError as e:
            return ["refused", e.errno]
        finally:
            s.close()

    return tool


def test_sendmmsg_by_path(identity: pwd.struct_passwd | None, socks: Sockets) -> None:
    bare = run_tool(mmsg_sender(socks.dgram_out_path), identity, "bare")
    assert bare.value == ["sent", 2, [3, 6]]
    assert received(socks.dgram_out) == [b"one", b"second"]
    reach = [{"path": str(socks.allowed), "beneath": True}]
    refused = supervised(identity, mmsg_sender(socks.dgram_out_path), reach)
    assert refused == ["refused", errno.EACCES]
    assert received(socks.dgram_out) == []
    assert supervised(identity, mmsg_sender(socks.dgram_in_path), reach) == ["sent", 2, [3, 6]]
    assert received(socks.dgram_in) == [b"one", b"second"]
