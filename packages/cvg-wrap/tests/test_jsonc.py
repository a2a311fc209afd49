"""cvg-wrap's JSONC reader and its text edits, as pure functions: a value means what
json.loads says it means, comments and trailing commas are read, and an edit changes
the command line and nothing else, byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cvg_wrap import jsonc
from cvg_wrap.config import Change, load

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES, st.sampled_from([None, 2, 4, "\t"]))
def test_plain_json_reads_as_json_loads_reads_it(value: object, indent: int | str | None) -> None:
    text = json.dumps(value, indent=indent)
    got, spans = jsonc.parse(text)
    assert got == json.loads(text)
    assert spans.values[()] == (0, len(text)) and not spans.comments


def test_comments_and_trailing_commas() -> None:
    text = '// top\n{\n  /* a */ "a": [1, 2,], // after\n  "b": "//not a comment",\n}\n'
    value, spans = jsonc.parse(text)
    assert value == {"a": [1, 2], "b": "//not a comment"}
    assert spans.comments
    start, end = spans.values[("b",)]
    assert text[start:end] == '"//not a comment"'


@pytest.mark.parametrize(
    ("text", "where"),
    [('{"a": 1,, }', (1, 9)), ('{"a" 1}', (1, 6)), ("[1] 2", (1, 5)), ("/* x", (1, 1)),
     ('{"a": "\\q"}', (1, 7)), ("", (1, 1))],
)  # fmt: skip
def test_bad_text_says_where(text: str, where: tuple[int, int]) -> None:
    with pytest.raises(jsonc.JsoncError) as e:
        jsonc.parse(text)
    assert (e.value.line, e.value.column) == where


VSCODE = """{
  // the servers this workspace uses
  "servers": {
    "git": {
      "type": "stdio",
      "command": "uvx",
      "args": ["mcp-server-git", "--repository", "."], // inline, kept inline
    },
    "time": {"command": "uvx"},
  },
  "inputs": [],
}
"""


def test_an_edit_changes_the_command_line_and_nothing_else(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(VSCODE)
    config = load(str(path))
    wrapped = ["/usr/bin/cvg-observe", "--", "uvx", "mcp-server-git"]
    text = config.edited({"git": Change(wrapped), "time": Change(["/x", "--", "uvx"])})
    assert '"args": ["--", "uvx"]' in text  # a new one-line entry gets a one-line array
    assert '"args": ["--", "uvx", "mcp-server-git"], // inline' in text
    for kept in ("// the servers this workspace uses", '"inputs": [],', '"type": "stdio",'):
        assert kept in text
    value, _ = jsonc.parse(text)
    assert value["servers"]["git"]["command"] == wrapped[0]
    assert value["servers"]["time"] == {"command": "/x", "args": ["--", "uvx"]}
    # Taking the new args away again (an entry that had none) gives the text back.
    path.write_text(text)
    again = load(str(path)).edited(
        {"git": Change(["uvx", "mcp-server-git", "--repository", "."]),
         "time": Change(["uvx"], had_args=False)}
    )  # fmt: skip
    assert again == VSCODE


def test_the_configs_env_is_passed_not_set() -> None:
    from cvg_wrap.tools import pass_config_env

    why = [{"event_id": "e1", "summary": "the tool was started with MEMORY_FILE_PATH set"}]
    policy = {
        "environment": {"set": {"MEMORY_FILE_PATH": "${CWD}/mem.jsonl", "TMPDIR": "${SCRATCH}",
                                "LANG": "C"}, "pass": ["API_KEY"]},
        "reasons": {"environment.set.MEMORY_FILE_PATH": why, "environment.pass[0]": why},
    }  # fmt: skip
    notes = pass_config_env(policy, ["MEMORY_FILE_PATH", "TMPDIR", "API_KEY", "NEW"])
    assert policy["environment"] == {
        "set": {"TMPDIR": "${SCRATCH}", "LANG": "C"},
        "pass": ["API_KEY", "MEMORY_FILE_PATH", "NEW"],
    }
    assert policy["reasons"] == {"environment.pass[0]": why, "environment.pass[1]": why}
    assert notes == ["env TMPDIR: the config sets it; the policy sets it to ${SCRATCH} "
                     "(the sandbox's own)"]  # fmt: skip
