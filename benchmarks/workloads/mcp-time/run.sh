# The time MCP server (PyPI mcp-server-time), local zone UTC. A: the time in one city.
# B: conversions between other zones and the time in another.
exec @SERVERS@/py/mcp-server-time/bin/mcp-server-time --local-timezone UTC
