"""cvg-mcp --http PORT: streamable HTTP on loopback only, each request with the token."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator

import anyio
import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcphelp import World, answer

TOKEN = "test-token-for-cvg-mcp"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server(rworld: World) -> Iterator[tuple[World, int]]:
    rworld.policy()
    port = _free_port()
    env = dict(rworld.env(), CVG_MCP_TOKEN=TOKEN)
    proc = subprocess.Popen(
        rworld.server_argv("--http", str(port)),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        end = time.monotonic() + 30
        while True:
            assert proc.poll() is None, "the server exited"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < end, "the server never listened"
                time.sleep(0.05)
        yield rworld, port
    finally:
        proc.terminate()
        proc.wait(15)


def _listeners(port: int) -> set[str]:
    """Local addresses listening on ``port`` (hex, from /proc/net/tcp and tcp6)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            next(f)
            for line in f:
                fields = line.split()
                addr, hexport = fields[1].rsplit(":", 1)
                if int(hexport, 16) == port and fields[3] == "0A":  # LISTEN
                    found.add(addr)
    return found


def test_http_serves_loopback_only_with_the_token(server: tuple[World, int]) -> None:
    _, port = server
    assert _listeners(port) == {"0100007F"}  # 127.0.0.1, nothing else
    url = f"http://127.0.0.1:{port}/mcp"
    init = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        r = httpx.post(url, json=init, headers=headers)
        assert r.status_code == 401, r.text

    async def body() -> None:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with (
            create_mcp_http_client(headers=headers) as http,
            streamable_http_client(url, http_client=http) as (read, write, _),
            ClientSession(read, write) as s,
        ):
            await s.initialize()
            a = answer(
                await s.call_tool("run_sandboxed", {"policy": "default", "argv": ["echo", "http"]})
            )
            assert (a["status"], a["stdout"]) == (0, "http\n")

    anyio.run(body)
