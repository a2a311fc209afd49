"""Editing a policy's text: minimal, comments kept, every shape of list and section.

Each edit is judged by reading the result back with the policy loader (an oracle
independent of the editor) and by comparing the lines that changed.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from cvg_explain.diff import unified_diff
from cvg_explain.yamledit import add_item, render_scalar, set_value
from cvg_policy.load import load_policy

BLOCK = """\
# a generated policy
version: 1
filesystem:
  read:
    # e1: openat /usr/lib/x (read)
    - /usr
    - /etc/ld.so.cache   # e2
  write:
    - "${SCRATCH}"
network:
  tcp_connect: [443]
  udp: false
"""


def _policy(text: str) -> dict[str, object]:
    data = load_policy(text, filename="p.yaml").policy.model_dump(by_alias=True)
    assert isinstance(data, dict)
    return data


def _changed(old: str, new: str) -> tuple[list[str], list[str]]:
    """Lines only in old, lines only in new (as multisets in order)."""
    a, b = old.splitlines(), new.splitlines()
    removed = [line for line in a if line not in b]
    added = [line for line in b if line not in a]
    return removed, added


def test_block_list_gets_one_line_after_its_last_item_and_comments_stay() -> None:
    new = add_item(BLOCK, "filesystem", "read", "/etc/hostname")
    assert _changed(BLOCK, new) == ([], ["    - /etc/hostname"])
    assert new.index("/etc/hostname") > new.index("# e2")
    assert "# e1: openat /usr/lib/x (read)" in new
    assert _policy(new)["filesystem"]["read"] == [  # type: ignore[index]
        "/usr",
        "/etc/ld.so.cache",
        "/etc/hostname",
    ]


def test_flow_list_gets_the_item_before_its_bracket() -> None:
    new = add_item(BLOCK, "network", "tcp_connect", 8080)
    assert _changed(BLOCK, new) == (["  tcp_connect: [443]"], ["  tcp_connect: [443, 8080]"])


def test_flow_list_of_paths_keeps_its_trailing_comment() -> None:
    text = "version: 1\nfilesystem:\n  read: [/usr, /etc]  # system\n"
    new = add_item(text, "filesystem", "read", "${CWD}/data.csv")
    assert new == 'version: 1\nfilesystem:\n  read: [/usr, /etc, "${CWD}/data.csv"]  # system\n'
    assert _policy(new)["filesystem"]["read"][-1] == "${CWD}/data.csv"  # type: ignore[index]


def test_empty_flow_list() -> None:
    text = "version: 1\nnetwork:\n  tcp_bind: []\n"
    new = add_item(text, "network", "tcp_bind", 8000)
    assert new == "version: 1\nnetwork:\n  tcp_bind: [8000]\n"


def test_missing_key_in_a_section_goes_after_the_last_key() -> None:
    new = add_item(BLOCK, "filesystem", "execute", "/usr/bin/git")
    removed, added = _changed(BLOCK, new)
    assert removed == []
    assert added == ["  execute:", "    - /usr/bin/git"]
    assert new.index("execute") < new.index("network:")
    assert _policy(new)["filesystem"]["execute"] == ["/usr/bin/git"]  # type: ignore[index]


def test_missing_section_goes_at_the_end() -> None:
    new = set_value(BLOCK, "ipc", "signal_outside", True)
    assert new == BLOCK + "ipc:\n  signal_outside: true\n"
    new = add_item(BLOCK, "syscalls", "allow", "ptrace")
    assert new == BLOCK + "syscalls:\n  allow:\n    - ptrace\n"


def test_file_without_final_newline() -> None:
    text = "version: 1\nfilesystem:\n  read: [/usr]"
    new = add_item(text, "network", "tcp_connect", 443)
    assert new == "version: 1\nfilesystem:\n  read: [/usr]\nnetwork:\n  tcp_connect:\n    - 443\n"


def test_empty_and_null_values() -> None:
    # The loader refuses these (a list may not be null), but the editor still turns
    # each into what was meant, one key at a time.
    text = "version: 1\nfilesystem:\n  read:\n  write: ~  # nothing\nnetwork:\n"
    new = add_item(text, "filesystem", "read", "/usr")
    assert yaml.safe_load(new)["filesystem"]["read"] == ["/usr"]
    new = add_item(text, "filesystem", "write", "/tmp/out")
    assert "  write:  # nothing\n    - /tmp/out\n" in new
    assert yaml.safe_load(new)["filesystem"]["write"] == ["/tmp/out"]
    new = set_value(text, "network", "udp", True)
    assert yaml.safe_load(new)["network"] == {"udp": True}


def test_scalar_replaced_in_place_with_its_comment() -> None:
    new = set_value(BLOCK, "network", "udp", True)
    assert _changed(BLOCK, new) == (["  udp: false"], ["  udp: true"])


def test_flow_mapping_section() -> None:
    text = "version: 1\nresources: {wall_clock_seconds: 60, memory_mb: 512}  # limits\n"
    assert set_value(text, "resources", "memory_mb", 1024) == (
        "version: 1\nresources: {wall_clock_seconds: 60, memory_mb: 1024}  # limits\n"
    )
    assert set_value(text, "resources", "processes", 8) == (
        "version: 1\nresources: {wall_clock_seconds: 60, memory_mb: 512, processes: 8}  # limits\n"
    )


def test_json_policy_is_edited_as_json() -> None:
    data = {"version": 1, "filesystem": {"read": ["/usr", "/etc"]}, "network": {"udp": False}}
    text = json.dumps(data, indent=2) + "\n"
    for new in (
        add_item(text, "filesystem", "read", "/srv/x"),
        add_item(text, "filesystem", "write", "${SCRATCH}"),
        add_item(text, "network", "tcp_connect", 443),
        set_value(text, "network", "udp", True),
        set_value(text, "ipc", "signal_outside", True),
        add_item(text, "syscalls", "allow", "ptrace"),
    ):
        json.loads(new)  # still JSON, not only YAML
        _policy(new)
    new = add_item(text, "filesystem", "read", "/srv/x")
    assert json.loads(new)["filesystem"]["read"] == ["/usr", "/etc", "/srv/x"]
    assert _changed(text, new) == (['      "/etc"'], ['      "/etc",', '      "/srv/x"'])


def test_one_line_json() -> None:
    text = '{"version": 1, "filesystem": {"read": ["/usr"]}}'
    new = add_item(text, "network", "tcp_connect", 80)
    assert json.loads(new)["network"] == {"tcp_connect": [80]}


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("/usr/bin/python3.11", "/usr/bin/python3.11"),
        ("${CWD}", '"${CWD}"'),
        ("/tmp/a b", '"/tmp/a b"'),
        ("/tmp/x: y", '"/tmp/x: y"'),
        ("true", '"true"'),
        ("123", '"123"'),
        ("/tmp/#x", '"/tmp/#x"'),
        (443, "443"),
        (True, "true"),
    ],
)
def test_render_scalar(value: str | int | bool, text: str) -> None:
    assert render_scalar(value) == text
    assert yaml.safe_load(text) == value


_SHAPES = [
    BLOCK,
    "version: 1\nfilesystem:\n  read: [/usr, /etc]  # c\n",
    "version: 1\n",
    "version: 1\nfilesystem: {read: [/usr]}\nnetwork: {udp: false}\n",
    json.dumps({"version": 1, "filesystem": {"read": ["/usr"], "write": []}}, indent=4),
    "version: 1\nfilesystem:\n    read:\n        - /usr\n        - /etc\n",
    "version: 1\nfilesystem:\n  read:\n  - /usr\n  - /etc\n",
]
_PATH = (
    st.text(
        alphabet=st.characters(codec="utf-8", exclude_characters="\x00\n\r\t\x85\u2028\u2029"),
        min_size=1,
        max_size=20,
    )
    .map(lambda s: "/" + s)
    .filter(lambda s: "${" not in s)
)  # a policy path cannot hold "${"


@settings(max_examples=150, deadline=None)
@given(shape=st.sampled_from(_SHAPES), path=_PATH, field=st.sampled_from(["read", "write"]))
def test_any_path_in_any_shape_reads_back(shape: str, path: str, field: str) -> None:
    new = add_item(shape, "filesystem", field, path)
    got = _policy(new)["filesystem"][field]  # type: ignore[index]
    assert got[-1] == path
    before = _policy(shape)["filesystem"][field]  # type: ignore[index]
    assert got[:-1] == before


def _patched(tmp_path: Path, old: str, diff: str, name: str = "p.yaml") -> str:
    (tmp_path / name).write_text(old)
    subprocess.run(
        ["patch", "-p0", "--quiet", "--no-backup-if-mismatch"],
        input=diff.encode(),
        cwd=tmp_path,
        check=True,
    )
    return (tmp_path / name).read_text()


@pytest.mark.parametrize("shape", _SHAPES)
def test_diff_applies_with_patch_and_git_apply(tmp_path: Path, shape: str) -> None:
    new = add_item(shape, "filesystem", "read", "/srv/data file")
    new = set_value(new, "network", "udp", True)
    diff = unified_diff(shape, new, "p.yaml")
    assert diff.startswith("--- p.yaml\n+++ p.yaml\n@@ ")
    assert _patched(tmp_path, shape, diff) == new
    g = tmp_path / "g"
    g.mkdir()
    (g / "p.yaml").write_text(shape)
    subprocess.run(["git", "apply", "-p0", "-"], input=diff.encode(), cwd=g, check=True)
    assert (g / "p.yaml").read_text() == new


def test_diff_without_final_newline(tmp_path: Path) -> None:
    old = "version: 1\nnetwork:\n  udp: false"
    new = set_value(old, "network", "udp", True)
    assert new == "version: 1\nnetwork:\n  udp: true"
    diff = unified_diff(old, new, "p.yaml")
    assert "\\ No newline at end of file" in diff
    assert _patched(tmp_path, old, diff) == new


def test_diff_hunk_line_numbers() -> None:
    old = "".join(f"# line {i}\n" for i in range(1, 21)) + "version: 1\nnetwork:\n  udp: false\n"
    new = set_value(old, "network", "udp", True)
    diff = unified_diff(old, new, "p.yaml")
    assert "@@ -20,4 +20,4 @@" in diff


def test_crlf_line_ends_are_kept(tmp_path: Path) -> None:
    old = BLOCK.replace("\n", "\r\n")
    new = add_item(old, "filesystem", "read", "/srv/x")
    new = set_value(new, "ipc", "signal_outside", True)
    lf = set_value(add_item(BLOCK, "filesystem", "read", "/srv/x"), "ipc", "signal_outside", True)
    assert new == lf.replace("\n", "\r\n")
    assert "\n" not in new.replace("\r\n", "")
    assert _policy(new)["filesystem"]["read"][-1] == "/srv/x"  # type: ignore[index]
    (tmp_path / "p.yaml").write_bytes(old.encode())
    subprocess.run(
        ["patch", "-p0", "--quiet", "--no-backup-if-mismatch"],
        input=unified_diff(old, new, "p.yaml").encode(),
        cwd=tmp_path,
        check=True,
    )
    assert (tmp_path / "p.yaml").read_bytes() == new.encode()
