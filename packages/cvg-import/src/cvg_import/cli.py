"""The ``cvg-import`` command."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

from cvg_schema import Observation, SchemaError, digest_bytes, dumps, loads_as, write_atomic
from cvg_schema.console import console, invoke

from . import __version__
from .errors import ImportRefused, one_line
from .importer import Baseline, import_divergence
from .report import MAX_REPORT_BYTES, RAW_SCHEMA

EXIT_REFUSED = 1
EXIT_USAGE = 2

_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class Refused(Exception):
    """A refusal already worded for the user (one line, file name first)."""


@click.group(
    context_settings=_SETTINGS,
    epilog="""\b
Exit status:
  0  the observation was written
  1  the input was refused (not a Divergence report, an unknown major version,
     not JSON, a bad baseline, a file that cannot be read): one line on stderr
  2  a usage error
""",
)
@click.version_option(__version__, "-V", "--version", prog_name="cvg-import")
def cli() -> None:
    """Turn a foreign tool's report into a partial cvg.observation.

    The observation goes to cvg-generate like one from cvg-observe, so a policy can be
    written without ever running the tool unconfined. It is partial: it holds only
    what the foreign tool reported, and says in its notes what that leaves out.
    """


@cli.command(
    context_settings=_SETTINGS,
    epilog=f"""\b
Examples:
  cvg-observe -- python3 -c pass > runtime.json
  cvg-import divergence report.json --baseline runtime.json | cvg-generate | cvg-validate > p.yaml
  divergence --allow-partial scan --dynamic --json ./tool | cvg-import divergence -
  cvg-import divergence report.json --artifact-root /srv/tools/foo --out obs.json

\b
Accepted: the runner's report ("schema": "{RAW_SCHEMA}", a newer minor too) and
the divergence CLI's JSON (targets[].dynamic); at most {MAX_REPORT_BYTES // 2**20} MiB.

\b
Each event keeps Divergence's own record in "source" (capability, syscall, target,
result, decoy) and says whether it must never become a grant
(source.never_grant: "decoy", "secret" or "failed"); such events stay, marked, for
review and never for a grant.
""",
)
@click.argument("report", type=click.Path(dir_okay=False, allow_dash=True), metavar="REPORT")
@click.option(
    "--baseline",
    "-b",
    type=click.Path(dir_okay=False, allow_dash=True),
    default=None,
    metavar="OBS.json",
    help="A cvg.observation of the bare runtime (cvg-observe -- python3 -c pass) to "
    "merge: Divergence leaves out the runtime's own reads. Its events are appended, "
    "marked source.origin=baseline.",
)
@click.option(
    "--artifact-root",
    "root",
    default=None,
    metavar="DIR",
    help="The tool's working directory when Divergence ran it (its artifact directory, "
    "as the report names it). It becomes the observation's cwd: relative paths are "
    "resolved against it, and paths beneath it become ${CWD} in a policy. Without it "
    "relative paths stay as reported, flagged unresolved. An absolute targets[].source "
    "in the CLI's JSON is taken as the root.",
)
@click.option(
    "--target",
    "target",
    default=None,
    metavar="NAME",
    help="Which target of the CLI's JSON to import (by name or source), when it has several.",
)
@click.option(
    "--out",
    "-o",
    "out",
    type=click.Path(dir_okay=False, allow_dash=True),
    default=None,
    metavar="FILE",
    help="Write the observation to FILE, atomically, instead of stdout.",
)
@click.option("--pretty", is_flag=True, help="Indent the JSON for people.")
def divergence(
    report: str,
    baseline: str | None,
    root: str | None,
    target: str | None,
    out: str | None,
    pretty: bool,
) -> None:
    """Import a Divergence dynamic report (REPORT, or - for stdin).

    Every observation becomes one event, in report order: fs_read, fs_write, fs_delete
    and secrets_read become read, write and remove of the path; proc_spawn (execve)
    becomes execute; net_outbound and net_listen become connect and bind with the port
    (the address is an IP, not a host, and Divergence loses IPv6 addresses).

    Divergence's temporary overlay becomes the observation's home and scratch, and the
    artifact root its cwd, so cvg-generate writes ${HOME}, ${SCRATCH} and ${CWD} for
    paths beneath them (each event shows that form in source.policy_path). A planted
    decoy, a secret path (by pattern, whatever capability it came as) and a failed
    attempt are never to be granted.

    The observation is partial: Divergence leaves out the runtime's own reads and most
    failed operations, and has no host names, IPv6 addresses, socket types or loaders.
    Its notes say what is missing; merge a --baseline for the runtime.
    """
    if report == "-" and baseline == "-":
        raise click.UsageError("REPORT and --baseline cannot both be stdin")
    data = _read(report, limit=MAX_REPORT_BYTES)
    base: Baseline | None = None
    if baseline is not None:
        raw = _read(baseline)
        try:
            base = Baseline(loads_as(Observation, raw), _name(baseline), digest_bytes(raw))
        except SchemaError as e:
            raise Refused(f"{_name(baseline)}: not a cvg.observation: {e}") from None
    try:
        obs = import_divergence(data, root=root, target=target, name=_name(report), baseline=base)
    except ImportRefused as e:
        where = "" if e.where.startswith("--") else _name(report) + ": "
        raise Refused(f"{where}{e}") from None
    payload = dumps(obs, pretty=pretty)
    if out is None or out == "-":
        sys.stdout.buffer.write(payload) if hasattr(sys.stdout, "buffer") else sys.stdout.write(
            payload.decode("utf-8")
        )
        sys.stdout.flush()
    else:
        write_atomic(out, payload)
    for note in obs.notes:
        if "never become grants" in note or "could not be placed" in note:
            click.echo(f"cvg-import: note: {note}", err=True)


def _name(path: str) -> str:
    return "<stdin>" if path == "-" else one_line(click.format_filename(path))


def _read(path: str, limit: int | None = None) -> bytes:
    try:
        if path == "-":
            stream = sys.stdin.buffer
            return stream.read() if limit is None else stream.read(limit + 1)
        with open(path, "rb") as f:
            return f.read() if limit is None else f.read(limit + 1)
    except OSError as e:
        raise Refused(f"{_name(path)}: cannot read: {e.strerror or e}") from None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command with ``argv`` (default: ``sys.argv[1:]``); return the exit status."""
    return invoke(cli, argv, prog="cvg-import", failure=EXIT_REFUSED, known=(Refused,))


def run() -> None:
    """The console-script entry point."""
    console(main)
