"""cvg-mcp's command line: usage errors are one line and exit 2; --help teaches."""

from __future__ import annotations

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
