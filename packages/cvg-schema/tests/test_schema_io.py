"""Reading and writing: dumps, read, read_as, write_atomic, json_schema."""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path
from typing import Any

import orjson
import pytest
from schema_samples import OBSERVATION, PLAN, RUN

import cvg_schema
from cvg_schema import (
    KINDS,
    Observation,
    Plan,
    RunRecord,
    SchemaError,
    dumps,
    json_schema,
    load_dict,
    loads_as,
    model_for,
    read,
    read_as,
    schema_bytes,
    write_atomic,
)
from cvg_schema import io as cvg_io


def test_dumps_compact_and_pretty() -> None:
    plan = load_dict(PLAN)
    compact = dumps(plan)
    pretty = dumps(plan, pretty=True)
    assert compact.endswith(b"}\n") and compact.count(b"\n") == 1
    assert pretty.endswith(b"}\n") and pretty.startswith(b'{\n  "kind": "cvg.plan",\n')
    assert orjson.loads(compact) == orjson.loads(pretty) == PLAN


def test_dumps_keeps_kind_and_version_first(sample: dict[str, Any]) -> None:
    keys = list(orjson.loads(dumps(load_dict(sample))))
    assert keys[:2] == ["kind", "schema_version"]


def test_dumps_leaves_out_the_default_deny_list() -> None:
    """cvg-kernel reads plans with the standard library and takes no null there."""
    dumped = orjson.loads(dumps(Plan()))
    assert "deny" not in dumped["seccomp"]
    assert Plan.model_validate(dumped).seccomp.deny is None
    explicit = orjson.loads(dumps(load_dict(PLAN)))
    assert explicit["seccomp"]["deny"] == ["ptrace", "mount", "bpf"]
    assert load_dict(dict(PLAN, seccomp=dict(PLAN["seccomp"], deny=None))) == load_dict(
        dict(PLAN, seccomp={k: v for k, v in PLAN["seccomp"].items() if k != "deny"})
    )


def test_read_file_and_stdin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "run.json"
    path.write_bytes(orjson.dumps(RUN))
    record = read(path)
    assert isinstance(record, RunRecord)
    assert read_as(RunRecord, str(path)) == record

    class Stdin:
        buffer = io.BytesIO(orjson.dumps(OBSERVATION))

    monkeypatch.setattr("sys.stdin", Stdin())
    assert isinstance(read("-"), Observation)


def test_read_as_wrong_kind(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    path.write_bytes(orjson.dumps(PLAN))
    with pytest.raises(SchemaError, match=r"^\$\.kind: expected cvg\.run, got cvg\.plan$"):
        read_as(RunRecord, path)
    with pytest.raises(SchemaError, match=r"expected cvg\.observation, got cvg\.plan"):
        loads_as(Observation, orjson.dumps(PLAN))


def test_read_errors_are_os_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read(tmp_path / "missing.json")
    with pytest.raises(IsADirectoryError):
        read(tmp_path)


def test_write_atomic_new_file_uses_umask(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    old = os.umask(0o027)
    try:
        write_atomic(target, b"hello\n")
    finally:
        os.umask(old)
    assert target.read_bytes() == b"hello\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert os.listdir(tmp_path) == ["out.json"]


def test_write_atomic_replaces_and_keeps_mode(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_bytes(b"old")
    target.chmod(0o600)
    write_atomic(str(target), b"new")
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    write_atomic(target, b"newer", mode=0o644)
    assert stat.S_IMODE(target.stat().st_mode) == 0o644


def test_write_atomic_failure_leaves_old_file_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "out.json"
    target.write_bytes(b"old")

    def broken_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="No space left"):
        write_atomic(target, b"new")
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["out.json"]


def test_write_atomic_replaces_a_symlink_not_its_target(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.write_bytes(b"real")
    link = tmp_path / "link"
    link.symlink_to(real)
    write_atomic(link, b"new")
    assert real.read_bytes() == b"real"
    assert not link.is_symlink() and link.read_bytes() == b"new"


def test_model_for() -> None:
    assert model_for("plan") is Plan
    assert model_for("cvg.plan") is Plan
    assert model_for(" CVG.Run ") is RunRecord
    assert model_for("record") is RunRecord
    with pytest.raises(ValueError, match=r"unknown kind 'nope' \(known: facts, policy, plan"):
        model_for("nope")


def test_json_schemas(sample: dict[str, Any]) -> None:
    kind = sample["kind"]
    schema = json_schema(kind)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["properties"]["kind"]["const"] == kind
    assert schema["additionalProperties"] is False
    assert schema["properties"]["schema_version"]["pattern"] == r"^1\.(0|[1-9][0-9]*)$"
    if kind == "cvg.policy":
        assert schema["required"] == ["version"]  # a bare policy has neither
    else:
        assert schema["required"][:2] == ["kind", "schema_version"]
    # Every object definition is documented.
    for name, defn in [("(top)", schema), *schema.get("$defs", {}).items()]:
        if name != "JsonValue":  # pydantic's own "any JSON" definition
            assert defn.get("description"), name
    text = schema_bytes(kind)
    assert text.endswith(b"}\n")
    assert orjson.loads(text) == schema
    assert schema_bytes(kind) == text  # stable


def test_json_schema_documents_factory_defaults() -> None:
    plan = json_schema("plan")
    assert plan["properties"]["rlimits"]["default"] == {"core": 0}
    assert plan["properties"]["environment"]["default"] == {"set": {}, "pass": []}
    seccomp = plan["$defs"]["Seccomp"]["properties"]
    assert seccomp["enosys"]["default"] == ["clone3"]
    assert seccomp["ioctl_deny"]["default"] == ["TIOCSTI", "TIOCLINUX"]
    policy = json_schema("policy")
    assert policy["properties"]["resources"]["default"]["memory_mb"] == 512
    assert policy["$defs"]["PolicyEnvironment"]["properties"]["pass"]["default"] == []


def test_public_api_is_exported() -> None:
    for name in cvg_schema.__all__:
        assert hasattr(cvg_schema, name), name
    assert set(KINDS) == set(cvg_schema.KIND_NAMES)
    assert cvg_io.Message is cvg_schema.Message
