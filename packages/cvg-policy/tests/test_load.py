"""load_policy: YAML and JSON in, a validated Policy and the line of every rule out."""

from __future__ import annotations

import codecs
import json
import os
import time
from pathlib import Path

import pytest

from cvg_policy.errors import PolicyError
from cvg_policy.load import (
    MAX_ALIAS_NODES,
    MAX_POLICY_BYTES,
    LoadedPolicy,
    address_of,
    load_policy,
    parent_address,
    read_policy_file,
)
from cvg_schema import Policy

BLOCK = """\
version: 1
filesystem:
  read:
    - /usr
    - /etc/ld.so.cache
  write: ["${SCRATCH}"]
network:
  tcp_connect: [443]
  udp: false
environment:
  set:
    PATH: /usr/bin
  pass: [LANG]
"""


def error_of(data: bytes | str, filename: str = "p.yaml") -> PolicyError:
    with pytest.raises(PolicyError) as info:
        load_policy(data, filename=filename)
    text = str(info.value)
    assert "\n" not in text
    return info.value


def test_block_policy_loads_with_the_line_of_every_rule() -> None:
    loaded = load_policy(BLOCK, filename="p.yaml")
    assert isinstance(loaded, LoadedPolicy)
    assert loaded.policy.filesystem.read == ["/usr", "/etc/ld.so.cache"]
    assert loaded.policy.network.tcp_connect == [443]
    assert loaded.lines[""] == 1
    assert loaded.lines["version"] == 1
    assert loaded.lines["filesystem"] == 2
    assert loaded.lines["filesystem.read"] == 3
    assert loaded.lines["filesystem.read[0]"] == 4
    assert loaded.lines["filesystem.read[1]"] == 5
    assert loaded.lines["filesystem.write[0]"] == 6
    assert loaded.lines["network.udp"] == 9
    assert loaded.lines["environment.set.PATH"] == 12
    assert loaded.lines["environment.pass[0]"] == 13


def test_line_of_falls_back_to_the_enclosing_key() -> None:
    loaded = load_policy(BLOCK, filename="p.yaml")
    assert loaded.line_of("filesystem.read[1]") == 5
    assert loaded.line_of("filesystem.execute") == 2  # not written: its section's line
    assert loaded.line_of("resources.memory_mb") == 1  # no section: the document
    assert loaded.line_of(None) == 1


def test_address_helpers_match_schema_json_paths() -> None:
    assert address_of(("filesystem", "read", 2)) == "filesystem.read[2]"
    assert address_of(("environment", "set", "PATH")) == "environment.set.PATH"
    assert address_of(("reasons", "network.udp", 0)) == 'reasons["network.udp"][0]'
    assert address_of(()) == ""
    assert parent_address("filesystem.read[2]") == "filesystem.read"
    assert parent_address("filesystem.read") == "filesystem"
    assert parent_address("filesystem") == ""
    assert parent_address('reasons["filesystem.read[2]"][0]') == 'reasons["filesystem.read[2]"]'
    assert parent_address('reasons["filesystem.read[2]"]') == "reasons"
    assert parent_address("") is None


def test_schema_error_becomes_file_line_key() -> None:
    e = error_of(BLOCK.replace("/etc/ld.so.cache", "etc/ld.so.cache"))
    assert e.file == "p.yaml"
    assert e.line == 5
    assert e.address == "filesystem.read[1]"
    assert str(e).startswith("p.yaml:5: filesystem.read[1]: 'etc/ld.so.cache' is not absolute")


def test_unknown_key_suggests_the_schema_key() -> None:
    e = error_of(BLOCK.replace("  udp: false", "  upd: false"))
    assert (e.line, e.address) == (9, "network.upd")
    assert "did you mean 'udp'?" in e.message


def test_unknown_key_without_a_close_match_lists_the_known_keys() -> None:
    e = error_of("version: 1\nipc:\n  ptrace: true\n")
    assert (e.line, e.address) == (3, "ipc.ptrace")
    assert "known here: signal_outside" in e.message


def test_duplicate_key_is_an_error_with_both_lines() -> None:
    e = error_of("version: 1\nnetwork:\n  udp: false\n  unix: false\n  udp: true\n")
    assert (e.line, e.address) == (5, "network.udp")
    assert "duplicate key 'udp' (first at line 3)" in e.message


def test_duplicate_key_in_json_is_an_error() -> None:
    e = error_of('{"version": 1,\n "network": {"udp": false, "udp": true}}')
    assert "duplicate key 'udp'" in e.message
    assert e.line == 2


def test_json_syntax_error_comes_from_the_json_parser() -> None:
    e = error_of('  {"version": 1,\n "filesystem": {"read": ["/usr",]}}', filename="p.json")
    assert e.message.startswith("invalid JSON: ")
    assert e.line == 2


def test_json_errors_keep_lines_from_the_yaml_view() -> None:
    text = '{\n  "version": 1,\n  "network": {\n    "tcp_connect": [443, 0]\n  }\n}\n'
    e = error_of(text, filename="p.json")
    assert (e.line, e.address) == (4, "network.tcp_connect[1]")


def test_json_with_tab_indentation_loads() -> None:
    # YAML refuses tabs; a JSON file indented with tabs is still valid JSON.
    loaded = load_policy('{\n\t"version": 1,\n\t"network": {"udp": true}\n}\n')
    assert loaded.policy.network.udp is True


def test_policy_message_from_cvg_generate_keeps_reasons() -> None:
    message = {
        "kind": "cvg.policy",
        "schema_version": "1.0",
        "version": 1,
        "filesystem": {"read": ["/usr"]},
        "reasons": {"filesystem.read[0]": [{"event_id": "e12", "summary": "openat /usr/x"}]},
    }
    loaded = load_policy(json.dumps(message).encode())
    assert loaded.policy.reasons["filesystem.read[0]"][0].event_id == "e12"


def test_bytes_and_str_give_the_same_policy() -> None:
    assert load_policy(BLOCK).policy == load_policy(BLOCK.encode()).policy


@pytest.mark.parametrize("bom", [codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE])
def test_byte_order_marks_are_understood(bom: bytes) -> None:
    encoding = {codecs.BOM_UTF8: "utf-8", codecs.BOM_UTF16_LE: "utf-16-le"}.get(bom, "utf-16-be")
    loaded = load_policy(bom + BLOCK.encode(encoding))
    assert loaded.policy == load_policy(BLOCK).policy


def test_stdin_and_file_names_set_the_policy_dir(tmp_path: Path) -> None:
    assert load_policy(BLOCK, filename="-").filename == "<stdin>"
    assert load_policy(BLOCK).policy_dir is None
    path = tmp_path / "p.yaml"
    assert load_policy(BLOCK, filename=str(path)).policy_dir == str(tmp_path)
    rel = load_policy(BLOCK, filename="p.yaml")
    assert rel.policy_dir == os.getcwd()


def test_anchors_and_aliases_within_bounds_are_fine() -> None:
    text = "version: 1\nfilesystem:\n  read: &sys [/usr, /etc]\n  execute: *sys\n"
    loaded = load_policy(text)
    assert loaded.policy.filesystem.execute == ["/usr", "/etc"]


def test_alias_bomb_is_refused_quickly() -> None:
    text = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{n}: &{n} [" + ", ".join([f"*{p}"] * 10) + "]\n"
        for p, n in zip("abcdefgh", "bcdefghi", strict=True)
    )
    start = time.monotonic()
    e = error_of(text)
    assert time.monotonic() - start < 5
    assert f"more than {MAX_ALIAS_NODES} nodes" in e.message


@pytest.mark.parametrize(
    "text",
    [
        "!!python/object/apply:os.system ['true']\n",
        "version: !!python/name:os.system ''\n",
        "version: 1\nfilesystem: !!python/object:collections.OrderedDict {}\n",
        "version: 1\nfilesystem:\n  read: !!set {/usr: null}\n",
        "version: 1\nfilesystem:\n  read: [!!binary aGVsbG8=]\n",
    ],
)
def test_tags_beyond_plain_yaml_are_refused(text: str) -> None:
    e = error_of(text)
    assert "YAML tag !!" in e.message
    assert "not allowed" in e.message


def test_a_date_must_be_quoted() -> None:
    e = error_of("version: 1\nenvironment:\n  pass: [2024-01-01]\n")
    assert "!!timestamp" in e.message and "quote" in e.message
    assert (e.line, e.address) == (3, "environment.pass[0]")


def test_merge_keys_are_refused() -> None:
    e = error_of("version: 1\nbase: &b {udp: true}\nnetwork:\n  <<: *b\n")
    assert "merge keys" in e.message


def test_a_key_yaml_reads_as_a_boolean_must_be_quoted() -> None:
    e = error_of("version: 1\nenvironment:\n  set:\n    on: x\n")
    assert "read as a boolean" in e.message and "quote it" in e.message
    assert e.line == 4
    loaded = load_policy("version: 1\nenvironment:\n  set:\n    'on': x\n")
    assert loaded.policy.environment.set == {"on": "x"}


def test_huge_numbers_are_refused_by_the_model_not_wrapped() -> None:
    e = error_of(f"version: 1\nresources:\n  memory_mb: {10**30}\n")
    assert str(10**30) in e.message
    assert "out of range" in e.message and "16777216" in e.message
    e = error_of("version: 1\nresources:\n  memory_mb: " + "7" * 5000 + "\n")
    assert "far too large" in e.message
    assert len(str(e)) < 300


def test_ports_out_of_range_say_the_range() -> None:
    e = error_of("version: 1\nnetwork:\n  tcp_bind: [70000]\n")
    assert e.message == "port 70000 is out of range: a TCP port is 1 to 65535"


def test_version_problems_are_explained() -> None:
    assert "version 2 is not supported" in error_of("version: 2\n").message
    assert "a policy starts with version: 1" in error_of("network: {}\n").message
    assert error_of("version: '1'\n").message == "expected the number 1, got '1'"


@pytest.mark.parametrize("text", ["", "   \n\n", "# only a comment\n"])
def test_empty_input_is_one_error(text: str) -> None:
    e = error_of(text)
    assert e.message.startswith("empty")
    assert e.line is None


@pytest.mark.parametrize(
    ("text", "got"), [("null\n", "null"), ("- a\n", "a list"), ("42\n", "a number")]
)
def test_top_level_must_be_a_mapping(text: str, got: str) -> None:
    e = error_of(text)
    assert e.message.endswith(f"got {got}")
    assert e.line == 1


def test_yaml_syntax_error_names_the_line() -> None:
    e = error_of("version: 1\nfilesystem:\n  read: [/usr\n  write: []\n")
    assert e.message.startswith("invalid YAML: ")
    assert e.line == 4


@pytest.mark.parametrize(
    ("text", "said"),
    [
        pytest.param(
            "version: 1\nfilesystem:\n  read: &r [/usr, *r]\n",
            "recursive alias",
            id="recursive-alias",
        ),
        pytest.param("version: 1\nnetwork:\n\tudp: true\n", "tab character", id="tab"),
    ],
)
def test_what_yaml_cannot_hold_is_explained_at_its_line(text: str, said: str) -> None:
    e = error_of(text)
    assert said in e.message
    assert e.line == 3


@pytest.mark.parametrize(
    "data",
    [b"\x00\x01\x02\xff", b"version: 1\n\x00\n", bytes(range(256))],
)
def test_binary_data_is_refused(data: bytes) -> None:
    e = error_of(data)
    assert "binary data" in e.message or "not UTF-8" in e.message


def test_undecodable_bytes_name_their_line() -> None:
    e = error_of(b"version: 1\nenvironment:\n  set: {A: caf\xe9}\n")
    assert "not UTF-8" in e.message and "0xe9" in e.message
    assert e.line == 3


def test_lone_surrogate_is_refused() -> None:
    e = error_of('{"version": 1, "environment": {"set": {"A": "\\ud800"}}}')
    assert "surrogate" in e.message
    assert e.address == "environment.set.A"


def test_deep_nesting_is_refused() -> None:
    e = error_of("version: 1\nfilesystem:\n  read: " + "[" * 60 + "]" * 60 + "\n")
    assert "nested" in e.message
    e = error_of('{"version": 1, "x": ' + "[" * 5000 + "]" * 5000 + "}")
    assert "nested" in e.message


def test_size_limit(tmp_path: Path) -> None:
    padding = "#" * 100 + "\n"
    text = BLOCK + padding * ((MAX_POLICY_BYTES - len(BLOCK)) // len(padding))
    assert len(text) <= MAX_POLICY_BYTES
    assert load_policy(text.encode()).policy.version == 1
    e = error_of(b" " * (MAX_POLICY_BYTES + 1))
    assert "larger than 1 MiB" in e.message


def test_read_policy_file_stops_past_the_limit(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    with big.open("wb") as f:
        f.truncate(MAX_POLICY_BYTES * 8)
    assert len(read_policy_file(str(big))) == MAX_POLICY_BYTES + 1
    small = tmp_path / "small.yaml"
    small.write_text(BLOCK)
    assert read_policy_file(str(small)) == BLOCK.encode()
    with pytest.raises(IsADirectoryError):
        read_policy_file(str(tmp_path))
    with pytest.raises(FileNotFoundError):
        read_policy_file(str(tmp_path / "missing.yaml"))


def test_a_valid_policy_gives_the_same_model_as_cvg_schema() -> None:
    loaded = load_policy(BLOCK)
    expected = Policy.model_validate(
        {
            "version": 1,
            "filesystem": {"read": ["/usr", "/etc/ld.so.cache"], "write": ["${SCRATCH}"]},
            "network": {"tcp_connect": [443], "udp": False},
            "environment": {"set": {"PATH": "/usr/bin"}, "pass": ["LANG"]},
        }
    )
    assert loaded.policy == expected
