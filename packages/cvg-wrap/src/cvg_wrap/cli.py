"""The ``cvg-wrap`` command."""

from __future__ import annotations

import difflib
import json
import os
import sys
from collections.abc import Sequence

import click
from tabulate import tabulate

from cvg_run.policy_lookup import user_policies
from cvg_schema import write_atomic
from cvg_schema.console import Exit, console, invoke

from . import __version__, jsonc, wrapping
from . import state as st
from .config import ClientConfig, ConfigError, load, write
from .status import server_rows
from .tools import ToolFailed

EXIT_FAILED = 1
EXIT_USAGE = 2

_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
_CONFIG = click.argument("config", type=click.Path(dir_okay=False), metavar="CONFIG")


@click.group(
    context_settings=_SETTINGS,
    epilog="""\b
Examples:
  cvg-wrap learn ~/.config/Claude/claude_desktop_config.json   # then use the client
  cvg-wrap status .mcp.json
  cvg-wrap enforce .mcp.json                                   # review the diffs, confirm
  cvg-wrap restore .vscode/mcp.json

\b
Exit status:
  0  done (or nothing to do)
  1  the config is refused (cannot be read, not JSON or JSONC, no MCP servers; one line
     naming the file), it changed while cvg-wrap worked, a policy could not be
     made for a server (the others are still enforced), or the question was
     answered no
  2  usage error, or enforce without --yes when stdin is not a terminal
""",
)
@click.version_option(__version__, "-V", "--version", prog_name="cvg-wrap")
def cli() -> None:
    """Confine the MCP servers a client already has.

    CONFIG is the client's own file: Claude Desktop's claude_desktop_config.json,
    Claude Code's or Cursor's .mcp.json (servers under "mcpServers"), or VS Code's
    mcp.json (under "servers"), in JSON or JSONC (comments, trailing commas); in
    Claude Code's ~/.claude.json each project's servers are wrapped too, named
    NAME@<project dir> (the one to give --server). Only
    each server's command and args change, in the text: every other byte stays
    (keys, order, layout, comments), and restore puts an entry back byte for byte
    while nobody else has edited it. Servers the client reaches by
    URL are left alone. What cvg-wrap remembers of a config (the original command
    lines, a backup of the file, each server's observations) is under
    $XDG_STATE_HOME/cvg/wrap/<config-id>/. Changes are printed as unified diffs on
    stdout, notes on stderr.
    """


def _diff(path: str, before: str, after: str, new: bool = False) -> str:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile="/dev/null" if new else path,
        tofile=path,
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _say(lines: list[str]) -> None:
    for line in lines:
        click.echo(f"cvg-wrap: {line}", err=True)


def _config_text(config: ClientConfig, plan: wrapping.Plan) -> str:
    """The config's text with the plan's edits made, each changed server's new entry
    text kept in the state (what restore recognises as still cvg-wrap's)."""
    text = config.edited(plan.edits)
    if text != config.text:
        _, spans = jsonc.parse(text)
        for name in plan.changed:
            record = plan.state.servers.get(name)
            if record is not None:
                start, end = spans.values[config.where[name]]
                record.wrapped_text = text[start:end]
    return text


def _write(config: ClientConfig, plan: wrapping.Plan, text: str) -> None:
    # The state first: a config written without it could not be restored.
    plan.state.save()
    if text != config.text:
        write(config, text)


@cli.command(
    context_settings=_SETTINGS,
    epilog="""\b
Each server the client starts as a process is rewritten to start under
cvg-observe --out-dir $XDG_STATE_HOME/cvg/wrap/<config-id>/<server>/ -- <its command>,
which keeps one observation per session. Restart the client (or reload its servers)
and use it as usual, for as long as the policy should cover: every session adds one.
Running learn again changes nothing; an enforced server learns again only when named.
""",
)
@_CONFIG
@click.option("--server", "servers", multiple=True, metavar="NAME",
              help="Only this server (repeatable).")  # fmt: skip
def learn(config: str, servers: tuple[str, ...]) -> None:
    """Make each server learn its policy during the client's real sessions."""
    cfg = _load(config, servers)
    plan = wrapping.learn(cfg, st.load(cfg.real), list(servers))
    _say(plan.notes)
    text = _config_text(cfg, plan)
    if not plan.changed:
        _say(["nothing to change"])
        return
    click.echo(_diff(cfg.path, cfg.text, text), nl=False)
    backup = plan.state.keep_backup(cfg.text)
    _write(cfg, plan, text)
    _say([f"learning: {', '.join(plan.changed)} (backup of the config: {backup})"])


@cli.command(
    context_settings=_SETTINGS,
    epilog="""\b
For each learning server with at least one observation: cvg-generate over all of
them (a server that waited on its client gets no wall clock), the names of the
entry's "env" passed from the client (environment.pass), checked by cvg-validate,
written to POLICIES/<server>.yaml; the server then starts under cvg-run --trace -p
POLICY -- <its command>. A server with no observation yet is left learning, and says
so. A summary comes first, on stderr: per server, its policy's path, its rules by kind
and every warning; --diff also prints each policy and the config change as unified
diffs on stdout. On a terminal you are asked to confirm.
Default POLICIES: $XDG_CONFIG_HOME/cvg/policies (~/.config/cvg/policies), where
cvg-run -p NAME finds a policy by name.
""",
)
@_CONFIG
@click.option("--server", "servers", multiple=True, metavar="NAME",
              help="Only this server (repeatable).")  # fmt: skip
@click.option("--policies", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help="Write the policies here (default: $XDG_CONFIG_HOME/cvg/policies).")  # fmt: skip
@click.option("--trace/--no-trace", default=True, show_default=True,
              help="Run the servers with cvg-run --trace, so each refusal is in the run "
              "record (and counted by status); needs strace.")  # fmt: skip
@click.option("--yes", "-y", is_flag=True, help="Do not ask; write the changes.")
@click.option("--diff", "full", is_flag=True,
              help="Print the full unified diffs (each policy and the config) on stdout, "
              "not only the summary.")  # fmt: skip
def enforce(
    config: str, servers: tuple[str, ...], policies: str | None, trace: bool, yes: bool,
    full: bool,
) -> None:  # fmt: skip
    """Write each learning server's policy and start it under cvg-run."""
    if not yes and not sys.stdin.isatty():
        raise click.UsageError("stdin is not a terminal: give --yes to write the changes")
    cfg = _load(config, servers)
    plan = wrapping.enforce(cfg, st.load(cfg.real), list(servers),
                            policies or user_policies(), trace)  # fmt: skip
    text = _config_text(cfg, plan)
    if full:
        for path, policy in plan.policies.items():
            before = _read(path)
            click.echo(_diff(path, before or "", policy, new=before is None), nl=False)
        if plan.changed:
            click.echo(_diff(cfg.path, cfg.text, text), nl=False)
    for lines in plan.summaries.values():
        _say(lines)
    if plan.changed and not full:
        _say([f"{cfg.path}: {len(plan.changed)} server(s) will start under cvg-run "
              "(--diff shows every change)"])  # fmt: skip
    _say(plan.notes + plan.errors)
    if not plan.changed:
        _say(["nothing to change"])
        raise Exit(EXIT_FAILED if plan.errors else 0)
    if not yes and not click.confirm("cvg-wrap: write these changes?", err=True):
        _say(["nothing written"])
        raise Exit(EXIT_FAILED)
    for path, policy in plan.policies.items():
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_atomic(path, policy.encode("utf-8"), mode=0o644)
    _write(cfg, plan, text)
    _say([f"enforced: {', '.join(plan.changed)}"])
    if plan.errors:
        raise Exit(EXIT_FAILED)


@cli.command(context_settings=_SETTINGS)
@_CONFIG
def restore(config: str) -> None:
    """Put back the original command line of every server cvg-wrap rewrote.

    Other changes made to the file since stay. The policies and observations stay
    where they are, for a later learn or enforce.
    """
    cfg = _load(config, ())
    plan = wrapping.restore(cfg, st.load(cfg.real))
    _say(plan.notes)
    text = _config_text(cfg, plan)
    if text != cfg.text:
        click.echo(_diff(cfg.path, cfg.text, text), nl=False)
    if plan.changed or plan.forgotten:
        _write(cfg, plan, text)  # nothing of cvg-wrap's: neither file is touched
    _say([f"restored: {', '.join(plan.changed)}" if plan.changed else "nothing to restore"])


@cli.command(
    context_settings=_SETTINGS,
    epilog="""\b
Columns: state (learning, enforced, untouched; changed: rewritten by cvg-wrap and
edited since; remote: reached by URL), since when, observations kept, rules in the
policy (filesystem paths and TCP ports), runs of the server under its policy since
it was enforced and the sandbox denials their run records list (none when the
server runs without --trace), less the expected ones, counted apart: refusals every
policy gives and nothing needs (a server reading its own /proc entries, which
Landlock cannot grant).
""",
)
@_CONFIG
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout.")
def status(config: str, as_json: bool) -> None:
    """Show where each server of CONFIG stands."""
    cfg = _load(config, ())
    rows = server_rows(cfg, st.load(cfg.real))
    if as_json:
        click.echo(json.dumps({"config": cfg.real, "servers": rows}, indent=2))
        return
    table = [{k: ("-" if v is None else v) for k, v in row.items() if k != "policy"}
             for row in rows]  # fmt: skip
    click.echo(tabulate(table, headers="keys"))


def _load(path: str, servers: Sequence[str]) -> ClientConfig:
    cfg = load(path)
    unknown = [s for s in servers if s not in cfg.servers]
    if unknown:
        raise click.UsageError(f"{path}: no server named {', '.join(unknown)}")
    return cfg


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run with ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    known = (ConfigError, ToolFailed, st.StateError)
    return invoke(cli, argv, prog="cvg-wrap", failure=EXIT_FAILED, known=known)


def run() -> None:
    """The console script."""
    console(main)
