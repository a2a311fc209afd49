# The MCP test server that exercises the protocol (npm @modelcontextprotocol/server-everything).
# A: echo and a sum. B: an image, structured content, a gzip resource made in memory, a
# long-running operation with progress, annotated messages.
exec node @SERVERS@/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js stdio
