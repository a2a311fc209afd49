"""The command as a user runs it: refusals are one line and exit 1, output is clean."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from importhelp import FIXTURES, RAW_REPORTS, executable, obs, report, run_cli

SSH_EXFIL = FIXTURES / "mcp-mal-001-note-reader-ssh-exfil.json"


def _refused(result: subprocess.CompletedProcess[bytes], *words: str) -> str:
    err = result.stderr.decode()
    assert result.returncode == 1, (result.returncode, err)
    assert result.stdout == b""
    assert err.count("\n") == 1 and err.startswith("cvg-import: "), err
    assert "Traceback" not in err
    for word in words:
        assert word in err, err
    return err


def test_imports_a_report_to_stdout() -> None:
    result = run_cli("divergence", str(SSH_EXFIL))
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["kind"] == "cvg.observation" and doc["partial"] is True
    assert [e["source"]["never_grant"] for e in doc["events"]] == ["decoy", "failed"]
    # The summary goes to stderr, so the pipe carries only the observation.
    assert b"never become grants" in result.stderr


def test_output_is_a_valid_message_for_cvg_schema(tmp_path: Path) -> None:
    out = tmp_path / "obs.json"
    assert run_cli("divergence", str(SSH_EXFIL), "--out", str(out)).returncode == 0
    check = subprocess.run(
        [executable("cvg-schema"), "check", str(out)], capture_output=True, timeout=60
    )
    assert check.returncode == 0, check.stderr
    assert check.stdout.strip() == b"ok: cvg.observation 1.0"


def test_reads_stdin() -> None:
    result = run_cli("divergence", "-", input=SSH_EXFIL.read_bytes())
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["source"]["report"] == "<stdin>"


def test_out_is_atomic_and_untouched_on_refusal(tmp_path: Path) -> None:
    out = tmp_path / "obs.json"
    out.write_text("previous\n")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    _refused(run_cli("divergence", str(bad), "--out", str(out)), "not valid JSON")
    assert out.read_text() == "previous\n"
    assert sorted(os.listdir(tmp_path)) == ["bad.json", "obs.json"]
    assert run_cli("divergence", str(SSH_EXFIL), "--out", str(out)).returncode == 0
    assert json.loads(out.read_text())["kind"] == "cvg.observation"
    assert sorted(os.listdir(tmp_path)) == ["bad.json", "obs.json"]


@pytest.mark.parametrize(
    ("doc", "words"),
    [
        ({"schema": "other.report/1", "observations": []}, ["$.schema", "unknown report format"]),
        ({"schema": "divergence.sandbox/2", "observations": []}, ["major version 2"]),
        ({"schema": "divergence.sandbox/10.1", "observations": []}, ["major version 10"]),
        ({"schema": 1, "observations": []}, ["$.schema", "must be a string"]),
        ({"observations": []}, ["$.schema", "missing"]),
        ({"hello": "world"}, ["not a Divergence report"]),
        ([1, 2], ["expected a JSON object", "an array"]),
        ("text", ["a string"]),
        ({"kind": "cvg.observation", "schema_version": "1.0"}, ["cvg message"]),
        ({"version": "2.0.0", "targets": []}, ["$.version", "major version 2"]),
        ({"version": "1.1.0", "targets": []}, ["$.targets", "empty"]),
        ({"version": "1.1.0", "targets": [{"name": "a"}]}, ["dynamic", "missing"]),
        (
            {
                "targets": [
                    {
                        "name": "a",
                        "dynamic": {
                            "available": False,
                            "ran": False,
                            "unavailable_reason": "no python",
                        },
                    }
                ]
            },
            ["did not run", "no python"],
        ),
        (
            {
                "targets": [
                    {"name": "a", "dynamic": {"observations": []}},
                    {"name": "b", "dynamic": {"observations": []}},
                ]
            },
            ["2 targets", "--target"],
        ),
        (report(obs("fs_read", "/x", result="3")), ["observations[0].result", "integer"]),
        (report(obs("fs_read", "/x", decoy="no")), ["observations[0].decoy"]),
        (report({"capability": "fs_read"}), ["observations[0].syscall", "missing"]),
        (report(obs("fs_read", "/a\u0000b")), ["observations[0].target", "NUL"]),
        (report(obs("fs_read", "${HOME}/x")), ["observations[0].target", "variable"]),
        (report(obs("fs_read", "")), ["observations[0].target", "empty"]),
        (report(obs("fs_read", "/x", syscall="Open At")), ["system call name"]),
        (report("nope"), ["observations[0]", "must be an object"]),
        ({"schema": "divergence.sandbox/1", "observations": {}}, ["must be an array"]),
    ],
)
def test_refuses_bad_reports_in_one_line(tmp_path: Path, doc: object, words: list[str]) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    _refused(run_cli("divergence", str(path)), str(path), *words)


def test_refuses_not_json_and_not_utf8(tmp_path: Path) -> None:
    cases = {
        b"": "empty input",
        b"   \n": "empty input",
        b"schema: divergence.sandbox/1\n": "not valid JSON",
        b'{"schema": "divergence.sandbox/1", "observations": [': "not valid JSON",
        b'{"schema": "divergence.sandbox/1", "observations": [], "x": NaN}': "NaN",
        b'{"schema": "div\xff"}': "not UTF-8",
        b'{"a": "\\ud800"}': "surrogate",
        b'{"a": ' + b"9" * 30 + b"}": "64 bits",
        b"[" * 100_000 + b"]" * 100_000: "nested",
    }
    for data, word in cases.items():
        path = tmp_path / "r.json"
        path.write_bytes(data)
        _refused(run_cli("divergence", str(path)), word)


def test_truncated_fixture_is_refused(tmp_path: Path) -> None:
    data = SSH_EXFIL.read_bytes()
    for cut in (1, len(data) // 3, len(data) // 2, len(data) - 2):
        path = tmp_path / "cut.json"
        path.write_bytes(data[:cut])
        _refused(run_cli("divergence", str(path)), "not valid JSON")


def test_missing_file_and_usage() -> None:
    _refused(run_cli("divergence", "/nonexistent/r.json"), "/nonexistent/r.json", "cannot read")
    result = run_cli("divergence")
    assert result.returncode == 2 and b"Traceback" not in result.stderr
    result = run_cli("divergence", "-", "--baseline", "-")
    assert result.returncode == 2 and b"both be stdin" in result.stderr


def test_bad_artifact_root() -> None:
    for root in ("relative/dir", "/"):
        _refused(run_cli("divergence", str(SSH_EXFIL), "--artifact-root", root), "--artifact-root")


def test_bad_baseline(tmp_path: Path) -> None:
    base = tmp_path / "base.json"
    base.write_text(json.dumps({"kind": "cvg.observation", "schema_version": "2.0"}))
    _refused(
        run_cli("divergence", str(SSH_EXFIL), "--baseline", str(base)),
        "base.json",
        "not a cvg.observation",
    )
    base.write_text(RAW_REPORTS[0].read_text())
    _refused(run_cli("divergence", str(SSH_EXFIL), "--baseline", str(base)), "kind")


def test_help_teaches() -> None:
    result = run_cli("divergence", "--help")
    assert result.returncode == 0
    text = result.stdout.decode()
    for word in ("--baseline", "--artifact-root", "never_grant", "Exit status", "cvg-generate"):
        assert word in text or word in run_cli("--help").stdout.decode(), word


def test_target_picks_one_of_several(tmp_path: Path) -> None:
    doc = {
        "version": "1.1.0",
        "targets": [
            {"name": "a", "source": "/srv/a", "dynamic": {"observations": [obs("fs_read", "x")]}},
            {"name": "b", "source": "/srv/b", "dynamic": {"observations": []}},
        ],
    }
    path = tmp_path / "scan.json"
    path.write_text(json.dumps(doc))
    result = run_cli("divergence", str(path), "--target", "a")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["cwd"] == "/srv/a" and out["events"][0]["path"] == "/srv/a/x"
    assert out["source"]["target"] == "a"
    _refused(run_cli("divergence", str(path), "--target", "c"), "no target", "'c'")
