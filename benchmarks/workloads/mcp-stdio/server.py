"""A small stdio MCP server (newline-delimited JSON-RPC, standard library only): tools
over the files of the folder it is started in."""

import json
import os
import sys

TOOLS = [
    {
        "name": "count_words",
        "description": "Count the words of a file under docs/ or notes/.",
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
    {
        "name": "list_files",
        "description": "List the files under a folder.",
        "inputSchema": {"type": "object", "properties": {"folder": {"type": "string"}}},
    },
    {
        "name": "write_note",
        "description": "Write a note into notes/.",
        "inputSchema": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "text": {"type": "string"}},
        },
    },
]


def call(name, args):
    if name == "count_words":
        with open(args["path"]) as f:
            return str(len(f.read().split()))
    if name == "list_files":
        return "\n".join(sorted(os.listdir(args["folder"])))
    if name == "write_note":
        os.makedirs("notes", exist_ok=True)
        with open(os.path.join("notes", args["name"] + ".txt"), "w") as f:
            f.write(args["text"])
        return "written"
    raise KeyError(name)


for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue  # a notification
    method, params = msg.get("method"), msg.get("params") or {}
    if method == "initialize":
        result = {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "notes", "version": "1.0"},
        }
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        try:
            text, error = call(params["name"], params.get("arguments") or {}), False
        except (OSError, KeyError) as e:
            text, error = f"{type(e).__name__}: {e}", True
        result = {"content": [{"type": "text", "text": text}], "isError": error}
    else:
        reply = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": method}}
        print(json.dumps(reply), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
