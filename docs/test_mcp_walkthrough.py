"""docs/mcp.md's walk-through is true: its commands, run in order as written, install
a real MCP server, observe a session, generate and verify a policy, and write a client
configuration that starts the confined server.

Needs node and npm, and the npm registry (the walk-through installs the server).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).parent
HEADING = "### Walk-through: the reference filesystem server"
_BLOCK = re.compile(r"^```(sh|python)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def walkthrough() -> tuple[str, str]:
    """The section's shell blocks as one script, and its Python block."""
    text = (DOCS / "mcp.md").read_text()
    start = text.index(HEADING)
    end = text.index("\n### ", start + len(HEADING))
    blocks = _BLOCK.findall(text[start:end])
    script = "\n".join(body for kind, body in blocks if kind == "sh")
    python = [body for kind, body in blocks if kind == "python"]
    assert len(python) == 1 and script
    return script, python[0]


def session_lines(out: str) -> list[str]:
    return [ln for ln in out.splitlines() if re.match(r"^\w+ (ok|error)$", ln)]


def run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def test_the_walkthrough_runs_as_written(tmp_path: Path) -> None:
    missing = [p for p in ("node", "npm") if not shutil.which(p)]
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"{', '.join(missing)} missing: the walk-through needs them")
        pytest.skip(f"{', '.join(missing)} not installed")
    script, python = walkthrough()
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "session.py").write_text(python)
    # The tools the docs name (cvg-*, and a python3 with the mcp SDK) come first on PATH;
    # the rest of the caller's environment stays (a proxy's CA for npm, say).
    env = dict(
        os.environ,
        PATH=f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        HOME=str(home),
        XDG_STATE_HOME=str(tmp_path / "state"),
        npm_config_cache=str(tmp_path / "npm-cache"),
    )
    p = run(["bash", "-euo", "pipefail", "-c", script], tmp_path, env)
    assert p.returncode == 0, p.stderr[-3000:]
    calls = ["list_directory ok", "read_text_file ok", "create_directory ok", "write_file ok"]
    # Observed, then confined: the same session, every call answered both times.
    assert session_lines(p.stdout) == calls + calls, p.stdout
    assert "cvg-run: denied" not in p.stderr
    policy = (home / "notes-server.yaml").read_text()
    assert "${CWD}" in policy or str(home / "notes") in policy

    # The configuration starts the confined server, as a client does from its JSON.
    config = json.loads((home / "claude_desktop_config.json").read_text())
    server = config["mcpServers"]["notes"]
    assert Path(server["command"]).name == "cvg-run" and Path(server["command"]).is_absolute()
    assert server["args"][:2] == ["-p", str(home / "notes-server.yaml")]
    shutil.rmtree(home / "notes" / "done")
    session = [sys.executable, "session.py", str(home / "notes"), "--"]
    again = run([*session, server["command"], *server["args"]], tmp_path, env)
    assert again.returncode == 0, again.stderr[-3000:]
    assert session_lines(again.stdout) == calls
    assert (home / "notes" / "done" / "today.txt").read_text() == "milk bought\n"


def test_a_denied_call_fails_the_session(tmp_path: Path) -> None:
    """The session script the walk-through verifies with is not vacuous: a call the
    server refuses ends it with status 1."""
    _, python = walkthrough()
    (tmp_path / "session.py").write_text(python)
    server = tmp_path / "server.py"
    server.write_text(
        "import json, sys\n"
        "for line in sys.stdin:\n"
        "    m = json.loads(line)\n"
        "    if 'id' not in m: continue\n"
        "    r = {'protocolVersion': m['params'].get('protocolVersion'), 'capabilities':"
        " {'tools': {}}, 'serverInfo': {'name': 'no', 'version': '1'}}"
        " if m['method'] == 'initialize' else {'content': [{'type': 'text', 'text': 'no'}],"
        " 'isError': True}\n"
        "    print(json.dumps({'jsonrpc': '2.0', 'id': m['id'], 'result': r}), flush=True)\n"
    )
    p = subprocess.run(
        [sys.executable, "session.py", str(tmp_path), "--", sys.executable, str(server)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 1
    assert session_lines(p.stdout) == ["list_directory error"]
