"""Helpers shared by the cvg-import tests: the fixture reports and the installed CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

# Real runner reports (Apache-2.0, with their LICENSE and README), kept with the tests.
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "divergence-reports"

RAW_REPORTS = sorted(FIXTURES.glob("*.json"))
SCAN_REPORTS = sorted((FIXTURES / "scan").glob("*.json"))

BIN = Path(sys.executable).parent


def executable(name: str) -> str:
    """The installed console script, as a user would run it."""
    path = BIN / name
    if path.exists():
        return str(path)
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed in this environment")
    return found


def run_cli(
    *args: str, input: bytes | None = None, cwd: str | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [executable("cvg-import"), *args],
        input=input,
        capture_output=True,
        timeout=60,
        cwd=cwd,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )


def load(path: Path) -> dict[str, Any]:
    with open(path, "rb") as f:
        return json.load(f)  # type: ignore[no-any-return]


def report(*observations: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A minimal raw runner report."""
    return {"schema": "divergence.sandbox/1", "observations": list(observations), **extra}


def obs(capability: str, target: str, **kw: Any) -> dict[str, Any]:
    """One Divergence observation, successful by default."""
    syscall = {
        "fs_read": "openat",
        "fs_write": "openat",
        "secrets_read": "openat",
        "fs_delete": "unlink",
        "proc_spawn": "execve",
        "net_outbound": "connect",
        "net_listen": "bind",
    }.get(capability, "openat")
    out = {
        "capability": capability,
        "syscall": syscall,
        "target": target,
        "decoy": False,
        "succeeded": True,
        "result": 0 if capability in ("proc_spawn", "fs_delete") else 3,
    }
    out.update(kw)
    return out
