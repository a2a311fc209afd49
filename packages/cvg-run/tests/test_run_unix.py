"""network.unix end to end through cvg-run, on this kernel and with the Landlock ABI
capped at 4: a sentinel socket outside the grants (a stand-in for docker.sock or the
D-Bus bus) is never reached, a socket the policy names is, and neither needs
--allow-degraded. The sentinel's accept queue, in this process, is the oracle; the
same script run with no sandbox first reaches it."""

from __future__ import annotations

import json
import pwd
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from runhelp import ABI_ENV, PY, Box, make_policy, run_main

import cvg_kernel.unix_guard  # noqa: F401 - the supervisor's guards, imported before any drop
import cvg_run.guarding  # noqa: F401

Identity = pwd.struct_passwd | None

SCRIPT = """
import json, socket, sys
out = {}
for name in sys.argv[1:]:
    kind = socket.SOCK_DGRAM if name.endswith(".dgram") else socket.SOCK_STREAM
    s = socket.socket(socket.AF_UNIX, kind)
    try:
        if kind == socket.SOCK_DGRAM:
            s.sendto(b"hello", name)
        else:
            s.connect(name)
            s.send(b"hello")
        out[name] = "reached"
    except OSError as e:
        out[name] = e.errno
    finally:
        s.close()
print(json.dumps(out))
"""


def _server(path: Path, kind: int) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, kind)
    s.bind(str(path))
    path.chmod(0o777)  # every identity may connect: only the policy decides
    if kind == socket.SOCK_STREAM:
        s.listen(16)
    s.setblocking(False)
    return s


def _reached(server: socket.socket) -> list[bytes]:
    got = []
    while True:
        try:
            if server.type == socket.SOCK_STREAM:
                conn, _ = server.accept()
                conn.settimeout(5)
                got.append(conn.recv(100))
                conn.close()
            else:
                got.append(server.recv(100))
        except BlockingIOError:
            return got


@pytest.fixture
def servers(box: Box) -> Iterator[dict[str, socket.socket]]:
    # The sentinels in the share (no grant); the named sockets in the cwd (a read grant).
    places = {
        str(box.share / "sentinel.sock"): socket.SOCK_STREAM,
        str(box.share / "log.dgram"): socket.SOCK_DGRAM,
        str(box.cwd / "named.sock"): socket.SOCK_STREAM,
        str(box.cwd / "named.dgram"): socket.SOCK_DGRAM,
    }
    made = {path: _server(Path(path), kind) for path, kind in places.items()}
    yield made
    for s in made.values():
        s.close()


@pytest.mark.parametrize("cap", [None, "4"], ids=["host-abi", "abi-4"])
@pytest.mark.parametrize("unix", ["true", "list"])
@pytest.mark.parametrize("trace", [False, True], ids=["plain", "trace"])
def test_unix_reaches_only_what_the_policy_names(
    identity: Identity, box: Box, servers: dict[str, socket.socket], cap: str | None,
    unix: str, trace: bool,
) -> None:  # fmt: skip
    if trace and shutil.which("strace") is None:
        pytest.skip("needs strace")
    names = list(servers)
    bare = subprocess.run([PY, "-c", SCRIPT, *names], capture_output=True, text=True,
                          check=True)  # fmt: skip
    assert set(json.loads(bare.stdout).values()) == {"reached"}
    assert all(_reached(s) == [b"hello"] for s in servers.values())

    named = [n for n in names if "/named." in n]
    policy = make_policy(box.share, network={"unix": True if unix == "true" else named})
    record = box.share / "run.json"
    argv = ["--trace", "--record", str(record)] if trace else []
    ran = run_main([*argv, "-p", str(policy), "--", PY, "-c", SCRIPT, *names], box=box,
                   user=identity, env={ABI_ENV: cap})  # fmt: skip
    assert ran.rc == 0, ran.err
    got = json.loads(ran.stdout.decode().strip().splitlines()[-1])
    for name, s in servers.items():
        if name in named:
            assert got[name] == "reached", got
            assert _reached(s) == [b"hello"]
        else:
            assert got[name] == 13, got  # EACCES, what Landlock's resolve_unix gives
            assert _reached(s) == []
    if trace:
        _refusals_recorded(json.loads(record.read_text()), ran.err,
                           [n for n in names if n not in named])  # fmt: skip


def _refusals_recorded(record: dict[str, Any], err: str, refused: list[str]) -> None:
    """Each socket path the supervisor refused is a denial naming it and network.unix,
    said on stderr too. (With Landlock ABI 9 and unix: true the kernel checks instead.)"""
    if "unix" not in record["plan"]["seccomp"].get("supervise", []):
        assert record["plan"]["landlock"]["abi"] >= 9, record["plan"]["seccomp"]
        return
    by_path = {d.get("path"): d for d in record["denials"]}
    for name in refused:
        d = by_path.get(name)
        assert d is not None, (name, record["denials"])
        assert (d["mechanism"], d["rule"], d["errno"]) == ("supervisor", "network.unix", "EACCES")
        assert d["op"] == ("send" if name.endswith(".dgram") else "connect"), d
        assert f"cvg-run: denied: {d['op']} unix socket {name} (network.unix does not name" in err
