"""A user's world for cvg-wrap: a home with an SSH key canary, a project directory, the
state and config directories, client configs in each client's own format, and MCP
sessions started the way a client starts them (the official SDK's stdio client, the
entry's command and args, its env over the client's own).

Oracles are outside the code under test: the files, the run records cvg-run writes,
and what the same server does when it is not confined.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult

import cvg_testing

FIXTURE = Path(__file__).parent / "fixtures" / "notes_server.py"
CVG_WRAP = Path(sys.executable).parent / "cvg-wrap"
CANARY = "-----BEGIN OPENSSH PRIVATE KEY----- canary\n"
SITE = sysconfig.get_paths()["purelib"]
FORMATS = ("claude-desktop", "claude-code", "vscode")


@dataclass
class Home:
    root: Path

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def config(self) -> Path:
        return self.root / "config"

    @property
    def project(self) -> Path:
        return self.root / "project"

    @property
    def policies(self) -> Path:
        return self.config / "cvg" / "policies"

    def env(self) -> dict[str, str]:
        return {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.home),
            "XDG_STATE_HOME": str(self.state),
            "XDG_CONFIG_HOME": str(self.config),
            "XDG_CACHE_HOME": str(self.root / "cache"),
            "LANG": "C.UTF-8",
        }

    def wrap(self, *argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        """The real cvg-wrap console script, stdin not a terminal."""
        return subprocess.run(
            [str(CVG_WRAP), *argv], env=self.env(), cwd=self.project, input=stdin or "",
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip


def make_home(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Home:
    h = Home(tmp)
    for d in (h.home, h.state, h.config, h.project):
        d.mkdir()
    ssh = h.home / ".ssh"
    ssh.mkdir(mode=0o700)
    (ssh / "id_rsa").write_text(CANARY)
    (ssh / "id_rsa").chmod(0o600)
    for k, v in h.env().items():
        if k != "PATH":
            monkeypatch.setenv(k, v)
    return h


def python() -> str:
    """An interpreter of this version that every user can run: not one under /root
    (the learning sandbox keeps /root from the server unless it is the home), and one
    whose own site-packages do not shadow the SDK's dependencies."""
    anyone = cvg_testing.ensure_unpriv_user() if os.geteuid() == 0 else pwd.getpwuid(os.getuid())
    return cvg_testing.unpriv_python(anyone)


def server_argv(h: Home) -> list[str]:
    server = h.project / "notes_server.py"
    shutil.copy(FIXTURE, server)
    return [python(), str(server), SITE]


def client_config(fmt: str, argv: list[str]) -> tuple[str, dict[str, Any]]:
    """Where the client keeps its config (relative to the project) and what it holds:
    the notes server, with the keys each client writes, beside a remote server."""
    env = {"NOTES_TOKEN": "${env:NOTES_TOKEN}" if fmt == "vscode" else "not-a-secret"}
    if fmt == "claude-desktop":
        return "claude_desktop_config.json", {
            "mcpServers": {
                "notes": {"command": argv[0], "args": argv[1:], "env": env},
                "remote": {"url": "https://mcp.example.com/mcp"},
            },
            "globalShortcut": "Ctrl+Space",
        }
    if fmt == "claude-code":
        return ".mcp.json", {
            "mcpServers": {
                "notes": {"type": "stdio", "command": argv[0], "args": argv[1:], "env": env},
                "remote": {
                    "type": "http",
                    "url": "https://mcp.example.com/mcp",
                    "headers": {"Authorization": "Bearer ${API_KEY}"},
                },
            }
        }
    assert fmt == "vscode"
    return (
        ".vscode/mcp.json",
        {
            "inputs": [
                {
                    "type": "promptString",
                    "id": "notes-token",
                    "description": "Token",
                    "password": True,
                }
            ],
            "servers": {
                "notes": {
                    "type": "stdio",
                    "command": argv[0],
                    "args": argv[1:],
                    "env": env,
                    "envFile": "${workspaceFolder}/.env",
                },
                "remote": {"type": "http", "url": "https://mcp.example.com/mcp"},
            },
        },
    )


def write_config(h: Home, fmt: str, indent: int | str = 2) -> Path:
    name, data = client_config(fmt, server_argv(h))
    path = h.project / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=indent) + "\n")
    path.chmod(0o640)
    return path


def entry(config: Path, server: str = "notes") -> dict[str, Any]:
    data = json.loads(config.read_text())
    servers = data.get("mcpServers") or data["servers"]
    found: dict[str, Any] = servers[server]
    return found


@asynccontextmanager
async def client_session(
    h: Home, config: Path, server: str = "notes"
) -> AsyncIterator[ClientSession]:
    """A session with ``server`` started as its client would: command, args, and the
    entry's env over the client's own (its ${...} left as the text it is: the
    notes server never reads it), in the project directory. Its stderr goes to
    server-stderr.log."""
    e = entry(config, server)
    env = {**h.env(), **e.get("env", {})}
    params = StdioServerParameters(command=e["command"], args=e.get("args", []), env=env,
                                   cwd=str(h.project))  # fmt: skip
    # The server's stderr (cvg-observe's and cvg-run's lines too) is kept for a failure.
    with open(h.root / "server-stderr.log", "a") as log:
        async with (
            stdio_client(params, errlog=log) as (read, write),
            ClientSession(read, write) as s,
        ):
            await s.initialize()
            yield s


def text(result: CallToolResult) -> str:
    content = result.content[0]
    assert content.type == "text"
    return content.text
