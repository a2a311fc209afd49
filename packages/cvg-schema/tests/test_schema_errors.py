"""SchemaError: one line, the first problem, named by its JSON path."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import ValidationError
from schema_samples import PLAN, POLICY

from cvg_schema import Plan, SchemaError, load_dict, loads
from cvg_schema.errors import format_validation_error, json_path, short


def err(data: Any) -> SchemaError:
    with pytest.raises(SchemaError) as info:
        if isinstance(data, bytes | str):
            loads(data)
        else:
            load_dict(data)
    return info.value


def test_the_example_from_the_brief() -> None:
    e = err(
        b'{"kind": "cvg.plan", "schema_version": "1.0", "landlock": '
        b'{"fs_rules": [{"path": "/usr", "access": ["read_file", "read"]}]}}'
    )
    assert e.path == "$.landlock.fs_rules[0].access[1]"
    assert e.problem.startswith("'read' is not one of 'execute', 'write_file', 'read_file'")
    assert str(e) == f"{e.path}: {e.problem}"
    assert isinstance(e, ValueError)


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        ((), "$"),
        (("landlock", "fs_rules", 0, "access", 1), "$.landlock.fs_rules[0].access[1]"),
        (("reasons", "filesystem.read[2]", 0), '$.reasons["filesystem.read[2]"][0]'),
        (("set", "A B"), '$.set["A B"]'),
        (("set", 'q"uote\\'), '$.set["q\\"uote\\\\"]'),
        (("_ok", "x1"), "$._ok.x1"),
        (("1abc",), '$["1abc"]'),
    ],
)
def test_json_path(parts: tuple[str | int, ...], expected: str) -> None:
    assert json_path(parts) == expected


def test_json_path_of_absurd_depth_is_shortened() -> None:
    path = json_path(("a",) + (0,) * 1000)
    assert len(path) < 300
    assert path.startswith("$.a[0]") and "..." in path


def test_short_rendering() -> None:
    assert short({"a": 1}) == "an object"
    assert short([1]) == "an array"
    assert short(None) == "null"
    assert short(True) == "true"
    assert short("x" * 500).endswith("...")
    assert len(short("x" * 500)) == 60
    assert "\n" not in short("a\nb")


def test_messages_are_one_line_even_for_multiline_input() -> None:
    data = copy.deepcopy(POLICY)
    data["filesystem"]["read"] = ["relative\npath\r\nwith lines"]
    e = err(data)
    assert "\n" not in str(e) and "\r" not in str(e)
    assert e.path == "$.filesystem.read[0]"


def test_long_inputs_are_cut() -> None:
    data = copy.deepcopy(PLAN)
    data["arch"] = "x" * 10_000
    assert len(str(err(data))) < 200


def test_first_error_is_reported() -> None:
    data = copy.deepcopy(PLAN)
    data["arch"] = "sparc"
    data["processes"] = -1
    assert err(data).path == "$.arch"


def test_missing_nested_field_names_the_field() -> None:
    data = copy.deepcopy(PLAN)
    del data["landlock"]["net_rules"][0]["port"]
    e = err(data)
    assert str(e) == "$.landlock.net_rules[0].port: required field is missing"


def test_wrong_container_types() -> None:
    data = copy.deepcopy(PLAN)
    data["landlock"] = []
    assert str(err(data)) == "$.landlock: expected an object, got an array"
    data["landlock"] = {"fs_rules": {"path": "/usr"}}
    assert str(err(data)) == "$.landlock.fs_rules: expected an array, got an object"


def test_dict_keys_are_quoted_when_needed() -> None:
    data = copy.deepcopy(POLICY)
    data["reasons"]["filesystem.read[0]"] = [{"event_id": "e1", "summary": ""}]
    assert str(err(data)) == (
        "$.reasons[\"filesystem.read[0]\"][0].summary: expected at least 1 character, got ''"
    )


def test_format_validation_error_directly() -> None:
    data = {"kind": "cvg.plan", "schema_version": "1.0", "rlimits": {"nofile": [10, 5]}}
    with pytest.raises(ValidationError) as info:
        Plan.model_validate(data)
    e = format_validation_error(info.value, data)
    assert str(e) == "$.rlimits.nofile: soft limit 10 is above hard limit 5"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"", "$: empty input: expected a JSON object (a cvg message)"),
        (b" \n\t ", "$: empty input: expected a JSON object (a cvg message)"),
        ("", "$: empty input: expected a JSON object (a cvg message)"),
        (b"[1, 2]", "$: expected a JSON object (a cvg message), got an array"),
        (b'"cvg.plan"', "$: expected a JSON object (a cvg message), got a string"),
        (b"42", "$: expected a JSON object (a cvg message), got a number"),
        (b"null", "$: expected a JSON object (a cvg message), got null"),
        (b"true", "$: expected a JSON object (a cvg message), got a boolean"),
    ],
)
def test_not_an_object(raw: bytes | str, expected: str) -> None:
    assert str(err(raw)) == expected


@pytest.mark.parametrize(
    "raw",
    [
        b"{",
        b"\x7fELF\x02\x01\x01\x00",
        b"\xff\xfe{\x00}\x00",
        b'{"kind": "cvg.plan",}',
        b"{'kind': 'cvg.plan'}",
        b"NaN",
        "\ud800",
        b"[" * 5000,
    ],
)
def test_not_json(raw: bytes | str) -> None:
    e = err(raw)
    assert e.path == "$"
    assert e.problem.startswith("not valid JSON: ")
    assert "\n" not in str(e)
