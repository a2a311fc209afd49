"""cvg-run's one command-line grammar (cvg_run.cli.parse), against a reference model.

The model below is written from the grammar's description, not from the code: options
first, ``--`` or the first word not starting with ``-`` (or ``-`` itself) starts the
command, a value option takes the next word whatever it is or an attached value, flags
take none, nothing is abbreviated. Hypothesis feeds both the same argv."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cvg_run.cli import FLAGS, VALUES, Options, UsageError, main, parse

WORDS = [*FLAGS, *VALUES, "--", "-", "-h", "--help", "true", "x", "-pP", "--policy=P",
         "--policy=", "--trace=1", "--pol", "-x", "-vv", "--record=R", "sh", "-c", ""]  # fmt: skip


def model(argv: list[str]) -> dict[str, Any] | str:
    out: dict[str, Any] = {"command": []}
    words = list(argv)
    while words:
        w = words.pop(0)
        if w == "--":
            out["command"] = words
            return out
        if w == "-" or not w.startswith("-"):
            out["command"] = [w, *words]
            return out
        if w in ("-h", "--help"):
            return "help"
        if w in FLAGS:
            out[FLAGS[w]] = True
        elif w in VALUES:
            if not words:
                return "usage"
            out[VALUES[w]] = words.pop(0)
        elif w.startswith("--") and "=" in w and w.split("=", 1)[0] in VALUES:
            name, value = w.split("=", 1)
            if not value:
                return "usage"
            out[VALUES[name]] = value
        elif w.startswith("-p") and len(w) > 2:
            out["policy"] = w[2:]
        else:
            return "usage"
    return out


def observed(argv: list[str]) -> dict[str, Any] | str:
    try:
        opts = parse(argv)
    except UsageError:
        return "usage"
    if opts.help:
        return "help"
    blank = Options()
    out: dict[str, Any] = {"command": opts.command}
    for key, value in vars(opts).items():
        if key not in ("command", "help") and value != getattr(blank, key):
            out[key] = value
    return out


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(WORDS), max_size=7))
def test_the_parser_is_the_grammar(argv: list[str]) -> None:
    assert observed(argv) == model(argv)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["-p", "--", "--", "true"], {"policy": "--", "command": ["true"]}),
        (["-p", "P", "true", "-v"], {"policy": "P", "command": ["true", "-v"]}),
        (["--policy=P", "--", "-x"], {"policy": "P", "command": ["-x"]}),
        (["-pP", "-v", "--", "true"], {"policy": "P", "verbose": True, "command": ["true"]}),
        (["--pol", "P", "true"], "usage"),
        (["--trace=yes", "true"], "usage"),
        (["-p"], "usage"),
    ],
)
def test_corner_cases(argv: list[str], expected: dict[str, Any] | str) -> None:
    assert observed(argv) == expected


def test_usage_errors_are_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--bogus", "true"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown option --bogus" in err
    assert main(["-p"]) == 2
    assert "-p needs a value" in capsys.readouterr().err
    assert main(["-v"]) == 2
    assert "no command given" in capsys.readouterr().err
    assert main(["--help"]) == 0
    assert "usage: cvg-run" in capsys.readouterr().out


def test_cvg_debug_shows_the_traceback_behind_an_internal_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from cvg_run import planning

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(planning, "plan_for", boom)
    monkeypatch.delenv("CVG_DEBUG", raising=False)
    assert main(["--", "true"]) == 125
    assert capsys.readouterr().err == "cvg-run: internal error: RuntimeError: boom\n"
    monkeypatch.setenv("CVG_DEBUG", "1")
    assert main(["--", "true"]) == 125
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err
    assert err.endswith("cvg-run: internal error: RuntimeError: boom\n")
