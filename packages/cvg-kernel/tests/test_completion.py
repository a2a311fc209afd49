"""The completion scripts of cvg's non-click command lines, loaded into real bash:
options, file and directory values, and the command after the options."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from cvg_kernel.completion import Option, env_var, respond, script

OPTIONS = [
    Option(["-h", "--help"], None, "show the help"),
    Option(["-p", "--policy"], "file", "policy file; more"),
    Option(["--cwd"], "dir", "run in DIR"),
    Option(["--var"], "value", "NAME=VALUE", repeat=True),
    Option(["--trace"], None, "trace it [all]: of it"),
]


def _complete(tmp_path: Path, *words: str) -> list[str]:
    """What bash offers for the last of ``words`` (with no bash-completion loaded)."""
    bash = shutil.which("bash")
    assert bash is not None, "bash is needed"
    (tmp_path / "tool.sh").write_text(script("mytool", "bash", OPTIONS))
    quoted = " ".join(f"'{w}'" for w in ("mytool", *words))
    line = (
        f"source {tmp_path / 'tool.sh'}; COMP_WORDS=({quoted}); COMP_CWORD={len(words)}; "
        '_mytool_completion; printf "%s\\n" "${COMPREPLY[@]}"'
    )
    done = subprocess.run([bash, "--norc", "--noprofile", "-c", line], cwd=tmp_path,
                          capture_output=True, text=True, check=True, timeout=30)  # fmt: skip
    return sorted(x for x in done.stdout.splitlines() if x)


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "policy.yaml").write_text("")
    (tmp_path / "pdir").mkdir()
    return tmp_path


def test_options(files: Path) -> None:
    assert _complete(files, "--") == ["--cwd", "--help", "--policy", "--trace", "--var"]
    assert _complete(files, "--tr") == ["--trace"]


def test_values(files: Path) -> None:
    assert _complete(files, "-p", "p") == ["pdir", "policy.yaml"]
    assert _complete(files, "--cwd", "p") == ["pdir"]
    assert _complete(files, "--var", "p") == []


def test_the_command_after_the_options(files: Path) -> None:
    assert "bash" in _complete(files, "--trace", "--", "bas")
    assert "bash" in _complete(files, "-p", "policy.yaml", "bas")  # a value is skipped
    # The command's own arguments: its files, not our options.
    assert _complete(files, "--", "cat", "pol") == ["policy.yaml"]
    assert _complete(files, "cat", "--tr") == []


def test_zsh_and_fish_scripts_quote_the_help() -> None:
    zsh = script("mytool", "zsh", OPTIONS)
    assert "#compdef mytool" in zsh and "'[trace it ]'" not in zsh
    assert "[trace it all]" in zsh and "'*'--var" in zsh and ":file:_files" in zsh
    fish = script("mytool", "fish", OPTIONS)
    assert "complete -c mytool -s p -l policy -r -F -d 'policy file'" in fish
    assert "__fish_complete_subcommand -- -p --policy --cwd --var" in fish


def test_respond(capsys: pytest.CaptureFixture[str]) -> None:
    assert env_var("cvg-exec") == "_CVG_EXEC_COMPLETE"
    assert respond("mytool", OPTIONS, {}) is None
    assert respond("mytool", OPTIONS, {"_MYTOOL_COMPLETE": "fish_source"}) == 0
    assert capsys.readouterr().out == script("mytool", "fish", OPTIONS)
    assert respond("mytool", OPTIONS, {"_MYTOOL_COMPLETE": "tcsh_source"}) == 2
    err = capsys.readouterr().err
    assert err == (
        "mytool: _MYTOOL_COMPLETE='tcsh_source': expected one of bash_source, zsh_source, "
        "fish_source\n"
    )
