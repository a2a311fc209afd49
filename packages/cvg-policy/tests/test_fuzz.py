"""Fuzzing: whatever the input, load_policy raises only PolicyError (one line), and the
CLI exits 0, 1 or 2 without a traceback."""

from __future__ import annotations

import io
import json
import sys
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from cvg_policy.cli import main
from cvg_policy.errors import PolicyError
from cvg_policy.load import load_policy
from cvg_policy.render import render_json, render_yaml

FUZZ = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

VALID = """\
version: 1
filesystem:
  read: [/usr, "${CWD}"]
  write: ["${SCRATCH}"]
network:
  tcp_connect: [443]
  udp: false
resources: {memory_mb: 512}
environment:
  set: {PATH: /usr/bin}
  pass: [LANG]
syscalls:
  allow: []
"""


def load_or_policy_error(data: bytes | str) -> None:
    """Load; a PolicyError must be one line; anything else escaping fails the test.

    A policy that loads must also survive render -> load.
    """
    try:
        loaded = load_policy(data, filename="fuzz.yaml")
    except PolicyError as e:
        text = str(e)
        assert text.startswith("fuzz.yaml")
        assert "\n" not in text and "\r" not in text
        assert len(text) < 2000
        return
    policy = loaded.policy
    assert load_policy(render_yaml(policy)).policy == policy.model_copy(update={"reasons": {}})
    assert load_policy(render_json(policy)).policy == policy


@FUZZ
@given(st.binary(max_size=400))
@example(b"\xff\xfe")
@example(b"\xef\xbb\xbf{")
@example(b"{\x00}")
@example(b"version: 1\n\x85")
def test_random_bytes(data: bytes) -> None:
    load_or_policy_error(data)


YAMLISH = st.lists(
    st.sampled_from(
        [
            *"{}[],:-?!&*#|>'\"%@`\t\n \\$~.0123456789",
            "version",
            "1",
            "filesystem",
            "read",
            "write",
            "network",
            "tcp_connect",
            "udp",
            "true",
            "yes",
            "null",
            "/usr",
            "${CWD}",
            "${",
            "<<",
            "&a",
            "*a",
            "!!python/object",
            "!!str",
            "!!binary",
            "---",
            "...",
            "\u2028",
            "\x7f",
            "\ufeff",
            "\ud800",
            "999999999999999999999999",
            "\n  ",
            "\n    - ",
            ": ",
            "- ",
        ]
    ),
    max_size=60,
).map("".join)


@FUZZ
@given(YAMLISH)
@example("a: &a [*a]")
@example("version: 1\nfilesystem: &f {read: *f}\n")
@example('{"version": 1, "version": 1}')
@example('version: 1\nfilesystem:\n  read: ["\\ud800"]\n')
def test_random_yamlish_text(text: str) -> None:
    load_or_policy_error(text)
    try:
        encoded = text.encode("utf-8")
    except UnicodeEncodeError:
        return
    load_or_policy_error(encoded)


KEYS = st.sampled_from(
    [
        "version",
        "kind",
        "schema_version",
        "filesystem",
        "read",
        "write",
        "execute",
        "deny",
        "network",
        "tcp_connect",
        "tcp_bind",
        "udp",
        "unix",
        "ipc",
        "signal_outside",
        "resources",
        "memory_mb",
        "processes",
        "environment",
        "set",
        "pass",
        "syscalls",
        "allow",
        "reasons",
        "event_id",
        "summary",
        "filesystem.read[0]",
        "PATH",
    ]
) | st.text(max_size=8)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.sampled_from(["1.0", "2.0", "cvg.policy", "cvg.facts", "/usr", "${CWD}", "${X}", "e1"])
    | st.text(max_size=12)
)
JSONISH = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(KEYS, children, max_size=5),
    max_leaves=25,
)


@st.composite
def policy_shaped(draw: st.DrawFn) -> dict[str, Any]:
    data: dict[str, Any] = draw(st.dictionaries(KEYS, JSONISH, max_size=6))
    if draw(st.booleans()):
        data["version"] = draw(st.sampled_from([1, 1, 2, "1", None]))
    return data


def dump_yaml(data: Any) -> str:
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False)


@FUZZ
@given(policy_shaped())
def test_random_structured_dicts(data: dict[str, Any]) -> None:
    load_or_policy_error(dump_yaml(data))
    try:
        text = json.dumps(data)
    except ValueError:
        return
    load_or_policy_error(text)


@FUZZ
@given(st.data())
def test_mutations_of_a_valid_policy(data: st.DataObject) -> None:
    text = VALID
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(text)))
        op = data.draw(st.sampled_from(["delete", "insert", "replace"]))
        piece = data.draw(st.sampled_from([*":-[]{}\"' \t\n#&*!$", "\n  ", "read", "99999"]))
        if op == "delete":
            text = text[:i] + text[i + 1 :]
        elif op == "insert":
            text = text[:i] + piece + text[i:]
        else:
            text = text[:i] + piece + text[i + 1 :]
    load_or_policy_error(text)


def run_cli(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    stdin: bytes,
) -> tuple[int, str]:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    capsys.readouterr()
    status = main(args)
    _, err = capsys.readouterr()
    return status, err


@FUZZ
@given(
    stdin=st.binary(max_size=200) | YAMLISH.map(lambda s: s.encode("utf-8", "replace")),
    args=st.lists(
        st.sampled_from(
            ["--strict", "-q", "--format", "json", "yaml", "--cwd", "/", "--bogus", "-", "-o"]
        ),
        max_size=4,
    ),
)
def test_cli_always_exits_0_1_or_2(
    stdin: bytes,
    args: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assume("-o" not in args)  # never write files from a fuzzer
    status, err = run_cli(monkeypatch, capsys, args, stdin)
    assert status in (0, 1, 2)
    assert "Traceback" not in err
    assert "internal error" not in err
    if status == 2:
        assert len(err.splitlines()) == 1


@FUZZ
@given(data=policy_shaped())
def test_cli_on_structured_input(
    data: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    status, err = run_cli(monkeypatch, capsys, ["-q"], dump_yaml(data).encode())
    assert status in (0, 1)
    assert "internal error" not in err
    if status == 1:
        assert len(err.splitlines()) >= 1
        assert all(line.startswith("<stdin>") for line in err.splitlines())
