# A stdio MCP server (server.py), driven from outside the sandbox by the MCP SDK's own
# client (calls.json). A: one tool call. B: listing, reading and writing notes.
exec python3 server.py
