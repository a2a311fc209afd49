"""Fixes that reach a protected path or cover the home or a secret are rated high, and
--apply writes a protected path only when --accept-protected names it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import MakeRecord, record_dict, sealed

from cvg_explain import explain
from cvg_explain.cli import main

POLICY = "version: 1\nfilesystem:\n  read: [/usr]\n"


def _fs(path: str, right: str, op: str | None = None) -> dict[str, Any]:
    d = {"syscall": "openat", "path": path, "mechanism": "landlock_fs", "right": right,
         "errno": "EACCES"}  # fmt: skip
    if op is not None:
        d["op"] = op
    return d


def _explained(make_record: MakeRecord, tmp_path: Path, denial: dict[str, Any], **kw: Any) -> Any:
    p = tmp_path / "p.yaml"
    p.write_text(POLICY)
    out = explain(make_record([denial], policy_path=str(p), **kw))
    assert len(out.denials) == 1
    return out.denials[0]


@pytest.mark.parametrize(
    ("path", "right", "op"),
    [
        ("/home/alice/.bashrc", "write_file", None),
        ("/home/alice/.config/autostart/x.desktop", "make_reg", "create"),
        ("/home/alice/.local/bin/ls", "make_reg", "create"),
        ("/home/alice/.config/systemd/user/x.service", "make_reg", "create"),
        ("/home/alice/.cache/cvg/plans/default.json", "write_file", None),
        ("/work/project/.git/config", "write_file", None),
        ("/work/project/.git/hooks/pre-commit", "make_reg", "create"),
    ],
    ids=["bashrc", "autostart", "local-bin", "systemd-user", "plan-cache", "git-config", "hooks"],
)
def test_a_write_to_a_protected_path_is_high(
    make_record: MakeRecord, tmp_path: Path, path: str, right: str, op: str | None
) -> None:
    e = _explained(make_record, tmp_path, _fs(path, right, op))
    assert e.fix is not None
    assert e.risk is not None and e.risk.level == "high", e.risk
    assert "protected" in e.risk.text and "--accept-protected" in e.risk.text


def test_reading_the_whole_home_is_high(
    make_record: MakeRecord, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    e = _explained(make_record, tmp_path, _fs(str(home), "read_dir"), cwd=str(home))
    assert e.fix is not None and "${CWD}" in e.fix
    assert e.risk is not None and e.risk.level == "high", e.risk
    assert "whole home" in e.risk.text


def test_a_home_not_on_this_machine_is_still_high(
    make_record: MakeRecord, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "ghost"  # a record from another machine: the home is not here
    monkeypatch.setenv("HOME", str(home))
    (tmp_path / "work").mkdir()
    e = _explained(make_record, tmp_path, _fs(str(home), "read_dir"), cwd=str(tmp_path / "work"))
    assert e.risk is not None and e.risk.level == "high", e.risk
    assert "whole home" in e.risk.text


@pytest.mark.parametrize(
    ("where", "name"), [("work", ".env"), ("other", ".env.production")], ids=["cwd", "elsewhere"]
)
def test_a_directory_holding_a_secret_is_high(
    make_record: MakeRecord, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str, name: str
) -> None:
    work, there = tmp_path / "work", tmp_path / where
    for d in (work, there / "sub"):
        d.mkdir(parents=True, exist_ok=True)
    (there / name).write_text("TOKEN=x\n")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    e = _explained(make_record, tmp_path, _fs(str(there), "read_dir"), cwd=str(work))
    assert e.risk is not None and e.risk.level == "high", e.risk
    assert "holds secrets" in e.risk.text and name in e.risk.text
    # The same grant on a directory holding none stays medium.
    e = _explained(make_record, tmp_path, _fs(str(there / "sub"), "read_dir"), cwd=str(work))
    assert e.risk is not None and e.risk.level == "medium", e.risk


def _setup(tmp_path: Path, *denials: dict[str, Any]) -> tuple[Path, Path]:
    p = tmp_path / "p.yaml"
    p.write_text(POLICY)
    r = tmp_path / "run.json"
    # Sealed as cvg-run seals it: --apply refuses a record it cannot authenticate.
    r.write_text(sealed(record_dict([dict(d) for d in denials], policy_path=str(p))))
    return r, p


def test_apply_writes_a_protected_path_only_when_accept_protected_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    r, p = _setup(tmp_path, _fs("/home/alice/.bashrc", "write_file"))
    for extra in ([], ["--accept-risk"], ["--accept-protected", "${HOME}/.profile"]):
        assert main(["--apply", *extra, str(r)]) == 1
        err = capsys.readouterr().err
        assert p.read_text() == POLICY
        last = err.rstrip().splitlines()[-1]
        assert "refusing" in last and "--accept-protected ${HOME}/.bashrc" in last
    assert main(["--apply", "--accept-protected", "${HOME}/.bashrc", str(r)]) == 0
    assert "${HOME}/.bashrc" in p.read_text()


def test_accept_protected_needs_apply(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--accept-protected", "${HOME}/.bashrc", "r.json"]) == 2
    assert "--accept-protected only makes sense with --apply" in capsys.readouterr().err
