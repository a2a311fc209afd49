"""What counts as a secret: never granted by a generated policy, denied while learning.

Two views of one list. :func:`secret_paths` finds the secrets that exist on this machine
(the learning sandbox denies each with ``filesystem.deny``). :func:`secret_reason` judges
one path by pattern, existing or not, so ``cvg-generate`` and ``cvg-import`` refuse a
secret whatever capability it arrived as (a token file read is still a token).
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import pwd
import re

from .paths import inside

# typing only for the type checker: cvg-run imports this judge on its cold path.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final

__all__ = [
    "CWD_SECRETS",
    "HOME_SECRETS",
    "SECRET_GROUPS",
    "SECRET_NAMES",
    "SECRET_TABLE",
    "SECRET_WORDS",
    "SYSTEM_SECRETS",
    "passwd_home",
    "secret_paths",
    "secret_reason",
    "secret_variable",
]

SECRET_GROUPS: Final = {
    "mcp": "MCP client configs",
    "history": "Shell and REPL histories",
    "net": "Network and git credentials",
    "containers": "Containers and clusters",
    "packages": "Package registries",
    "forges": "Forges",
    "cloud": "Cloud CLIs",
    "keyrings": "Password stores and keyrings",
    "browsers": "Browser profiles",
    "system": "The system",
    "workspace": "The working directory",
}
"""The groups of :data:`SECRET_TABLE`, in the order docs/secrets.md shows them."""

SECRET_TABLE: Final = (
    # (group, where, path, what it holds); where: "home" (beneath $HOME and the passwd home),
    # "cwd" (beneath the working directory, globs) or "system" (absolute, globs).
    # docs/secrets.md is made from this table (python docs/gen_secrets.py).
    (
        "mcp",
        "home",
        ".config/Claude",
        "Claude Desktop: its MCP servers' commands and tokens, its session",
    ),
    ("mcp", "home", ".claude.json", "Claude Code: MCP servers with their environment, the account"),
    ("mcp", "home", ".claude.json.backup", "Claude Code's backup of the same"),
    ("mcp", "home", ".claude/.credentials.json", "Claude Code's login token"),
    ("mcp", "home", ".cursor/mcp.json", "Cursor: MCP servers with their environment"),
    (
        "mcp",
        "home",
        ".config/Cursor/User/settings.json",
        "Cursor's settings (MCP servers may sit there)",
    ),
    ("mcp", "home", ".config/Code/User/mcp.json", "VS Code: MCP servers with their environment"),
    (
        "mcp",
        "home",
        ".config/Code/User/settings.json",
        "VS Code's settings (MCP servers may sit there)",
    ),
    (
        "mcp",
        "home",
        ".codeium/windsurf/mcp_config.json",
        "Windsurf: MCP servers with their environment",
    ),
    ("mcp", "home", ".gemini/settings.json", "Gemini CLI: MCP servers with their environment"),
    ("history", "home", ".bash_history", "commands typed, tokens pasted into them"),
    ("history", "home", ".zsh_history", "the same, zsh"),
    ("history", "home", ".zhistory", "the same, zsh"),
    ("history", "home", ".histfile", "the same, zsh"),
    ("history", "home", ".sh_history", "the same, sh and ksh"),
    ("history", "home", ".local/share/fish/fish_history", "the same, fish"),
    ("history", "home", ".python_history", "Python's REPL"),
    ("history", "home", ".ipython/profile_default/history.sqlite", "IPython"),
    ("history", "home", ".node_repl_history", "Node's REPL"),
    ("history", "home", ".irb_history", "Ruby's REPL"),
    ("history", "home", ".psql_history", "psql: queries, passwords set in them"),
    ("history", "home", ".mysql_history", "the mysql client"),
    ("history", "home", ".sqlite_history", "the sqlite3 shell"),
    ("history", "home", ".rediscli_history", "redis-cli: AUTH passwords"),
    ("history", "home", ".lesshst", "less: what was searched for"),
    ("history", "home", ".viminfo", "vim: registers, searches, command lines"),
    ("net", "home", ".netrc", "logins for hosts (curl, ftp, git)"),
    ("net", "home", ".git-credentials", "git's stored HTTPS credentials"),
    ("net", "home", ".pgpass", "PostgreSQL passwords"),
    ("net", "home", ".my.cnf", "MySQL client passwords"),
    ("net", "home", ".ssh", "SSH keys, known hosts, config"),
    ("containers", "home", ".docker/config.json", "registry logins"),
    ("containers", "home", ".config/containers/auth.json", "registry logins (podman, buildah)"),
    ("containers", "home", ".kube", "cluster credentials (kubeconfig)"),
    ("packages", "home", ".npmrc", "npm tokens"),
    ("packages", "home", ".pypirc", "PyPI tokens"),
    ("packages", "home", ".cargo/credentials", "crates.io token"),
    ("packages", "home", ".cargo/credentials.toml", "crates.io token"),
    ("packages", "home", ".gem/credentials", "RubyGems key"),
    ("forges", "home", ".config/gh", "GitHub CLI: hosts.yml holds its token"),
    ("forges", "home", ".config/hub", "hub's GitHub token"),
    ("forges", "home", ".config/glab-cli", "GitLab CLI's token"),
    ("cloud", "home", ".aws", "AWS keys and SSO caches"),
    ("cloud", "home", ".config/gcloud", "Google Cloud credentials"),
    ("cloud", "home", ".azure", "Azure CLI tokens"),
    ("cloud", "home", ".terraform.d/credentials.tfrc.json", "Terraform Cloud token"),
    ("cloud", "home", ".vault-token", "HashiCorp Vault token"),
    ("keyrings", "home", ".password-store", "pass"),
    ("keyrings", "home", ".gnupg", "GnuPG private keys"),
    ("keyrings", "home", ".local/share/keyrings", "GNOME keyring"),
    ("keyrings", "home", ".local/share/kwalletd", "KDE wallet"),
    ("browsers", "home", ".mozilla", "Firefox: cookies, saved passwords"),
    ("browsers", "home", ".config/google-chrome", "Chrome: cookies, saved passwords"),
    ("browsers", "home", ".config/chromium", "Chromium"),
    ("browsers", "home", ".config/BraveSoftware", "Brave"),
    ("browsers", "home", ".config/microsoft-edge", "Edge"),
    ("browsers", "home", ".config/vivaldi", "Vivaldi"),
    ("browsers", "home", ".config/opera", "Opera"),
    ("system", "system", "/etc/shadow", "password hashes"),
    ("system", "system", "/etc/shadow-", "their backup"),
    ("system", "system", "/etc/gshadow", "group password hashes"),
    ("system", "system", "/etc/gshadow-", "their backup"),
    ("system", "system", "/etc/ssl/private", "TLS private keys"),
    ("system", "system", "/etc/ssh/ssh_host_*_key", "the host's SSH keys"),
    ("workspace", "cwd", ".env", "environment files with keys"),
    ("workspace", "cwd", ".env.*", "the same, per environment"),
)
"""Every known secret, one row each: (group, where, path, what it holds). The single
list behind the learning sandbox's denials, cvg-run's default policy's carve-outs and
what cvg-generate and cvg-import never grant.

A project's own MCP config (``.mcp.json``, ``.vscode/mcp.json``) is not a row: denying a
file in the working directory splits that directory's grant, and a server learning there
could not read back what it creates. Their names are in :data:`SECRET_NAMES`, so they
are never granted."""

HOME_SECRETS: Final = tuple(p for _, where, p, _ in SECRET_TABLE if where == "home")
"""Secrets beneath $HOME (and beneath the user's passwd home when that differs)."""

SYSTEM_SECRETS: Final = tuple(p for _, where, p, _ in SECRET_TABLE if where == "system")
"""Secrets of the system (globs allowed)."""

CWD_SECRETS: Final = tuple(p for _, where, p, _ in SECRET_TABLE if where == "cwd")
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
    "mcp.json",
    ".mcp.json",
    "mcp_config.json",
    "claude_desktop_config.json",
    ".claude.json",
    ".bash_history",
    ".zsh_history",
)
"""File names that are secrets wherever they are (globs, matched case-insensitively)."""

SECRET_WORDS: Final = ("token", "secret", "credential", "password", "passwd", "apikey", "api_key")
"""Words that make a file or directory name a secret (``.config/divergence-token``),
except for code files, the code trees (/usr, /lib, ...) and a few public names: Python's
own ``tokenize.py`` and ``secrets.py`` are not secrets, nor is ``/etc/passwd``."""

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
_CODE_TREES: Final = (
    "/usr",
    "/lib",
    "/lib64",
    "/lib32",
    "/bin",
    "/sbin",
    "/opt",
    "/proc",
    "/sys",
    "/nix",
    "/snap",
)
# Names that hold one of SECRET_WORDS and are public by design.
_PUBLIC_NAMES: Final = frozenset(
    {"passwd", "passwd-", "common-password", "password-auth", "system-auth"}
)


# One pattern for all of SECRET_NAMES: most names match none, and a path's every part
# is tried (one match here, not fourteen); the first that matches is then found by name.
_ANY_SECRET_NAME: Final = re.compile("|".join(fnmatch.translate(p) for p in SECRET_NAMES)).match


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
    import glob

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


# Quick tests that nothing of a kind matches, each equivalent to its loop below: most
# paths are no secret, and a tree walk judges every one of hundreds of thousands.
_ANY_HOME_SECRET: Final = re.compile(
    "(?:^|/)(?:" + "|".join(re.escape(n) for n in HOME_SECRETS) + ")/"
).search
_ANY_SYSTEM_GLOB: Final = re.compile(
    "|".join(f"(?:{fnmatch.translate(p)})" for p in SYSTEM_SECRETS)
).match
_SYSTEM_TREES: Final = tuple(p.rstrip("*") + "/" for p in SYSTEM_SECRETS)
_ANY_SECRET_WORD: Final = re.compile("|".join(re.escape(w) for w in SECRET_WORDS)).search
_SECRET_WORD_NAMES: Final = frozenset(n for w in SECRET_WORDS for n in (w, w + "s"))
# Any part of a path named like one of SECRET_NAMES (globs of literals and `*`, which
# stays within the part): one search over the whole path instead of one per part.
_ANY_PART_NAMED: Final = re.compile(
    "(?s)(?:^|/)(?:"
    + "|".join("[^/]*".join(map(re.escape, name.split("*"))) for name in SECRET_NAMES)
    + ")(?=/|$)"
).search


def _beneath(trees: tuple[str, ...]) -> tuple[frozenset[str], tuple[str, ...]]:
    """``trees`` as a set and as prefixes: ``inside(path, t)`` for any ``t`` of them is
    ``path in set or path.startswith(prefixes)`` (none of them is ``/``)."""
    return frozenset(trees), tuple(t + "/" for t in trees)


def secret_reason(path: str, home: str | None = None) -> str | None:
    """Why ``path`` is a secret (one phrase), or None when it is not one.

    Judged by pattern, so it works on paths from another machine (an imported report's
    ``/home/alice/.aws/config``) and on variable forms (``${HOME}/.ssh``): a home secret
    such as ``.ssh`` or ``.config/gh`` is one wherever it sits, not only under ``home``.
    ``home`` is accepted for callers that know it; the judgement does not depend on it.
    """
    del home  # kept for the callers' sake: see the docstring
    path = posixpath.normpath(path)
    framed = path if path.endswith("/") else path + "/"
    if _ANY_HOME_SECRET(framed):
        for name in HOME_SECRETS:
            if f"/{name}/" in framed or framed.startswith(f"{name}/"):
                return f"~/{name} holds credentials"
    if _ANY_SYSTEM_GLOB(path) or path.startswith(_SYSTEM_TREES):
        for pattern in SYSTEM_SECRETS:
            if fnmatch.fnmatchcase(path, pattern) or path.startswith(pattern.rstrip("*") + "/"):
                return f"{pattern} holds system secrets"
    lowered = path.lower()
    if not _ANY_PART_NAMED(lowered) and not _ANY_SECRET_WORD(lowered):
        return None  # nothing below could name it: no part's name, no word in any part
    parts = [p for p in path.split("/") if p]
    if _public_certificate(path):
        return None
    for part in parts:
        lower = part.lower()
        if _ANY_SECRET_NAME(lower):
            pattern = next(p for p in SECRET_NAMES if fnmatch.fnmatchcase(lower, p))
            return f"{part!r} is named like a secret ({pattern})"
    if path in _CODE_TREE_SET or path.startswith(_CODE_TREE_PREFIXES):
        return None
    last = len(parts) - 1
    in_etc = inside(path, "/etc")
    hidden = False
    for i, part in enumerate(parts):
        lower = part.lower()
        if i == last and (lower.endswith(_CODE_SUFFIXES) or lower in _PUBLIC_NAMES):
            continue
        if i < last:
            # A directory is a secret when it is named for one (`secrets/`), or holds a
            # secret word inside a hidden config tree (`.config/divergence-token/`). A
            # project directory that merely mentions a word (`secret-santa/`) is not.
            was_hidden = hidden
            hidden = hidden or part.startswith(".")
            if in_etc:
                continue
            stripped = lower.lstrip(".")
            if stripped in _SECRET_WORD_NAMES or (was_hidden and _ANY_SECRET_WORD(lower)):
                for word in SECRET_WORDS:
                    if stripped in (word, word + "s") or (was_hidden and word in lower):
                        return f"{part!r} is named like a secret ({word!r})"
            continue
        if _ANY_SECRET_WORD(lower):
            for word in SECRET_WORDS:
                if word in lower:
                    return f"{part!r} is named like a secret ({word!r})"
    return None


# Certificate stores: public by design, and an HTTPS client needs them. A `*.pem`
# elsewhere may hold a private key and stays a secret.
_CA_TREES: Final = (
    "/etc/ssl/certs",
    "/etc/ca-certificates",
    "/etc/pki/ca-trust",
    "/etc/pki/tls/certs",
    "/usr/share/ca-certificates",
    "/usr/local/share/ca-certificates",
)
_CA_NAMES: Final = ("cacert.pem", "ca-bundle*.pem", "ca-bundle*.crt", "ca-certificates*.crt")


_CA_TREE_SET, _CA_TREE_PREFIXES = _beneath(_CA_TREES)
_CODE_TREE_SET, _CODE_TREE_PREFIXES = _beneath(_CODE_TREES)
_ANY_CA_NAME: Final = re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in _CA_NAMES)).match


def _public_certificate(path: str) -> bool:
    if path in _CA_TREE_SET or path.startswith(_CA_TREE_PREFIXES):
        return True
    return _ANY_CA_NAME(posixpath.basename(path).lower()) is not None


_SECRET_VARIABLE: Final = re.compile(
    r"SSH_AUTH_SOCK|TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_KEY|CREDENTIAL|PRIVATE_KEY",
    re.IGNORECASE,
)


def secret_variable(name: str) -> bool:
    """True for an environment variable named like a secret or a key agent
    (``GITHUB_TOKEN``, ``OPENAI_API_KEY``, ``SSH_AUTH_SOCK``): its value is never written
    into a policy or an observation."""
    return _SECRET_VARIABLE.search(name) is not None
