"""cvg-mcp: cvg as an MCP server."""

__version__ = "0.1.0"
