"""network.hosts end to end: ``cvg-run -p policy.yaml -- TOOL`` with the proxy.

Loopback only. The policy's names are mapped to 127.0.0.2 by a hosts file the proxy
is pointed at (CVG_RUN_HOSTS_FILE); nothing is ever looked up in DNS. Each denial is
first shown to get through without cvg-run, judged by a loopback sink outside the
sandbox that records whether any byte arrived.
"""

from __future__ import annotations

import http.server
import json
import os
import pwd
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from runhelp import PY, Box, make_policy, only_record, run_main, start

# Imported here, before a forked child drops privileges and can no longer read them.
import cvg_run.hosts
import cvg_run.proxy  # noqa: F401
from cvg_schema.run import Connection
from cvg_testing import Sink, TextServer

Identity = pwd.struct_passwd | None


def _hello(request: http.server.BaseHTTPRequestHandler) -> str:
    return f"hello {request.path} host={request.headers.get('Host')}"


@dataclass
class Web:
    port: int


@pytest.fixture
def web() -> Iterator[Web]:
    with TextServer(("127.0.0.2", 0), _hello) as srv:
        yield Web(srv.port)


@pytest.fixture
def sink() -> Iterator[Sink]:
    s = Sink()
    try:
        yield s
    finally:
        s.close()


def hosts_policy(box: Box, web: Web, **network: object) -> Path:
    (box.share / "hosts").write_text("127.0.0.2 allowed.test other.test\n")
    (box.share / "hosts").chmod(0o644)
    return make_policy(
        box.share,
        network={"hosts": [{"host": "allowed.test", "ports": [web.port]}], **network},
    )


def hosts_env(box: Box) -> dict[str, str | None]:
    return {"CVG_RUN_HOSTS_FILE": str(box.share / "hosts")}


URLLIB = """
import sys, urllib.request, urllib.error
try:
    print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())
except urllib.error.HTTPError as e:
    print("HTTP", e.code, e.read().decode().strip())
"""

DIRECT = """
import socket, sys
try:
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3)
    s.sendall(b"exfil")
    s.close()
    print("connected")
except OSError as e:
    print("refused", e.errno)
"""


def test_allowed_host_through_urllib(identity: Identity, box: Box, web: Web) -> None:
    policy = hosts_policy(box, web)
    url = f"http://allowed.test:{web.port}/u"
    ran = run_main(["-p", str(policy), "--", PY, "-c", URLLIB, url],
                   box=box, user=identity, env=hosts_env(box))  # fmt: skip
    assert ran.rc == 0, ran.err
    assert ran.out.strip() == f"hello /u host=allowed.test:{web.port}"
    raw, rec = only_record(box)
    [conn] = rec.connections
    assert (conn.verdict, conn.host, conn.port) == ("allowed", "allowed.test", web.port)
    assert conn.rule == "network.hosts[0]" and conn.address == "127.0.0.2"
    assert conn.protocol == "http"
    # The record carries the plan that was applied: the proxy's port is its one rule.
    assert rec.plan is not None
    [rule] = rec.plan.landlock.net_rules
    assert rule.access == ["connect_tcp"] and rule.port != web.port
    assert rec.plan.environment.set["HTTPS_PROXY"] == f"http://127.0.0.1:{rule.port}"
    assert rec.plan.environment.set["no_proxy"] == ""
    assert "connections_omitted" not in raw


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_allowed_host_through_curl(identity: Identity, box: Box, web: Web) -> None:
    policy = hosts_policy(box, web)
    curl = shutil.which("curl")
    assert curl is not None
    for extra in ([], ["-p"]):  # plain HTTP through the proxy, then a CONNECT tunnel
        ran = run_main(
            ["-p", str(policy), "--", curl, "-fsS", *extra, f"http://allowed.test:{web.port}/c"],
            box=box,
            user=identity,
            env=hosts_env(box),
        )
        assert ran.rc == 0, ran.err
        assert ran.out == f"hello /c host=allowed.test:{web.port}"
    protocols = []
    for path in box.records():
        rec = json.loads(path.read_text())
        protocols += [(c["protocol"], c["verdict"]) for c in rec["connections"]]
    assert sorted(protocols) == [("http", "allowed"), ("http-connect", "allowed")]


def _refused(identity: Identity, box: Box, web: Web, url: str) -> tuple[str, Connection]:
    """Fetch ``url`` through the proxy, which answers 403: the tool's output and the
    one connection recorded, refused."""
    policy = hosts_policy(box, web)
    ran = run_main(["-p", str(policy), "--", PY, "-c", URLLIB, url],
                   box=box, user=identity, env=hosts_env(box))  # fmt: skip
    assert ran.rc == 0, ran.err
    assert ran.out.startswith("HTTP 403"), ran.out
    _, rec = only_record(box)
    [conn] = rec.connections
    assert conn.verdict == "refused"
    return ran.out, conn


def test_disallowed_host_is_refused_and_recorded(identity: Identity, box: Box, web: Web) -> None:
    # other.test resolves in the proxy's hosts file to the same server: only the
    # policy keeps it out. The server is there (proven through allowed.test above).
    out, conn = _refused(identity, box, web, f"http://other.test:{web.port}/o")
    assert out.startswith("HTTP 403 cvg-run proxy: no network.hosts rule names this host")
    assert (conn.host, conn.port) == ("other.test", web.port)
    assert conn.reason == "no network.hosts rule names this host"
    assert conn.rule is None


def test_ip_literal_is_refused(identity: Identity, box: Box, web: Web) -> None:
    _, conn = _refused(identity, box, web, f"http://127.0.0.2:{web.port}/ip")
    assert conn.host == "127.0.0.2"
    assert "IP literal" in conn.reason


def test_direct_connect_bypassing_the_proxy_is_refused_by_landlock(
    identity: Identity, box: Box, web: Web, sink: Sink
) -> None:
    # Unconfined, the same identity reaches the sink.
    def plain() -> None:
        os.execv(PY, [PY, "-c", DIRECT, str(sink.port)])

    done = start(plain, user=identity).finish(30)
    assert done.out.strip() == "connected", done.err
    deadline = time.monotonic() + 5
    while sink.received != b"exfil" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sink.received == b"exfil"
    sink.received = b""

    policy = hosts_policy(box, web)
    ran = run_main(["-p", str(policy), "--", PY, "-c", DIRECT, str(sink.port)],
                   box=box, user=identity, env=hosts_env(box))  # fmt: skip
    assert ran.rc == 0, ran.err
    assert ran.out.strip() == "refused 13", ran.out  # EACCES: Landlock connect_tcp
    time.sleep(0.2)
    assert sink.received == b""
    _, rec = only_record(box)
    assert rec.connections == []  # it never reached the proxy either


def test_udp_stays_denied(box: Box, web: Web) -> None:
    policy = hosts_policy(box, web)
    code = "import socket\ntry:\n socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n" \
        " print('udp')\nexcept OSError as e:\n print('refused', e.errno)\n"  # fmt: skip
    ran = run_main(["-p", str(policy), "--", PY, "-c", code], box=box, env=hosts_env(box))
    assert ran.rc == 0, ran.err
    assert ran.out.strip().startswith("refused"), ran.out


def test_the_proxy_dies_with_the_run(box: Box, web: Web) -> None:
    policy = hosts_policy(box, web)

    def after(rc: int) -> list[str]:
        return [t.name for t in threading.enumerate() if t.name.startswith("cvg-proxy")]

    ran = run_main(["-p", str(policy), "--", "true"], box=box, env=hosts_env(box), after=after)
    assert ran.rc == 0, ran.err
    assert ran.after == []
    _, rec = only_record(box)
    assert rec.plan is not None
    [rule] = rec.plan.landlock.net_rules
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", rule.port), timeout=2)


def test_the_cached_plan_keeps_its_hosts(box: Box, web: Web) -> None:
    policy = hosts_policy(box, web)
    url = f"http://allowed.test:{web.port}/again"
    for _ in range(2):
        ran = run_main(["-v", "-p", str(policy), "--", PY, "-c", URLLIB, url],
                       box=box, env=hosts_env(box))  # fmt: skip
        assert ran.rc == 0, ran.err
        assert ran.out.strip().startswith("hello /again")
    assert "(cache)" in ran.err


def test_an_unreadable_hosts_file_is_a_one_line_refusal(box: Box, web: Web) -> None:
    policy = hosts_policy(box, web)
    ran = run_main(["-p", str(policy), "--", "true"], box=box,
                   env={"CVG_RUN_HOSTS_FILE": str(box.share / "no-such-file")})  # fmt: skip
    assert ran.rc == 125
    lines = ran.err.strip().splitlines()
    assert len(lines) == 1 and "network.hosts proxy" in lines[0], ran.err
    assert "Traceback" not in ran.err


def test_a_port_both_in_hosts_and_tcp_connect_is_refused(box: Box, web: Web) -> None:
    policy = hosts_policy(box, web, tcp_connect=[web.port])
    ran = run_main(["-p", str(policy), "--", "true"], box=box, env=hosts_env(box))
    assert ran.rc == 125
    assert "network.hosts[0].ports[0]" in ran.err and "also in network.tcp_connect" in ran.err
