"""``cvg-explain``: each denial of a run, its cause, the rule, the smallest fix and its risk."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from typing import Final

import click

from cvg_kernel import seal
from cvg_schema.console import Exit as _Exit
from cvg_schema.console import console, invoke
from cvg_schema.errors import SchemaError
from cvg_schema.io import dumps, loads_as, write_atomic
from cvg_schema.run import RunRecord

from . import __version__
from .explain import ExplainError, explain, plan_fixes, policy_changed, policy_source
from .htmlpage import render_html
from .render import render_text

PROG: Final = "cvg-explain"
EXIT_OK: Final = 0
EXIT_INPUT: Final = 1
EXIT_USAGE: Final = 2
EXIT_UNSEALED: Final = 3

MAX_RECORD_BYTES: Final = 64 << 20
_RUN_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")

_HELP_EPILOG = """\b
Examples:
  cvg-run --trace --record run.json -p p.yaml -- python3 tool.py
  cvg-explain run.json                        the cvg.explanation (JSON; text on a TTY)
  cvg-explain --format text run.json          the same for a person
  cvg-explain --format html run.json > run.html   one page to open in a browser
  cvg-explain --run 20261129T174200Z-1a2b3c4d  a record from cvg-run's state directory
  cvg-explain --apply run.json                show the merged diff, then fix p.yaml
  cd policies && cvg-explain run.json | jq -r '.denials[0].fix' | patch -p0

\b
What a fix is:
  The smallest change to the policy file that allows the denied call, as a unified
  diff of its text (comments kept; patch -p0 in the policy's directory applies it):
  the exact file rather than its directory, the exact port rather than a range,
  ${CWD}, ${SCRATCH} and ${HOME} where the path lies beneath them. Some denials have
  no fix: namespaces, abstract sockets, raw sockets and anything needing root are
  refused whatever the policy says; a failure of the tool's own is not cvg's.

\b
Risk:
  high    a secret, a write to a protected path (~/.bashrc, .git/config, ~/.local/bin,
          cvg's own state: docs/protected-paths.md), a write to a system tree, write
          plus execute together, a directory covering the home, a secret or (for a
          write) a protected path, any network port, UDP or UNIX sockets, a call off
          the seccomp deny list
  medium  another whole directory, one host and port through the network.hosts proxy,
          signals outside the sandbox, large limits
  low     one more file, a modest limit

\b
Exit status:
  0  explained (whether or not there were denials); with --apply, the fixed policy
     was written (or there was nothing to fix)
  1  bad input: a record or policy that cannot be read or is invalid (one line naming
     the file and the JSON path or line); --apply refusing a high-risk fix without
     --accept-risk, or a write to a protected path without --accept-protected naming
     it; a policy file that cannot be written
  2  usage error: a bad option, no record named
  3  --apply refused the record: its seal is missing or does not match this user's
     key, so it cannot be shown to be the one cvg-run wrote (nothing was written)

\b
Authenticity:
  cvg-run seals each record with an HMAC under a key in its state directory, which
  no policy lets a tool read. Explaining works on any record (an unsealed one is
  named as such on stderr); --apply only on a record sealed by this user's cvg-run,
  byte for byte as it was written.
"""


def _err(line: str) -> None:
    click.echo(" ".join(line.split()), err=True)


def _bad(message: str) -> _Exit:
    _err(f"{PROG}: {message}")
    return _Exit(EXIT_INPUT)


def _read_limited(stream: object, name: str) -> bytes:
    read = getattr(stream, "read")  # noqa: B009 - a binary stream of either kind
    data: bytes = read(MAX_RECORD_BYTES + 1)
    if len(data) > MAX_RECORD_BYTES:
        raise _bad(f"{name}: larger than {MAX_RECORD_BYTES >> 20} MiB: not a run record")
    return data


def _load_record(record: str | None, run_id: str | None) -> tuple[RunRecord, str, bool]:
    if run_id is not None:
        if not _RUN_ID.fullmatch(run_id):
            raise _bad(f"--run {run_id!r}: not a run id (letters, digits and _.:-)")
        from cvg_run.record import state_dir

        path: str = os.path.join(state_dir(), f"{run_id}.json")
        if not os.path.exists(path):
            raise _bad(f"--run {run_id}: no record {path}")
        name = path
    else:
        assert record is not None
        path = record
        name = "<stdin>" if record == "-" else record
    try:
        if path == "-":
            data = _read_limited(sys.stdin.buffer, name)
        else:
            if os.path.isdir(path):
                raise _bad(f"{name}: is a directory, not a run record")
            with open(path, "rb") as f:
                data = _read_limited(f, name)
    except OSError as e:
        raise _bad(f"{name}: cannot read: {e.strerror or e}") from None
    try:
        return loads_as(RunRecord, data), name, _sealed(data)
    except SchemaError as e:
        raise _bad(f"{name}: {e}") from None


def _sealed(data: bytes) -> bool:
    """Whether cvg-run wrote ``data`` (its seal matches this user's key)."""
    try:
        key = seal.load_key(create=False)
    except seal.SealError:
        return False
    return seal.unseal_record(key, data)


@click.command(
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog=_HELP_EPILOG,
)
@click.version_option(__version__, "--version", prog_name=PROG, message="%(prog)s %(version)s")
@click.argument("record", metavar="[RECORD|-]", required=False)
@click.option(
    "--run",
    "run_id",
    metavar="ID",
    default=None,
    help="Read the record of run ID from cvg-run's state directory instead of a file.",
)
@click.option(
    "-p",
    "--policy",
    "policy_path",
    metavar="FILE",
    default=None,
    help=(
        "Explain against this policy file instead of the one the record names (needed "
        "when the policy has moved)."
    ),
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["json", "text", "html"]),
    default=None,
    help=(
        "json: a cvg.explanation (the default when stdout is not a terminal); text: for a "
        "person (the default on a terminal); html: one self-contained page (inline CSS, no "
        "script) with the run, each denial and its fix as a diff, and a timeline."
    ),
)
@click.option(
    "--apply",
    is_flag=True,
    help=(
        "Merge every fix into one policy, show its diff on stderr, and write it over the "
        "policy file atomically (or to --out). Refuses fixes rated high unless --accept-risk."
    ),
)
@click.option("--accept-risk", is_flag=True, help="Let --apply write fixes rated high risk.")
@click.option(
    "--accept-protected",
    "accept_protected",
    metavar="PATH",
    multiple=True,
    help=(
        "Let --apply write a fix that makes this protected path writable (~/.bashrc, "
        ".git/config, ...: docs/protected-paths.md), named as the fix writes it "
        "(${HOME}/.bashrc). Repeat for each; --accept-risk alone never applies one."
    ),
)
@click.option(
    "-o",
    "--out",
    metavar="FILE",
    default=None,
    help=(
        "Where --apply writes the fixed policy (default: the policy file itself; required "
        "when the run used the embedded default policy)."
    ),
)
def cli(
    record: str | None,
    run_id: str | None,
    policy_path: str | None,
    fmt: str | None,
    apply: bool,
    accept_risk: bool,
    accept_protected: tuple[str, ...],
    out: str | None,
) -> int:
    """Explain each denial of a cvg run: the cause in one sentence, the policy rule
    involved, the smallest fix as a unified diff of the policy file, and its risk.

    Reads a cvg.run record (from cvg-run --trace --record FILE) from RECORD, from stdin
    when RECORD is -, or from cvg-run's state directory with --run ID. The policy is the
    file the record names (-p to use another), or cvg-run's embedded default policy
    when the run used none. Writes a cvg.explanation on stdout.
    """
    if record is not None and run_id is not None:
        raise click.UsageError("give a RECORD file or --run ID, not both")
    if record is None and run_id is None:
        raise click.UsageError("name the run record: a file, - for stdin, or --run ID")
    if out is not None and not apply:
        raise click.UsageError("--out only makes sense with --apply")
    if accept_risk and not apply:
        raise click.UsageError("--accept-risk only makes sense with --apply")
    if accept_protected and not apply:
        raise click.UsageError("--accept-protected only makes sense with --apply")
    run_record, name, sealed = _load_record(record, run_id)
    if not sealed:
        if apply:
            _err(
                f"{PROG}: {name}: refusing --apply: the record is not sealed by this user's "
                "cvg-run (its seal is missing or does not match), so its denials may be forged"
            )
            raise _Exit(EXIT_UNSEALED)
        _err(f"{PROG}: warning: {name}: unauthenticated record (not sealed by this user's cvg-run)")
    try:
        explanation = explain(run_record, policy_path=policy_path)
        source = policy_source(run_record, policy_path=policy_path)
    except ExplainError as e:
        raise _bad(str(e)) from None
    if policy_changed(run_record, source):
        _err(
            f"{PROG}: warning: {source.path or source.name} is not the policy run "
            f"{run_record.run_id} used (its digest differs): explaining against it as it is now"
        )
    explanation.record = name if name != "<stdin>" else None
    if fmt is None:
        fmt = "text" if sys.stdout.isatty() else "json"
    if fmt == "text":
        click.echo(render_text(explanation, name), nl=False)
    elif fmt == "html":
        shown = name if name != "<stdin>" else None
        click.echo(render_html(explanation, run_record, shown), nl=False)
    else:
        click.echo(dumps(explanation, pretty=True).decode("utf-8"), nl=False)
    if apply:
        _apply(run_record, policy_path, out, accept_risk, frozenset(accept_protected))
    return EXIT_OK


def _apply(
    record: RunRecord,
    policy_path: str | None,
    out: str | None,
    accept: bool,
    accepted_paths: frozenset[str],
) -> None:
    try:
        fixes = plan_fixes(record, policy_path=policy_path)
    except ExplainError as e:
        raise _bad(str(e)) from None
    if not fixes.changes:
        _err(f"{PROG}: nothing to apply: no denial has a policy fix")
        return
    target = out or fixes.source.path
    if target is None:
        raise _bad(
            "the run used the embedded default policy: name the file to write with --out FILE"
        )
    click.echo(fixes.diff, nl=False, err=True)
    refused = {p: why for p, why in fixes.protected.items() if p not in accepted_paths}
    if refused:
        for path, why in refused.items():
            _err(f"{PROG}: protected: filesystem.write {path}: {why}")
        names = " ".join(f"--accept-protected {p}" for p in refused)
        raise _bad(
            f"refusing to write {target}: {len(refused)} fix{'es' if len(refused) != 1 else ''} "
            f"would make a protected path writable; give {names} to apply them anyway"
        )
    high = [
        line
        for line in fixes.high_risks
        if not any(line.startswith(f"filesystem.write {p!r}:") for p in fixes.protected)
    ]
    if high and not accept:
        for line in high:
            _err(f"{PROG}: high risk: {line}")
        raise _bad(
            f"refusing to write {target}: {len(high)} fix{'es' if len(high) != 1 else ''} "
            "rated high risk; give --accept-risk to apply them anyway"
        )
    try:
        write_atomic(target, fixes.new_text.encode("utf-8"))
    except OSError as e:
        raise _bad(f"{target}: cannot write: {e.strerror or e}") from None
    _err(f"{PROG}: wrote {target} ({len(fixes.changes)} change(s))")


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``cvg-explain`` with ``argv`` (default: ``sys.argv[1:]``); return the status.

    Never raises: usage errors are status 2, bad input status 1, each one line on stderr.
    """
    return invoke(cli, argv, prog=PROG, failure=EXIT_INPUT)


def run() -> None:
    """The console script."""
    console(main)
