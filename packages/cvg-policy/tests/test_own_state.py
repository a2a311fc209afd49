"""Every compiled policy keeps cvg's own config, cache and state out of its grants."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import make_policy

from cvg_policy.compile import compile_report
from cvg_policy.own_state import OWN_STATE
from cvg_policy.paths import inside
from cvg_policy.variables import context


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = Path(os.path.realpath(tmp_path)) / "home"
    for d in (".config/cvg/policies", ".cache/cvg/plans", ".cache/pip", ".local/state/cvg/runs",
              "docs"):  # fmt: skip
        (h / d).mkdir(parents=True)
    monkeypatch.setenv("HOME", str(h))
    for name in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        monkeypatch.delenv(name, raising=False)
    return h


def _own(home: Path) -> list[str]:
    return [str(home / ".config/cvg"), str(home / ".cache/cvg"), str(home / ".local/state/cvg")]


@pytest.mark.parametrize(
    ("rule", "path"),
    [
        ("write", "${HOME}"),
        ("read", "${HOME}"),
        ("write", "${HOME}/.cache"),
        ("write", "${HOME}/.local/state"),
        ("read", "${HOME}/.config"),
    ],
)
def test_a_grant_around_cvgs_directories_is_narrowed(home: Path, rule: str, path: str) -> None:
    c = compile_report(make_policy(filesystem={rule: [path]}), variables=context(home=str(home)),
                       abi=4)  # fmt: skip
    rules = [r.path for r in c.plan.landlock.fs_rules]
    for own in _own(home):
        assert not any(inside(own, r) for r in rules), (own, rules)
    assert [f for f in c.findings if f.address == OWN_STATE] == []
    if path.endswith(".cache"):
        assert str(home / ".cache/pip") in rules  # the rest of the grant stays


def test_a_grant_inside_cvgs_directories_is_removed(home: Path) -> None:
    c = compile_report(
        make_policy(filesystem={"write": ["${HOME}/.cache/cvg/plans", "${HOME}/docs"]}),
        variables=context(home=str(home)),
        abi=4,
    )
    assert [r.path for r in c.plan.landlock.fs_rules] == [str(home / "docs")]
    [finding] = [f for f in c.findings if OWN_STATE in f.message]
    assert finding.address == "filesystem.write[0]" and "the grant is removed" in finding.message


def test_a_policy_away_from_them_is_unchanged(home: Path) -> None:
    c = compile_report(make_policy(filesystem={"read": ["/usr"], "write": ["${HOME}/docs"]}),
                       variables=context(home=str(home)), abi=4)  # fmt: skip
    assert c.plan.expansions == [] and c.findings == []


def test_xdg_directories_elsewhere_are_the_ones_denied(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = Path(os.path.realpath(tmp_path)) / "elsewhere"
    (cache / "cvg").mkdir(parents=True)
    (cache / "other").mkdir()
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    c = compile_report(make_policy(filesystem={"write": [str(cache)]}),
                       variables=context(home=str(home)), abi=4)  # fmt: skip
    assert [r.path for r in c.plan.landlock.fs_rules] == [str(cache / "other")]
