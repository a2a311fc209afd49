"""Protected paths: files a tool may read but that no policy hands out for writing.

Each one runs code, or decides what runs, outside the sandbox the next time the user
does something ordinary: opens a shell (``~/.bashrc``), runs ``git status``
(``.git/config``'s ``core.fsmonitor``), enters a directory (``.envrc``), opens the
workspace in an editor (``.vscode/tasks.json``), logs in (``~/.config/autostart``), or
runs cvg itself (cvg's plan cache). A write there is a way back out of the sandbox.

Like :mod:`cvg_policy.secrets`, two views of one table: :func:`protected_paths` lists
the concrete paths for a working directory and a home, existing or not;
:func:`protected_reason` judges one path by pattern (``${HOME}/.bashrc``, a path from
another machine, a file inside ``.git/hooks/``).
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass

from .paths import inside

# typing only for the type checker: cvg-run imports this judge on its cold path.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final, Literal

    Where = Literal["home", "workspace", "cvg"]

__all__ = [
    "LAYERS",
    "PROTECTED",
    "Protected",
    "created_stopped_by",
    "cvg_dirs",
    "protected_beneath",
    "protected_paths",
    "protected_reason",
]


@dataclass(frozen=True)
class Protected:
    """One entry: ``name`` relative to its base (the home, the workspace, or one of
    cvg's XDG directories), a directory when ``directory``, and why it is protected."""

    name: str
    where: Where
    directory: bool
    group: str
    reason: str


def _home(names: str, group: str, reason: str, *, directory: bool = False) -> list[Protected]:
    return [Protected(n, "home", directory, group, reason) for n in names.split()]


def _workspace(names: str, group: str, reason: str, *, directory: bool = False) -> list[Protected]:
    return [Protected(n, "workspace", directory, group, reason) for n in names.split()]


_SHELL = "runs in every new shell of the user, unconfined"
_EDITOR = "the editor or agent opening the workspace runs what it names (tasks, hooks, MCP servers)"
_MCP = "names the MCP servers a client starts, unconfined, with the user's rights"

PROTECTED: Final[tuple[Protected, ...]] = (
    *_home(
        ".bashrc .bash_profile .bash_login .bash_logout .profile .zshrc .zshenv .zprofile "
        ".zlogin .zlogout .xprofile .xsessionrc .config/fish/config.fish",
        "shell startup file",
        _SHELL,
    ),
    *_home(".config/fish/conf.d", "shell startup file", _SHELL, directory=True),
    *_home(
        ".gitconfig .config/git/config",
        "git configuration",
        "git runs commands it names (core.fsmonitor, core.hooksPath) in every repository",
    ),
    *_workspace(
        ".git/config",
        "git configuration",
        "the next git command in the repository runs what it names (core.fsmonitor, "
        "core.pager, an alias)",
    ),
    *_workspace(
        ".git/hooks",
        "git configuration",
        "git runs these on commit, checkout and merge",
        directory=True,
    ),
    *_workspace(".envrc", "direnv", "direnv runs it when a shell enters the directory"),
    *_workspace(
        ".vscode .idea .claude .cursor", "workspace editor or agent config", _EDITOR, directory=True
    ),
    *_workspace(".mcp.json", "workspace editor or agent config", _MCP),
    *_home(
        ".config/autostart",
        "session autostart",
        "the desktop session starts what it holds at the next login",
        directory=True,
    ),
    *_home(
        ".config/systemd/user",
        "session autostart",
        "systemd starts the user units it holds, unconfined",
        directory=True,
    ),
    *_home(
        ".local/bin",
        "programs on PATH",
        "on the user's PATH: a program planted there replaces a command the user types",
        directory=True,
    ),
    *_home(
        ".local/share/applications",
        "session autostart",
        "desktop entries: the launcher and file associations run what they name",
        directory=True,
    ),
    *_home(".ssh/authorized_keys", "ssh", "a key added here logs in as the user"),
    *_home(".ssh/config", "ssh", "ssh runs its ProxyCommand and LocalCommand entries"),
    *_home(
        ".claude.json .config/Claude/claude_desktop_config.json .cursor/mcp.json "
        ".codeium/windsurf/mcp_config.json .config/Code/User/mcp.json "
        ".config/Code/User/settings.json .gemini/settings.json .config/zed/settings.json",
        "MCP client config",
        _MCP,
    ),
    *_home(".claude", "MCP client config", _EDITOR, directory=True),
    Protected(
        "config", "cvg", True, "cvg's own state",
        "cvg's policies ($XDG_CONFIG_HOME/cvg): a tool that rewrites them widens its next run",
    ),
    Protected(
        "cache", "cvg", True, "cvg's own state",
        "cvg's plan and probe cache ($XDG_CACHE_HOME/cvg): a later run trusts what it holds",
    ),
    Protected(
        "state", "cvg", True, "cvg's own state",
        "cvg's run records ($XDG_STATE_HOME/cvg): cvg-explain --apply proposes fixes from them",
    ),
)  # fmt: skip
"""The protected-path table (docs/protected-paths.md is generated from it)."""

LAYERS: Final = (
    ("the compiler", "keeps one that exists beneath a write grant read-only (readable, "
     "never changed) unless a write grant names it exactly; one holding a secret is "
     "denied whole; the plan lists it in `implied` (cvg_policy.implied). cvg's own "
     "directories are denied in every plan instead"),
    ("cvg-generate", "never grants one: a write there is left out, with a note"),
    ("cvg-explain", "rates a grant naming or covering one high, and applies it only when "
     "--accept-protected names it"),
    ("cvg-validate", "warns when a policy names one (or a path inside one)"),
)  # fmt: skip
"""Which layer stops a protected path, and how (the same for every entry)."""


def created_stopped_by(entry: Protected) -> str:
    """Which layer stops ``entry`` from being created during a run beneath a write grant
    when it does not exist at the start (Landlock's rules bind to the inodes that do)."""
    if entry.where == "cvg":
        return ("supervisor: every plan denies cvg's directories by name, and serves the "
                "directory holding one; post-run detection for the default one when "
                "$XDG_*_HOME puts cvg's elsewhere")  # fmt: skip
    return "post-run detection: cvg-run moves it aside and exits 122"


_XDG: Final = {"config": ("XDG_CONFIG_HOME", ".config"), "cache": ("XDG_CACHE_HOME", ".cache"),
               "state": ("XDG_STATE_HOME", ".local/state")}  # fmt: skip


def _cvg_dirs(kind: str, home: str | None, env: Mapping[str, str] | None) -> list[str]:
    variable, default = _XDG[kind]
    bases = [os.path.join(home, default)] if home else []
    xdg = (env or {}).get(variable, "")
    if os.path.isabs(xdg):
        bases.append(xdg)
    return list(dict.fromkeys(posixpath.normpath(os.path.join(b, "cvg")) for b in bases))


def cvg_dirs(home: str | None, env: Mapping[str, str] | None = None) -> list[str]:
    """cvg's own config, cache and state directories: the defaults beneath ``home``
    and, when ``env`` sets an absolute ``XDG_*_HOME``, those too."""
    return list(dict.fromkeys(d for kind in _XDG for d in _cvg_dirs(kind, home, env)))


def _cvg_entry(kind: str) -> Protected:
    return next(p for p in PROTECTED if p.where == "cvg" and p.name == kind)


def protected_paths(
    cwd: str | None, home: str | None, env: Mapping[str, str] | None = None
) -> list[tuple[str, Protected]]:
    """Every protected path for this working directory and home, existing or not, as
    (normalised path, entry)."""
    out: list[tuple[str, Protected]] = []
    for entry in PROTECTED:
        if entry.where == "home" and home:
            out.append((posixpath.normpath(os.path.join(home, entry.name)), entry))
        elif entry.where == "workspace" and cwd:
            out.append((posixpath.normpath(os.path.join(cwd, entry.name)), entry))
        elif entry.where == "cvg":
            out.extend((d, entry) for d in _cvg_dirs(entry.name, home, env))
    return out


def protected_beneath(
    tree: str, cwd: str | None, home: str | None, env: Mapping[str, str] | None = None
) -> list[tuple[str, Protected]]:
    """The protected paths that exist at or beneath ``tree``: those of the working
    directory and the home, and the workspace entries of ``tree`` itself (a grant on a
    repository other than the working directory holds its own ``.git/config``).
    Repositories deeper inside ``tree`` are not searched."""
    tree = posixpath.normpath(tree)
    found: list[tuple[str, Protected]] = []
    seen: set[str] = set()
    for base in dict.fromkeys(b for b in (cwd, tree) if b):
        for path, entry in protected_paths(base, home, env):
            if path in seen or not inside(path, tree) or not os.path.lexists(path):
                continue
            if entry.where != "workspace" and base != cwd:
                continue
            seen.add(path)
            found.append((path, entry))
    return found


def protected_reason(
    path: str, home: str | None = None, env: Mapping[str, str] | None = None
) -> str | None:
    """Why ``path`` is protected (one phrase), or None when it is not.

    Judged by pattern, like :func:`cvg_policy.secrets.secret_reason`: a home entry
    (``.bashrc``, ``.local/bin``) or a workspace entry (``.git/config``) is one wherever
    it sits, and so is anything inside a protected directory (``.git/hooks/pre-commit``).
    cvg's own directories are judged beneath ``home`` (and ``env``'s XDG directories),
    and by their default names (``.cache/cvg``) anywhere."""
    path = posixpath.normpath(path)
    framed = "/" + path.lstrip("/") + "/"
    for entry in PROTECTED:
        if entry.where == "cvg":
            continue
        needle = f"/{entry.name}/"
        # A file entry matches only itself (``.git/config``, not ``.git/config.d/x``).
        if not (needle in framed if entry.directory else framed.endswith(needle)):
            continue
        return f"{entry.name} is protected ({entry.group}): {entry.reason}"
    for kind, (_, default) in _XDG.items():
        entry = _cvg_entry(kind)
        dirs = _cvg_dirs(kind, home, env)
        if any(inside(path, d) for d in dirs) or f"/{default}/cvg/" in framed:
            return f"{default}/cvg is protected ({entry.group}): {entry.reason}"
    return None
