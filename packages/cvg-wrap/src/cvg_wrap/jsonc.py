"""JSON with comments and trailing commas (JSONC: VS Code's ``mcp.json``, Cursor's
configs), read with where every value lies in the text, so that cvg-wrap can change
one value and leave every other byte as it was.

:func:`parse` gives the value (what ``json.loads`` gives for plain JSON) and a
:class:`Spans`: for each value, by its path of keys and indexes, where it starts and
ends; for each object member, where its key starts. Strings and numbers are decoded by
``json`` itself, so they mean exactly what they mean to a JSON reader.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

Path = tuple[str | int, ...]


class JsoncError(ValueError):
    """Not JSONC: ``line`` and ``column`` (1-based) say where."""

    def __init__(self, message: str, text: str, pos: int) -> None:
        self.line = text.count("\n", 0, pos) + 1
        self.column = pos - (text.rfind("\n", 0, pos) + 1) + 1
        self.message = message
        super().__init__(f"{message} (line {self.line}, column {self.column})")


@dataclass
class Spans:
    values: dict[Path, tuple[int, int]] = field(default_factory=dict)
    keys: dict[Path, int] = field(default_factory=dict)  # a member's path -> its key's start
    comments: bool = False  # whether the text has a comment or a trailing comma


_WS = " \t\r\n"
_LITERALS = {"true": True, "false": False, "null": None}
_NUMBER_CHARS = frozenset("+-0123456789.eE")


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.spans = Spans()

    def fail(self, message: str, pos: int | None = None) -> JsoncError:
        return JsoncError(message, self.text, self.pos if pos is None else pos)

    def skip(self) -> None:
        text, n = self.text, len(self.text)
        while self.pos < n:
            c = text[self.pos]
            if c in _WS:
                self.pos += 1
            elif text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                self.pos = n if end < 0 else end + 1
                self.spans.comments = True
            elif text.startswith("/*", self.pos):
                end = text.find("*/", self.pos + 2)
                if end < 0:
                    raise self.fail("unterminated comment")
                self.pos = end + 2
                self.spans.comments = True
            else:
                return

    def value(self, path: Path) -> Any:
        self.skip()
        start = self.pos
        if start >= len(self.text):
            raise self.fail("a value was expected, the text ended")
        c = self.text[start]
        if c == "{":
            out: Any = self.obj(path)
        elif c == "[":
            out = self.array(path)
        elif c == '"':
            out = self.string()
        else:
            out = self.scalar()
        self.spans.values[path] = (start, self.pos)
        return out

    def string(self) -> str:
        text, start = self.text, self.pos
        i = start + 1
        while True:
            j = text.find('"', i)
            if j < 0:
                raise self.fail("unterminated string", start)
            backslashes = 0
            while text[j - 1 - backslashes] == "\\":
                backslashes += 1
            if backslashes % 2 == 0:
                break
            i = j + 1
        self.pos = j + 1
        try:
            decoded: str = json.loads(text[start : self.pos])
        except json.JSONDecodeError as e:
            raise self.fail(f"bad string: {e.msg}", start) from None
        return decoded

    def scalar(self) -> Any:
        start, text = self.pos, self.text
        for word, value in _LITERALS.items():
            if text.startswith(word, start):
                self.pos += len(word)
                return value
        end = start
        while end < len(text) and text[end] in _NUMBER_CHARS:
            end += 1
        if end == start:
            raise self.fail(f"unexpected {text[start]!r}")
        try:
            number = json.loads(text[start:end])
        except json.JSONDecodeError:
            raise self.fail(f"bad number {text[start:end]!r}", start) from None
        self.pos = end
        return number

    def obj(self, path: Path) -> dict[str, Any]:
        self.pos += 1
        out: dict[str, Any] = {}
        while True:
            self.skip()
            if self.peek() == "}":
                self.pos += 1
                return out
            if self.peek() != '"':
                raise self.fail("a member name in double quotes was expected")
            key_start = self.pos
            key = self.string()
            self.skip()
            if self.peek() != ":":
                raise self.fail("':' was expected after a member name")
            self.pos += 1
            self.spans.keys[(*path, key)] = key_start
            out[key] = self.value((*path, key))
            if not self.separator("}"):
                return out

    def array(self, path: Path) -> list[Any]:
        self.pos += 1
        out: list[Any] = []
        while True:
            self.skip()
            if self.peek() == "]":
                self.pos += 1
                return out
            out.append(self.value((*path, len(out))))
            if not self.separator("]"):
                return out

    def separator(self, close: str) -> bool:
        """After a member or an element: True to read another, False once closed."""
        self.skip()
        c = self.peek()
        if c == close:
            self.pos += 1
            return False
        if c != ",":
            raise self.fail(f"',' or '{close}' was expected")
        self.pos += 1
        self.skip()
        if self.peek() == close:
            self.spans.comments = True  # a trailing comma
        return True

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""


def parse(text: str) -> tuple[Any, Spans]:
    """The value of ``text`` and where each part lies. JsoncError on anything else."""
    parser = _Parser(text)
    value = parser.value(())
    parser.skip()
    if parser.pos != len(text):
        raise parser.fail("extra text after the value")
    return value, parser.spans


def line_indent(text: str, pos: int) -> str:
    """The whitespace that starts the line holding ``pos``."""
    start = text.rfind("\n", 0, pos) + 1
    end = start
    while end < len(text) and text[end] in " \t":
        end += 1
    return text[start:end]


def render_list(items: list[str], *, inline: bool, inner: str, outer: str) -> str:
    """A list of strings as JSON: on one line (json.dumps' own separators), or one
    element a line at ``inner`` with the bracket closing at ``outer``."""
    if inline or not items:
        return json.dumps(items, ensure_ascii=False)
    body = ",\n".join(inner + json.dumps(s, ensure_ascii=False) for s in items)
    return f"[\n{body}\n{outer}]"
