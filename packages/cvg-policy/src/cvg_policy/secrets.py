"""What counts as a secret: never granted by a generated policy, denied while learning.

Two views of one list. :func:`secret_paths` finds the secrets that exist on this machine
(the learning sandbox denies each with ``filesystem.deny``). :func:`secret_reason` judges
one path by pattern, existing or not, so ``cvg-generate`` and ``cvg-import`` refuse a
secret whatever capability it arrived as (a token file read is still a token).
"""

from __future__ import annotations

import fnmatch
import glob
import os
import posixpath
import pwd
from typing import Final

from .expand import inside

__all__ = [
    "CWD_SECRETS",
    "HOME_SECRETS",
    "SECRET_NAMES",
    "SECRET_WORDS",
    "SYSTEM_SECRETS",
    "passwd_home",
    "secret_paths",
    "secret_reason",
]

HOME_SECRETS: Final = (
    ".ssh",
    ".aws",
    ".gnupg",
    ".netrc",
    ".config/gh",
    ".docker/config.json",
    ".kube",
    ".azure",
    ".config/gcloud",
    ".git-credentials",
    ".pgpass",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".gem/credentials",
    ".vault-token",
    ".password-store",
    ".local/share/keyrings",
    ".config/hub",
    ".terraform.d/credentials.tfrc.json",
    ".mozilla",
    ".config/google-chrome",
    ".config/chromium",
)
"""Secrets beneath $HOME (and beneath the user's passwd home when that differs)."""

SYSTEM_SECRETS: Final = (
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/ssl/private",
    "/etc/ssh/ssh_host_*_key",
)
"""Secrets of the system (globs allowed)."""

CWD_SECRETS: Final = (".env", ".env.*")
"""Secrets in the working directory (globs)."""

SECRET_NAMES: Final = (
    ".env",
    ".env.*",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    ".netrc",
    ".pgpass",
    ".git-credentials",
    ".vault-token",
)
"""File names that are secrets wherever they are (globs, matched case-insensitively)."""

SECRET_WORDS: Final = ("token", "secret", "credential", "password", "passwd", "apikey", "api_key")
"""Words that make a file name a secret (``.config/divergence-token``), except for code
files and files in the system trees: Python's own ``tokenize.py`` and ``secrets.py``
are not secrets, nor is ``/etc/passwd``."""

_CODE_SUFFIXES: Final = (
    ".py",
    ".pyc",
    ".pyi",
    ".js",
    ".mjs",
    ".cjs",
    ".ts",
    ".so",
    ".h",
    ".rb",
    ".pl",
)
_SYSTEM_TREES: Final = (
    "/usr",
    "/lib",
    "/lib64",
    "/lib32",
    "/bin",
    "/sbin",
    "/opt",
    "/etc",
    "/proc",
    "/sys",
    "/nix",
    "/snap",
)


def passwd_home(euid: int | None = None) -> str | None:
    try:
        return pwd.getpwuid(os.geteuid() if euid is None else euid).pw_dir or None
    except KeyError:
        return None


def secret_paths(cwd: str, home: str | None, *, euid: int | None = None) -> list[str]:
    """The secrets that exist here, as paths (not yet resolved).

    ``/root`` is denied whole when it is someone else's home (neither ``home`` nor the
    caller's passwd home); as root it is the caller's own, and only its secrets are.
    """
    euid = os.geteuid() if euid is None else euid
    homes: list[str] = []
    for h in (home, passwd_home(euid)):
        if h and h != "/" and os.path.isabs(h) and h not in homes:
            homes.append(os.path.normpath(h))
    found: list[str] = []

    def add(path: str) -> None:
        if os.path.lexists(path) and path not in found:
            found.append(path)

    for h in homes:
        for name in HOME_SECRETS:
            add(os.path.join(h, name))
    for pattern in SYSTEM_SECRETS:
        for path in sorted(glob.glob(pattern)) if "*" in pattern else [pattern]:
            add(path)
    for pattern in CWD_SECRETS:
        for path in sorted(glob.glob(os.path.join(glob.escape(cwd), pattern))):
            add(path)
    if euid != 0 and not any(inside(h, "/root") for h in homes):
        add("/root")
    return found


def secret_reason(path: str, home: str | None = None) -> str | None:
    """Why ``path`` is a secret (one phrase), or None when it is not one.

    ``home`` may be a real directory or the literal ``${HOME}``; paths are compared
    as written, after normalisation, so a variable-form path works too.
    """
    path = posixpath.normpath(path)
    homes = [h for h in (home, "${HOME}") if h]
    for h in homes:
        for name in HOME_SECRETS:
            secret = posixpath.join(h, name)
            if path == secret or path.startswith(secret + "/"):
                return f"~/{name} holds credentials"
    for pattern in SYSTEM_SECRETS:
        if fnmatch.fnmatchcase(path, pattern) or path.startswith(pattern.rstrip("*") + "/"):
            return f"{pattern} holds system secrets"
    for part in path.split("/"):
        lower = part.lower()
        for pattern in SECRET_NAMES:
            if fnmatch.fnmatchcase(lower, pattern):
                return f"{part!r} is named like a secret ({pattern})"
    name = posixpath.basename(path).lower()
    if name.endswith(_CODE_SUFFIXES) or any(inside(path, t) for t in _SYSTEM_TREES):
        return None
    for word in SECRET_WORDS:
        if word in name:
            return f"{posixpath.basename(path)!r} is named like a secret ({word!r})"
    return None
