"""Reading observations: files, or stdin carrying one or more JSON documents.

Several documents on stdin (``cat a.json b.json | cvg-generate``, or one per line as
``cvg-observe`` writes them) are several observations, merged like several files.
Every problem is a :class:`InputError`, one line naming the input, the document and
the JSON path.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass

import orjson

from cvg_schema import Observation
from cvg_schema.errors import SchemaError
from cvg_schema.io import load_dict

__all__ = ["InputError", "Loaded", "read_observations"]

STDIN_NAME = "<stdin>"


class InputError(Exception):
    """An observation could not be read: one line, ``NAME: $.json.path: problem``."""


@dataclass
class Loaded:
    """One observation and the name to cite it by."""

    name: str
    obs: Observation


def _documents(data: bytes, name: str) -> list[object]:
    if not data.strip():
        raise InputError(f"{name}: $: empty input: expected a cvg.observation (JSON)")
    try:
        return [orjson.loads(data)]
    except orjson.JSONDecodeError:
        pass
    # Not one document: several, one after another (whitespace between them).
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{name}: $: not UTF-8 text: {e.reason} at byte {e.start}") from None
    decoder = json.JSONDecoder()
    docs: list[object] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i] in " \t\r\n":
            i += 1
        if i >= n:
            break
        try:
            doc, i = decoder.raw_decode(text, i)
        except json.JSONDecodeError as e:
            where = f"document {len(docs) + 1}, " if docs else ""
            raise InputError(
                f"{name}: $: not valid JSON ({where}line {e.lineno} column {e.colno}): {e.msg}"
            ) from None
        docs.append(doc)
    return docs


def _load(doc: object, name: str) -> Observation:
    if isinstance(doc, dict) and doc.get("kind") not in (None, "cvg.observation"):
        raise InputError(f"{name}: $.kind: expected cvg.observation, got {doc.get('kind')!r}")
    try:
        msg = load_dict(doc)
    except SchemaError as e:
        raise InputError(f"{name}: {e}") from None
    assert isinstance(msg, Observation)
    return msg


def read_observations(inputs: list[str]) -> list[Loaded]:
    """Every observation in ``inputs`` (``-`` is stdin), in order."""
    out: list[Loaded] = []
    for path in inputs or ["-"]:
        name = STDIN_NAME if path == "-" else path
        try:
            if path == "-":
                data = sys.stdin.buffer.read()
            else:
                with open(path, "rb") as f:
                    data = f.read()
        except OSError as e:
            raise InputError(f"{name}: cannot read: {e.strerror or e}") from None
        docs = _documents(data, name)
        for i, doc in enumerate(docs):
            shown = f"{name}#{i + 1}" if len(docs) > 1 else name
            out.append(Loaded(shown, _load(doc, shown)))
    return out
