# The sequential-thinking MCP server (npm @modelcontextprotocol/server-sequential-thinking).
# A: a two-step chain of thought. B: a longer chain with a revision and a branch.
exec node @SERVERS@/node/node_modules/@modelcontextprotocol/server-sequential-thinking/dist/index.js
