"""Reading observations: files, or stdin carrying one or more JSON documents.

Several documents on stdin (``cat a.json b.json | cvg-generate``, or one per line as
``cvg-observe`` writes them) are several observations, merged like several files.
Every problem is a :class:`InputError`, one line naming the input, the document and
the JSON path.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from dataclasses import dataclass
from typing import IO

import orjson

from cvg_schema import Observation
from cvg_schema.errors import SchemaError
from cvg_schema.io import load_dict

from . import grouped

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
    """Every observation in ``inputs`` (``-`` is stdin), in order.

    Each is streamed with its events grouped (:mod:`.grouped`), in memory that grows
    with the trace's distinct events, not its length; input that reader does not
    expect is read again whole, which names what is wrong with it."""
    out: list[Loaded] = []
    for path in inputs or ["-"]:
        name = STDIN_NAME if path == "-" else path
        try:
            f = _spooled_stdin() if path == "-" else open(path, "rb")  # noqa: SIM115
        except OSError as e:
            raise InputError(f"{name}: cannot read: {e.strerror or e}") from None
        with f:
            try:
                found = list(grouped.observations(f))
            except grouped.Unexpected:
                found = _plain(f, name)
            except OSError as e:
                raise InputError(f"{name}: cannot read: {e.strerror or e}") from None
        for i, obs in enumerate(found):
            out.append(Loaded(f"{name}#{i + 1}" if len(found) > 1 else name, obs))
    return out


def _spooled_stdin() -> IO[bytes]:
    """Stdin copied to an unnamed temporary file: read twice when it must be."""
    f = tempfile.TemporaryFile()  # noqa: SIM115 (the caller closes it)
    shutil.copyfileobj(sys.stdin.buffer, f, 1 << 20)
    return f


def _plain(f: IO[bytes], name: str) -> list[Observation]:
    f.seek(0)
    docs = _documents(f.read(), name)
    return [_load(doc, f"{name}#{i + 1}" if len(docs) > 1 else name) for i, doc in enumerate(docs)]
