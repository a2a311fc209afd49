"""Policy variables: ``${CWD}``, ``${SCRATCH}``, ``${HOME}``, ``${POLICY_DIR}``.

Most variables are bound when a policy is compiled (the working directory, the caller's
home, the policy's directory). ``${SCRATCH}`` is late bound: it names a fresh directory
per run that does not exist at compile time, so it stays ``${SCRATCH}`` in the plan and
cvg-run supplies it when the plan is applied.
"""

from __future__ import annotations

import os
import pwd
import re
from collections.abc import Iterable, Mapping
from typing import Final

from .errors import PolicyError

__all__ = ["LATE_BOUND", "VARIABLES", "concrete", "context", "expand", "late_bound_in"]

VARIABLES: Final = ("CWD", "SCRATCH", "HOME", "POLICY_DIR")
LATE_BOUND: Final = frozenset({"SCRATCH"})

_VAR_RE: Final = re.compile(r"\$\{([^}]*)\}")
_KNOWN: Final = ", ".join(sorted(VARIABLES))


def _home() -> str:
    home = os.environ.get("HOME")
    if home:
        return home
    try:
        return pwd.getpwuid(os.geteuid()).pw_dir
    except KeyError:
        # No passwd entry (a container's arbitrary uid): "/" is what login(1) falls back to.
        return "/"


def context(
    *, cwd: str | None = None, home: str | None = None, policy_dir: str | None = None
) -> dict[str, str]:
    """The compile-time variables: CWD, HOME and POLICY_DIR (never SCRATCH).

    Defaults: the current directory, ``$HOME`` (else the passwd entry), and the working
    directory for a policy that did not come from a file (stdin).
    """
    cwd = os.getcwd() if cwd is None else cwd
    return {
        "CWD": cwd,
        "HOME": _home() if home is None else home,
        "POLICY_DIR": cwd if policy_dir is None else policy_dir,
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
