"""The record's bytes are json.dumps's, compact: cvg-run writes them without importing
json (it brings in re, milliseconds of every cold start), and what it does not expect
goes to json itself."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from cvg_run.record import dumps

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()  # NaN and the infinities too: json writes them its own way
    | st.text()
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text() | st.integers() | st.booleans() | st.none(), inner, max_size=4)
    ),
    max_leaves=30,
)


@given(st.dictionaries(st.text(), values, max_size=6))
def test_the_bytes_are_json_dumps_compact(record: dict[str, Any]) -> None:
    assert dumps(record) == (json.dumps(record, separators=(",", ":")) + "\n").encode()


def test_what_it_does_not_expect_still_gives_json_s_bytes() -> None:
    class Name(str):
        def __str__(self) -> str:
            return "other"

    for record in ({"a": math.nan}, {"a": {1: "x"}}, {"a": Name("n")}, {"a": [math.inf]}):
        assert dumps(record) == (json.dumps(record, separators=(",", ":")) + "\n").encode()


def test_what_json_refuses_is_refused_alike() -> None:
    import pytest

    loop: dict[str, Any] = {}
    loop["self"] = loop
    for record, error in (({"a": object()}, TypeError), (loop, ValueError)):
        with pytest.raises(error) as ours:
            dumps(record)
        with pytest.raises(error) as theirs:
            json.dumps(record, separators=(",", ":"))
        assert str(ours.value) == str(theirs.value)
