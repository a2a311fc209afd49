"""Drive a stdio MCP server through one session with the MCP SDK's own client, from
outside the sandbox, as an MCP host (Claude Desktop, an IDE) does.

    python mcp_client.py SESSION.json INPUT [--gap SECONDS] -- SERVER-COMMAND...

SESSION.json (a workload's ``calls.json``) holds, per input, the tool calls to make in
order (``{CWD}`` in an argument standing for the working directory), and optionally:
``env`` (variables the host sets for the server, ``{CWD}`` likewise), ``http``
(``{"root": DIR, "port": N}``: a loopback HTTP server this client runs for the
session, outside the sandbox) and ``mask`` (regular expressions whose matches are
printed as ``<masked>``: a time, a commit id). With ``--gap``, every input but A
waits that long, idle, after its first call: a user who comes back to the session
later. Prints the tools offered and each
call's result, with the working directory printed as ``<cwd>``; the exit status is 1
when a call came back as an error or the server went away.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import os
import re
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def start_http(root: str, port: int) -> http.server.ThreadingHTTPServer:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    class Shared(http.server.ThreadingHTTPServer):
        # A workload's sessions run side by side (its gapped sessions on B wait together),
        # each with its own copy of the same site on the one port its policies name: each
        # listens, and the kernel hands each connection to one of them.
        allow_reuse_port = True

    handler = functools.partial(Quiet, directory=root)
    server = Shared(("127.0.0.1", port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def shown(text: str, masks: list[str]) -> str:
    text = text.replace(os.getcwd(), "<cwd>")
    for pattern in masks:
        text = re.sub(pattern, "<masked>", text)
    return text.replace("\n", ",")


async def session(spec: dict[str, Any], which: str, gap: float, server: list[str]) -> int:
    cwd = os.getcwd()
    env = dict(os.environ)
    env.update({k: v.replace("{CWD}", cwd) for k, v in spec.get("env", {}).items()})
    params = StdioServerParameters(command=server[0], args=server[1:], env=env, cwd=cwd)
    masks = spec.get("mask", [])
    failed = False
    async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        tools = await s.list_tools()
        print("tools", " ".join(sorted(t.name for t in tools.tools)), flush=True)
        for n, (name, args) in enumerate(spec["calls"][which]):
            if n == 1 and gap and which != "A":
                await anyio.sleep(gap)
            res = await s.call_tool(name, json.loads(json.dumps(args).replace("{CWD}", cwd)))
            text = " ".join(c.text for c in res.content if c.type == "text")
            print(name, "error" if res.isError else "ok", shown(text, masks), flush=True)
            failed |= bool(res.isError)
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    sep = argv.index("--")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("session", type=Path)
    parser.add_argument("input")
    parser.add_argument("--gap", type=float, default=0.0)
    args = parser.parse_args(argv[:sep])
    spec = json.loads(args.session.read_text())
    http_spec = spec.get("http")
    httpd = start_http(http_spec["root"], http_spec["port"]) if http_spec else None
    try:
        return anyio.run(session, spec, args.input, args.gap, argv[sep + 1 :])
    except Exception as e:  # noqa: BLE001  # the server died or broke the protocol: one line
        print(f"session failed: {type(e).__name__}: {e}", flush=True)
        return 1
    finally:
        if httpd:
            httpd.shutdown()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
