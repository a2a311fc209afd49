"""Fuzzing: whatever the input, loads returns a message or raises SchemaError."""

from __future__ import annotations

import copy
import io
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schema_samples import SAMPLES

from cvg_schema import KINDS, SchemaError, dumps, load_policy_dict, loads
from cvg_schema.cli import main

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=25,
)
kinds = st.sampled_from([*KINDS, "cvg.nope", ""])
versions = st.sampled_from(["1.0", "1.1", "1.99", "2.0", "0.1", "1", "x", ""]) | json_scalars


def check_loads(data: bytes | str) -> None:
    try:
        msg = loads(data)
    except SchemaError as e:
        text = str(e)
        assert text.startswith("$") and "\n" not in text
        assert text == f"{e.path}: {e.problem}"
    else:
        assert loads(dumps(msg)) == msg


@FUZZ
@given(st.binary(max_size=300))
def test_arbitrary_bytes(data: bytes) -> None:
    check_loads(data)


@FUZZ
@given(st.text(max_size=200))
def test_arbitrary_text(data: str) -> None:
    check_loads(data)


@FUZZ
@given(json_values)
def test_arbitrary_json(value: Any) -> None:
    check_loads(orjson.dumps(value))


@FUZZ
@given(kinds, versions, st.dictionaries(st.text(max_size=15), json_values, max_size=6))
def test_arbitrary_objects_with_a_kind(kind: str, version: Any, body: dict[str, Any]) -> None:
    check_loads(orjson.dumps({**body, "kind": kind, "schema_version": version}))


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.extend(_paths(v, (*prefix, i)))
    return out


@st.composite
def mutated_samples(draw: st.DrawFn) -> dict[str, Any]:
    """A valid sample with one spot replaced by arbitrary JSON (or a key added)."""
    data = copy.deepcopy(SAMPLES[draw(st.sampled_from(sorted(SAMPLES)))])
    if draw(st.booleans()):
        data["schema_version"] = draw(st.sampled_from(["1.0", "1.3"]))
    path = draw(st.sampled_from(_paths(data)[1:]))
    cur: Any = data
    for part in path[:-1]:
        cur = cur[part]
    if isinstance(cur, dict) and draw(st.booleans()):
        cur[draw(st.text(max_size=10))] = draw(json_values)
    else:
        cur[path[-1]] = draw(json_values)
    return data


@FUZZ
@given(mutated_samples())
def test_mutated_samples(data: dict[str, Any]) -> None:
    check_loads(orjson.dumps(data))


@FUZZ
@given(st.dictionaries(st.text(max_size=15), json_values, max_size=6) | json_values)
def test_load_policy_dict(value: Any) -> None:
    try:
        load_policy_dict(value)
    except SchemaError as e:
        assert "\n" not in str(e)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200) | json_values.map(orjson.dumps))
def test_cli_check_never_crashes(data: bytes) -> None:
    stdin = io.TextIOWrapper(io.BytesIO(data))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("sys.stdin", stdin)
        out, err = io.StringIO(), io.StringIO()
        mp.setattr("sys.stdout", out)
        mp.setattr("sys.stderr", err)
        code = main(["check", "-"])
    assert code in (0, 1)
    if code == 1:
        assert out.getvalue() == ""
        assert err.getvalue().count("\n") == 1 and err.getvalue().startswith("<stdin>: $")
    else:
        assert out.getvalue().startswith("ok: cvg.")
