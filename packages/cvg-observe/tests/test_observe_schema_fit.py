"""The writer's checks without pydantic against the schema's models: what they pass the
models accept, the head they shape is the models' dump byte for byte, and a whole
observation is the same written either way."""

from __future__ import annotations

import importlib
import io
import random
from pathlib import Path
from typing import Any, get_args

import orjson
import pytest
from pydantic import ValidationError

import cvg_schema
from cvg_observe.observe import _model_head, _model_takes, write_observation
from cvg_observe.schema_fit import (
    EVENT_OPS,
    FAMILY_NAMES,
    SCHEMA_VERSION,
    SOCK_TYPES,
    event_fits,
    observation_head,
)
from cvg_schema import Observation

FIXTURES = Path(__file__).parent / "fixtures"


def test_the_names_are_the_schemas() -> None:
    assert SCHEMA_VERSION == cvg_schema.SCHEMA_VERSION
    assert set(get_args(cvg_schema.EventOp)) == EVENT_OPS
    assert set(get_args(cvg_schema.SocketFamilyName)) == FAMILY_NAMES
    assert set(get_args(cvg_schema.SocketTypeName)) == SOCK_TYPES


TEXTS: list[Any] = [
    "", "/a", "/é", "/\U0001f600", "/a\udcff", "x" * 4095, "x" * 4096, "x" * 4097,
    "é" * 4096, "\U0001f600" * 4097, 5, None, b"/a",
]  # fmt: skip
INTS: list[Any] = [
    -(2**31) - 1, -(2**31), -1, 0, 1, 65535, 65536, 4_194_304, 4_194_305, 2**31 - 1, 2**31,
    0xFFFFFFFF, 2**32, True, False, 1.0, "1", None,
]  # fmt: skip
VALUES: dict[str, list[Any]] = {
    "id": ["e1", "e123456", "", "-x", "e" * 129, "é", 1],
    "op": [*sorted(EVENT_OPS), "nope", "", 1],
    "syscall": ["openat", "_x", "a" * 64, "a" * 65, "Open", "9a", "", 3],
    "result": ["ok", "EACCES", "E" + "A" * 31, "E" + "A" * 32, "OK", "E", "eacces", 0],
    "path": TEXTS,
    "path2": TEXTS,
    "address": TEXTS,
    "pid": INTS,
    "port": INTS,
    "target_pid": INTS,
    "family": [*sorted(FAMILY_NAMES), "bluetooth", *INTS],
    "sock_type": [*sorted(SOCK_TYPES), "packet", 1, None],
    "time": [0.0, 1.5, 1e10, -0.5, float("nan"), float("inf"), 1, None, "1.0"],
    "directory": [True, False, 1, None],
    "denied_while_learning": [True, False, 1, None],
    "denied_by": ["landlock", "seccomp", "kernel", None],
    "source": [{"tool": "x"}],
}
BASE = {"id": "e1", "op": "read", "syscall": "openat", "result": "ok"}


def test_what_fits_here_fits_the_model() -> None:
    """Every value of every field on its own, then many random mixes: a pass here is a
    pass there (a refusal here is left to the model: it may still pass)."""
    cases: list[dict[str, Any]] = []
    for key, values in VALUES.items():
        for v in values:
            cases.append({**BASE, key: v})
            cases.append({**BASE, key: v, "denied_while_learning": True, "denied_by": "seccomp"})
    rng = random.Random(1)
    for _ in range(20000):
        d = dict(BASE)
        for key in rng.sample(sorted(VALUES), rng.randint(1, 6)):
            d[key] = rng.choice(VALUES[key])
        if rng.random() < 0.1:
            del d[rng.choice(sorted(d))]
        cases.append(d)
    passed = 0
    for d in cases:
        if event_fits(d):
            passed += 1
            assert _model_takes(d), d
    assert passed > 1000  # the usual events do pass here


def test_every_fixture_event_fits_without_the_model() -> None:
    for trace in sorted(FIXTURES.glob("*.trace")):
        out = io.BytesIO()
        with trace.open(encoding="utf-8", errors="surrogateescape") as f:
            write_observation(out, f, argv=["t"], cwd="/tmp/cvg-fixture", home="/h",
                              scratch=[], strace_version="6.1")  # fmt: skip
        for e in orjson.loads(out.getvalue())["events"]:
            assert event_fits(e), (trace.name, e)


def _fields(**over: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "argv": ["python3", "tool.py", "é"],
        "cwd": "/w",
        "home": "/h",
        "scratch": ["/tmp/s"],
        "strace_version": "6.1",
        "exit_status": 3,
        "syscalls": {"execve": 1, "openat": 20},
        "peak_rss_kb": 4096,
        "tree_rss_kb": 8192,
        "environment": {"TOKEN": None, "MODE": "fast", "É": "ü"},
        "notes": ["learning sandbox: a note", "ünïcode"],
    }
    fields.update(over)
    return fields


EXES = [
    {"path": "/usr/bin/python3.11", "interpreter": "/lib64/ld-linux-x86-64.so.2",
     "shebang": [], "event_id": "e1"},
    {"path": "/w/run.sh", "interpreter": None, "shebang": ["/usr/bin/env", "/bin/sh"],
     "event_id": "e9"},
]  # fmt: skip


@pytest.mark.parametrize(
    "over",
    [
        {},
        {"home": None, "strace_version": None, "exit_status": None},
        {"syscalls": None, "peak_rss_kb": None, "tree_rss_kb": None, "environment": None},
        {"syscalls": {}, "environment": {}, "notes": [], "scratch": []},
        {"exit_status": 0, "argv": ["x" * 5000]},
    ],
)
def test_the_head_is_the_models_dump(over: dict[str, Any]) -> None:
    fields = _fields(**over)
    mine = observation_head(fields, EXES)
    assert mine is not None
    theirs = _model_head(fields, EXES)
    assert orjson.dumps(mine) == orjson.dumps(theirs)
    assert list(mine)[:2] == ["kind", "schema_version"]


@pytest.mark.parametrize(
    "over",
    [
        {"notes": ["x" * 2001]},
        {"argv": []},
        {"cwd": "/a\udcff"},
        {"strace_version": "9" * 101},
        {"exit_status": 256},
        {"syscalls": {"Bad": 1}},
        {"peak_rss_kb": 0},
        {"scratch": [""]},
    ],
)
def test_a_head_in_doubt_is_the_models_to_refuse(over: dict[str, Any]) -> None:
    fields = _fields(**over)
    assert observation_head(fields, EXES) is None
    with pytest.raises(ValidationError):
        _model_head(fields, EXES)
    assert observation_head(_fields(), [{**EXES[0], "path": ""}]) is None


def test_a_whole_observation_is_the_same_written_either_way(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def written() -> list[bytes]:
        outs = []
        for trace in sorted(FIXTURES.glob("*.trace")):
            out = io.BytesIO()
            with trace.open(encoding="utf-8", errors="surrogateescape") as f:
                write_observation(out, f, argv=["t"], cwd="/tmp/cvg-fixture", home="/h",
                                  scratch=["/tmp/s"], strace_version="6.1")  # fmt: skip
            outs.append(out.getvalue())
        return outs

    fast = written()
    # The module, not the function the package exports under its name.
    observe_module = importlib.import_module("cvg_observe.observe")
    monkeypatch.setattr(observe_module, "event_fits", lambda d: False)
    monkeypatch.setattr(observe_module, "observation_head", lambda fields, exes: None)
    slow = written()
    assert fast == slow
    for data in fast:
        Observation.model_validate_json(data)
