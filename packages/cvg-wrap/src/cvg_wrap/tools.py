"""The other cvg tools, run as programs: found beside this interpreter's scripts (the
same installation) or on PATH, and named by absolute path in a client's config, since
the client starts servers with a PATH of its own."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from typing import Any

OBSERVE = "cvg-observe"
RUN = "cvg-run"
GENERATE = "cvg-generate"
VALIDATE = "cvg-validate"


class ToolFailed(Exception):
    """A tool is missing or refused its input: one line."""


def find(name: str) -> str:
    for directory in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        candidate = os.path.join(directory, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return os.path.abspath(candidate)
    found = shutil.which(name)
    if found is None:
        raise ToolFailed(f"{name}: not found beside {sys.executable} or on PATH")
    return os.path.abspath(found)


def _run(argv: list[str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, input=stdin, capture_output=True, text=True, check=False)


def _failure(name: str, done: subprocess.CompletedProcess[str]) -> ToolFailed:
    lines = done.stderr.strip().splitlines()
    first = next((ln for ln in lines if "note:" not in ln), lines[0] if lines else "no output")
    return ToolFailed(f"{name} exited {done.returncode}: {first}")


def learned_policy(observations: list[str], env: list[str]) -> tuple[str, int, list[str]]:
    """The policy for what the observations saw (cvg-generate, which gives a server
    that waited on its client no wall clock; then the ``env`` names the client sets for
    the server passed, unless the policy sets them; then cvg-validate): its YAML, its
    number of grants, and cvg-validate's warnings."""
    generated = _run([find(GENERATE), "-q", *observations])
    if generated.returncode != 0:
        raise _failure(GENERATE, generated)
    policy: dict[str, Any] = json.loads(generated.stdout)
    # cvg-observe sees the variables a session was started with, but only those the
    # sessions had; the config's are the server's whatever it did while learning.
    environment = policy.setdefault("environment", {})
    passed = environment.setdefault("pass", [])
    written = environment.get("set") or {}
    passed += [name for name in env if name not in passed and name not in written]
    validated = _run([find(VALIDATE), "-"], stdin=json.dumps(policy))
    if validated.returncode != 0:
        raise _failure(VALIDATE, validated)
    warnings = [ln for ln in validated.stderr.splitlines() if ln.strip()]
    return validated.stdout, grants(policy), warnings


def grants(policy: dict[str, Any]) -> int:
    """The policy's rules: its filesystem paths and TCP ports."""
    fs = policy.get("filesystem") or {}
    net = policy.get("network") or {}
    lists = [fs.get(k) for k in ("read", "write", "execute")]
    lists += [net.get(k) for k in ("tcp_connect", "tcp_bind")]
    return sum(len(x) for x in lists if isinstance(x, list))
