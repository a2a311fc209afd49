# The git MCP server (PyPI mcp-server-git, on GitPython and the git program) on a
# repository of the user (made by setup.sh). A: status, log, the unstaged diff.
# B: branches, a commit on a new branch, show and diff. C, D: staging, reset, log ranges.
exec @SERVERS@/py/mcp-server-git/bin/mcp-server-git --repository "$PWD/repo"
