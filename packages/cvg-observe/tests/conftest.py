from __future__ import annotations

import io
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from cvg_observe.observe import write_observation

FIXTURES = Path(__file__).parent / "fixtures"
FIXTURE_CWD = "/tmp/cvg-fixture"  # where tests/fixtures/record.py ran each scenario


def observe_lines(lines: Iterable[str], cwd: str = FIXTURE_CWD, **kwargs: Any) -> dict[str, Any]:
    """The observation (as a dict) that a trace makes."""
    out = io.BytesIO()
    write_observation(
        out,
        lines,
        argv=kwargs.pop("argv", ["tool"]),
        cwd=cwd,
        home=kwargs.pop("home", "/home/u"),
        scratch=kwargs.pop("scratch", []),
        strace_version="6.1",
        **kwargs,
    )
    data = out.getvalue()
    assert data.endswith(b"\n") and data.count(b"\n") == 1
    return json.loads(data)  # type: ignore[no-any-return]


def events_of(obs: dict[str, Any], *, keep_time: bool = False) -> list[dict[str, Any]]:
    out = []
    for e in obs["events"]:
        e = dict(e)
        if not keep_time:
            e.pop("time", None)
        out.append(e)
    return out


@pytest.fixture
def fixture_events() -> Any:
    def load(name: str) -> dict[str, Any]:
        with open(FIXTURES / f"{name}.trace", encoding="utf-8", errors="surrogateescape") as f:
            return observe_lines(f)

    return load
