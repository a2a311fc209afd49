"""Drive the stdio MCP server with the MCP SDK's client, from outside the sandbox.

    python client.py A|B -- SERVER-COMMAND...

Prints each tool result; the exit status is 1 when a call came back as an error.
"""

import os
import sys

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

CALLS = {
    "A": [("count_words", {"path": "docs/a.txt"})],
    "B": [
        ("list_files", {"folder": "docs"}),
        ("count_words", {"path": "docs/b.txt"}),
        ("write_note", {"name": "n1", "text": "remember the milk"}),
        ("count_words", {"path": "notes/n1.txt"}),
        ("list_files", {"folder": "notes"}),
    ],
}


async def main(which: str, server: list[str]) -> int:
    params = StdioServerParameters(
        command=server[0], args=server[1:], env=dict(os.environ), cwd=os.getcwd()
    )
    failed = 0
    async with stdio_client(params) as (r, w), ClientSession(r, w) as session:
        await session.initialize()
        tools = await session.list_tools()
        print("tools", " ".join(sorted(t.name for t in tools.tools)))
        for name, args in CALLS[which]:
            res = await session.call_tool(name, args)
            text = " ".join(c.text for c in res.content if c.type == "text")
            print(name, "error" if res.isError else "ok", text.replace("\n", ","))
            failed |= bool(res.isError)
    return 1 if failed else 0


if __name__ == "__main__":
    sep = sys.argv.index("--")
    sys.exit(anyio.run(main, sys.argv[1], sys.argv[sep + 1 :]))
