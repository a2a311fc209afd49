"""Malformed, truncated and hostile reports: an observation or one clear line, nothing else."""

from __future__ import annotations

import json
import posixpath
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from importhelp import FIXTURES, obs, report

from cvg_import.errors import ImportRefused
from cvg_import.importer import import_divergence
from cvg_import.report import CAPABILITIES, MAX_OBSERVATIONS
from cvg_schema import Observation, dumps, loads_as

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)

path_parts = st.sampled_from(
    [
        "..",
        ".",
        "",
        "home",
        "scratch",
        ".ssh",
        "id_rsa",
        "divergence-overlay-1-2-3",
        "tmp",
        "etc",
        "shadow",
        "a\x00b",
        "${HOME}",
        "x",
        ".config",
        "divergence-token",
        "\udc80",
        "é",
    ]
)
targets = st.one_of(
    st.lists(path_parts, min_size=1, max_size=8).map("/".join),
    st.lists(path_parts, min_size=1, max_size=8).map(lambda p: "/" + "/".join(p)),
    st.builds(
        lambda p: "/tmp/divergence-overlay-9-9-0/" + "/".join(p), st.lists(path_parts, max_size=6)
    ),
    st.text(max_size=40),
)

observations = st.fixed_dictionaries(
    {
        "capability": st.sampled_from([*CAPABILITIES, "env_read", ""]),
        "syscall": st.sampled_from(
            ["openat", "execve", "clone3", "connect", "bind", "unlink", "X"]
        ),
        "target": targets,
        "decoy": st.booleans(),
        "succeeded": st.booleans(),
        "result": st.integers(min_value=-200, max_value=200),
    }
)


def _check(data: bytes) -> Observation | None:
    """The importer's contract on any input."""
    try:
        o = import_divergence(data)
    except ImportRefused as e:
        text = str(e)
        assert "\n" not in text and "\r" not in text and text.strip() == text
        assert 0 < len(text) < 400, text
        return None
    assert loads_as(Observation, dumps(o)) == o
    assert o.partial
    return o


def _invariants(o: Observation, raws: list[dict[str, Any]]) -> None:
    assert len(o.events) == len(raws)
    for raw, e in zip(raws, o.events, strict=True):
        src = e.source or {}
        if raw["decoy"]:
            assert src["never_grant"] in ("decoy", "secret", "failed")
        if not raw["succeeded"] or raw["result"] < 0:
            assert e.result != "ok" and src["never_grant"] is not None
        if e.path is None or src["unresolved"]:
            assert src["policy_path"] is None
            continue
        assert e.path.startswith("/") and "${" not in e.path and "\x00" not in e.path
        assert posixpath.normpath(e.path) == e.path and not e.path.startswith("//"), e.path
        # A placed path is in policy form absolute or beneath one variable, and the
        # variable stands for the directory the observation names for it.
        policy = src["policy_path"]
        rest = policy
        for var, directory in (("${HOME}", o.home), ("${SCRATCH}", (o.scratch or [None])[0])):
            if policy == var or policy.startswith(var + "/"):
                rest = policy[len(var) :] or "/"
                assert directory is not None and e.path == directory + policy[len(var) :]
                break
        else:
            assert policy == e.path
        assert rest.startswith("/") and "${" not in rest
        assert posixpath.normpath(rest) == rest or rest == "/", policy
        assert not policy.startswith("/tmp/divergence-overlay-"), policy


@SETTINGS
@given(st.binary(max_size=300))
def test_any_bytes(data: bytes) -> None:
    _check(data)


@SETTINGS
@given(json_values)
def test_any_json(doc: Any) -> None:
    _check(json.dumps(doc).encode())


@SETTINGS
@given(st.lists(json_values, max_size=5), json_values)
def test_any_observation_values(items: list[Any], coverage: Any) -> None:
    _check(json.dumps(report(*items, coverage=coverage)).encode())


@SETTINGS
@given(st.lists(observations, max_size=6))
def test_well_formed_observations_keep_invariants(raws: list[dict[str, Any]]) -> None:
    o = _check(json.dumps(report(*raws)).encode())
    if o is not None:
        _invariants(o, raws)


@SETTINGS
@given(st.lists(observations, min_size=1, max_size=4), st.data())
def test_truncated_and_corrupted(raws: list[dict[str, Any]], data: st.DataObject) -> None:
    text = json.dumps(report(*raws)).encode()
    cut = data.draw(st.integers(min_value=0, max_value=len(text) - 1))
    assert _check(text[:cut]) is None
    i = data.draw(st.integers(min_value=0, max_value=len(text) - 1))
    _check(text[:i] + bytes([data.draw(st.integers(0, 255))]) + text[i + 1 :])


@SETTINGS
@given(st.data())
def test_fixture_mutations(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(sorted(FIXTURES.glob("*.json"))))
    doc = json.loads(path.read_bytes())
    if doc["observations"]:
        i = data.draw(st.integers(0, len(doc["observations"]) - 1))
        key = data.draw(st.sampled_from(sorted(doc["observations"][i])))
        doc["observations"][i][key] = data.draw(json_values)
    else:
        doc[data.draw(st.sampled_from(sorted(doc)))] = data.draw(json_values)
    _check(json.dumps(doc).encode())


def test_non_utf8_and_deep_nesting() -> None:
    for data in (
        b'{"schema": "divergence.sandbox/1", "observations": [{"target": "\xc3\x28"}]}',
        b"\xff\xfe{\x00}\x00",
        b"[" * 5000 + b"]" * 5000,
        b'{"a":' * 100 + b"1" + b"}" * 100,
    ):
        with pytest.raises(ImportRefused) as e:
            import_divergence(data)
        assert "\n" not in str(e.value)


def test_huge_observation_array_is_refused() -> None:
    one = obs("fs_read", "/x")
    data = json.dumps(report(*([one] * (MAX_OBSERVATIONS + 1)))).encode()
    with pytest.raises(ImportRefused, match="more than the 100000 accepted"):
        import_divergence(data)


def test_control_characters_in_values_stay_on_one_line() -> None:
    data = json.dumps(
        report(obs("fs_read", "/x", syscall="open\nat"), schema="divergence.sandbox/1")
    ).encode()
    with pytest.raises(ImportRefused) as e:
        import_divergence(data)
    assert "\n" not in str(e.value) and "\\n" in str(e.value)


def test_negative_result_is_a_failure_even_when_marked_succeeded() -> None:
    o = import_divergence(
        json.dumps(report(obs("fs_write", "/srv/out", succeeded=True, result=-13))).encode()
    )
    (e,) = o.events
    assert e.result == "EACCES"
    assert e.source is not None and e.source["never_grant"] == "failed"
    assert any("taken as failed" in n for n in e.source["notes"])  # type: ignore[union-attr]
    (e,) = import_divergence(
        json.dumps(report(obs("fs_write", "/srv/out", succeeded=False, result=3))).encode()
    ).events
    assert e.result == "EUNKNOWN"
    assert e.source is not None and e.source["never_grant"] == "failed"


def test_a_path_too_long_once_resolved_is_refused_in_one_line() -> None:
    data = json.dumps(report(obs("fs_read", "x" * 200))).encode()
    with pytest.raises(ImportRefused, match="would not be valid") as e:
        import_divergence(data, root="/" + "r" * 4000)
    assert "\n" not in str(e.value)
