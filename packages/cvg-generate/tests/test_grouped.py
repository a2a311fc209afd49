"""Observations read as a stream with their events grouped give the same policy and
the same notes, byte for byte, as the same observations read whole; input the stream
does not handle is read whole and refused with the same one-line error."""

from __future__ import annotations

import importlib.util
import io
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pytest

from cvg_generate import grouped, load
from cvg_generate.cli import main
from cvg_generate.generate import Source, generate
from cvg_schema.io import dumps

SYNTH = Path(__file__).resolve().parents[3] / "benchmarks" / "synth_observation.py"


def _synth(events: int, kind: str = "observation") -> dict[str, Any]:
    spec = importlib.util.spec_from_file_location("synth_observation", SYNTH)
    assert spec is not None and spec.loader is not None, f"cannot load {SYNTH}"
    module: ModuleType = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, kind)(events)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def synth() -> dict[str, Any]:
    return _synth(20000)


def _policies(loaded: list[load.Loaded]) -> tuple[bytes, list[str]]:
    several = len(loaded) > 1
    result = generate([Source(x.obs, x.name if several else None) for x in loaded])
    return dumps(result.policy, pretty=True), result.notes


def _compare(tmp_path: Path, text: bytes, *, streamed: bool = True) -> list[load.Loaded]:
    """Read ``text`` both ways; the policies and notes must be the same, and the
    stream must (or must not) have been what read it."""
    path = tmp_path / "obs.json"
    path.write_bytes(text)
    got = load.read_observations([str(path)])
    with open(path, "rb") as f:
        plain = [
            load.Loaded(x.name, obs) for x, obs in zip(got, load._plain(f, str(path)), strict=True)
        ]
    kinds = {type(e) for x in got for e in x.obs.events}
    assert (kinds == {grouped.Occurrence}) is streamed, kinds
    assert [x.name for x in got] == [x.name for x in plain]
    policy, notes = _policies(got)
    want_policy, want_notes = _policies(plain)
    assert policy.decode() == want_policy.decode()
    assert notes == want_notes
    return got


def _event(i: int, **fields: Any) -> dict[str, Any]:
    return {"id": f"e{i}", "pid": 10, "op": "read", "syscall": "openat", "result": "ok", **fields}


def _obs(events: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    exe = _event(1, op="execute", syscall="execve", path="/usr/bin/python3", time=1.0)
    return {
        "kind": "cvg.observation",
        "schema_version": "1.0",
        "argv": ["python3", "tool.py"],
        "cwd": "/home/u/project",
        "home": "/home/u",
        "executables": [{"path": "/usr/bin/python3", "event_id": "e1"}],
        "events": [exe, *events],
        **more,
    }


def test_a_long_trace_is_grouped_and_gives_the_same_policy(
    synth: dict[str, Any], tmp_path: Path
) -> None:
    got = _compare(tmp_path, orjson.dumps(synth))
    events = got[0].obs.events
    assert len(events) < 0.8 * len(synth["events"]), "little was grouped"
    weights = sum(e.weight for e in events)  # type: ignore[attr-defined]
    assert weights == len(synth["events"]), "the kept events do not stand for them all"


def test_a_tree_walk_of_paths_named_once_gives_the_same_policy(tmp_path: Path) -> None:
    walk = _synth(6000, "tree_walk")
    got = _compare(tmp_path, orjson.dumps(walk))
    events = got[0].obs.events
    paths = {e["path"] for e in walk["events"]}
    assert len(paths) > 0.85 * len(walk["events"]), "not a walk: too few distinct paths"
    assert [e.path for e in events] == [e["path"] for e in walk["events"]]
    assert sum(e.weight for e in events) == len(walk["events"])  # type: ignore[attr-defined]


def test_pretty_printed_json_gives_the_same_policy(synth: dict[str, Any], tmp_path: Path) -> None:
    _compare(tmp_path, json.dumps(synth, indent=2).encode())


def test_paths_that_look_like_the_end_of_an_event(tmp_path: Path) -> None:
    # "}," and "]" inside strings: the text is not cut there.
    weird = [f"/home/u/project/a}},{{b]/{n % 7}.txt" for n in range(40)]
    events = [_event(i + 2, path=p, time=2.0 + i) for i, p in enumerate(weird * 500)]
    _compare(tmp_path, orjson.dumps(_obs(events)))


def test_the_latest_and_earliest_times_are_those_of_the_whole_trace(tmp_path: Path) -> None:
    # The latest time is on the 15th read of one file and the earliest on the 12th of
    # another, both among the occurrences the grouping leaves out.
    events = []
    for i in range(40):
        t = 50.0 if i == 14 else 5.0 + i / 100
        events.append(_event(2 + 2 * i, path="/home/u/project/a.txt", time=t))
        t = 0.5 if i == 11 else 5.0 + i / 100
        events.append(_event(3 + 2 * i, path="/home/u/project/b.txt", time=t))
    got = _compare(tmp_path, orjson.dumps(_obs(events)))
    policy = dumps(generate([Source(got[0].obs)]).policy).decode()
    assert "49.50 s" in policy, "the duration is not from the earliest to the latest time"


def test_executables_after_the_events_name_a_left_out_one(tmp_path: Path) -> None:
    # The same execve ten times; the executable names the ninth, which the grouping
    # leaves out unless it knows to keep it: read again.
    runs = [
        _event(i, op="execute", syscall="execve", path="/usr/bin/env", time=float(i))
        for i in range(2, 12)
    ]
    doc = _obs(runs)
    exes = [*doc.pop("executables"), {"path": "/usr/bin/env", "event_id": "e10"}]
    doc["executables"] = exes  # after "events" in the text
    got = _compare(tmp_path, orjson.dumps(doc))
    assert "e10" in {e.id for e in got[0].obs.events}


def test_ids_of_any_form_and_whole_second_times(tmp_path: Path) -> None:
    events = [
        {**_event(0, path=f"/home/u/project/f{i % 9}"), "id": f"x-{i}.r", "time": 3 + i}
        for i in range(200)
    ]
    _compare(tmp_path, orjson.dumps(_obs(events)))


def test_several_documents_are_several_observations(synth: dict[str, Any], tmp_path: Path) -> None:
    small = _obs([_event(i, path=f"/srv/d/{i % 3}", time=float(i)) for i in range(2, 30)])
    text = orjson.dumps(synth) + b"\n" + orjson.dumps(small) + b"\n"
    got = _compare(tmp_path, text)
    assert [x.name.rsplit("#", 1)[1] for x in got] == ["1", "2"]


def test_stdin_is_streamed_too(
    synth: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsysbinary: Any
) -> None:
    text = orjson.dumps(synth)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text)))
    got = load.read_observations(["-"])
    assert got[0].name == "<stdin>"
    assert {type(e) for e in got[0].obs.events} == {grouped.Occurrence}


def _bad(synth: dict[str, Any], how: str) -> bytes:
    doc = json.loads(json.dumps(synth))
    events = doc["events"]
    if how == "repeated id":
        events[14000]["id"] = events[13000]["id"]
    elif how == "invalid op":
        events[15000]["op"] = "teleport"
    elif how == "unknown field":
        events[15500]["colour"] = "blue"
    elif how == "bool time":
        events[14500]["time"] = True
    # Of a shape seen before: the path alone decides.
    elif how == "long path":
        events[15200]["path"] = "/" + "a" * 5000
    elif how == "path not a string":
        events[15300]["path"] = 7
    elif how == "negative time":
        events[14700]["time"] = -1.0
    elif how == "dangling executable":
        doc["executables"][0]["event_id"] = "e999999"
    elif how == "not an observation":
        doc["kind"] = "cvg.policy"
    elif how == "events not a list":
        doc["events"] = {"a": 1}
    text = orjson.dumps(doc)
    if how == "truncated":
        text = text[: len(text) // 2]
    if how == "nan":
        text = text.replace(b'"time":1700000000.4', b'"time":NaN', 1)
        assert b"NaN" in text
    return text


@pytest.mark.parametrize(
    "how",
    [
        "repeated id",
        "invalid op",
        "unknown field",
        "bool time",
        "long path",
        "path not a string",
        "negative time",
        "dangling executable",
        "not an observation",
        "events not a list",
        "truncated",
        "nan",
    ],
)
def test_bad_input_gets_the_error_of_the_whole_reading(
    synth: dict[str, Any], how: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "obs.json"
    path.write_bytes(_bad(synth, how))
    with pytest.raises(load.InputError) as streamed:
        load.read_observations([str(path)])
    with open(path, "rb") as f, pytest.raises(load.InputError) as whole:
        load._plain(f, str(path))
    assert str(streamed.value) == str(whole.value)
    assert main([str(path), "-q"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err, err


def test_enough_occurrences_are_kept_to_cite_and_show_as_the_whole_trace_would() -> None:
    # The last kept one of a group carries the count of the rest: it must come after
    # every event a rule cites and may come among those a note shows, never before.
    from cvg_generate.generate import MAX_REASONS, NOTE_IDS

    assert max(MAX_REASONS + 1, NOTE_IDS) <= grouped.KEPT
