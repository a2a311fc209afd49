"""Nothing a client started outlives it: the oracle is the process table.

The command each test leaves running is a shell with two sleeps, one of them
started with setsid so it has left the shell's session and process group; each
carries a marker unique to the test in its command line.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import uuid

import anyio
import pytest
from mcp import types
from mcp.shared.exceptions import McpError
from mcphelp import World, answer, cvg_mcp, kill_all, pids_with, wait_for

from cvg_testing import alive

CLIENT = textwrap.dedent(
    """
    import json, sys, anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    spec = json.loads(sys.argv[1])

    async def main():
        params = StdioServerParameters(command=spec["argv"][0], args=spec["argv"][1:],
                                       env=spec["env"], cwd=spec["cwd"])
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            await s.call_tool("run_sandboxed", {"policy": "default", "argv": spec["run"]})

    anyio.run(main)
    """
)


def _lingering(marker: str) -> list[str]:
    return ["sh", "-c", f"setsid sleep 1000.{marker} & sleep 1001.{marker}; wait"]


def _marker() -> str:
    return str(uuid.uuid4().int % 10**9)


def test_a_client_that_dies_mid_run_leaves_no_process_behind(world: World) -> None:
    world.policy()
    marker = _marker()
    spec = {
        "argv": world.server_argv(),
        "env": world.env(),
        "cwd": str(world.cwd),
        "run": _lingering(marker),
    }
    client = subprocess.Popen(
        [sys.executable, "-c", CLIENT, json.dumps(spec)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        # Both sleeps running, the setsid one among them, and the server.
        assert wait_for(lambda: _sleeps(marker) == 2, 60)
        server = pids_with(str(world.policies))
        assert server
        client.send_signal(signal.SIGKILL)
        client.wait()
        assert wait_for(lambda: _sleeps(marker) == 0, 15), pids_with(marker)
        assert wait_for(lambda: not any(alive(p) for p in server), 15)
    finally:
        client.kill()
        client.wait()
        kill_all(pids_with(marker))


def _sleeps(marker: str) -> int:
    return len([p for p in pids_with(f".{marker}") if _comm(p) == "sleep"])


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def test_a_cancelled_call_ends_its_run_and_the_session_goes_on(world: World) -> None:
    _cancel_mid_run(world, trace=False)


def test_a_cancelled_traced_call_ends_its_run(rworld: World) -> None:
    _cancel_mid_run(rworld, trace=True)


def _cancel_mid_run(world: World, *, trace: bool) -> None:
    world.policy()
    marker = _marker()

    async def body() -> None:
        async with cvg_mcp(world) as s:
            outcome: list[object] = []

            async def call() -> None:
                try:
                    await s.call_tool(
                        "run_sandboxed",
                        {"policy": "default", "argv": _lingering(marker), "trace": trace},
                    )
                    outcome.append("finished")
                except McpError as e:
                    outcome.append(e)

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                for _ in range(600):
                    if _sleeps(marker) == 2:
                        break
                    await anyio.sleep(0.05)
                assert _sleeps(marker) == 2
                request_id = s._request_id - 1  # the call above: nothing else was sent since
                await s.send_notification(
                    types.ClientNotification(
                        types.CancelledNotification(
                            params=types.CancelledNotificationParams(
                                requestId=request_id, reason="test"
                            )
                        )
                    )
                )
                for _ in range(300):
                    if _sleeps(marker) == 0:
                        break
                    await anyio.sleep(0.05)
                assert _sleeps(marker) == 0, pids_with(marker)
                tg.cancel_scope.cancel()
            # The session is still there and still runs commands.
            a = answer(
                await s.call_tool("run_sandboxed", {"policy": "default", "argv": ["echo", "on"]})
            )
            assert a["stdout"] == "on\n"

    try:
        anyio.run(body)
    finally:
        kill_all(pids_with(marker))


@pytest.mark.parametrize("how", ["stdin closed", "SIGTERM"])
def test_the_server_ending_ends_its_runs(rworld: World, how: str) -> None:
    """The server's own end (its client closed stdin, or it was told to stop) ends
    every run in flight, and the server exits promptly."""
    rworld.policy()
    marker = _marker()
    server = subprocess.Popen(
        rworld.server_argv(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=rworld.env(),
        cwd=rworld.cwd,
    )
    assert server.stdin is not None and server.stdout is not None
    try:
        for msg in _handshake(marker):
            server.stdin.write((json.dumps(msg) + "\n").encode())
            server.stdin.flush()
        assert json.loads(server.stdout.readline())["id"] == 1
        assert wait_for(lambda: _sleeps(marker) == 2, 60)
        if how == "SIGTERM":
            server.send_signal(signal.SIGTERM)
        else:
            server.stdin.close()
        server.wait(timeout=15)
        assert wait_for(lambda: _sleeps(marker) == 0, 10), pids_with(marker)
    finally:
        server.kill()
        server.wait()
        kill_all(pids_with(marker))


def _handshake(marker: str) -> list[dict[str, object]]:
    """An initialize, its acknowledgement, and the call (the SDK client cannot be made
    to hold its stdin open while we close the server's, so these are written here)."""
    return [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": types.LATEST_PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {
                "name": "run_sandboxed",
                "arguments": {"policy": "default", "argv": _lingering(marker)},
            },
        },
    ]


def test_no_helper_outlives_the_server(rworld: World) -> None:
    """After a session ends, none of the server's descendants remain."""
    rworld.policy()

    async def body() -> list[int]:
        async with cvg_mcp(rworld) as s:
            answer(await s.call_tool("run_sandboxed", {"policy": "default", "argv": ["true"]}))
            helpers = [p for p in pids_with("cvg_run.helper") if _in_world(p, rworld)]
            assert helpers
            return helpers

    helpers = anyio.run(body)
    assert wait_for(lambda: not any(alive(p) for p in helpers), 10)


def _in_world(pid: int, world: World) -> bool:
    try:
        return os.readlink(f"/proc/{pid}/cwd") == str(world.cwd)
    except OSError:
        return False


def test_a_dead_helper_is_replaced(rworld: World) -> None:
    """A sandbox whose helper died fails the call in flight with one line, and the
    next call gets a fresh sandbox."""
    rworld.policy()

    async def body() -> None:
        async with cvg_mcp(rworld) as s:
            args = {"policy": "default", "argv": ["echo", "ok"]}
            assert answer(await s.call_tool("run_sandboxed", args))["stdout"] == "ok\n"
            tree = [p for p in pids_with("cvg_run.helper") if _in_world(p, rworld)]
            # The helper itself, not its runners (forked from it, same command line).
            helpers = [p for p in tree if _ppid(p) not in tree]
            assert len(helpers) == 1
            kill_all(helpers)
            assert wait_for(lambda: not alive(helpers[0]), 5)
            first = await s.call_tool("run_sandboxed", args)
            if first.isError:
                assert first.content[0].text.startswith("unavailable: ")  # type: ignore[union-attr]
            assert answer(await s.call_tool("run_sandboxed", args))["stdout"] == "ok\n"

    anyio.run(body)


def _ppid(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(") ", 1)[1].split()[1])
