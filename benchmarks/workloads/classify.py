"""Why a generated policy denied a run: the class of the failure, from the run's cvg.run
record (traced when the run was repeated to find out) and the two policies.

The classes are what a generator has to learn beyond the one input it saw:

  exec          a program the observed input never ran (a sibling of one it did)
  output-dir    writing, creating or removing where the observed input did not
  input-dir     reading a file or folder the observed input did not
  wall-clock    the run outlived the learned wall clock (an idle server included)
  memory        the memory limit (RLIMIT_AS, or the supervisor's resident cap)
  proc-self     /proc/self or /proc/PID of the tool itself
  resolver      name resolution: /etc/hosts, resolv.conf, nsswitch, port 53
  env           a variable the host gives the tool that the policy does not pass
  other         none of these (the run's stderr tells)
"""

from __future__ import annotations

import re
from typing import Any

CLASSES = (
    "exec",
    "output-dir",
    "input-dir",
    "wall-clock",
    "memory",
    "proc-self",
    "resolver",
    "env",
    "other",
)
RESOLVER_FILES = {
    "/etc/hosts",
    "/etc/resolv.conf",
    "/etc/nsswitch.conf",
    "/etc/host.conf",
    "/etc/gai.conf",
}
_PROC_SELF = re.compile(r"^/proc/(self|thread-self|\d+)(/|$)")
_MEMORY_TEXT = re.compile(
    r"out of memory|cannot allocate memory|heap out of memory|memoryerror|enomem",
    re.IGNORECASE,
)
_RESOLVER_TEXT = re.compile(
    r"name resolution|name or service not known|could not resolve host|getaddrinfo|"
    r"ENOTFOUND|EAI_AGAIN|unable to resolve",
    re.IGNORECASE,
)


def env_missing(hand: dict[str, Any], generated: dict[str, Any], given: set[str]) -> list[str]:
    """Variables the host gives the tool that the hand policy lets through and the
    generated one does not."""

    def names(policy: dict[str, Any]) -> set[str]:
        env = policy.get("environment") or {}
        return set(env.get("pass") or []) | set(env.get("set") or {})

    return sorted((names(hand) - names(generated)) & given)


def of_denial(d: dict[str, Any]) -> str:
    path = d.get("path") or ""
    rule = str(d.get("rule") or "") + " " + str(d.get("right") or "")
    if "memory" in rule or d.get("right") in ("RLIMIT_AS", "RLIMIT_DATA"):
        return "memory"
    if "wall_clock" in rule:
        return "wall-clock"
    if _PROC_SELF.match(path):
        return "proc-self"
    if path in RESOLVER_FILES or d.get("port") == 53:
        return "resolver"
    op = d.get("op")
    if op == "execute":
        return "exec"
    if op == "read":
        return "input-dir"
    if op in ("create", "write", "remove", "rename", "mkdir", "link", "truncate"):
        return "output-dir"
    return "other"


def mentioned(d: dict[str, Any], cwd: str, text: str) -> bool:
    """Whether the tool's output names the denied path: the refusal it reported."""
    path = d.get("path") or ""
    if not path:
        return False
    names = {path, path.replace(cwd, "<cwd>", 1)}
    if cwd and path.startswith(cwd + "/"):
        names.add(path[len(cwd) + 1 :])
    base = path.rsplit("/", 1)[-1]
    if len(base) > 3:
        names.add(base)
    return any(n in text for n in names)


def decisive(refused: list[dict[str, Any]], cwd: str, text: str) -> dict[str, Any]:
    """The denial that made the run fail: the first one the tool reported, else the
    first outside /proc and /sys (runtimes read those and carry on when refused)."""
    for d in refused:
        if mentioned(d, cwd, text):
            return d
    for d in refused:
        if not (d.get("path") or "").startswith(("/proc/", "/sys/")):
            return d
    return refused[0]


def classify(
    record: dict[str, Any] | None,
    status: int,
    output: str,
    *,
    env: list[str],
    passes_without_gap: bool | None,
) -> str:
    """The class of one false denial.

    ``record`` is the cvg.run record of the run (or of its traced repeat), ``output``
    what the run printed (stdout and stderr); ``env``
    what ``env_missing`` found; ``passes_without_gap`` whether the same session
    without its idle gap passed (None when there was no gap)."""
    if env:
        return "env"
    meaning = ((record or {}).get("exit") or {}).get("meaning")
    if status == 124 or meaning == "wall_clock":
        return "wall-clock"
    if passes_without_gap:
        return "wall-clock"
    # What the tool said beats which refusal came first: a runtime that reads /proc at
    # start and carries on is not why it failed.
    if meaning == "limit" or _MEMORY_TEXT.search(output):
        return "memory"
    if _RESOLVER_TEXT.search(output):
        return "resolver"
    refused = [d for d in (record or {}).get("denials") or [] if d.get("mechanism") != "none"]
    if refused:
        return of_denial(decisive(refused, (record or {}).get("cwd") or "", output))
    return "other"
