# The SQLite MCP server (PyPI mcp-server-sqlite) on the user's database data/shop.db.
# A: tables listed and queried. B: a table described and created, rows written, a join,
# an insight noted. C, D: updates, other queries, another new table.
exec @SERVERS@/py/mcp-server-sqlite/bin/mcp-server-sqlite --db-path data/shop.db
