"""The cvg-schema command line, through main(argv)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import orjson
import pytest
from schema_samples import PLAN, POLICY

from cvg_schema import KINDS, json_schema, schema_bytes
from cvg_schema.cli import main

SCHEMAS_DIR = Path(__file__).resolve().parents[1] / "schemas"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line(text: str) -> str:
    assert text.endswith("\n") and text.count("\n") == 1, repr(text)
    return text.rstrip("\n")


def set_stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    class Stdin:
        buffer = io.BytesIO(data)

        def isatty(self) -> bool:
            return False

    monkeypatch.setattr("sys.stdin", Stdin())


# --- show ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["plan", "cvg.plan", "PLAN"])
def test_show(capsys: pytest.CaptureFixture[str], kind: str) -> None:
    code, out, err = run(capsys, "show", kind)
    assert (code, err) == (0, "")
    assert out.encode() == schema_bytes("cvg.plan")
    assert orjson.loads(out) == json_schema("plan")


def test_show_every_kind(capsys: pytest.CaptureFixture[str]) -> None:
    for kind in KINDS:
        code, out, _ = run(capsys, "show", kind.removeprefix("cvg."))
        assert code == 0
        assert orjson.loads(out)["properties"]["kind"]["const"] == kind


def test_show_unknown_kind(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "show", "nope")
    assert (code, out) == (2, "")
    assert one_line(err) == (
        "cvg-schema show: Invalid value for KIND: unknown kind 'nope' (known: facts, policy, "
        "plan, observation, run, explanation) (see 'cvg-schema show --help')"
    )


def test_show_without_kind(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "show")
    assert (code, out) == (2, "")
    assert "Missing argument 'KIND'" in one_line(err)


# --- check -----------------------------------------------------------------------------


def test_check_valid_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    path.write_bytes(orjson.dumps(PLAN))
    code, out, err = run(capsys, "check", str(path))
    assert (code, err) == (0, "")
    assert one_line(out) == "ok: cvg.plan 1.0"


def test_check_every_sample(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, sample: dict[str, Any]
) -> None:
    path = tmp_path / "msg.json"
    path.write_bytes(orjson.dumps(sample, option=orjson.OPT_INDENT_2))
    code, out, _ = run(capsys, "check", str(path))
    assert code == 0
    assert one_line(out) == f"ok: {sample['kind']} 1.0"


@pytest.mark.parametrize("argv", [["check"], ["check", "-"]])
def test_check_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    set_stdin(monkeypatch, orjson.dumps(POLICY))
    code, out, err = run(capsys, *argv)
    assert (code, err) == (0, "")
    assert one_line(out) == "ok: cvg.policy 1.0"


def test_check_newer_minor_says_so(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    set_stdin(monkeypatch, orjson.dumps(dict(PLAN, schema_version="1.4", later=True)))
    code, out, _ = run(capsys, "check")
    assert code == 0
    assert one_line(out) == (
        "ok: cvg.plan 1.4 (newer than this reader's 1.0: unknown fields were ignored)"
    )


def test_check_invalid_names_file_and_path(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = dict(PLAN, landlock=dict(PLAN["landlock"], fs_rules=[{"path": "/usr", "access": ["rd"]}]))
    path = tmp_path / "bad.json"
    path.write_bytes(orjson.dumps(bad))
    code, out, err = run(capsys, "check", str(path))
    assert (code, out) == (1, "")
    assert one_line(err).startswith(
        f"{path}: $.landlock.fs_rules[0].access[0]: 'rd' is not one of 'execute'"
    )


def test_check_major_version(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    set_stdin(monkeypatch, b'{"kind": "cvg.plan", "schema_version": "2.0"}')
    code, out, err = run(capsys, "check")
    assert (code, out) == (1, "")
    assert one_line(err) == (
        "<stdin>: $.schema_version: cvg.plan schema_version 2.0 is not supported "
        "(this reader understands 1.x)"
    )


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", "<stdin>: $: empty input: expected a JSON object (a cvg message)"),
        (b"not json", "<stdin>: $: not valid JSON: "),
        (b"\x00\x01\x02\xff\xfe\x80garbage", "<stdin>: $: not valid JSON: "),
        (b"\x7fELF" + bytes(range(256)) * 4, "<stdin>: $: not valid JSON: "),
        (b"[]", "<stdin>: $: expected a JSON object (a cvg message), got an array"),
        (b"{}", '<stdin>: $: not a cvg message: "kind" is missing'),
        (b'{"kind": "cvg.x", "schema_version": "1.0"}', "<stdin>: $.kind: unknown message kind"),
        (b"{" * 100_000, "<stdin>: $: not valid JSON: "),
    ],
)
def test_check_bad_input_is_one_line(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    data: bytes,
    expected: str,
) -> None:
    set_stdin(monkeypatch, data)
    code, out, err = run(capsys, "check", "-")
    assert (code, out) == (1, "")
    assert one_line(err).startswith(expected)


def test_check_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run(capsys, "check", str(tmp_path / "nope.json"))
    assert (code, out) == (2, "")
    assert one_line(err) == f"cvg-schema: {tmp_path / 'nope.json'}: No such file or directory"


def test_check_directory(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run(capsys, "check", str(tmp_path))
    assert (code, out) == (2, "")
    assert one_line(err) == f"cvg-schema: {tmp_path}: Is a directory"


def test_check_too_many_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "check", "a.json", "b.json")
    assert (code, out) == (2, "")
    assert "unexpected extra argument" in one_line(err)


# --- export ----------------------------------------------------------------------------


def test_export_writes_one_file_per_kind(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out_dir = tmp_path / "a" / "schemas"
    code, out, err = run(capsys, "export", str(out_dir))
    assert (code, err) == (0, "")
    names = sorted(p.name for p in out_dir.iterdir())
    assert names == sorted(f"{kind}.schema.json" for kind in KINDS)
    for kind in KINDS:
        content = (out_dir / f"{kind}.schema.json").read_bytes()
        assert content == schema_bytes(kind)
        assert content.endswith(b"}\n")
        assert list(orjson.loads(content)) == sorted(orjson.loads(content))  # sorted keys
    assert out.splitlines()[-1] == f"ok: 6 schemas in {out_dir}, 6 updated"


def test_export_is_stable(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    run(capsys, "export", str(tmp_path))
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in tmp_path.iterdir()}
    code, out, _ = run(capsys, "export", str(tmp_path))
    assert code == 0
    assert one_line(out) == f"ok: 6 schemas in {tmp_path}, 0 updated"
    after = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in tmp_path.iterdir()}
    assert after == before


def test_export_check_clean(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    run(capsys, "export", str(tmp_path))
    code, out, err = run(capsys, "export", str(tmp_path), "--check")
    assert (code, err) == (0, "")
    assert one_line(out) == f"ok: 6 schemas in {tmp_path} are up to date"


def test_export_check_detects_drift_without_writing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run(capsys, "export", str(tmp_path))
    changed = tmp_path / "cvg.plan.schema.json"
    changed.write_bytes(changed.read_bytes().replace(b"landlock", b"landlocked", 1))
    (tmp_path / "cvg.run.schema.json").unlink()
    (tmp_path / "cvg.old.schema.json").write_text("{}\n")
    (tmp_path / "README").write_text("not a schema\n")
    snapshot = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    code, out, err = run(capsys, "export", str(tmp_path), "--check")
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        f"{changed}: differs",
        f"{tmp_path / 'cvg.run.schema.json'}: missing",
        f"{tmp_path / 'cvg.old.schema.json'}: stale (no such kind)",
        f"cvg-schema: 3 schema file(s) out of date; run: cvg-schema export {tmp_path}",
    ]
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == snapshot

    code, _, _ = run(capsys, "export", str(tmp_path))
    assert code == 0
    assert not (tmp_path / "cvg.old.schema.json").exists()
    assert (tmp_path / "README").exists()
    assert run(capsys, "export", str(tmp_path), "--check")[0] == 0


def test_export_check_missing_dir(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "export", str(tmp_path / "none"), "--check")
    assert code == 1
    assert err.count(": missing") == 6
    assert not (tmp_path / "none").exists()


def test_export_to_a_file_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    code, out, err = run(capsys, "export", str(target))
    assert (code, out) == (2, "")
    assert f"{target} is not a directory" in one_line(err)


def test_committed_schemas_are_up_to_date(capsys: pytest.CaptureFixture[str]) -> None:
    """The same check as the nox `schemas` session."""
    code, _, err = run(capsys, "export", str(SCHEMAS_DIR), "--check")
    assert (code, err) == (0, ""), err
    assert not (SCHEMAS_DIR / ".keep").exists()


# --- the group -------------------------------------------------------------------------


def test_help_teaches(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for text in ("Examples:", "cvg-schema show plan", "export schemas/ --check", "Exit status"):
        assert text in out
    for cmd in ("show", "check", "export"):
        code, out, _ = run(capsys, cmd, "-h")
        assert code == 0
        assert "Examples:" in out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--version")
    assert code == 0
    assert one_line(out) == "cvg-schema 0.1.0"


def test_no_arguments_prints_help_and_fails(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys)
    assert (code, out) == (2, "")
    assert "Commands:" in err


@pytest.mark.parametrize("argv", [["frobnicate"], ["--bogus"], ["export"], ["export", "--chek"]])
def test_usage_errors_are_one_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "")
    assert one_line(err).startswith("cvg-schema")


def test_cvg_debug_shows_the_traceback_behind_an_internal_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import click

    from cvg_schema.console import invoke

    @click.command()
    def broken() -> None:
        raise RuntimeError("boom")

    monkeypatch.delenv("CVG_DEBUG", raising=False)
    assert invoke(broken, [], prog="cvg-x", failure=1) == 1
    quiet = capsys.readouterr().err
    assert quiet == "cvg-x: internal error: RuntimeError: boom\n"
    monkeypatch.setenv("CVG_DEBUG", "1")
    assert invoke(broken, [], prog="cvg-x", failure=1) == 1
    loud = capsys.readouterr().err
    assert "Traceback (most recent call last)" in loud and 'raise RuntimeError("boom")' in loud
    assert loud.endswith("cvg-x: internal error: RuntimeError: boom\n")
