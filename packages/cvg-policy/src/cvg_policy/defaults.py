"""The embedded default policy, fitted to where it runs.

The default reads the system and the working directory. Read as written, run from
``$HOME`` it hands over ``~/.ssh`` and ``.env``, and as root ``/etc/shadow``. So before it
is compiled, :func:`tailor_default` takes out what no tool run without a policy should
see: a working directory that is a broad tree (``/``, a home, a system tree) is not
granted at all, and every known secret the caller could read beneath a remaining grant
is carved out with ``filesystem.deny``. Secrets the caller cannot read (``/etc/shadow``
as an ordinary user) are left to the file permissions: carving them out would split
``/etc`` into hundreds of rules for nothing.
"""

from __future__ import annotations

import os
import re
from typing import Final

from .expand import inside
from .secrets import passwd_home, secret_paths, secret_reason

TYPE_CHECKING = False
if TYPE_CHECKING:  # broad_reason's callers need no models
    from cvg_schema import Policy

__all__ = ["BROAD_TREES", "broad_reason", "is_per_process", "tailor_default"]

_PER_PROCESS: Final = re.compile(r"^/proc/(self|thread-self|[0-9]+)(/|$)")


def is_per_process(path: str) -> bool:
    """``/proc/self/...``, ``/proc/<pid>/...``: a new inode per process, so a Landlock
    rule made before the tool starts cannot name the tool's own (a rule on
    ``/proc/self`` would name the compiling process's)."""
    return bool(_PER_PROCESS.match(path))


BROAD_TREES: Final = frozenset(
    {
        "/",
        "/bin",
        "/boot",
        "/dev",
        "/etc",
        "/home",
        "/lib",
        "/lib32",
        "/lib64",
        "/media",
        "/mnt",
        "/opt",
        "/proc",
        "/root",
        "/run",
        "/sbin",
        "/srv",
        "/sys",
        "/tmp",
        "/usr",
        "/usr/bin",
        "/usr/include",
        "/usr/lib",
        "/usr/lib32",
        "/usr/lib64",
        "/usr/libexec",
        "/usr/local",
        "/usr/local/bin",
        "/usr/local/lib",
        "/usr/sbin",
        "/usr/share",
        "/var",
        "/var/lib",
        "/var/tmp",
    }
)
"""The system's top-level trees: a grant on one as a whole reaches far beyond any tool."""


def broad_reason(cwd: str, home: str | None) -> str | None:
    """Why ``cwd`` is too broad to grant as a workspace, or None when it is not."""
    real = os.path.realpath(cwd)
    homes = {os.path.realpath(h) for h in (home, passwd_home()) if h and os.path.isabs(h)}
    if real in homes:
        return "a home directory (ssh keys, shell startup files, credentials)"
    if any(inside(h, real) for h in homes):
        return "a directory holding a home directory"
    if real in BROAD_TREES or os.path.normpath(cwd) in BROAD_TREES:
        return "a system tree"
    return None


def tailor_default(policy: Policy, *, cwd: str, home: str | None) -> tuple[Policy, list[str]]:
    """``policy`` (the embedded default) without a broad working directory and with every
    readable known secret beneath its grants denied; and one note per change."""
    notes: list[str] = []
    fs = policy.filesystem
    read = list(fs.read)
    why = broad_reason(cwd, home)
    if why is not None and "${CWD}" in read:
        read.remove("${CWD}")
        notes.append(f"the working directory {cwd} is not granted: it is {why}")
    grants = [
        cwd if p == "${CWD}" else p
        for p in (*read, *fs.execute)
        if p.startswith("/") or p == "${CWD}"
    ]
    candidates = list(secret_paths(cwd, home))
    if "${CWD}" in read:
        # A key or token file at the top of the workspace (server.key, .npmrc, .env.prod).
        try:
            names = sorted(os.listdir(cwd))
        except OSError:
            names = []
        for name in names:
            path = os.path.join(cwd, name)
            if path not in candidates and secret_reason(path, home) is not None:
                candidates.append(path)
    deny = list(fs.deny)
    for path in candidates:
        real = os.path.realpath(path)
        reachable = any(inside(real, os.path.realpath(g)) for g in grants)
        if reachable and path not in deny and os.access(path, os.R_OK):
            deny.append(path)
            notes.append(f"{path} is denied: a secret beneath the default policy's reads")
    tailored = fs.model_copy(update={"read": read, "deny": deny})
    return policy.model_copy(update={"filesystem": tailored}), notes
