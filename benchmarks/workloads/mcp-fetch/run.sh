# The fetch MCP server (PyPI mcp-server-fetch) against a loopback web server the host
# runs for the session. A: one page by IP. B: other pages by name (localhost), in parts
# (max_length, start_index) and raw.
exec @SERVERS@/py/mcp-server-fetch/bin/mcp-server-fetch --ignore-robots-txt --allow-private-ips
