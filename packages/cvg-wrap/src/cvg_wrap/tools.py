"""The other cvg tools, run as programs: found beside this interpreter's scripts (the
same installation) or on PATH, and named by absolute path in a client's config, since
the client starts servers with a PATH of its own."""

from __future__ import annotations

import json
import os
import re
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


REFUSES_OWN = "refuses its own session:"
"""What cvg-validate --replay says of each observed call the policy would refuse."""

# Variables the box itself decides, whatever the client's config says: the scratch
# directory is the only temporary directory a confined server may write.
BOX_OWNED = frozenset({"TMPDIR"})


def learned_policy(
    observations: list[str], env: list[str]
) -> tuple[str, dict[str, Any], list[str]]:
    """The policy for what the observations saw (cvg-generate, which gives a server
    that waited on its client no wall clock; then the ``env`` names the client sets for
    the server passed; then cvg-validate): its YAML, the policy as data, and the
    notes to show (cvg-validate's warnings, and each config variable the policy sets
    to a value of its own)."""
    # A client starts its servers wherever it is (the home, /): what the config names
    # is granted where it is, never relative to that working directory.
    generated = _run([find(GENERATE), "-q", "--no-cwd", *observations])
    if generated.returncode != 0:
        raise _failure(GENERATE, generated)
    policy: dict[str, Any] = json.loads(generated.stdout)
    notes = pass_config_env(policy, env)
    # Judged against the sessions it was learned from: a policy that refuses one of
    # its server's own calls would break it on the first day.
    replays = [f"--replay={o}" for o in observations]
    validated = _run([find(VALIDATE), "-", *replays], stdin=json.dumps(policy))
    refused = [ln for ln in validated.stderr.splitlines() if REFUSES_OWN in ln]
    if validated.returncode != 0 and refused:
        # "OBSERVATION: e5: create PATH needs make_reg": the event is what a user weighs.
        first = refused[0].split(REFUSES_OWN, 1)[1].strip().split(": ", 1)[-1]
        raise ToolFailed(f"the policy refuses {len(refused)} calls of its own sessions "
                         f"(first: {first})")  # fmt: skip
    if validated.returncode != 0:
        raise _failure(VALIDATE, validated)
    # cvg-validate read the policy from stdin: its "<stdin>:LINE: " says nothing here.
    notes += [
        re.sub(r"^<stdin>:\d+: ", "", ln) for ln in validated.stderr.splitlines() if ln.strip()
    ]
    return validated.stdout, policy, notes


def pass_config_env(policy: dict[str, Any], env: list[str]) -> list[str]:
    """Make each name of the config's ``env`` passed from the client, not set: the
    client gives the server its value at every start, and a value the sessions happened
    to have (or a path seen from the client's working directory) must not replace it.
    cvg-observe saw only the sessions' variables; the config's are the server's whatever
    it did while learning. The names the box owns stay set; each is returned as a note."""
    environment = policy.setdefault("environment", {})
    passed: list[str] = environment.setdefault("pass", [])
    written: dict[str, str] = environment.setdefault("set", {})
    reasons: dict[str, Any] = policy.setdefault("reasons", {})
    notes = []
    for name in env:
        if name in written and name in BOX_OWNED:
            notes.append(f"env {name}: the config sets it; the policy sets it to "
                         f"{written[name]} (the sandbox's own)")  # fmt: skip
            continue
        why = reasons.pop(f"environment.set.{name}", None)
        written.pop(name, None)
        if name not in passed:
            passed.append(name)
            if why:
                reasons[f"environment.pass[{len(passed) - 1}]"] = why
    return notes


def counts(policy: dict[str, Any]) -> str:
    """The policy's rules by kind, on one line: what a reviewer weighs first."""
    fs = policy.get("filesystem") or {}
    net = policy.get("network") or {}
    parts = [f"{k} {len(fs.get(k) or [])}" for k in ("read", "write", "execute")]
    parts += [f"{k} {len(net.get(k) or [])}" for k in ("tcp_connect", "tcp_bind")]
    unix = net.get("unix")
    parts.append(
        f"unix {len(unix)}" if isinstance(unix, list) else f"unix {'yes' if unix else 'no'}"
    )
    return ", ".join(parts)


def grants(policy: dict[str, Any]) -> int:
    """The policy's rules: its filesystem paths and TCP ports."""
    fs = policy.get("filesystem") or {}
    net = policy.get("network") or {}
    lists = [fs.get(k) for k in ("read", "write", "execute")]
    lists += [net.get(k) for k in ("tcp_connect", "tcp_bind")]
    return sum(len(x) for x in lists if isinstance(x, list))
