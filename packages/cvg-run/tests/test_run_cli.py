"""The real `cvg-run` console script, run as a subprocess (as root)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from runhelp import CVG_RUN, Box, load_record, make_policy, only_record, run_cli


@pytest.fixture(autouse=True)
def _needs_root(as_root: None) -> None:
    """Subprocesses of pytest's python can only run as the user running pytest."""


def test_console_script_exists() -> None:
    assert CVG_RUN.is_file() and os.access(CVG_RUN, os.X_OK)


def test_readme_first_command_prints_1(box: Box) -> None:
    """`uv run cvg-run -- python3 -c 'print(1)'`, from a fresh directory."""
    done = run_cli(["--", "python3", "-c", "print(1)"], box=box, cwd=box.cwd)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"1\n", b"")
    _, rec = only_record(box)
    assert rec.exit.meaning == "exited" and rec.cwd == str(box.cwd)


def test_help(box: Box) -> None:
    done = run_cli(["--help"], box=box)
    assert done.returncode == 0
    text = done.stdout.decode()
    for status in ("124", "125", "126", "127", "128+N"):
        assert status in text


@pytest.mark.parametrize(
    ("argv", "message"),
    [([], "no command given"), (["--"], "no command given")],
)  # fmt: skip
def test_usage_errors_are_2(box: Box, argv: list[str], message: str) -> None:
    done = run_cli(argv, box=box)
    assert done.returncode == 2
    assert done.stdout == b""
    assert message in done.stderr.decode()
    assert box.records() == []


def test_unknown_option_is_2(box: Box) -> None:
    done = run_cli(["--no-such-option", "--", "true"], box=box)
    assert done.returncode == 2
    assert b"Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("argv", "status"),
    [(["--", "sh", "-c", "exit 9"], 9), (["--", "sh", "-c", "kill -USR2 $$"], 140),
     (["--", "no-such-command-cvg"], 127), (["--", "/etc/hostname"], 126)],
)  # fmt: skip
def test_console_script_exit_status(box: Box, argv: list[str], status: int) -> None:
    done = run_cli(argv, box=box)
    assert done.returncode == status, done.stderr
    _, rec = only_record(box)
    assert rec.exit.status == status


def test_console_script_bad_policy(box: Box) -> None:
    bad = box.share / "p.yaml"
    bad.write_text("version: 1\nnetwork: {tcp_connect: [70000]}\n")
    done = run_cli(["-p", str(bad), "--", "true"], box=box)
    assert done.returncode == 125
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cvg-run: "), lines


def test_console_script_wall_clock_and_record(box: Box) -> None:
    policy = make_policy(box.share, resources={"wall_clock_seconds": 1})
    target = box.share / "r.json"
    done = run_cli(["-p", str(policy), "--record", str(target), "--", "sleep", "30"], box=box)
    assert done.returncode == 124
    _, rec = load_record(target)
    assert rec.exit.meaning == "wall_clock"


COMMANDS_DOC = Path(__file__).resolve().parents[3] / "docs" / "commands.md"


@pytest.mark.parametrize(
    "argv",
    [[], ["--no-such-option", "--", "true"], ["--cwd", "/no/such/dir", "--", "true"]],
)
def test_every_usage_error_is_a_documented_2(box: Box, argv: list[str]) -> None:
    done = run_cli(argv, box=box)
    assert done.returncode == 2 and len(done.stderr.decode().splitlines()) == 1, done.stderr
    assert box.records() == []
    help_text = run_cli(["--help"], box=box).stdout.decode()
    statuses = help_text[help_text.index("exit status:") :]
    assert re.search(r"^  2 +usage error", statuses, re.MULTILINE), statuses
    row = next(
        x for x in COMMANDS_DOC.read_text().splitlines() if x.startswith("| `cvg-run` | runs")
    )
    assert "; 2 usage |" in row, row


def test_a_record_in_a_missing_directory_is_refused_before_the_run(box: Box) -> None:
    missing = box.share / "no" / "such"
    marker = box.share / "ran"
    done = run_cli(
        ["--record", str(missing / "r.json"), "--", "touch", str(marker)], box=box, cwd=box.cwd
    )
    err = done.stderr.decode()
    assert done.returncode == 2 and err.splitlines() == [
        f"cvg-run: --record {missing / 'r.json'}: no such directory {missing}"
    ], err
    assert not (box.share / "no").exists()  # no directory made
    assert not marker.exists()  # and the tool never ran
    help_text = run_cli(["--help"], box=box).stdout.decode()
    assert "a --record whose directory does not exist" in " ".join(help_text.split())
