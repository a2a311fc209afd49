"""A grant keeps out the secrets and protected paths beneath it that it does not name."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import make_policy

from cvg_policy.compile import Compiled, compile_report
from cvg_policy.expand import OsView
from cvg_policy.implied import secrets_beneath
from cvg_policy.paths import inside
from cvg_policy.secrets import HOME_SECRETS
from cvg_policy.variables import context


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = Path(os.path.realpath(tmp_path)) / "home"
    for d in (".ssh", ".claude", "docs"):
        (h / d).mkdir(parents=True)
    for f in (".ssh/id_rsa", ".ssh/known_hosts", ".env", ".bashrc", ".claude/.credentials.json",
              ".claude/settings.json", "docs/a.md"):  # fmt: skip
        (h / f).write_text(f)
    monkeypatch.setenv("HOME", str(h))
    for name in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        monkeypatch.delenv(name, raising=False)
    return h


def _compile(home: Path, **filesystem: list[str]) -> Compiled:
    policy = make_policy(filesystem=filesystem)
    return compile_report(policy, variables=context(cwd=str(home / "docs"), home=str(home)), abi=4)


def _implied(c: Compiled) -> dict[str, tuple[str, str, str]]:
    return {i.path: (i.mode, i.rule, i.entry) for i in c.plan.implied}


def _rules(c: Compiled) -> dict[str, list[str]]:
    return {r.path: list(r.access) for r in c.plan.landlock.fs_rules}


def _reaches(c: Compiled, path: Path) -> list[str]:
    return [r for r in _rules(c) if inside(str(path), r)]


def test_reading_the_home_denies_its_secrets_and_cites_them(home: Path) -> None:
    c = _compile(home, read=["${HOME}"])
    assert _implied(c) == {
        str(home / ".ssh"): ("deny", "filesystem.read[0]", "~/.ssh"),
        str(home / ".env"): ("deny", "filesystem.read[0]", ".env in a workspace"),
        str(home / ".claude/.credentials.json"): ("deny", "filesystem.read[0]",
                                                  "~/.claude/.credentials.json"),
    }  # fmt: skip
    for secret in (".ssh/id_rsa", ".env", ".claude/.credentials.json"):
        assert _reaches(c, home / secret) == [], secret
    # Reading is not writing: protected paths are not implied under a read grant.
    assert _reaches(c, home / ".bashrc") == [str(home / ".bashrc")]
    assert _reaches(c, home / ".claude/settings.json") == [str(home / ".claude/settings.json")]
    (expansion,) = c.plan.expansions
    assert str(home / ".ssh") in expansion.denied and str(home) in expansion.held


def test_a_secret_named_exactly_is_granted(home: Path) -> None:
    c = _compile(home, read=["${HOME}", "${HOME}/.ssh"])
    assert str(home / ".ssh") not in _implied(c)
    assert _reaches(c, home / ".ssh/id_rsa") == [str(home / ".ssh")]
    assert _reaches(c, home / ".env") == []  # only what is named


def test_writing_the_home_keeps_protected_paths_read_only(home: Path) -> None:
    c = _compile(home, write=["${HOME}"])
    implied = _implied(c)
    assert implied[str(home / ".bashrc")] == ("protect", "filesystem.write[0]", ".bashrc")
    assert _rules(c)[str(home / ".bashrc")] == ["read_file"]
    # ~/.claude is protected and holds a secret: a read-only rule on it would grant the
    # secret, so it is denied whole.
    assert implied[str(home / ".claude")][0] == "deny"
    assert _reaches(c, home / ".claude/settings.json") == []
    assert "write_file" in _rules(c)[str(home / "docs")]


def test_a_protected_path_named_in_a_write_grant_is_writable(home: Path) -> None:
    c = _compile(home, write=["${HOME}", "${HOME}/.bashrc"])
    assert str(home / ".bashrc") not in _implied(c)
    assert "write_file" in _rules(c)[str(home / ".bashrc")]
    # Named in a read grant only, it stays protected beneath the write grant.
    c = _compile(home, write=["${HOME}"], read=["${HOME}/.bashrc"])
    assert _implied(c)[str(home / ".bashrc")][0] == "protect"
    assert "write_file" not in _rules(c)[str(home / ".bashrc")]


def test_a_grant_inside_an_implied_deny_is_removed_with_a_warning(home: Path) -> None:
    c = _compile(home, read=["${HOME}", "${HOME}/.ssh/known_hosts"])
    assert _reaches(c, home / ".ssh/known_hosts") == []
    assert any(
        f.address == "filesystem.read[1]" and str(home / ".ssh") in f.message for f in c.findings
    ), c.findings


def test_an_explicit_deny_is_not_repeated(home: Path) -> None:
    c = _compile(home, read=["${HOME}"], deny=["${HOME}/.ssh", "${HOME}/.claude"])
    assert sorted(_implied(c)) == [str(home / ".env")]


def test_the_patterns_looked_at_are_kept_with_what_they_matched(home: Path) -> None:
    c = _compile(home, read=["${HOME}"])
    assert c.watched[str(home / ".ssh")] == [str(home / ".ssh")]
    assert c.watched[str(home / ".aws")] == []  # missing now: a change when it appears
    assert c.watched[str(home / ".env.*")] == []
    (home / ".env.prod").write_text("x")
    c = _compile(home, read=["${HOME}"])
    assert c.watched[str(home / ".env.*")] == [str(home / ".env.prod")]
    assert str(home / ".env.prod") in _implied(c)


def test_a_secret_the_compiler_cannot_read_is_left_to_its_permissions(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(OsView, "readable", lambda self, path: not path.endswith("/.env"))
    c = _compile(home, read=["${HOME}"])
    assert str(home / ".env") not in _implied(c) and str(home / ".ssh") in _implied(c)


def test_a_home_holding_every_secret_stays_a_small_plan(home: Path) -> None:
    for name in HOME_SECRETS:
        path = home / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            path.write_text("x")
    c = _compile(home, read=["${HOME}"])
    assert len(_implied(c)) >= len(HOME_SECRETS) - 2  # entries inside others go with them
    # The siblings on the way to each secret, not one rule per file in the home.
    assert len(c.plan.landlock.fs_rules) < 3 * len(HOME_SECRETS), len(c.plan.landlock.fs_rules)
    for name in HOME_SECRETS:
        assert _reaches(c, home / name) == [], name
    for plain in ("docs/a.md", ".bashrc", ".claude/settings.json"):
        assert _reaches(c, home / plain) != [], plain


def test_secrets_beneath_finds_them_beneath_any_directory(home: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / ".env").write_text("x")
    assert secrets_beneath(str(other), str(home / "docs"), str(home)) == [
        (str(other / ".env"), ".env in a workspace")
    ]
    assert secrets_beneath(str(home / "docs"), str(home / "docs"), str(home)) == []
