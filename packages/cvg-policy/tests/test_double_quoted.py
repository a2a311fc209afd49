"""render.double_quoted: the one double-quoter of policy text (cvg-explain's policy
edits use it too). Whatever the string, the quoted form reads back as it in YAML, and
in JSON too unless it holds lone surrogates, and stays on one line."""

from __future__ import annotations

import json
import re

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from cvg_policy.render import double_quoted

# Every code point, lone surrogates included, with the awkward ones drawn often.
AWKWARD = st.sampled_from(
    ["\x00", "\x07", "\t", "\n", "\r", "\x1b", "\x7f", "\x85", "\xa0", "\u2028",
     "\u2029", "\ud800", "\udfff", "\ufeff", "\ufffe", "\uffff", "\U0001f600",
     '"', "'", "\\", "#", ":", "-", " ", "${CWD}"]
)  # fmt: skip
_SURROGATE = re.compile("[\ud800-\udfff]")
ANY_TEXT = st.lists(st.one_of(st.characters(), AWKWARD), max_size=40).map("".join)


@settings(max_examples=500, deadline=None)
@given(text=ANY_TEXT)
def test_any_string_reads_back_from_yaml_and_json(text: str) -> None:
    quoted = double_quoted(text)
    assert "\n" not in quoted and "\r" not in quoted
    assert yaml.safe_load(quoted) == text
    assert yaml.safe_load(f"k: {quoted}\n") == {"k": text}
    assert yaml.safe_load(f"- {quoted}\n") == [text]
    if not _SURROGATE.search(text):  # JSON joins "\\ud800\\udc00" into one character
        assert json.loads(quoted) == text


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ("", '""'),
        ("plain", '"plain"'),
        ('a "q" \\ b', '"a \\"q\\" \\\\ b"'),
        ("l1\nl2\tt\rr", '"l1\\nl2\\tt\\rr"'),
        ("nul\x00 bel\x07 del\x7f nel\x85", '"nul\\u0000 bel\\u0007 del\\u007f nel\\u0085"'),
        ("ls\u2028 ps\u2029 lone\ud800", '"ls\\u2028 ps\\u2029 lone\\ud800"'),
        ("caf\u00e9 \U0001f600", '"caf\u00e9 \U0001f600"'),
    ],
)
def test_escapes(text: str, quoted: str) -> None:
    assert double_quoted(text) == quoted
