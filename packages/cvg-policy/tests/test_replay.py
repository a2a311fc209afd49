"""Replaying an observation against a policy: each call that succeeded while learning
and that the compiled plan would refuse, judged as Landlock and the supervisor would."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from clihelp import invoke

from cvg_policy.replay import replay
from cvg_schema import Observation
from cvg_schema.io import load_policy_dict

BASE_READ = ["/usr", "/etc", "/lib", "/bin"]


def policy(rest: dict[str, Any] | None = None, **filesystem: Any) -> Any:
    fs = {**filesystem, "read": BASE_READ + filesystem.get("read", [])}
    return load_policy_dict({"version": 1, "filesystem": fs, **(rest or {})})


def observation(cwd: Path, *events: dict[str, Any]) -> Observation:
    full = [{"id": f"e{i}", "pid": 7, "result": "ok", **e} for i, e in enumerate(events, start=1)]
    return Observation.model_validate(
        {"kind": "cvg.observation", "schema_version": "1.0", "argv": ["tool"],
         "cwd": str(cwd), "home": str(cwd.parent), "events": full}
    )  # fmt: skip


@pytest.fixture
def project(tmp_path: Path) -> Path:
    proj = tmp_path / "proj"
    (proj / "src").mkdir(parents=True)
    (proj / ".env").write_text("SECRET=1\n")
    (proj / "src" / "a.py").write_text("a\n")
    return proj


def lines(refused: list[Any]) -> list[str]:
    return [r.line() for r in refused]


def test_a_deny_inside_a_write_grant_keeps_the_directory_and_refuses_the_entry(
    project: Path,
) -> None:
    p = policy(write=["${CWD}"], deny=["${CWD}/.env"])
    obs = observation(
        project,
        {"op": "read", "syscall": "openat", "path": str(project), "directory": True},
        {"op": "create", "syscall": "openat", "path": str(project / "new.txt")},
        {"op": "write", "syscall": "openat", "path": str(project / "src" / "a.py")},
        {"op": "create", "syscall": "mkdir", "path": str(project / "out")},
        {"op": "rename", "syscall": "rename", "path": str(project / "new.txt"),
         "path2": str(project / "src" / "new.txt")},
        {"op": "remove", "syscall": "unlink", "path": str(project / "src" / "a.py")},
        {"op": "read", "syscall": "openat", "path": str(project / ".env")},
        {"op": "remove", "syscall": "unlink", "path": str(project / ".env")},
    )  # fmt: skip
    assert lines(replay(p, obs)) == [
        f"e7: read {project}/.env needs read_file",
        f"e8: remove {project}/.env needs remove_file",
    ]


def test_reads_do_not_grant_changes(project: Path) -> None:
    p = policy(read=["${CWD}"])
    obs = observation(
        project,
        {"op": "read", "syscall": "openat", "path": str(project / "src" / "a.py")},
        {"op": "write", "syscall": "openat", "path": str(project / "src" / "a.py")},
        {"op": "create", "syscall": "mkdirat", "path": str(project / "build")},
        {"op": "execute", "syscall": "execve", "path": str(project / "src" / "a.py")},
        {"op": "stat", "syscall": "newfstatat", "path": "/nowhere/at/all"},
        {"op": "read", "syscall": "openat", "path": "relative/unresolved"},
    )
    assert lines(replay(p, obs)) == [
        f"e2: write {project}/src/a.py needs write_file",
        f"e3: create {project}/build needs make_dir",
        f"e4: execute {project}/src/a.py needs execute",
    ]


def test_a_path_through_a_link_is_judged_where_it_leads(project: Path, tmp_path: Path) -> None:
    os.symlink(project / "src", tmp_path / "link")
    p = policy(read=["${CWD}/src"])
    obs = observation(
        project,
        {"op": "read", "syscall": "openat", "path": str(tmp_path / "link" / "a.py")},
        {"op": "read", "syscall": "openat", "path": str(tmp_path / "elsewhere.txt")},
    )
    assert lines(replay(p, obs)) == [f"e2: read {tmp_path}/elsewhere.txt needs read_file"]


def test_failed_calls_and_tcp_ports(project: Path) -> None:
    p = policy(read=["${CWD}"], rest={"network": {"tcp_connect": [443]}})
    obs = observation(
        project,
        {"op": "connect", "syscall": "connect", "family": "inet", "sock_type": "stream",
         "port": 443, "address": "127.0.0.1"},
        {"op": "connect", "syscall": "connect", "family": "inet", "sock_type": "stream",
         "port": 80, "address": "127.0.0.1"},
        {"op": "write", "syscall": "openat", "path": str(project / "x"), "result": "EACCES"},
    )  # fmt: skip
    assert lines(replay(p, obs)) == ["e2: connect tcp port 80 needs connect_tcp"]


def test_cvg_validate_replay_fails_a_policy_that_refuses_its_own_session(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.chdir(project)
    obs = observation(
        project, {"op": "create", "syscall": "openat", "path": str(project / "new.txt")}
    )
    obs_path = tmp_path / "obs.json"
    obs_path.write_text(obs.model_dump_json())
    holds = tmp_path / "holds.json"
    holds.write_text(json.dumps({"version": 1, "filesystem": {"write": ["${CWD}"]}}))
    fails = tmp_path / "fails.json"
    fails.write_text(json.dumps({"version": 1, "filesystem": {"read": ["${CWD}"]}}))

    ok = invoke(capsys, monkeypatch, [str(holds), "--replay", str(obs_path)])
    assert ok.status == 0 and "version: 1" in ok.out
    bad = invoke(capsys, monkeypatch, [str(fails), "--replay", str(obs_path)])
    assert bad.status == 1 and bad.out == ""
    assert bad.err_lines == [
        f"{fails}: refuses its own session: {obs_path}: e1: create {project}/new.txt needs make_reg"
    ]
    for arg, says in (("/no/such", "cannot read"), (str(holds), "not a cvg.observation")):
        usage = invoke(capsys, monkeypatch, [str(holds), "--replay", arg])
        assert usage.status == 2 and says in usage.err and len(usage.err_lines) == 1
