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
    taken = without_cvg(env, prefix=str(venv), base="/usr/bin")
    assert env == {"PATH": "/usr/bin:/bin", "X": "1"}  # its interpreter's is there already
    assert len(taken) == 2
    other = {"VIRTUAL_ENV": "/elsewhere", "PATH": "/elsewhere/bin:/usr/bin"}
    assert without_cvg(dict(other), prefix=str(venv)) == []


def test_cvg_s_virtualenv_gives_way_to_the_interpreter_it_was_made_from(tmp_path: Path) -> None:
    venv, base, shims = tmp_path / "venv", tmp_path / "python" / "bin", tmp_path / "shims"
    for d in (venv / "bin", base, shims):
        d.mkdir(parents=True)
    for d in (base, shims):  # a shim next on PATH: what python3 would mean without base
        (d / "python3").write_text("#!/bin/sh\n")
        (d / "python3").chmod(0o755)
    env = {"VIRTUAL_ENV": str(venv), "PATH": f"{venv}/bin:{shims}:/usr/bin"}
    taken = without_cvg(env, prefix=str(venv), base=str(base))
    assert env == {"PATH": f"{base}:{shims}:/usr/bin"}
    assert shutil.which("python3", path=env["PATH"]) == str(base / "python3")
    assert str(base) in taken[-1]


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
    # The interpreter the virtualenv was made from takes its place, unless already there.
    base = os.path.dirname(sys._base_executable)
    listed = {os.path.realpath(d) for d in ("/usr/bin", "/bin")}
    expected = "/usr/bin:/bin" if os.path.realpath(base) in listed else f"{base}:/usr/bin:/bin"
    assert f"path={expected}\n".encode() in proc.stderr
    o = loads(proc.stdout)
    assert isinstance(o, Observation)
    assert any("cvg's own virtualenv" in n for n in o.notes)
