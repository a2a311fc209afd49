"""The tool's environment: what it was given, and what of cvg is not the tool's.

An MCP client starts each server with its settings and keys in the environment
(``MEMORY_FILE_PATH``, ``GITHUB_TOKEN``); the server needs them on every input, so they
belong in its policy. The ambient session's variables (``DISPLAY``, ``SSH_AGENT_PID``,
the shell's own) do not. cvg-observe tells them apart by its parent, the program that
started it (the MCP client, a shell): a variable cvg-observe was started with that its
parent's environment lacks, or holds with another value, was given to the tool. The
parent's is read from ``/proc/PPID/environ`` (the environment it was started with; a
variable it set later itself counts as given). Left out: what ``cvg-generate`` writes
on its own (``PATH``, ``HOME``, ``TMPDIR``, the locale and terminal), the shell's
bookkeeping, and cvg's own launchers' (``CVG_*``, ``UV_*``, ``VIRTUAL_ENV``). A variable
named like a secret is recorded without its value.

Learning from inside an activated cvg virtualenv would otherwise make cvg part of the
tool: its ``bin`` first on PATH finds cvg's own interpreter, which reads cvg's sources.
So the tool is run without cvg's virtualenv: ``VIRTUAL_ENV`` (when it is cvg's) and
cvg's ``bin`` directory on PATH are taken out of its environment, the directory of the
interpreter the virtualenv was made from taking the place of ``bin`` on PATH.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Final

from cvg_policy.secrets import secret_variable

__all__ = ["given", "parent_environment", "without_cvg"]

_OWN: Final = frozenset(
    {"PATH", "HOME", "TMPDIR", "TMP", "TEMP", "PWD", "OLDPWD", "SHLVL", "_", "TERM", "TZ",
     "LANG", "LANGUAGE", "VIRTUAL_ENV", "VIRTUAL_ENV_PROMPT", "PS1"}
)  # fmt: skip
_OWN_PREFIXES: Final = ("LC_", "CVG_", "UV_")


def parent_environment(ppid: int | None = None) -> dict[str, str] | None:
    """The environment the parent process was started with; None when unreadable."""
    pid = os.getppid() if ppid is None else ppid
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            data = f.read()
    except OSError:
        return None
    out: dict[str, str] = {}
    for item in data.split(b"\0"):
        name, sep, value = item.partition(b"=")
        if sep and name:
            out[os.fsdecode(name)] = os.fsdecode(value)
    return out


def given(env: Mapping[str, str], parent: Mapping[str, str]) -> dict[str, str | None]:
    """The variables in ``env`` that ``parent`` lacks or holds otherwise, by name; the
    value is None for a name that looks like a secret."""
    out: dict[str, str | None] = {}
    for name, value in sorted(env.items()):
        if name in _OWN or name.startswith(_OWN_PREFIXES) or parent.get(name) == value:
            continue
        out[name] = None if secret_variable(name) else value
    return out


def without_cvg(
    env: dict[str, str], prefix: str = sys.prefix, base: str | None = None
) -> list[str]:
    """Take cvg's own virtualenv (``prefix``, when it is one) out of ``env``; what was
    taken out, one line each.

    Its ``bin`` on PATH gives way to ``base``, the directory of the interpreter the
    virtualenv was made from (``sys._base_executable``), unless PATH holds that
    already: ``python3`` then still means the interpreter the user's shell runs, without
    cvg's packages, and not whatever comes next on PATH (a version manager's shim, a
    shell script that runs a dozen programs and would be learned as the tool)."""
    if prefix == sys.base_prefix and prefix == sys.prefix:
        return []
    if base is None:
        base = os.path.dirname(getattr(sys, "_base_executable", "") or "") or None
    taken: list[str] = []
    real = os.path.realpath(prefix)
    venv = env.get("VIRTUAL_ENV")
    if venv and os.path.realpath(venv) == real:
        del env["VIRTUAL_ENV"]
        env.pop("VIRTUAL_ENV_PROMPT", None)
        taken.append(f"VIRTUAL_ENV={venv}")
    bin_dir = os.path.realpath(os.path.join(prefix, "bin"))
    path = env.get("PATH")
    if path:
        dirs = path.split(":")
        listed = {os.path.realpath(d) for d in dirs if d}
        stand_in = base if base and os.path.realpath(base) not in listed else None
        kept: list[str] = []
        for d in dirs:
            if d and os.path.realpath(d) == bin_dir:
                if stand_in is not None:
                    kept.append(stand_in)
                    stand_in = None
                continue
            kept.append(d)
        if kept != dirs:
            env["PATH"] = ":".join(kept)
            line = f"{os.path.join(prefix, 'bin')} from PATH"
            if base and base in kept and os.path.realpath(base) not in listed:
                line += f" ({base}, where its interpreter comes from, in its place)"
            taken.append(line)
    return taken
