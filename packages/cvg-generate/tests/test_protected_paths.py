"""cvg-generate never grants a protected path (cvg_policy.protected), whatever the tool
wrote there, and says so in a note."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cvg_generate.generate import Generated, Source, generate
from cvg_schema import Observation


def _obs(cwd: Path, home: Path, *events: dict[str, Any]) -> Observation:
    evs = [
        {"id": f"e{i}", "syscall": "openat", "result": "ok", **e} for i, e in enumerate(events, 1)
    ]
    return Observation.model_validate(
        {
            "kind": "cvg.observation",
            "schema_version": "1.0",
            "argv": ["tool"],
            "cwd": str(cwd),
            "home": str(home),
            "scratch": ["/nonexistent-scratch"],
            "events": evs,
        }
    )


def _gen(cwd: Path, home: Path, *events: dict[str, Any]) -> Generated:
    return generate([Source(_obs(cwd, home, *events))])


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    home = tmp_path / "home"
    cwd = tmp_path / "work"
    (cwd / ".git/hooks").mkdir(parents=True)
    (cwd / ".git/config").write_text("[core]\n")
    for d in (".local/bin", ".config/autostart", ".cache/cvg/plans"):
        (home / d).mkdir(parents=True)
    return cwd, home


def test_appending_to_git_config_grants_nothing_and_keeps_the_workspace_read_only(
    dirs: tuple[Path, Path],
) -> None:
    cwd, home = dirs
    g = _gen(
        cwd,
        home,
        {"op": "read", "path": f"{cwd}/README"},
        {"op": "write", "path": f"{cwd}/.git/config"},
    )
    fs = g.policy.filesystem
    assert "${CWD}" not in fs.write and not any(".git" in w for w in fs.write)
    assert any("never granted" in n and ".git/config is protected" in n for n in g.notes)


@pytest.mark.parametrize(
    ("op", "rel"),
    [
        ("write", ".bashrc"),
        ("create", ".profile"),
        ("create", ".local/bin/ls"),
        ("create", ".config/autostart/x.desktop"),
        ("create", ".config/systemd/user/x.service"),
        ("write", ".cache/cvg/plans/default.json"),
        ("write", ".claude.json"),
    ],
)
def test_a_write_in_the_home_to_a_protected_path_is_never_granted(
    dirs: tuple[Path, Path], op: str, rel: str
) -> None:
    cwd, home = dirs
    g = _gen(cwd, home, {"op": op, "path": f"{home}/{rel}"})
    fs = g.policy.filesystem
    assert not [w for w in fs.write if w.startswith("${HOME}")], fs.write
    # An MCP client config is also a secret: then the secret's note says why.
    said = ("protected", "credentials")
    assert any("never granted" in n and any(w in n for w in said) for n in g.notes), g.notes


def test_a_write_beside_the_protected_paths_in_the_workspace_still_grants_it(
    dirs: tuple[Path, Path],
) -> None:
    cwd, home = dirs
    g = _gen(
        cwd,
        home,
        {"op": "write", "path": f"{cwd}/.git/config"},
        {"op": "create", "path": f"{cwd}/.git/index.lock"},
        {"op": "create", "path": f"{cwd}/notes.txt"},
    )
    assert "${CWD}" in g.policy.filesystem.write
