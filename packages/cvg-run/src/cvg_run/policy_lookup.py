"""Where ``-p NAME`` finds its policy: a file by that name, else ``NAME.yaml`` in the
user's policy directory, then in the system's.

Only a bare name (no slash) is looked up, and only when no file by that name exists in
the working directory: ``-p ./p.yaml`` and ``-p /etc/x.yaml`` are paths, as before.
Plain ``os`` only: this runs on every cold start.
"""

from __future__ import annotations

import os

SYSTEM_POLICIES = "/etc/cvg/policies"


class PolicyNotFound(Exception):
    """A bare name found nowhere. One line naming every place looked at."""


def user_policies() -> str:
    """``$XDG_CONFIG_HOME/cvg/policies`` (default ``~/.config/cvg/policies``)."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "cvg", "policies")


def search_dirs() -> list[str]:
    return [user_policies(), SYSTEM_POLICIES]


def find(name: str) -> tuple[str, bool]:
    """The file ``-p name`` means, and whether it was found by lookup (so the caller
    says which file it used). Raises :class:`PolicyNotFound`."""
    if "/" in name or os.path.exists(name) or not name:
        return name, False
    looked = [os.path.join(".", name)]
    for directory in search_dirs():
        candidate = os.path.join(directory, f"{name}.yaml")
        if os.path.isfile(candidate):
            return candidate, True
        looked.append(candidate)
    raise PolicyNotFound(f"policy {name}: not found (looked for {', '.join(looked)})")
