"""``--verify``: run the command under the generated policy and name every gap.

The policy goes to a private temporary file as cvg-validate would write it (YAML, the
reasons as comments), the command runs under ``cvg-run --trace --record``, and each
denial in the record is explained by cvg-explain: its cause and the smallest fix, a
diff of that YAML. So a user sees, before deploying, whether the policy holds for an
input it was not learned from.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Final

import click

from cvg_policy.render import render_yaml
from cvg_schema import Policy
from cvg_schema.errors import SchemaError
from cvg_schema.io import read_as
from cvg_schema.run import RunRecord

__all__ = ["EXIT_GAPS", "EXIT_HOLDS", "NOT_STARTED", "verify_policy"]

EXIT_HOLDS: Final = 0
EXIT_GAPS: Final = 1
# A command that never ran proves nothing about the policy: cvg-run's own status
# (125 not started, 126 not executable, 127 not found) is passed on, never 0.
NOT_STARTED: Final[dict[str, str]] = {
    "not_started": "was not started",
    "not_executable": "could not be executed",
    "not_found": "was not found",
}


def _say(line: str) -> None:
    click.echo(f"cvg-generate: verify: {line}", err=True)


def _cvg_run() -> str:
    beside = Path(sys.executable).parent / "cvg-run"
    if beside.exists():
        return str(beside)
    found = shutil.which("cvg-run")
    if found is None:
        raise FileNotFoundError("cvg-run is not installed")
    return found


def verify_policy(policy: Policy, command: list[str]) -> int:
    """Run ``command`` under ``policy`` traced; report each gap on stderr. 0 when the
    run had no denial, 1 when it had (or could not be verified), cvg-run's 125, 126
    or 127 when the command could not be started at all."""
    from cvg_explain import ExplainError, explain

    private = tempfile.mkdtemp(prefix="cvg-generate-verify-")
    try:
        policy_path = os.path.join(private, "policy.yaml")
        record_path = os.path.join(private, "run.json")
        text = render_yaml(policy)
        with open(policy_path, "w", encoding="utf-8") as f:
            f.write(text)
        try:
            argv = [_cvg_run(), "--trace", "--record", record_path, "-p", policy_path]
        except FileNotFoundError as e:
            _say(f"cannot verify: {e}")
            return EXIT_GAPS
        sys.stdout.flush()
        # The tool's stdout goes to stderr: stdout carries the policy.
        proc = subprocess.run([*argv, "--", *command], stdout=sys.stderr.fileno(), check=False)
        try:
            record = read_as(RunRecord, record_path)
        except (OSError, SchemaError) as e:
            _say(f"cannot verify: cvg-run (exit {proc.returncode}) left no usable record: {e}")
            return EXIT_GAPS
        if record.exit.meaning in NOT_STARTED:
            detail = record.exit.detail if record.exit.meaning == "not_started" else None
            why = f": {detail}" if detail else ""
            _say(
                f"cannot verify: the command could not be started: {command[0]} "
                f"{NOT_STARTED[record.exit.meaning]} (cvg-run exit {record.exit.status}){why}"
            )
            return record.exit.status
        if not record.traced:
            _say(f"cannot verify: the run was not traced (cvg-run exit {proc.returncode})")
            return EXIT_GAPS
        try:
            explanation = explain(record, policy_text=text, policy_path=policy_path)
        except ExplainError as e:
            _say(f"cannot explain the run: {e}")
            return EXIT_GAPS
        status = f"{command[0]} exited {record.exit.status} ({record.exit.meaning})"
        if not explanation.denials:
            _say(f"the policy holds: {status}, nothing was denied")
            return EXIT_HOLDS
        n = len(explanation.denials)
        _say(f"{n} gap{'s' if n != 1 else ''}: {status}")
        for item in explanation.denials:
            d = item.denial
            what = d.path if d.path is not None else (f"port {d.port}" if d.port else "")
            right = f" ({d.right})" if d.right else ""
            _say(f"gap {d.id}: {d.syscall} {what} refused by {d.mechanism}{right}: {item.cause}")
            if item.fix is not None:
                risk = f" (risk {item.risk.level}: {item.risk.text})" if item.risk else ""
                _say(f"fix for {d.id}{risk}:")
                for line in item.fix.rstrip("\n").splitlines():
                    click.echo(f"    {line}", err=True)
            else:
                _say(f"no policy change allows {d.id}")
        return EXIT_GAPS
    finally:
        shutil.rmtree(private, ignore_errors=True)
