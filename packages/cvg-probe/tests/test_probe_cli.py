"""The cvg-probe command and the cache, through main(argv) and probe()."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from cvg_kernel.landlock import ABI_ENV
from cvg_probe import FEATURES, probe
from cvg_probe import cache as probe_cache
from cvg_probe.cli import main
from cvg_schema import Facts, loads_as


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> Facts:
    assert main([*args]) == 0
    out = capsys.readouterr().out
    return loads_as(Facts, out)


def cache_file() -> Path:
    key = probe_cache.cache_key()
    assert key is not None
    return probe_cache.cache_path(key)


def test_json_output_is_a_valid_facts_message(capsys: pytest.CaptureFixture[str]) -> None:
    facts = run_json(capsys, "--format", "json", "--no-cache")
    assert [f.name for f in facts.features] == list(FEATURES)
    assert facts.proven("seccomp.filter")
    assert facts.cached is False


def test_json_is_the_default_off_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--no-cache"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1  # one compact line
    assert json.loads(out)["kind"] == "cvg.facts"


def test_pretty_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--format", "json", "--pretty", "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert out.startswith('{\n  "kind": "cvg.facts"')
    loads_as(Facts, out)


def test_table_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--format", "table", "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert not out.lstrip().startswith("{")
    lines = out.splitlines()
    assert lines[0].startswith(f"kernel {os.uname().release}")
    header = next(line for line in lines if line.startswith("feature"))
    assert "proven" in header and "how / why not" in header
    row = next(line for line in lines if line.startswith("seccomp.filter "))
    assert row.split()[1] == "yes"
    assert all(any(line.startswith(name + " ") for line in lines) for name in FEATURES)
    assert lines[-1].endswith(f"of {len(FEATURES)} features proven")


def test_cache_hit_then_fresh(capsys: pytest.CaptureFixture[str]) -> None:
    first = run_json(capsys, "--format", "json")
    assert first.cached is False
    path = cache_file()
    assert path.is_file()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700

    second = run_json(capsys, "--format", "json")
    assert second.cached is True
    assert second.probed_at == first.probed_at
    assert second.model_copy(update={"cached": False}) == first

    fresh = run_json(capsys, "--format", "json", "--fresh")
    assert fresh.cached is False
    assert fresh.probed_at > first.probed_at
    again = run_json(capsys, "--format", "json")
    assert again.cached is True
    assert again.probed_at == fresh.probed_at  # --fresh rewrote the cache


def test_no_cache_neither_reads_nor_writes(
    capsys: pytest.CaptureFixture[str], isolated_cache: Path
) -> None:
    run_json(capsys, "--format", "json", "--no-cache")
    assert not isolated_cache.exists()
    cached = run_json(capsys, "--format", "json")
    assert cached.cached is False and cache_file().is_file()
    assert run_json(capsys, "--format", "json", "--no-cache").cached is False


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"",
        b"[]",
        b'{"kind": "cvg-probe.cache", "key": null, "facts": {}}',
        b"\xff\xfe\x00garbage",
    ],
)
def test_corrupt_cache_is_ignored_and_replaced(
    capsys: pytest.CaptureFixture[str], content: bytes
) -> None:
    path = cache_file()
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    facts = run_json(capsys, "--format", "json")
    assert facts.cached is False
    assert run_json(capsys, "--format", "json").cached is True


def test_cache_with_invalid_facts_is_ignored(capsys: pytest.CaptureFixture[str]) -> None:
    run_json(capsys, "--format", "json")
    path = cache_file()
    data = json.loads(path.read_bytes())
    data["facts"]["features"][0]["proven"] = "yes"  # not a boolean: fails validation
    path.write_text(json.dumps(data))
    assert run_json(capsys, "--format", "json").cached is False


def test_cache_written_under_another_key_is_ignored(capsys: pytest.CaptureFixture[str]) -> None:
    run_json(capsys, "--format", "json")
    path = cache_file()
    for field, value in (
        ("boot_id", "another-boot"),
        ("kernel", "0.0.0"),
        ("version", "0.0.0"),
        ("euid", 12345),
    ):
        data = json.loads(path.read_bytes())
        data["key"][field] = value
        path.write_text(json.dumps(data))
        assert run_json(capsys, "--format", "json").cached is False, field


def test_cache_key_covers_the_abi_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    assert probe().cached is False
    assert probe().cached is True
    monkeypatch.setenv(ABI_ENV, "4")
    capped = probe()
    assert capped.cached is False
    assert capped.landlock_abi_cap == 4
    assert probe().cached is True
    monkeypatch.delenv(ABI_ENV)
    uncapped = probe()
    assert uncapped.cached is True and uncapped.landlock_abi_cap is None


def test_probe_api_cache_flags(isolated_cache: Path) -> None:
    assert probe(cache=False).cached is False
    assert not isolated_cache.exists()
    assert probe().cached is False
    assert probe().cached is True
    assert probe(fresh=True).cached is False
    assert probe(fresh=True, cache=False).cached is False


def test_unwritable_cache_is_not_fatal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    assert run_json(capsys, "--format", "json").cached is False
    assert run_json(capsys, "--format", "json").cached is False


@pytest.mark.parametrize("argv", [["--bogus"], ["--format", "xml"], ["extra-argument"]])
def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err  # one line, naming the problem and the way to help
    assert lines[0].startswith("cvg-probe: ") and "see 'cvg-probe --help'" in lines[0]


def test_help_teaches(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for needle in (
        "proven",
        "~/.cache/cvg/",
        "--fresh",
        "--no-cache",
        "Exit status",
        "CVG_LANDLOCK_ABI_MAX",
        "cvg-probe | cvg-validate --explain --facts - p.yaml",
    ):
        assert needle in out, needle


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert "cvg-probe" in capsys.readouterr().out


def test_probe_failure_exits_1_with_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ABI_ENV, "four")
    assert main(["--no-cache"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("cvg-probe: ")
    assert captured.err.count("\n") == 1
    assert "Traceback" not in captured.err
    assert ABI_ENV in captured.err


def test_console_script_entry_point() -> None:
    env = {k: v for k, v in os.environ.items() if k != ABI_ENV}
    proc = subprocess.run(
        [sys.executable, "-m", "cvg_probe", "--no-cache"],
        capture_output=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    facts = loads_as(Facts, proc.stdout)
    assert facts.proven("no_new_privs")
    proc = subprocess.run([sys.executable, "-m", "cvg_probe", "--nope"], capture_output=True,
                          check=False)  # fmt: skip
    assert proc.returncode == 2
