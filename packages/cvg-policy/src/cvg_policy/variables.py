"""Policy variables: ``${CWD}``, ``${SCRATCH}``, ``${HOME}``, ``${POLICY_DIR}``,
``${PYTHON}``, ``${PYTHON_STDLIB}``.

Most variables are bound when a policy is compiled (the working directory, the caller's
home, the policy's directory, the system's python3 and its standard library).
``${SCRATCH}`` is late bound: it names a fresh directory per run that does not exist at
compile time, so it stays ``${SCRATCH}`` in the plan and cvg-run supplies it when the
plan is applied.
"""

from __future__ import annotations

import os
import pwd
import re
from collections.abc import Iterable, Mapping
from typing import Final

from .errors import PolicyError

__all__ = [
    "LATE_BOUND", "VARIABLES", "concrete", "context", "expand", "late_bound_in", "system_python",
]  # fmt: skip

VARIABLES: Final = ("CWD", "SCRATCH", "HOME", "POLICY_DIR", "PYTHON", "PYTHON_STDLIB")
LATE_BOUND: Final = frozenset({"SCRATCH"})

_VAR_RE: Final = re.compile(r"\$\{([^}]*)\}")
_KNOWN: Final = ", ".join(sorted(VARIABLES))
# Where a policy's PATH (/usr/bin:/bin) finds the system's python3.
_SYSTEM_BIN: Final = ("/usr/bin", "/bin")
_VERSIONED: Final = re.compile(r"python\d+\.\d+")


def _home() -> str:
    home = os.environ.get("HOME")
    if home:
        return home
    try:
        return pwd.getpwuid(os.geteuid()).pw_dir
    except KeyError:
        # No passwd entry (a container's arbitrary uid): "/" is what login(1) falls back to.
        return "/"


def system_python() -> dict[str, str]:
    """``PYTHON`` and ``PYTHON_STDLIB``: the real file ``python3`` names in /usr/bin
    (else /bin), and its standard library, ``<prefix>/lib/pythonX.Y`` beside
    ``<prefix>/bin/pythonX.Y`` (CPython's layout on POSIX). Empty when there is no such
    interpreter, so a policy that uses them is told they have no value here.

    A policy names the interpreter this way rather than as ``/usr/bin/python3.11``:
    the version differs between distributions and releases, and Landlock grants the
    real file, not the ``python3`` link to it.
    """
    for d in _SYSTEM_BIN:
        exe = os.path.realpath(os.path.join(d, "python3"))
        if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
            continue
        name = os.path.basename(exe)
        stdlib = os.path.join(os.path.dirname(os.path.dirname(exe)), "lib", name)
        if _VERSIONED.fullmatch(name) and os.path.isfile(os.path.join(stdlib, "os.py")):
            return {"PYTHON": exe, "PYTHON_STDLIB": stdlib}
        return {"PYTHON": exe}
    return {}


def context(
    *, cwd: str | None = None, home: str | None = None, policy_dir: str | None = None
) -> dict[str, str]:
    """The compile-time variables: CWD, HOME, POLICY_DIR, and PYTHON and PYTHON_STDLIB
    when the system has a python3 (never SCRATCH).

    Defaults: the current directory, ``$HOME`` (else the passwd entry), and the working
    directory for a policy that did not come from a file (stdin).
    """
    cwd = os.getcwd() if cwd is None else cwd
    return {
        "CWD": cwd,
        "HOME": _home() if home is None else home,
        "POLICY_DIR": cwd if policy_dir is None else policy_dir,
        **system_python(),
    }


def expand(value: str, variables: Mapping[str, str], *, keep: Iterable[str] = LATE_BOUND) -> str:
    """Replace each ``${NAME}`` by its value; names in ``keep`` stay as ``${NAME}``.

    An unknown name, or a known one with no value in ``variables``, is a PolicyError.
    """
    kept = frozenset(keep)

    def one(m: re.Match[str]) -> str:
        name = m.group(1)
        if name in kept:
            return m.group(0)
        if name not in VARIABLES:
            raise PolicyError(f"unknown variable ${{{name}}} (known: {_KNOWN})")
        try:
            return variables[name]
        except KeyError:
            raise PolicyError(f"variable ${{{name}}} has no value here") from None

    out = _VAR_RE.sub(one, value)
    if "${" in _VAR_RE.sub("", value):
        raise PolicyError(f"unterminated ${{ in {value!r}")
    return out


def late_bound_in(value: str) -> list[str]:
    """The late-bound variable names ``value`` still uses, in order, without repeats."""
    seen: list[str] = []
    for name in _VAR_RE.findall(value):
        if name in LATE_BOUND and name not in seen:
            seen.append(name)
    return seen


def concrete(value: str) -> bool:
    """True when no late-bound variable is left in ``value`` (it can be used as it is)."""
    return not late_bound_in(value)
