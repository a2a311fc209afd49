// An MCP-like stdio tool in plain node (no MCP SDK for node is installed here): one
// JSON-RPC request per line on stdin, one answer per line on stdout.
"use strict";
const readline = require("readline");

const rl = readline.createInterface({ input: process.stdin });
rl.on("line", (line) => {
  let req;
  try {
    req = JSON.parse(line);
  } catch (e) {
    process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "parse error" } }) + "\n");
    return;
  }
  let result;
  if (req.method === "tools/list") {
    result = { tools: [{ name: "shout" }] };
  } else if (req.method === "tools/call" && req.params && req.params.name === "shout") {
    result = { content: [{ type: "text", text: String(req.params.arguments.text).toUpperCase() }] };
  } else {
    process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: req.id, error: { code: -32601, message: "no such method" } }) + "\n");
    return;
  }
  process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: req.id, result }) + "\n");
});
