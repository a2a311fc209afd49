"""The protected-path table: the concrete paths for a workspace and a home, the judge
by pattern, and docs/protected-paths.md generated from the table."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from cvg_policy.protected import (
    PROTECTED,
    cvg_dirs,
    protected_beneath,
    protected_paths,
    protected_reason,
)

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    "path",
    [
        "/home/u/.bashrc",
        "${HOME}/.zshrc",
        "/srv/repo/.git/config",
        "${CWD}/.git/hooks",
        "${CWD}/.git/hooks/pre-commit",
        "/w/.envrc",
        "/w/.vscode/tasks.json",
        "/w/.idea",
        "/w/.claude/settings.json",
        "/w/.cursor/rules",
        "/w/.mcp.json",
        "/home/u/.config/autostart/evil.desktop",
        "/home/u/.config/systemd/user/x.service",
        "/home/u/.local/bin/ls",
        "/home/u/.local/share/applications/x.desktop",
        "/home/u/.ssh/authorized_keys",
        "/home/u/.ssh/config",
        "/home/u/.claude.json",
        "/home/u/.config/Claude/claude_desktop_config.json",
        "/home/u/.cache/cvg/plans/x.json",
        "/home/u/.config/cvg/policies/files.yaml",
        "/home/u/.local/state/cvg/runs/r.json",
    ],
)
def test_each_class_is_protected_by_pattern(path: str) -> None:
    assert protected_reason(path) is not None, path


@pytest.mark.parametrize(
    "path",
    [
        "/home/u/project/src/main.py",
        "/home/u/.bashrc.d.txt",
        "/srv/repo/.git/index",
        "/srv/repo/.git/config.lock",  # git's own lock beside the config: a new name
        "/srv/repo/.git",
        "/home/u/.cache/pip/x",
        "/home/u/.local/share/other",
        "/home/u/.ssh",  # a secret, not a protected path
    ],
)
def test_neighbours_are_not_protected(path: str) -> None:
    assert protected_reason(path) is None, path


def test_the_reason_names_the_class_and_why() -> None:
    reason = protected_reason("/r/.git/config")
    assert reason is not None and "git" in reason and "core.fsmonitor" in reason


def test_xdg_directories_are_cvgs_own_state() -> None:
    env = {"XDG_CACHE_HOME": "/var/cache-u"}
    assert "/var/cache-u/cvg" in cvg_dirs("/home/u", env)
    assert protected_reason("/var/cache-u/cvg/plans/p", "/home/u", env) is not None
    assert protected_reason("/var/cache-u/cvg/plans/p", "/home/u") is None
    assert cvg_dirs("/home/u", {"XDG_CACHE_HOME": "relative"}) == [
        "/home/u/.config/cvg",
        "/home/u/.cache/cvg",
        "/home/u/.local/state/cvg",
    ]


def test_concrete_paths_for_a_workspace_and_a_home() -> None:
    paths = dict(protected_paths("/w", "/home/u"))
    assert {"/w/.git/config", "/w/.git/hooks", "/w/.mcp.json", "/home/u/.bashrc"} <= set(paths)
    assert {"/home/u/.local/bin", "/home/u/.cache/cvg", "/home/u/.local/state/cvg"} <= set(paths)
    assert "/w/.bashrc" not in paths and "/home/u/.git/config" not in paths
    assert len(paths) == len(PROTECTED)  # one path per entry, cvg's three included


def test_beneath_finds_what_exists_in_the_tree_and_in_its_own_repository(tmp_path: Path) -> None:
    home, cwd, other = tmp_path / "home", tmp_path / "home/w", tmp_path / "home/other"
    for d in (cwd / ".git/hooks", other / ".git", home / ".local/bin"):
        d.mkdir(parents=True)
    for f in (cwd / ".git/config", other / ".git/config", home / ".bashrc"):
        f.write_text("")
    found = {p for p, _ in protected_beneath(str(home), str(cwd), str(home))}
    assert found == {
        f"{cwd}/.git/config",
        f"{cwd}/.git/hooks",
        f"{home}/.bashrc",
        f"{home}/.local/bin",
    }
    # A grant on another repository holds that repository's own config.
    found = {p for p, _ in protected_beneath(str(other), str(cwd), str(home))}
    assert found == {f"{other}/.git/config"}


def _tool():  # type: ignore[no-untyped-def]
    path = ROOT / "tools/gen_protected_doc.py"
    spec = importlib.util.spec_from_file_location("gen_protected_doc", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_protected_doc"] = module
    spec.loader.exec_module(module)
    return module


def test_the_docs_table_is_generated_from_the_table() -> None:
    tool = _tool()
    page = (ROOT / "docs/protected-paths.md").read_text(encoding="utf-8")
    assert page == tool.render(), "docs/protected-paths.md drifted: run tools/gen_protected_doc.py"
    for entry in PROTECTED:
        assert entry.reason.replace("|", "\\|") in page
