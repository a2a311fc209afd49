# The reference filesystem MCP server (npm @modelcontextprotocol/server-filesystem) over
# the working directory, driven by the SDK's client (calls.json). A: reading and listing.
# B: searching, a new output folder, an edit and a move. C, D: other folders and tools.
exec node @SERVERS@/node/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js "$PWD"
