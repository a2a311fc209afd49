"""The versioning rule: refuse another major, accept a newer minor, forbid typos at ours."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from pydantic import ValidationError
from schema_samples import PLAN, RUN, SAMPLES

from cvg_schema import (
    SCHEMA_VERSION,
    Plan,
    RunRecord,
    SchemaError,
    dumps,
    load_dict,
    load_policy_dict,
    loads,
)


def err(data: Any) -> str:
    with pytest.raises(SchemaError) as info:
        load_dict(data)
    return str(info.value)


def test_current_version() -> None:
    assert SCHEMA_VERSION == "1.0"


@pytest.mark.parametrize("version", ["2.0", "0.9", "3.1", "10.0"])
def test_other_major_is_refused_with_a_clear_error(sample: dict[str, Any], version: str) -> None:
    sample["schema_version"] = version
    assert err(sample) == (
        f"$.schema_version: {sample['kind']} schema_version {version} is not supported "
        "(this reader understands 1.x)"
    )


def test_other_major_is_refused_even_with_unknown_fields() -> None:
    assert err({"kind": "cvg.plan", "schema_version": "2.0", "new_thing": 1}) == (
        "$.schema_version: cvg.plan schema_version 2.0 is not supported "
        "(this reader understands 1.x)"
    )
    assert err({"kind": "cvg.run", "new_thing": 1, "schema_version": "1"}).startswith(
        "$.schema_version: schema_version must be a string"
    )


@pytest.mark.parametrize("version", ["1", "1.0.0", "v1.0", "1.x", "", " 1.0", "01.0", "1.01"])
def test_malformed_version_is_refused(version: str) -> None:
    message = err({"kind": "cvg.plan", "schema_version": version})
    assert message == (
        '$.schema_version: schema_version must be a string "MAJOR.MINOR" such as "1.0", '
        f"got {version!r}"
    )


@pytest.mark.parametrize(("value", "shown"), [(1.0, "float"), (1, "int"), (None, "NoneType")])
def test_non_string_version_is_refused(value: Any, shown: str) -> None:
    assert err({"kind": "cvg.plan", "schema_version": value}).endswith(f"got {shown}")


def test_newer_minor_is_accepted_with_unknown_fields(sample: dict[str, Any]) -> None:
    plain = load_dict(copy.deepcopy(sample))
    sample["schema_version"] = "1.7"
    sample["added_in_1_7"] = {"anything": [1, 2]}
    msg = load_dict(sample)
    assert msg.schema_version == "1.7"
    assert msg.model_dump(exclude={"schema_version"}) == plain.model_dump(
        exclude={"schema_version"}
    )


def test_newer_minor_unknown_fields_are_ignored_at_every_depth() -> None:
    data = copy.deepcopy(PLAN)
    data["schema_version"] = "1.1"
    data["landlock"]["quiet"] = True
    data["landlock"]["fs_rules"][0]["quiet_access"] = ["read_file"]
    data["seccomp"]["sockets"][0]["new"] = 1
    plan = load_dict(data)
    assert isinstance(plan, Plan)
    assert plan.landlock.fs_rules[0].access == ["read_file", "read_dir", "execute"]
    assert "quiet" not in orjson.loads(dumps(plan))["landlock"]


def test_newer_minor_still_checks_known_fields() -> None:
    data = copy.deepcopy(PLAN)
    data["schema_version"] = "1.1"
    data["landlock"]["fs_rules"][0]["access"] = ["read"]
    assert err(data).startswith("$.landlock.fs_rules[0].access[0]: 'read' is not one of")


def test_newer_minor_record_with_newer_embedded_plan() -> None:
    data = copy.deepcopy(RUN)
    data["plan"]["schema_version"] = "1.2"
    data["plan"]["landlock"]["new_key"] = 1
    record = load_dict(data)
    assert isinstance(record, RunRecord)
    assert record.plan is not None and record.plan.schema_version == "1.2"
    # The record itself is at the current minor: its own typos are still errors.
    data["exit"]["sigal"] = 9
    assert err(data) == "$.exit.sigal: unknown field (did you mean 'signal'?)"


def test_embedded_plan_of_another_major_is_refused() -> None:
    data = copy.deepcopy(RUN)
    data["plan"]["schema_version"] = "2.0"
    assert err(data) == (
        "$.plan.schema_version: cvg.plan schema_version 2.0 is not supported "
        "(this reader understands 1.x)"
    )


def test_leniency_does_not_leak_into_the_next_read() -> None:
    newer = copy.deepcopy(PLAN) | {"schema_version": "1.1", "extra": 1}
    load_dict(newer)
    current = copy.deepcopy(PLAN) | {"extra": 1}
    assert err(current) == "$.extra: unknown field"
    with pytest.raises(ValidationError, match="unknown field"):
        Plan.model_validate(current)


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_unknown_field_at_current_minor_is_an_error(kind: str) -> None:
    data = copy.deepcopy(SAMPLES[kind]) | {"kindd": 1}
    assert err(data) == "$.kindd: unknown field (did you mean 'kind'?)"


@pytest.mark.parametrize(
    ("path", "key", "expected"),
    [
        (("landlock",), "fs_rule", "$.landlock.fs_rule: unknown field (did you mean 'fs_rules'?)"),
        (("landlock", "fs_rules", 0), "acess", "$.landlock.fs_rules[0].acess: unknown field"),
        (("seccomp", "sockets", 1), "type", "$.seccomp.sockets[1].type: unknown field"),
        (("environment",), "passs", "$.environment.passs: unknown field (did you mean 'pass'?)"),
        (("environment",), "pass_", "$.environment.pass_: unknown field (did you mean 'pass'?)"),
        ((), "zzz", "$.zzz: unknown field"),
    ],
)
def test_unknown_nested_field_names_its_path(
    path: tuple[Any, ...], key: str, expected: str
) -> None:
    data = copy.deepcopy(PLAN)
    cur: Any = data
    for part in path:
        cur = cur[part]
    cur[key] = True
    assert err(data).startswith(expected)


def test_python_construction_forbids_unknown_fields_too() -> None:
    with pytest.raises(ValueError, match="unknown field"):
        Plan.model_validate({"kind": "cvg.plan", "schema_version": "1.0", "bogus": 1})


def test_missing_kind_or_version() -> None:
    assert err({"schema_version": "1.0"}) == '$: not a cvg message: "kind" is missing'
    assert err({"version": 1}) == (
        '$: not a cvg message: "kind" is missing (a bare policy has no kind: read it with '
        "load_policy_dict or cvg-validate)"
    )
    assert err({"kind": "cvg.plan"}) == (
        '$.schema_version: required field is missing (this reader writes "1.0")'
    )


@pytest.mark.parametrize("kind", ["cvg.nope", "plan", "", 7, None, ["cvg.plan"]])
def test_unknown_kind(kind: Any) -> None:
    message = err({"kind": kind, "schema_version": "1.0"})
    assert message.startswith("$.kind: unknown message kind ")
    assert message.endswith(
        "(known: cvg.facts, cvg.policy, cvg.plan, cvg.observation, cvg.run, cvg.explanation)"
    )


def test_bare_policy_is_read_as_current_version() -> None:
    policy = load_policy_dict({"version": 1})
    assert policy.schema_version == SCHEMA_VERSION
    newer = load_policy_dict({"kind": "cvg.policy", "schema_version": "1.3", "version": 1, "x": 1})
    assert newer.schema_version == "1.3"
    with pytest.raises(SchemaError, match=r"^\$\.x: unknown field$"):
        load_policy_dict({"version": 1, "x": 1})


def test_loads_dispatches_on_kind(sample: dict[str, Any]) -> None:
    msg = loads(orjson.dumps(sample))
    assert (
        type(msg).__name__
        == {
            "cvg.facts": "Facts",
            "cvg.policy": "Policy",
            "cvg.plan": "Plan",
            "cvg.observation": "Observation",
            "cvg.run": "RunRecord",
            "cvg.explanation": "Explanation",
        }[sample["kind"]]
    )
