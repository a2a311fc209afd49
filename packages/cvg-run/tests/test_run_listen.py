"""listen() under a policy granting one bind port: the supervisor decides each call.

The oracle is a connection made from outside, by this test process, to the port the
tool listens on. Bare, listen() on a socket never bound picks an ephemeral port and the
outside connection lands there; under cvg-run that listen() is refused (EACCES) and only
the granted port, bound first, accepts a connection.
"""

from __future__ import annotations

import os
import pwd
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest
from runhelp import Box, make_policy, run_main

from cvg_run.api import Sandbox, SandboxError

Identity = pwd.struct_passwd | None

TOOL = """
import os, socket, sys, time
share, granted = sys.argv[1], int(sys.argv[2])
def serve(s, name):
    with open(os.path.join(share, name + ".tmp"), "w") as f:
        f.write(str(s.getsockname()[1]))
    os.rename(os.path.join(share, name + ".tmp"), os.path.join(share, name))
    s.settimeout(5)
    c, _ = s.accept()
    print(name, "accepted", c.recv(8).decode(), flush=True)
s = socket.socket()
try:
    s.listen(4)
except OSError as e:
    print("unbound refused", e.errno, flush=True)
else:
    serve(s, "unbound")
b = socket.socket()
b.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
b.bind(("127.0.0.1", granted))
b.listen(4)
serve(b, "bound")
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _knock(share: Path, names: list[str], stop: threading.Event) -> list[str]:
    """Connect from outside to each port the tool announces; the ports reached."""
    reached: list[str] = []

    def run() -> None:
        pending = list(names)
        while pending and not stop.is_set():
            for name in list(pending):
                path = share / name
                if path.exists():
                    port = int(path.read_text())
                    try:
                        with socket.create_connection(("127.0.0.1", port), timeout=2) as c:
                            c.sendall(b"knock")
                        reached.append(name)
                    except OSError:
                        pass
                    pending.remove(name)
            time.sleep(0.02)

    threading.Thread(target=run, daemon=True).start()
    return reached


def _share(box: Box) -> Path:
    d = box.share / "ports"
    d.mkdir()
    d.chmod(0o777)
    return d


def _python() -> str:
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.access(candidate, os.X_OK):
            return candidate
    pytest.fail("no system python3 the test identities can run")


def test_unbound_listen_is_refused_and_the_granted_port_works(identity: Identity, box: Box) -> None:
    port = _free_port()
    python = _python()
    # Bare: the ephemeral port takes the outside connection.
    share = _share(box)
    stop = threading.Event()
    reached = _knock(share, ["unbound", "bound"], stop)
    argv = [python, "-c", TOOL, str(share), str(port)]
    bare = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    stop.set()
    assert "unbound accepted knock" in bare.stdout, bare
    assert "unbound" in reached

    share = box.share / "ports2"
    share.mkdir()
    share.chmod(0o777)
    policy = make_policy(
        box.share,
        filesystem={"write": [str(share), "${SCRATCH}"]},
        network={"tcp_bind": [port]},
    )
    stop = threading.Event()
    reached = _knock(share, ["unbound", "bound"], stop)
    ran = run_main(
        ["-p", str(policy), "--", python, "-c", TOOL, str(share), str(port)],
        box=box,
        user=identity,
    )
    stop.set()
    assert "unbound refused 13" in ran.out, (ran.out, ran.err)
    assert "bound accepted knock" in ran.out, (ran.out, ran.err)
    assert reached == ["bound"]
    assert ran.rc == 0, ran.err


def test_the_warm_sandbox_refuses_a_policy_it_cannot_serve(box: Box) -> None:
    policy = make_policy(box.share, network={"tcp_bind": [_free_port()]})
    with pytest.raises(SandboxError, match="tcp_bind"):
        Sandbox(str(policy))
