"""Protected paths created during a run, in the run record, and the exit that goes with them."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from schema_samples import RUN

from cvg_schema import RunRecord, SchemaError, load_dict

HOOKS = "/w/.git/hooks"


def planted(**fields: Any) -> dict[str, Any]:
    entry = {"path": HOOKS, "kind": "directory", "protects": HOOKS,
             "reason": "git runs these on commit, checkout and merge",
             "moved_to": HOOKS + ".cvg-moved-r1"}  # fmt: skip
    entry.update(fields)
    return {k: v for k, v in entry.items() if v is not None}


def record(*entries: dict[str, Any], status: int = 122, meaning: str = "protected_created") -> Any:
    data = copy.deepcopy(RUN)
    data["exit"] = {"status": status, "meaning": meaning, "detail": "the tool's status was 0"}
    if entries:
        data["protected_created"] = list(entries)
    return data


def test_round_trip_and_absent_when_none() -> None:
    rec = load_dict(record(planted(), planted(path="/w/.git", kind="symlink", moved_to=None,
                                              error="Permission denied")))  # fmt: skip
    assert isinstance(rec, RunRecord)
    assert [p.moved_to for p in rec.protected_created] == [HOOKS + ".cvg-moved-r1", None]
    assert rec.exit.status == 122
    plain = load_dict(copy.deepcopy(RUN))
    assert isinstance(plain, RunRecord)
    assert "protected_created" not in json.loads(plain.model_dump_json())


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (record(planted(), status=0, meaning="exited"), "protected_created"),
        (record(), "protected_created"),
        (record(planted(), status=1), "exit status 122"),
        (record(planted(error="EACCES")), "exactly one of moved_to and error"),
        (record(planted(moved_to=None)), "exactly one of moved_to and error"),
        (record(planted(kind="fifo")), r"protected_created\[0\]\.kind"),
    ],
)
def test_inconsistent_records_are_refused(data: dict[str, Any], message: str) -> None:
    with pytest.raises(SchemaError, match=message):
        load_dict(data)
