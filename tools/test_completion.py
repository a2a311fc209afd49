"""Every cvg command line offers shell completion for bash, zsh and fish, the same way:
``_CVG_X_COMPLETE={bash,zsh,fish}_source cvg-x`` prints a script to load. click gives it
to the click tools; cvg-run and cvg-exec answer the same variable (cvg_kernel.completion).

Each script is loaded into the real shell, which then completes ``--hel`` to ``--help``
for that tool. The tools are taken from $CVG_BIN when set (`nox -s install` points it at
the tools it installed), else from this interpreter's bin directory. Run by
`uv run nox -s docs` and `uv run nox -s install`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

PACKAGES = Path(__file__).resolve().parent.parent / "packages"
SCRIPTS = sorted(
    script
    for pyproject in PACKAGES.glob("*/pyproject.toml")
    for script in tomllib.loads(pyproject.read_text())["project"].get("scripts", {})
)
BIN = Path(os.environ.get("CVG_BIN") or Path(sys.executable).parent)

LOAD = {
    "bash": 'eval "$({var}=bash_source {prog})" || exit 3\n'
    "spec=$(complete -p {prog}) || exit 4\n"
    "fn=${{spec##*-F }}; fn=${{fn%% *}}\n"
    "COMP_WORDS=({prog} --hel); COMP_CWORD=1\n"
    'COMP_LINE="{prog} --hel"; COMP_POINT=${{#COMP_LINE}}\n'
    '"$fn" {prog} --hel {prog}\n'
    'printf "%s\\n" "${{COMPREPLY[@]}}"\n',
    "zsh": "autoload -U compinit && compinit -u -D\n"
    'eval "$({var}=zsh_source {prog})" || exit 3\n'
    "print -r -- ${{_comps[{prog}]}}\n",
    "fish": 'env {var}=fish_source {prog} | source\ncomplete -C "{prog} --hel"\n',
}
ARGS = {"bash": ["--norc", "--noprofile", "-c"], "zsh": ["-f", "-c"], "fish": ["--no-config", "-c"]}


def _var(prog: str) -> str:
    return "_" + prog.replace("-", "_").upper() + "_COMPLETE"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_COMPLETE")}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return env


def _shell(shell: str) -> str:
    found = shutil.which(shell)
    if found is None:
        pytest.fail(f"{shell} is not installed: `nox -s install` installs bash, zsh and fish")
    return found


def test_every_tool_is_found() -> None:
    missing = [s for s in SCRIPTS if not (BIN / s).is_file()]
    assert not missing, f"not in {BIN}: {missing}"
    assert {"cvg-run", "cvg-exec", "cvg-validate"} <= set(SCRIPTS)


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
@pytest.mark.parametrize("prog", SCRIPTS)
def test_the_script_loads_and_completes(prog: str, shell: str) -> None:
    emitted = subprocess.run(
        [str(BIN / prog)], env={**_env(), _var(prog): f"{shell}_source"},
        capture_output=True, text=True, timeout=60, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert emitted.returncode == 0, emitted.stderr
    assert prog in emitted.stdout and emitted.stdout.endswith("\n")
    check = subprocess.run(
        [_shell(shell), *ARGS[shell], LOAD[shell].format(var=_var(prog), prog=prog)],
        env=_env(), capture_output=True, text=True, timeout=60, check=False,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert check.returncode == 0, (check.stdout, check.stderr)
    lines = check.stdout.splitlines()
    if shell == "zsh":
        assert lines and lines[-1].startswith("_"), check.stdout  # the function compdef named
    else:
        assert any(line.split("\t")[0] == "--help" for line in lines), check.stdout
