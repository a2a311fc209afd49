"""Fixtures for cvg-import's tests."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from importhelp import executable

from cvg_policy.variables import system_python


@pytest.fixture(scope="session")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bare runtime, observed the way the docs say: a real baseline."""
    d = tmp_path_factory.mktemp("runtime")
    out = d / "runtime.json"
    made = subprocess.run(
        [
            executable("cvg-observe"),
            "--out",
            str(out),
            "--",
            system_python()["PYTHON"],
            "-c",
            "pass",
        ],
        capture_output=True,
        timeout=120,
        cwd=d,
    )
    assert made.returncode == 0, made.stderr
    return out
