"""A small MCP server over stdio: one tool, ``count_words``, and nothing else."""

from mcp.server.fastmcp import FastMCP

server = FastMCP("words")


@server.tool()
def count_words(text: str) -> int:
    """How many whitespace-separated words ``text`` holds."""
    return len(text.split())


if __name__ == "__main__":
    server.run("stdio")
