"""What a client does with its MCP config, for docs/wrap-transcript.md: start every
server the config starts as a process (its command, its args, its env over the
client's own, in the home directory), with the official MCP SDK's stdio client, list
its tools and call them. One line per call; exit 1 when a server fails to start.

    python3 wrap_client.py CONFIG NOTE
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def session(name: str, entry: dict, note: str) -> None:
    params = StdioServerParameters(
        command=entry["command"],
        args=entry.get("args", []),
        env={**os.environ, **entry.get("env", {})},
        cwd=os.environ["HOME"],
    )
    with open(Path(os.environ["HOME"]) / "server-stderr.log", "a") as log:
        async with (
            stdio_client(params, errlog=log) as (read, write),
            ClientSession(read, write) as s,
        ):
            await s.initialize()
            tools = sorted(t.name for t in (await s.list_tools()).tools)
            print(f"{name}: tools {', '.join(tools)}")
            for tool, args in (
                ("write_note", {"name": note, "text": f"{note}: milk"}),
                ("read_file", {"path": f"notes/{note}"}),
                ("read_file", {"path": "~/.ssh/id_rsa"}),
            ):
                r = await s.call_tool(tool, args)
                out = r.content[0].text if r.content and r.content[0].type == "text" else ""
                said = f"error: {out.splitlines()[-1]}" if r.isError else out
                print(f"{name}: {tool} {json.dumps(args)} -> {said}")


def main(argv: list[str]) -> int:
    config, note = argv
    servers = json.loads(Path(config).read_text())["mcpServers"]
    for name, entry in servers.items():
        if "command" not in entry:
            print(f"{name}: reached at {entry.get('url')}, not started")
            continue
        try:
            anyio.run(session, name, entry, note)
        except Exception as e:  # noqa: BLE001 - a server that failed is this line
            print(f"{name}: failed: {e!r}")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
