"""The command lines cvg-observe reads without click are read as click reads them."""

from __future__ import annotations

import itertools
from pathlib import Path

import click
import pytest

from cvg_observe.command import cli
from cvg_observe.fast_args import Args, fast_args
from cvg_observe.lifetime import DEFAULT_IDLE, DEFAULT_TIMEOUT


def clicks(argv: list[str]) -> Args | None:
    """What the click command would be called with, or None when it refuses."""
    try:
        with cli.make_context("cvg-observe", list(argv)) as ctx:
            p = ctx.params
    except (click.exceptions.Exit, click.ClickException):
        return None
    return (p["out"], p["out_dir"], p["unconfined"], p["strace"], p["timeout"], p["idle"],
            tuple(p["command"]))  # fmt: skip


OPTIONS = [
    [], ["-o", "F"], ["--out", "F"], ["--out=F"], ["-oF"], ["-o", "-"], ["--out", "-"],
    ["-o", "--"], ["-o", "-x"], ["--out="], ["-o", "D"], ["-o", "R"],
    ["--out-dir", "D"], ["--out-dir=D"], ["--out-dir", "F"], ["--out-dir", "N"],
    ["--out-dir", "-"], ["--unconfined"], ["--unconfined=1"], ["--strace", "/s"],
    ["--strace=/s"], ["--strace", "-s"], ["--strace="], ["--stra", "/s"], ["-h"],
    ["--help"], ["-V"], ["--version"], ["-x"], ["--", "--unconfined"],
    ["--timeout", "30"], ["--timeout=0.5"], ["--timeout", "-1"], ["--timeout", "1e3"],
    ["--timeout", "x"], ["--idle", "0"], ["--idle=12.25"], ["--idle", "nan"],
]  # fmt: skip
COMMANDS = [[], ["--"], ["--", "true"], ["true", "-o", "x"], ["--", "--", "true"],
            ["-", "x"], ["--", "-v"], ["true"]]  # fmt: skip


@pytest.fixture
def place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """F a writable file, D a directory, R a read-only file (os.access still lets root
    write it), N nothing."""
    (tmp_path / "F").write_text("")
    (tmp_path / "D").mkdir()
    (tmp_path / "R").write_text("")
    (tmp_path / "R").chmod(0o444)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("_CVG_OBSERVE_COMPLETE", raising=False)
    return tmp_path


def test_every_fast_reading_is_clicks(place: Path) -> None:
    read_fast = 0
    for first, second in itertools.product(OPTIONS, repeat=2):
        for command in COMMANDS:
            argv = [*first, *second, *command]
            fast = fast_args(argv)
            if fast is not None:
                read_fast += 1
                assert fast == clicks(argv), argv
    assert read_fast > 500  # the usual shapes do take the fast path
    assert fast_args(["-o", "F", "--", "true"]) == (
        "F", None, False, None, DEFAULT_TIMEOUT, DEFAULT_IDLE, ("true",)
    )  # fmt: skip


def test_a_completion_request_is_clicks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_CVG_OBSERVE_COMPLETE", "bash_complete")
    assert fast_args(["--", "true"]) is None
