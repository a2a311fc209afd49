"""A client's MCP configuration file: read it, find its servers, write it back.

Three shapes are known, all JSON: Claude Desktop's ``claude_desktop_config.json`` and
Claude Code's or Cursor's ``.mcp.json`` keep servers under ``mcpServers``; VS Code's
``mcp.json`` under ``servers`` (beside ``inputs``). A server the client starts as a
process has a ``command`` (and usually ``args``); one it reaches over HTTP has a
``url`` or a ``type`` other than ``stdio`` and is not ours to confine.

Only ``command`` and ``args`` of a server are ever changed. Everything else (``env``,
``cwd``, ``inputs``, a client's own keys) stays as it was, in its order, and the file
is written back with the indentation it had.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any

from cvg_schema import write_atomic

SERVER_KEYS = ("mcpServers", "servers")


class ConfigError(Exception):
    """The file cannot be used: one line, naming the file."""


@dataclass
class ClientConfig:
    path: str  # as the user named it
    real: str  # the file written (a symlinked config stays a symlink)
    text: str
    data: dict[str, Any]
    key: str  # where the servers are: mcpServers or servers
    indent: int | str | None
    newline_at_end: bool

    @property
    def servers(self) -> dict[str, Any]:
        servers: dict[str, Any] = self.data[self.key]
        return servers

    def render(self, data: dict[str, Any]) -> str:
        """``data`` as this file's text would hold it."""
        text = json.dumps(data, indent=self.indent, ensure_ascii=False)
        return text + "\n" if self.newline_at_end else text


def load(path: str) -> ClientConfig:
    real = os.path.realpath(path)
    try:
        with open(real, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(
            f"{path}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg}; "
            "comments are not supported)"
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: not a JSON object")
    key = next((k for k in SERVER_KEYS if isinstance(data.get(k), dict) and data[k]), None)
    if key is None:
        raise ConfigError(f"{path}: no MCP servers (no non-empty mcpServers or servers object)")
    return ClientConfig(path, real, text, data, key, _indent(text), text.endswith("\n"))


_FIRST_INDENT = re.compile(r"[{\[]\s*?\n([ \t]+)\S")


def _indent(text: str) -> int | str | None:
    """The file's indentation step: that of its first indented line (None: one line)."""
    m = _FIRST_INDENT.search(text)
    if m is None:
        return None
    step = m.group(1)
    return step if "\t" in step else len(step)


def is_process(entry: object) -> bool:
    """A server the client starts as a process (what cvg can confine)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return False
    kind = entry.get("type", "stdio")
    args = entry.get("args", [])
    return kind == "stdio" and isinstance(args, list) and all(isinstance(a, str) for a in args)


def argv_of(entry: dict[str, Any]) -> list[str]:
    return [entry["command"], *entry.get("args", [])]


def with_argv(entry: dict[str, Any], argv: list[str], had_args: bool = True) -> dict[str, Any]:
    """``entry`` starting ``argv`` instead, every other key where it was; ``args`` goes
    right after ``command`` when it is new, and is left out when ``had_args`` is False
    and there are no arguments (so a restored entry is the original)."""
    out: dict[str, Any] = {}
    for k, v in entry.items():
        if k == "command":
            out[k] = argv[0]
            if "args" not in entry and (had_args or argv[1:]):
                out["args"] = argv[1:]
        elif k == "args":
            if had_args or argv[1:]:
                out[k] = argv[1:]
        else:
            out[k] = v
    return out


def write(config: ClientConfig, text: str) -> None:
    """Write ``text`` over the file, atomically and keeping its mode; refused when the
    file changed since it was read (a client saving its settings meanwhile)."""
    try:
        with open(config.real, encoding="utf-8") as f:
            now = f.read()
    except OSError as e:
        raise ConfigError(f"{config.path}: cannot read: {e.strerror}") from None
    if now != config.text:
        raise ConfigError(f"{config.path}: changed while cvg-wrap worked on it; run it again")
    try:
        owner = os.stat(config.real)
        write_atomic(config.real, text.encode("utf-8"))
        if (owner.st_uid, owner.st_gid) != (os.geteuid(), os.getegid()) and os.geteuid() == 0:
            os.chown(config.real, owner.st_uid, owner.st_gid)  # root editing a user's file
    except OSError as e:
        raise ConfigError(f"{config.path}: cannot write: {e.strerror}") from None
