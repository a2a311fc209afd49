"""The cvg-explain command: inputs, formats, exit codes, --apply and its refusals."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import record_dict, sealed

from cvg_explain.cli import main
from cvg_policy.errors import PolicyError
from cvg_policy.load import load_policy
from cvg_schema.explanation import Explanation
from cvg_schema.io import digest

POLICY = "version: 1\nfilesystem:\n  read: [/usr]   # e1: the interpreter\n"
READ = {"syscall": "openat", "path": "/srv/data.txt", "mechanism": "landlock_fs",
        "right": "read_file", "errno": "EACCES"}  # fmt: skip
PTRACE = {"syscall": "ptrace", "mechanism": "seccomp", "errno": "EPERM"}


def _setup(tmp_path: Path, *denials: dict[str, Any], policy: str = POLICY) -> tuple[Path, Path]:
    p = tmp_path / "p.yaml"
    p.write_text(policy)
    r = tmp_path / "run.json"
    data = record_dict([dict(d) for d in denials], policy_path=str(p))
    with contextlib.suppress(PolicyError):
        data["policy_digest"] = digest(load_policy(policy, filename=str(p)).policy)
    r.write_text(sealed(data))
    return r, p


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_json_by_default_when_not_a_tty(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    r, _ = _setup(tmp_path, READ)
    rc, out, err = _run(capsys, str(r))
    assert (rc, err) == (0, "")
    e = Explanation.model_validate_json(out)
    assert e.record == str(r) and e.denials[0].rule == "filesystem.read"


def test_text_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    r, _ = _setup(tmp_path, READ, PTRACE)
    rc, out, _ = _run(capsys, "--format", "text", str(r))
    assert rc == 0
    assert "d1  openat /srv/data.txt  (landlock_fs, read_file, EACCES)" in out
    assert "  rule:  filesystem.read" in out
    assert "  risk:  high: no policy should allow ptrace" in out
    assert "    +  read: [/usr, /srv/data.txt]   # e1: the interpreter" in out


def test_stdin_and_state_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    r, _ = _setup(tmp_path, READ)
    proc = subprocess.run(
        ["cvg-explain", "-"], input=r.read_bytes(), capture_output=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["denials"][0]["rule"] == "filesystem.read"
    state = tmp_path / "state"
    runs = state / "cvg" / "runs"
    runs.mkdir(parents=True)
    run_id = json.loads(r.read_text())["run_id"]
    (runs / f"{run_id}.json").write_text(r.read_text())
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    rc, out, _ = _run(capsys, "--run", run_id)
    assert rc == 0 and json.loads(out)["run_id"] == run_id
    rc, _, err = _run(capsys, "--run", "20990101T000000Z-ffffffff")
    assert rc == 1 and err.startswith("cvg-explain: --run 20990101T000000Z-ffffffff: no record ")
    rc, _, err = _run(capsys, "--run", "../../etc/passwd")
    assert rc == 1 and "not a run id" in err


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("not json", "run.json: $: not valid JSON"),
        ('{"kind": "cvg.plan", "schema_version": "1.0"}', "run.json: $.kind: expected cvg.run"),
        ('{"kind": "cvg.run", "schema_version": "2.0"}', "run.json: $.schema_version:"),
    ],
)
def test_bad_record_is_one_line_exit_1(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    content: str,
    expected: str,
) -> None:
    (tmp_path / "run.json").write_text(content)
    monkeypatch.chdir(tmp_path)
    rc, out, err = _run(capsys, "run.json")
    assert rc == 1 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"cvg-explain: {expected}"), err


def test_bad_denial_names_its_json_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    r, _ = _setup(tmp_path, dict(READ, mechanism="magic"))
    rc, _, err = _run(capsys, str(r))
    assert rc == 1 and "$.denials[0].mechanism" in err and err.count("\n") == 1


def test_bad_policy_names_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    r, p = _setup(tmp_path, READ, policy="version: 1\nnetwork:\n  tcp_connect: [99999]\n")
    rc, _, err = _run(capsys, str(r))
    assert rc == 1 and err.startswith(f"cvg-explain: {p}:3: network.tcp_connect[0]: port 99999")


@pytest.mark.parametrize(
    "argv",
    [[], ["a.json", "--run", "x"], ["--bogus"], ["--out", "x", "r.json"], ["--accept-risk", "r"],
     ["--format", "xml", "r.json"]],
)  # fmt: skip
def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    rc, out, err = _run(capsys, *argv)
    assert rc == 2 and out == "" and err.count("\n") == 1 and "cvg-explain" in err


def test_help_documents_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, "--help")
    assert rc == 0
    for text in ("Exit status:", "0  explained", "1  bad input", "2  usage error", "--accept-risk"):
        assert text in out


def test_apply_writes_the_same_file_as_patch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    r, p = _setup(tmp_path, READ)
    rc, out, _ = _run(capsys, str(r))
    diff = json.loads(out)["denials"][0]["fix"]
    patched = tmp_path / "patched"
    patched.mkdir()
    (patched / "p.yaml").write_text(POLICY)
    subprocess.run(["patch", "-p0", "--quiet"], input=diff.encode(), cwd=patched, check=True)
    rc, _, err = _run(capsys, "--apply", str(r))
    assert rc == 0
    assert diff in err  # the diff is shown before writing
    assert err.rstrip().endswith(f"wrote {p} (1 change(s))")
    assert p.read_text() == (patched / "p.yaml").read_text()
    assert "# e1: the interpreter" in p.read_text()


def test_apply_refuses_high_risk_without_accept_risk(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    r, p = _setup(tmp_path, READ, PTRACE)
    rc, _, err = _run(capsys, "--apply", str(r))
    assert rc == 1
    assert p.read_text() == POLICY
    last = err.rstrip().splitlines()[-1]
    assert "--accept-risk" in last and "refusing" in last
    assert "+    - ptrace" in err  # shown, not written
    rc, _, err = _run(capsys, "--apply", "--accept-risk", str(r))
    assert rc == 0
    policy = load_policy(p.read_text(), filename=str(p)).policy
    assert policy.syscalls.allow == ["ptrace"] and policy.filesystem.read == [
        "/usr",
        "/srv/data.txt",
    ]


def test_apply_keeps_the_file_mode_and_writes_elsewhere_with_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    r, p = _setup(tmp_path, READ)
    p.chmod(0o640)
    rc, _, _ = _run(capsys, "--apply", "--out", str(tmp_path / "new.yaml"), str(r))
    assert rc == 0 and p.read_text() == POLICY
    assert "/srv/data.txt" in (tmp_path / "new.yaml").read_text()
    rc, _, _ = _run(capsys, "--apply", str(r))
    assert rc == 0 and (p.stat().st_mode & 0o777) == 0o640


def test_apply_with_the_default_policy_needs_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    r = tmp_path / "run.json"
    r.write_text(sealed(record_dict([dict(READ)], policy_path=None)))
    rc, _, err = _run(capsys, "--apply", str(r))
    assert rc == 1 and "--out FILE" in err
    rc, _, _ = _run(capsys, "--apply", "--out", str(tmp_path / "p.yaml"), str(r))
    assert rc == 0
    policy = load_policy((tmp_path / "p.yaml").read_text(), filename="p.yaml").policy
    assert "/srv/data.txt" in policy.filesystem.read


def test_apply_with_nothing_to_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    r, p = _setup(tmp_path, {"syscall": "clone", "mechanism": "seccomp", "errno": "EPERM"})
    before = p.stat().st_mtime_ns
    rc, _, err = _run(capsys, "--apply", str(r))
    assert rc == 0 and "nothing to apply" in err and p.stat().st_mtime_ns == before


def test_text_on_a_terminal(tmp_path: Path) -> None:
    import pty

    r, _ = _setup(tmp_path, READ)
    leader, follower = pty.openpty()
    try:
        proc = subprocess.run(
            ["cvg-explain", str(r)], stdout=follower, stderr=subprocess.PIPE, check=False
        )
        os.close(follower)
        follower = -1
        out = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the other side is closed and drained
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)
    assert proc.returncode == 0, proc.stderr
    text = out.decode().replace("\r\n", "\n")
    assert text.startswith("run 20261129T120000Z-0a1b2c3d") and "  rule:  filesystem.read" in text


def test_a_changed_policy_is_said_to_be_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    r, p = _setup(tmp_path, READ)
    rc, out, err = _run(capsys, str(r))
    assert rc == 0 and err == "" and "digest" not in json.loads(out)["summary"]
    rc, _, _ = _run(capsys, "--apply", str(r))
    assert rc == 0
    rc, out, err = _run(capsys, str(r))
    assert rc == 0
    assert err.startswith(f"cvg-explain: warning: {p} is not the policy run ")
    assert "digest differs" in json.loads(out)["summary"]
    # Against the fixed policy, the read is granted: no fix is left to propose.
    assert json.loads(out)["denials"][0]["fix"] is None
