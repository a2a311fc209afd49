"""cvg-run offers shell completion the way the click tools do
(``_CVG_RUN_COMPLETE=bash_source cvg-run``), for every option its grammar reads."""

from __future__ import annotations

import re
import subprocess

import pytest
from runhelp import CVG_RUN

from cvg_run import cli


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_every_option_of_the_grammar_is_offered(shell: str) -> None:
    done = subprocess.run([str(CVG_RUN)], env={"_CVG_RUN_COMPLETE": f"{shell}_source"},
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0 and done.stderr == ""
    text = done.stdout
    for name in [*cli.FLAGS, *cli.VALUES, "--help"]:
        if shell == "fish":
            flag = f"-l {name[2:]}" if name.startswith("--") else f"-s {name[1:]}"
            assert re.search(rf"^complete -c cvg-run .*{flag}( |$)", text, re.M), name
        else:
            edge = r"""[\s|{},'"()]"""
            assert re.search(rf"(^|{edge}){re.escape(name)}({edge}|$)", text, re.M), name


def test_a_shell_it_does_not_know_is_a_usage_error() -> None:
    done = subprocess.run([str(CVG_RUN), "--", "true"], env={"_CVG_RUN_COMPLETE": "csh_source"},
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("cvg-run: _CVG_RUN_COMPLETE='csh_source': expected one of ")
