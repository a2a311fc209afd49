"""cvg-mcp's command line: usage errors are one line and exit 2; --help teaches."""

from __future__ import annotations

import subprocess
import sys

import pytest

from cvg_mcp.cli import main


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
