"""``cvg-schema``: show, check and export the JSON Schemas of cvg messages.

``main(argv)`` runs the command line and returns the exit status, so tests call it
directly; ``run()`` is the console script.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from . import __version__
from .base import CURRENT_MINOR, SCHEMA_VERSION, SUPPORTED_MAJOR, parse_version
from .console import console
from .errors import SchemaError
from .io import KINDS, loads, model_for, read_bytes, schema_bytes, write_atomic

__all__ = ["cli", "main", "run"]

PROG = "cvg-schema"
EXIT_OK = 0
EXIT_INVALID = 1
EXIT_USAGE = 2

_KIND_LIST = ", ".join(k.removeprefix("cvg.") for k in KINDS)


def _err(line: str) -> None:
    click.echo(" ".join(line.split()), err=True)


def _display(path: str) -> str:
    return "<stdin>" if path == "-" else path


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "--version", prog_name=PROG, message="%(prog)s %(version)s")
def cli() -> None:
    """Show, check and export the JSON Schemas of cvg messages.

    Every cvg tool reads and writes one JSON message with a "kind" and a
    "schema_version" (MAJOR.MINOR, now 1.0). A reader refuses another major version
    and accepts a newer minor, ignoring the fields it does not know.

    \b
    Kinds: facts, policy, plan, observation, run, explanation
    (written "cvg.plan" in a message; "plan" is enough on this command line).

    \b
    Examples:
      cvg-schema show plan                  print the JSON Schema of cvg.plan
      cvg-schema check run.json             is this a valid message? (exit 0 / 1)
      cvg-probe | cvg-schema check          check a message on stdin
      cvg-schema export schemas/ --check    fail if committed schemas drifted

    \b
    Exit status: 0 ok; 1 invalid message or drifted schemas; 2 usage error
    (including a file that cannot be read).
    """


@cli.command()
@click.argument("kind", metavar="KIND")
def show(kind: str) -> int:
    """Print the JSON Schema of KIND (draft 2020-12).

    KIND is one of facts, policy, plan, observation, run, explanation, with or
    without the "cvg." prefix. The schema is the current minor version exactly: its
    objects refuse unknown fields, and every field carries its meaning as a
    "description".

    \b
    Examples:
      cvg-schema show plan
      cvg-schema show cvg.run | jq '.properties.exit'
    """
    try:
        model = model_for(kind)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="KIND") from None
    click.echo(schema_bytes(model.kind_name()).decode(), nl=False)
    return EXIT_OK


@cli.command()
@click.argument("file", metavar="[FILE|-]", default="-", required=False)
def check(file: str) -> int:
    """Validate one message of any kind from FILE, or stdin when FILE is - or omitted.

    Prints "ok: KIND VERSION" and exits 0 when the message is valid. Otherwise it
    prints one line on stderr naming the file and the first problem by its JSON path,
    and exits 1; a file that cannot be read exits 2.

    \b
    Examples:
      cvg-schema check plan.json
        ok: cvg.plan 1.0
      echo '{"kind": "cvg.plan", "schema_version": "2.0"}' | cvg-schema check
        <stdin>: $.schema_version: cvg.plan schema_version 2.0 is not supported
        (this reader understands 1.x)
    """
    name = _display(file)
    try:
        data = read_bytes(file)
    except OSError as e:
        _err(f"{PROG}: {name}: {e.strerror or e}")
        return EXIT_USAGE
    try:
        msg = loads(data)
    except SchemaError as e:
        _err(f"{name}: {e}")
        return EXIT_INVALID
    line = f"ok: {msg.kind} {msg.schema_version}"
    if (parse_version(msg.schema_version) or (0, 0)) > (SUPPORTED_MAJOR, CURRENT_MINOR):
        line += f" (newer than this reader's {SCHEMA_VERSION}: unknown fields were ignored)"
    click.echo(line)
    return EXIT_OK


def _expected_files() -> dict[str, bytes]:
    return {f"{kind}.schema.json": schema_bytes(kind) for kind in KINDS}


def _stale_files(directory: Path, expected: dict[str, bytes]) -> list[Path]:
    if not directory.is_dir():
        return []
    return sorted(
        p for p in directory.glob("cvg.*.schema.json") if p.name not in expected and p.is_file()
    )


@cli.command()
@click.argument("directory", metavar="DIR")
@click.option(
    "--check",
    "check_only",
    is_flag=True,
    help="Write nothing; exit 1 listing every file that differs, is missing or is stale.",
)
def export(directory: str, check_only: bool) -> int:
    """Write the JSON Schema of every kind into DIR as KIND.schema.json.

    One file per kind (cvg.facts.schema.json, cvg.plan.schema.json, ...), indented,
    with sorted keys and a final newline, so the output is stable and diffs are
    readable. Files are replaced atomically, and an old cvg.*.schema.json for a kind
    that no longer exists is removed. DIR is created if needed.

    With --check nothing is written: the command exits 1 and lists each drifted file
    on stderr when the schemas in DIR are not exactly what this version exports.

    \b
    Examples:
      cvg-schema export packages/cvg-schema/schemas
      cvg-schema export packages/cvg-schema/schemas --check
    """
    root = Path(directory)
    if root.exists() and not root.is_dir():
        raise click.BadParameter(f"{directory} is not a directory", param_hint="DIR")
    expected = _expected_files()
    if check_only:
        return _check_export(root, expected)
    try:
        root.mkdir(parents=True, exist_ok=True)
        written = []
        for name, content in expected.items():
            target = root / name
            if not (target.is_file() and target.read_bytes() == content):
                write_atomic(target, content)
                written.append(target)
        removed = _stale_files(root, expected)
        for stale in removed:
            stale.unlink()
    except OSError as e:
        _err(f"{PROG}: {e.filename or directory}: {e.strerror or e}")
        return EXIT_INVALID
    for target in written:
        click.echo(f"wrote {target}")
    for stale in removed:
        click.echo(f"removed {stale}")
    click.echo(f"ok: {len(expected)} schemas in {root}, {len(written)} updated")
    return EXIT_OK


def _check_export(root: Path, expected: dict[str, bytes]) -> int:
    drifted: list[str] = []
    for name, content in expected.items():
        target = root / name
        try:
            current = target.read_bytes()
        except FileNotFoundError:
            drifted.append(f"{target}: missing")
            continue
        except OSError as e:
            drifted.append(f"{target}: cannot read ({e.strerror or e})")
            continue
        if current != content:
            drifted.append(f"{target}: differs")
    for stale in _stale_files(root, expected):
        drifted.append(f"{stale}: stale (no such kind)")
    if drifted:
        for line in drifted:
            _err(line)
        _err(f"{PROG}: {len(drifted)} schema file(s) out of date; run: {PROG} export {root}")
        return EXIT_INVALID
    click.echo(f"ok: {len(expected)} schemas in {root} are up to date")
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    """Run ``cvg-schema`` with ``argv`` (default: ``sys.argv[1:]``); return the exit status.

    Never raises for bad input: a usage error is one line on stderr and status 2.
    """
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        rv = cli.main(args=args, prog_name=PROG, standalone_mode=False)
    except click.UsageError as e:
        where = e.ctx.command_path if e.ctx is not None else PROG
        if not args and e.ctx is not None:
            click.echo(e.ctx.get_help(), err=True)
            return EXIT_USAGE
        _err(f"{where}: {e.format_message()} (see '{where} --help')")
        return EXIT_USAGE
    except click.ClickException as e:
        _err(f"{PROG}: {e.format_message()}")
        return e.exit_code
    except click.Abort:
        _err(f"{PROG}: aborted")
        return EXIT_INVALID
    return rv if isinstance(rv, int) else EXIT_OK


def run() -> None:
    """The console script."""
    console(main)
