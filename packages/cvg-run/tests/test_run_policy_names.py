"""``cvg-run -p NAME`` looks a bare name up in the policy directories; ``-p -`` reads
the policy from stdin. The real console script, as a subprocess (as root).

Oracle for "this policy was the one applied": each test policy grants write on the
box's share directory, which the embedded default does not; the tool writes a marker
there, and the marker exists only when the named policy confined it.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from pathlib import Path

import pytest
from runhelp import CVG_RUN, Box, cli_env, make_policy, only_record, run_cli

from cvg_run.policy_lookup import SYSTEM_POLICIES

WRITE_MARKER = 'cat; echo done > "$1/marker"'


@pytest.fixture(autouse=True)
def _needs_root(as_root: None) -> None:
    """Subprocesses of pytest's python can only run as the user running pytest."""


def _marker_tool(box: Box) -> list[str]:
    return ["--", "sh", "-c", WRITE_MARKER, "sh", str(box.share)]


def _policy_granting_share(where: Path, name: str, box: Box) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    return make_policy(where, name, filesystem={"write": ["${SCRATCH}", str(box.share)]})


@pytest.mark.parametrize("xdg", [True, False], ids=["xdg-config-home", "home-config"])
def test_a_bare_name_is_found_in_the_user_policy_directory(box: Box, xdg: bool) -> None:
    config = box.root / "xdgconfig" if xdg else box.home / ".config"
    found = _policy_granting_share(config / "cvg" / "policies", "notes.yaml", box)
    env = {"XDG_CONFIG_HOME": str(config) if xdg else None}
    done = run_cli(["-p", "notes", *_marker_tool(box)], box=box, env=env)
    assert done.returncode == 0, done.stderr
    assert (box.share / "marker").read_text() == "done\n"
    assert done.stderr.decode() == f"cvg-run: policy notes: {found}\n"
    _, rec = only_record(box)
    assert rec.policy_path == str(found)


def test_the_default_policy_does_not_write_the_share(box: Box) -> None:
    """The oracle above holds: without the named policy the marker is refused."""
    done = run_cli(_marker_tool(box), box=box)
    assert done.returncode != 0
    assert not (box.share / "marker").exists()


def test_a_file_in_the_working_directory_wins_over_the_lookup(box: Box) -> None:
    config = box.root / "xdgconfig"
    _policy_granting_share(config / "cvg" / "policies", "notes.yaml", box)
    # Same name, no .yaml, in the working directory: the embedded default's grants,
    # so the marker is refused: the file here was used, not the one looked up.
    make_policy(box.cwd, "notes")
    env = {"XDG_CONFIG_HOME": str(config)}
    done = run_cli(["-p", "notes", *_marker_tool(box)], box=box, env=env)
    assert done.returncode != 0
    assert not (box.share / "marker").exists()
    assert b"cvg-run: policy notes:" not in done.stderr
    _, rec = only_record(box)
    assert rec.policy_path == str(box.cwd / "notes")


def test_a_name_found_nowhere_is_one_line_listing_where_it_looked(box: Box) -> None:
    config = box.root / "xdgconfig"
    name = "no-such-policy-" + secrets.token_hex(4)
    env = {"XDG_CONFIG_HOME": str(config)}
    done = run_cli(["-p", name, *_marker_tool(box)], box=box, env=env)
    assert done.returncode == 125
    assert done.stdout == b""
    lines = done.stderr.decode().splitlines()
    assert lines == [
        f"cvg-run: policy {name}: not found (looked for ./{name}, "
        f"{config}/cvg/policies/{name}.yaml, {SYSTEM_POLICIES}/{name}.yaml)"
    ]
    assert not (box.share / "marker").exists()
    assert box.records() == []


def test_a_path_with_a_slash_is_never_looked_up(box: Box) -> None:
    config = box.root / "xdgconfig"
    _policy_granting_share(config / "cvg" / "policies", "notes.yaml", box)
    done = run_cli(["-p", "sub/notes", *_marker_tool(box)], box=box,
                   env={"XDG_CONFIG_HOME": str(config)})  # fmt: skip
    assert done.returncode == 125
    assert "sub/notes: cannot read policy" in done.stderr.decode()
    assert not (box.share / "marker").exists()


def test_the_system_directory_is_looked_in_after_the_user_one(box: Box) -> None:
    if os.geteuid() != 0:
        pytest.skip(f"writing a policy into {SYSTEM_POLICIES} needs root")
    system = Path(SYSTEM_POLICIES)
    made = [p for p in (system.parent, system) if not p.exists()]
    system.mkdir(parents=True, exist_ok=True)
    name = "cvg-run-test-" + secrets.token_hex(4)
    try:
        found = _policy_granting_share(system, f"{name}.yaml", box)
        env = {"XDG_CONFIG_HOME": str(box.root / "xdgconfig")}
        done = run_cli(["-p", name, *_marker_tool(box)], box=box, env=env)
        assert done.returncode == 0, done.stderr
        assert (box.share / "marker").read_text() == "done\n"
        assert done.stderr.decode() == f"cvg-run: policy {name}: {found}\n"
        # The user's own file of the same name comes first.
        (box.share / "marker").unlink()
        user_dir = box.root / "xdgconfig" / "cvg" / "policies"
        user_dir.mkdir(parents=True)
        user = make_policy(user_dir, f"{name}.yaml")
        done = run_cli(["-p", name, *_marker_tool(box)], box=box, env=env)
        assert done.stderr.decode().splitlines()[0] == f"cvg-run: policy {name}: {user}"
        assert not (box.share / "marker").exists()
    finally:
        (system / f"{name}.yaml").unlink(missing_ok=True)
        for d in reversed(made):
            shutil.rmtree(d, ignore_errors=True)


def test_dash_reads_the_policy_from_stdin_and_the_tool_reads_dev_null(box: Box) -> None:
    policy = _policy_granting_share(box.root / "p", "p.json", box)
    done = _run_with_stdin(box, policy.read_bytes(), ["-p", "-", *_marker_tool(box)])
    assert done.returncode == 0, done.stderr
    # `cat` in the tool read /dev/null: nothing of the policy reaches its stdout.
    assert done.stdout == b""
    assert (box.share / "marker").read_text() == "done\n"
    data, rec = only_record(box)
    assert rec.policy_path is None
    assert data["policy_digest"].startswith("sha256:")


def test_dash_with_a_bad_policy_on_stdin_names_stdin(box: Box) -> None:
    done = _run_with_stdin(box, b"version: 1\nfilesystem: [oops\n", ["-p", "-", "--", "true"])
    assert done.returncode == 125
    line = done.stderr.decode().splitlines()[0]
    assert line.startswith("cvg-run: <stdin>:"), line
    assert box.records() == []


def _run_with_stdin(box: Box, data: bytes, argv: list[str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [str(CVG_RUN), *argv], input=data, env=cli_env(box), cwd=box.cwd,
        capture_output=True, timeout=60, check=False,
    )  # fmt: skip
