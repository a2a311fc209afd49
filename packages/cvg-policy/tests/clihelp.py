"""Calling cvg-validate's main() in-process, as its tests do."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from cvg_policy.cli import main


class Result:
    def __init__(self, status: int, out: str, err: str) -> None:
        self.status = status
        self.out = out
        self.err = err

    @property
    def err_lines(self) -> list[str]:
        return self.err.splitlines()


def invoke(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    stdin: bytes | None = None,
) -> Result:
    data = b"" if stdin is None else stdin
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    capsys.readouterr()
    status = main(args)
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return Result(status, out, err)


Invoke = Callable[..., Result]
"""``cli(args, stdin=None)``: :func:`invoke` bound to one test's capture and patching."""

PolicyFile = Callable[[str], Path]
"""``policy_file(text)``: ``text`` written to p.yaml in the test's tmp_path."""
