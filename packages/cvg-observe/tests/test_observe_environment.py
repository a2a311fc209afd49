"""The environment a tool was given (an MCP client's settings and keys for its server)
is recorded, secrets without their values; cvg's own virtualenv is not the tool's."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cvg_observe.environment import given, without_cvg
from cvg_schema import Observation, loads

pytestmark = pytest.mark.skipif(shutil.which("strace") is None, reason="strace not installed")

TOKEN = "ghp_s3cr3t-value-never-written"


def test_given_is_what_the_parent_lacks_or_holds_otherwise() -> None:
    parent = {"DISPLAY": ":0", "EDITOR": "vi", "PATH": "/usr/bin"}
    env = {
        "DISPLAY": ":0",  # the session's: not given
        "EDITOR": "nano",  # changed: given
        "MEMORY_FILE_PATH": "/srv/mem.json",
        "GITHUB_TOKEN": TOKEN,
        "PATH": "/opt/bin:/usr/bin",  # cvg-generate writes PATH itself
        "CVG_STRACE": "/usr/bin/strace",  # cvg's own
        "LC_ALL": "C",
    }
    assert given(env, parent) == {
        "EDITOR": "nano",
        "GITHUB_TOKEN": None,
        "MEMORY_FILE_PATH": "/srv/mem.json",
    }


def test_cvg_s_virtualenv_is_taken_out(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    env = {"VIRTUAL_ENV": str(venv), "PATH": f"{venv}/bin:/usr/bin:/bin", "X": "1"}
    taken = without_cvg(env, prefix=str(venv))
    assert env == {"PATH": "/usr/bin:/bin", "X": "1"}
    assert len(taken) == 2
    other = {"VIRTUAL_ENV": "/elsewhere", "PATH": "/elsewhere/bin:/usr/bin"}
    assert without_cvg(dict(other), prefix=str(venv)) == []


def test_an_observed_server_s_settings_are_recorded_and_secrets_are_not(tmp_path: Path) -> None:
    env = dict(os.environ, MEMORY_FILE_PATH=str(tmp_path / "mem.json"), GITHUB_TOKEN=TOKEN)
    proc = subprocess.run(
        [sys.executable, "-m", "cvg_observe", "--", "sh", "-c", "echo ok"],
        env=env,
        capture_output=True,
        check=False,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert TOKEN.encode() not in proc.stdout
    o = loads(proc.stdout)
    assert isinstance(o, Observation) and o.environment is not None
    assert o.environment["MEMORY_FILE_PATH"] == str(tmp_path / "mem.json")
    assert o.environment["GITHUB_TOKEN"] is None


def test_the_tool_does_not_run_in_cvg_s_activated_virtualenv(tmp_path: Path) -> None:
    if sys.prefix == sys.base_prefix:
        pytest.skip("cvg is not installed in a virtualenv here")
    venv_bin = os.path.join(sys.prefix, "bin")
    env = dict(os.environ, VIRTUAL_ENV=sys.prefix, PATH=f"{venv_bin}:/usr/bin:/bin")
    script = 'echo "venv=$VIRTUAL_ENV"; echo "path=$PATH"'
    proc = subprocess.run(
        [sys.executable, "-m", "cvg_observe", "--", "sh", "-c", script],
        env=env,
        capture_output=True,
        check=False,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert b"venv=\n" in proc.stderr  # the tool's stdout goes to stderr
    assert b"path=/usr/bin:/bin\n" in proc.stderr
    o = loads(proc.stdout)
    assert isinstance(o, Observation)
    assert any("cvg's own virtualenv" in n for n in o.notes)
