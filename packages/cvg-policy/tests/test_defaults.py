"""cvg_policy.defaults: the default policy without broad workspaces and readable secrets."""

from __future__ import annotations

import os
from pathlib import Path

from cvg_policy.defaults import broad_reason, tailor_default
from cvg_schema import Policy


def _default(read: list[str]) -> Policy:
    return Policy.model_validate({"version": 1, "filesystem": {"read": read}})


def test_broad_working_directories(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    assert broad_reason(str(home), str(home)) is not None
    assert broad_reason(str(tmp_path), str(home)) is not None  # holds the home
    assert broad_reason("/", str(home)) is not None
    assert broad_reason("/usr", str(home)) is not None
    (home / "project").mkdir()
    assert broad_reason(str(home / "project"), str(home)) is None


def test_a_home_workspace_is_not_granted(tmp_path: Path) -> None:
    policy, notes = tailor_default(
        _default(["/usr", "${CWD}"]), cwd=str(tmp_path), home=str(tmp_path)
    )
    assert policy.filesystem.read == ["/usr"]
    assert any("not granted" in n for n in notes)


def test_readable_secrets_beneath_the_workspace_are_denied(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    for name in (".env", "server.key", "notes.txt"):
        (work / name).write_text("x")
    policy, _ = tailor_default(_default(["${CWD}"]), cwd=str(work), home=str(home))
    assert sorted(policy.filesystem.deny) == [str(work / ".env"), str(work / "server.key")]


def test_unreadable_system_secrets_are_left_to_permissions(tmp_path: Path) -> None:
    policy, _ = tailor_default(_default(["/etc"]), cwd=str(tmp_path), home=str(tmp_path))
    denied = set(policy.filesystem.deny)
    if os.access("/etc/shadow", os.R_OK):
        assert "/etc/shadow" in denied
    else:
        assert "/etc/shadow" not in denied
