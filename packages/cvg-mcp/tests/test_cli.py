"""cvg-mcp's command line: usage errors are one line and exit 2; --help teaches."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cvg_mcp.cli import main
from cvg_mcp.stdio import BAD_LINES_PER_SECOND, BadInput


@pytest.mark.parametrize(
    "argv, says",
    [
        (["--policies", "/no/such/dir"], "--policies /no/such/dir: not a directory"),
        ([], "Missing option '--policies'"),
        (["--policies", "/", "--http", "0"], "--http"),
        (["--policies", "/", "--cwd", "/no/such/dir"], "--cwd /no/such/dir: not a directory"),
        (["--policies", "/", "--max-output", "10"], "--max-output"),
    ],
)
def test_usage_errors(argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and says in err and len(err.strip().splitlines()) == 1, err


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for word in ("--policies", "--allow-inline-policy", "--allow-observe", "--http", "mcpServers"):
        assert word in out


MAIN = "import sys; from cvg_mcp.cli import main; sys.exit(main(sys.argv[1:]))"
NUMERIC = {
    "--max-output": ["nan", "inf", "-1", "-inf", "1e3", str(10**30)],
    "--http": ["nan", "inf", "-1", "99999", str(10**30)],
}


@pytest.mark.parametrize("option, value", [(o, v) for o, values in NUMERIC.items() for v in values])
def test_every_numeric_option_refuses_nan_inf_negative_and_huge(option: str, value: str) -> None:
    # A subprocess with stdin at EOF: a value let through would start serving, and
    # end at once with status 0 instead of hanging the test.
    r = subprocess.run(
        [sys.executable, "-c", MAIN, "--policies", "/", option, value],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2, r.stderr
    assert r.stdout == "" and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert option in r.stderr and "Traceback" not in r.stderr


def test_garbage_on_stdin_is_one_line_per_message_rate_limited(tmp_path: Path) -> None:
    garbage = "".join(f"not json {i} {'x' * 80}\n" for i in range(1100)).encode()
    assert len(garbage) > 100_000
    r = subprocess.run(
        [sys.executable, "-c", MAIN, "--policies", str(tmp_path)],
        input=garbage,
        capture_output=True,
        timeout=60,
    )
    err = r.stderr.decode().splitlines()
    assert r.returncode == 0 and r.stdout == b"", r.stderr
    shown = [x for x in err if x.startswith("cvg-mcp: dropped a message on stdin")]
    assert 1 <= len(shown) <= BAD_LINES_PER_SECOND * 60, err  # 60: the test's own timeout
    counted = [int(x.split()[1]) for x in err if x.endswith("lines a second are shown)")]
    assert len(shown) + sum(counted) == 1100, err
    assert len(err) == len(shown) + len(counted), err
    assert not any("validation error" in x or "errors.pydantic.dev" in x for x in err)


def test_bad_input_lines_per_second_then_a_count() -> None:
    now = [0.0]
    said: list[str] = []
    bad = BadInput(per_second=2, clock=lambda: now[0], say=said.append)
    for _ in range(5):
        bad.report(ValueError("nope"))
    assert len(said) == 2
    now[0] = 1.5  # a new second: the count of the last one, then lines again
    bad.report(ValueError("nope"))
    assert said[2].startswith("3 more messages on stdin") and said[3].endswith("nope")
    bad.flush()
    assert len(said) == 4  # nothing hidden since: no count line
