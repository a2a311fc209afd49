"""``cvg-validate``: check a policy, write it back reviewable, explain or compile it.

``main(argv)`` runs the command line and returns the exit status, so tests call it
directly; ``run()`` is the console script.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import click

from cvg_schema import Facts
from cvg_schema.console import EXIT_USAGE, Exit, console, invoke
from cvg_schema.errors import SchemaError
from cvg_schema.io import dumps, loads_as, write_atomic

from . import __version__
from .checks import check, errors
from .errors import Finding, PolicyError
from .load import STDIN_NAME, LoadedPolicy, load_policy, read_policy_file
from .render import render_json, render_yaml
from .variables import context

if TYPE_CHECKING:
    from .explain import Report

__all__ = ["EXIT_INVALID", "EXIT_OK", "EXIT_USAGE", "cli", "main", "run"]

PROG: Final = "cvg-validate"
EXIT_OK: Final = 0
EXIT_INVALID: Final = 1


def _err(line: str) -> None:
    click.echo(" ".join(line.split()), err=True)


def _usage(message: str) -> Exit:
    _err(f"{PROG}: {message} (see '{PROG} --help')")
    return Exit(EXIT_USAGE)


def _display(path: str) -> str:
    return STDIN_NAME if path == "-" else path


def _read(path: str, what: str) -> bytes:
    """The bytes of a file or stdin; a usage error (exit 2) when it cannot be read."""
    try:
        if path == "-" and sys.stdin is not None and _isatty(sys.stdin):
            raise _usage(f"no {what} given: name a file, or pipe one on stdin")
        return read_policy_file(path)
    except IsADirectoryError:
        raise _usage(f"{path}: is a directory, not a {what} file") from None
    except FileNotFoundError:
        raise _usage(f"{path}: no such file") from None
    except OSError as e:
        raise _usage(f"{_display(path)}: cannot read: {e.strerror or e}") from None


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def _load_facts(path: str) -> Facts:
    data = _read(path, "facts")
    try:
        return loads_as(Facts, data)
    except SchemaError as e:
        _err(f"{_display(path)}: facts: {e}")
        raise Exit(EXIT_INVALID) from None


def _probe() -> Facts:
    from cvg_probe import probe

    try:
        facts = probe()
    except Exception as e:  # noqa: BLE001 - probing failed, whatever the reason: said in one line
        _err(f"{PROG}: probing this kernel failed: {e} (pass --facts FILE from cvg-probe)")
        raise Exit(EXIT_INVALID) from None
    if not isinstance(facts, Facts):  # pragma: no cover - a contract check
        raise TypeError(f"cvg_probe.probe() returned {type(facts).__name__}, not Facts")
    return facts


def _sort_key(f: Finding) -> tuple[int, int]:
    return (f.line or 0, 0 if f.severity == "error" else 1)


def _report(findings: list[Finding], quiet: bool) -> None:
    shown = errors(findings) if quiet else findings
    for f in sorted(shown, key=_sort_key):
        _err(str(f))


def _explain_output(
    loaded: LoadedPolicy,
    facts: Facts,
    variables: Mapping[str, str],
    fmt: str,
    accept_risk: bool = False,
) -> str:
    from .explain import explain_policy, report_dict

    report = explain_policy(
        loaded.policy,
        facts=facts,
        variables=variables,
        policy_path=_policy_path(loaded),
        accept_risk=accept_risk,
    )
    if fmt == "json":
        return json.dumps(report_dict(report), indent=2, ensure_ascii=False) + "\n"
    return _explain_table(loaded, report)


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _rule_value(loaded: LoadedPolicy, address: str) -> str:
    try:
        value = loaded.policy.rule(address)
    except (KeyError, ValueError, AttributeError):
        return ""
    is_json = isinstance(value, list | dict)
    text = json.dumps(value, ensure_ascii=False) if is_json else _cell(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _explain_table(loaded: LoadedPolicy, report: Report) -> str:
    from tabulate import tabulate

    rows = []
    counts: dict[str, int] = {}
    for r in report.rules:
        counts[r.status] = counts.get(r.status, 0) + 1
        held = r.lost or "-"
        if r.note:
            held = f"{held} (note: {r.note})" if r.lost else f"note: {r.note}"
        rows.append(
            [
                r.address,
                _rule_value(loaded, r.address),
                r.status,
                r.mechanism.replace("+", " + "),  # so the column wraps between rights
                _cell(r.abi),
                held,
            ]
        )
    summary = ", ".join(f"{n} {status}" for status, n in counts.items())
    head = (
        f"{loaded.filename} on {report.kernel} ({report.arch}), Landlock ABI {report.abi}: "
        f"{summary or 'no rules'}"
    )
    table = tabulate(
        rows,
        headers=["rule", "value", "status", "mechanism", "abi", "what does not hold here"],
        tablefmt="simple",
        maxcolwidths=[None, 24, None, 36, None, 60],
    )
    out = [head, "", table]
    if report.standing_limits:
        out += ["", "Known limits on any kernel:"]
        out += [f"  - {limit.topic}: {limit.reason}" for limit in report.standing_limits]
    return "\n".join(out) + "\n"


def _replay_fails(loaded: LoadedPolicy, paths: tuple[str, ...]) -> bool:
    """Print each observed call the policy would refuse; True when there was one."""
    from cvg_schema import Observation

    from .replay import replay

    failed = False
    for path in paths:
        if path == "-":
            raise _usage("--replay -: name the observation file (stdin is the policy's)")
        try:
            with open(path, "rb") as f:
                observation = loads_as(Observation, f.read())
        except OSError as e:
            raise _usage(f"--replay {path}: cannot read: {e.strerror or e}") from None
        except SchemaError as e:
            raise _usage(f"--replay {path}: not a cvg.observation: {e}") from None
        try:
            refused = replay(loaded.policy, observation)
        except PolicyError as e:
            _err(f"{loaded.filename}: --replay {path}: {e}")
            return True
        for r in refused:
            _err(f"{loaded.filename}: refuses its own session: {_display(path)}: {r.line()}")
        failed = failed or bool(refused)
    return failed


def _policy_path(loaded: LoadedPolicy) -> str | None:
    return None if loaded.filename == STDIN_NAME else os.path.abspath(loaded.filename)


def _compile_output(
    loaded: LoadedPolicy, facts: Facts, variables: Mapping[str, str], accept_risk: bool = False
) -> str:
    from .compile import compile_policy

    plan = compile_policy(
        loaded.policy,
        variables=variables,
        facts=facts,
        policy_path=_policy_path(loaded),
        accept_risk=accept_risk,
    )
    return dumps(plan, pretty=True).decode("utf-8")


_HELP_EPILOG = """\b
Pipelines:
  cvg-observe -- python3 tool.py | cvg-generate | cvg-validate > p.yaml
  cvg-validate p.yaml                      check a policy (nothing on stderr: fine)
  cvg-validate --strict -q p.yaml          missing paths are errors; no warnings
  cvg-probe | cvg-validate --explain --facts - p.yaml
  cvg-validate --compile p.yaml > plan.json; cvg-exec --plan plan.json -- CMD

\b
Example:
  $ printf 'version: 1\\nfilesystem:\\n  write: [/etc]\\n' > p.yaml
  $ cvg-validate -o p.yaml p.yaml
  p.yaml:3: filesystem.write[0]: warning: writes /etc as a whole: ...

\b
Exit status:
  0  the policy is valid (warnings allowed); the output was written
  1  the policy is invalid (one line per problem on stderr, FILE:LINE: KEY: ...),
     the facts are invalid, the policy cannot be compiled, or an internal error
  2  usage error: a bad option, a missing or unreadable file, a directory,
     --facts - together with a policy on stdin, an output file that cannot be written
"""


@click.command(
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog=_HELP_EPILOG,
)
@click.version_option(__version__, "--version", prog_name=PROG, message="%(prog)s %(version)s")
@click.argument("policy", metavar="[POLICY|-]", default="-", required=False)
@click.option("--strict", is_flag=True, help="A granted path that does not exist here is an error.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["yaml", "json"]),
    default=None,
    help=(
        "Output format. yaml (default): the policy with reasons as comments. json: a "
        "cvg.policy message with reasons, or the --explain report as JSON."
    ),
)
@click.option(
    "--explain",
    is_flag=True,
    help="Print how this kernel enforces each rule (a table, or JSON with --format json).",
)
@click.option("--compile", "compile_", is_flag=True, help="Print the compiled cvg.plan (JSON).")
@click.option(
    "--facts",
    "facts_path",
    metavar="FILE|-",
    default=None,
    help=(
        "cvg.facts from cvg-probe (- for stdin): the kernel --explain and --compile target "
        "(default: probe this one now); also the arch and Landlock ABI the checks assume."
    ),
)
@click.option(
    "--cwd",
    metavar="DIR",
    type=click.Path(exists=True, file_okay=False, dir_okay=True),
    default=None,
    help="The directory ${CWD} stands for (default: the current one).",
)
@click.option(
    "-o",
    "--output",
    metavar="FILE",
    default=None,
    help="Write the output to FILE atomically (untouched when the policy is invalid); - is stdout.",
)
@click.option("-q", "--quiet", is_flag=True, help="Print errors only, no warnings.")
@click.option(
    "--replay",
    "replays",
    metavar="OBSERVATION",
    multiple=True,
    help=(
        "A cvg.observation (repeatable): each call in it that succeeded is judged against "
        "the policy, compiled for that session's working directory and home; a call the "
        "policy would refuse is an error (the policy fails its own session). Nothing is "
        "run again: replaying for real would repeat the session's writes."
    ),
)
@click.option(
    "--accept-risk",
    is_flag=True,
    help=(
        "In syscalls allowlist mode, let listed calls of the default deny list (ptrace, "
        "mount, bpf...) through in the --compile'd plan; each is still a warning. "
        "Without it they stay denied."
    ),
)
def cli(
    policy: str,
    strict: bool,
    fmt: str | None,
    explain: bool,
    compile_: bool,
    facts_path: str | None,
    cwd: str | None,
    output: str | None,
    quiet: bool,
    replays: tuple[str, ...],
    accept_risk: bool,
) -> int:
    """Validate a cvg policy and write it back as clean, reviewable YAML.

    Reads POLICY (YAML or JSON; a bare policy with "version: 1" or a cvg.policy message
    from cvg-generate) from a file, or from stdin when POLICY is - or omitted. Checks it
    against the schema, then beyond it: variables (${CWD}, ${SCRATCH}, ${HOME},
    ${POLICY_DIR}, ${PYTHON}, ${PYTHON_STDLIB}), paths that do not exist here, syscall
    names, and risky grants (writing /etc or ${HOME}, the docker or ssh-agent socket,
    write plus execute on one tree, syscalls off the deny list, exfiltration ports, unix
    sockets). Each problem is one line on stderr, FILE:LINE: KEY: ..., warnings marked
    "warning:".

    A valid policy is written to stdout (or -o FILE) in the order of the policy format,
    each generated rule's reasons as comments above it ("# e12: openat ... (read)").
    With --explain, the per-rule enforcement on this kernel instead; with --compile,
    the plan cvg-exec and cvg-run apply.
    """
    if explain and compile_:
        raise _usage("--explain and --compile are exclusive: choose one")
    if compile_ and fmt == "yaml":
        raise _usage("--compile writes JSON only (drop --format yaml)")
    if facts_path == "-" and policy == "-":
        raise _usage("--facts - and the policy cannot both come from stdin: name the policy file")
    if output not in (None, "-") and os.path.isdir(output):
        raise _usage(f"{output}: is a directory, not an output file")
    data = _read(policy, "policy")
    facts = _load_facts(facts_path) if facts_path is not None else None

    filename = _display(policy)
    try:
        loaded = load_policy(data, filename=filename)
    except PolicyError as e:
        for problem in e.problems:
            _err(str(problem))
        return EXIT_INVALID
    variables = context(cwd=os.path.abspath(cwd) if cwd else None, policy_dir=loaded.policy_dir)
    findings = check(
        loaded,
        variables=variables,
        strict=strict,
        arch=facts.arch if facts is not None else None,
        abi=facts.effective_landlock_abi if facts is not None else None,
        accept_risk=accept_risk,
    )
    _report(findings, quiet)
    if errors(findings):
        return EXIT_INVALID
    if replays and _replay_fails(loaded, replays):
        return EXIT_INVALID

    if explain or compile_:
        if facts is None:
            facts = _probe()
        try:
            if explain:
                text = _explain_output(loaded, facts, variables, fmt or "table", accept_risk)
            else:
                text = _compile_output(loaded, facts, variables, accept_risk)
        except PolicyError as e:
            if e.file is None:
                e.file = loaded.filename
                if e.address and e.line is None:
                    e.line = loaded.line_of(e.address)
            _err(str(e))
            return EXIT_INVALID
    elif fmt == "json":
        text = render_json(loaded.policy)
    else:
        text = render_yaml(loaded.policy)

    if output is None or output == "-":
        click.echo(text, nl=False)
        return EXIT_OK
    try:
        write_atomic(output, text.encode("utf-8"))
    except OSError as e:
        raise _usage(f"{output}: cannot write: {e.strerror or e}") from None
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    """Run ``cvg-validate`` with ``argv`` (default: ``sys.argv[1:]``); return the status.

    Never raises: a usage error is one line and status 2, an invalid policy one line per
    problem (every one the schema or the checks found, in the file's order) and status
    1, an unexpected exception one ``internal error`` line and 1.
    """
    return invoke(cli, argv, prog=PROG, failure=EXIT_INVALID)


def run() -> None:
    """The console script."""
    console(main)
