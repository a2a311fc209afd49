"""A client's MCP configuration file: read it, find its servers, write it back.

Three shapes are known, all JSON: Claude Desktop's ``claude_desktop_config.json`` and
Claude Code's or Cursor's ``.mcp.json`` keep servers under ``mcpServers``; VS Code's
``mcp.json`` under ``servers`` (beside ``inputs``). Claude Code's ``~/.claude.json``
also keeps each project's servers under ``projects.<dir>.mcpServers``: those are named
``NAME@<dir>``. A server the client starts as a
process has a ``command`` (and usually ``args``); one it reaches over HTTP has a
``url`` or a ``type`` other than ``stdio`` and is not ours to confine.

Only ``command`` and ``args`` of a server are ever changed, in the text itself:
every other byte (``env``, ``cwd``, ``inputs``, a client's own keys, comments, trailing
commas, the layout of an array) stays as it was. VS Code and Cursor read their files
as JSONC (comments and trailing commas), and so does cvg-wrap (:mod:`cvg_wrap.jsonc`).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any

from cvg_schema import write_atomic

from . import jsonc

SERVER_KEYS = ("mcpServers", "servers")


class ConfigError(Exception):
    """The file cannot be used: one line, naming the file."""


@dataclass
class ClientConfig:
    path: str  # as the user named it
    real: str  # the file written (a symlinked config stays a symlink)
    text: str
    data: dict[str, Any]
    where: dict[str, tuple[str, ...]]  # each server's name -> its entry's path of keys
    indent: int | str | None
    spans: jsonc.Spans

    @property
    def servers(self) -> dict[str, Any]:
        """Each server's entry by name, in the file's order. A server of one of Claude
        Code's projects (``projects`` in ``~/.claude.json``) is named NAME@PROJECT."""
        out = {}
        for name, path in self.where.items():
            entry: Any = self.data
            for key in path:
                entry = entry[key]
            out[name] = entry
        return out

    def entry_text(self, name: str) -> str:
        """The text of server ``name``'s entry, as it is in the file."""
        start, end = self.spans.values[self.where[name]]
        return self.text[start:end]

    def edited(self, changes: dict[str, Change]) -> str:
        """The file's text with each named server changed as said, nothing else."""
        edits: list[tuple[int, int, str]] = []
        for name, change in changes.items():
            edits += self._edits(name, change)
        text = self.text
        for start, end, new in sorted(edits, reverse=True):
            text = text[:start] + new + text[end:]
        return text

    def _edits(self, name: str, change: Change) -> list[tuple[int, int, str]]:
        at, text, values = self.where[name], self.text, self.spans.values
        start, end = values[at]
        if change.entry_text is not None:
            return [(start, end, change.entry_text)]
        argv = change.argv
        command = values[(*at, "command")]
        edits = [(command[0], command[1], json.dumps(argv[0], ensure_ascii=False))]
        keep_args = change.had_args or len(argv) > 1
        args = values.get((*at, "args"))
        one_line = "\n" not in text[start:end]
        member_indent = jsonc.line_indent(text, self.spans.keys[(*at, "command")])
        if args is not None and keep_args:
            old = text[args[0] : args[1]]
            first = values.get((*at, "args", 0))
            inner = jsonc.line_indent(text, first[0]) if first else member_indent + self._step()
            rendered = jsonc.render_list(argv[1:], inline="\n" not in old, inner=inner,
                                         outer=jsonc.line_indent(text, args[0]))  # fmt: skip
            edits.append((args[0], args[1], rendered))
        elif args is not None:
            key = self.spans.keys[(*at, "args")]
            comma = text.rfind(",", start, key)
            if comma >= 0:
                edits.append((comma, args[1], ""))
            else:  # the first member: take the comma after it instead
                after = text.find(",", args[1], end)
                cut = after + 1 if after >= 0 else args[1]
                while cut < end and text[cut] in " \t\r\n":
                    cut += 1
                edits.append((key, cut, ""))
        elif keep_args:
            inner = member_indent + self._step()
            rendered = jsonc.render_list(argv[1:], inline=one_line, inner=inner,
                                         outer=member_indent)  # fmt: skip
            gap = " " if one_line else "\n" + member_indent
            edits.append((command[1], command[1], f',{gap}"args": {rendered}'))
        return edits

    def _step(self) -> str:
        return self.indent if isinstance(self.indent, str) else " " * (self.indent or 2)


@dataclass
class Change:
    """What becomes of one server's entry: a new command line (``had_args``: whether
    it keeps an ``args`` member when there are no arguments), or, with ``entry_text``,
    the whole entry's text put back as it was."""

    argv: list[str]
    had_args: bool = True
    entry_text: str | None = None


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
        data, spans = jsonc.parse(text)
    except jsonc.JsoncError as e:
        raise ConfigError(
            f"{path}: not valid JSON or JSONC (line {e.line}, column {e.column}: {e.message})"
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: not a JSON object")
    where: dict[str, tuple[str, ...]] = {}
    key = next((k for k in SERVER_KEYS if isinstance(data.get(k), dict) and data[k]), None)
    if key is not None:
        where.update((name, (key, name)) for name in data[key])
    # Claude Code's ~/.claude.json keeps each project's own servers beside the user's.
    projects = data.get("projects")
    for project, settings in projects.items() if isinstance(projects, dict) else ():
        servers = settings.get("mcpServers") if isinstance(settings, dict) else None
        for name in servers if isinstance(servers, dict) else ():
            label = f"{name}@{project}"
            if label in where:
                raise ConfigError(f"{path}: two servers would both be called {label}")
            where[label] = ("projects", project, "mcpServers", name)
    if not where:
        raise ConfigError(f"{path}: no MCP servers (no non-empty mcpServers or servers object)")
    return ClientConfig(path, real, text, data, where, _indent(text), spans)


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
