# The reference knowledge-graph memory MCP server (npm @modelcontextprotocol/server-memory),
# its graph in kb/memory.jsonl (MEMORY_FILE_PATH, set by the host as its config's env).
# A: entities made and read back. B: searched, observations and relations added, an
# entity deleted. C, D: other tools on the graph.
exec node @SERVERS@/node/node_modules/@modelcontextprotocol/server-memory/dist/index.js
