"""``SchemaError``: one clear line naming the first problem by its JSON path."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Final

from pydantic import ValidationError
from pydantic_core import ErrorDetails

__all__ = ["SchemaError", "format_validation_error", "json_path", "json_type"]

_IDENT: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MAX_PATH: Final = 240


class SchemaError(ValueError):
    """A message is not valid. ``str(error)`` is one line: ``$.json.path: what is wrong``.

    ``path`` is the JSON path of the first problem (``$`` for the whole document) and
    ``problem`` the text after it. ``more`` holds the other problems found in the same
    validation, each a SchemaError of its own, in the order validation met them.
    """

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = _one_line(problem)
        self.more: list[SchemaError] = []
        super().__init__(f"{path}: {self.problem}")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def json_path(parts: Sequence[str | int]) -> str:
    """``("landlock", "fs_rules", 0, "access")`` -> ``$.landlock.fs_rules[0].access``."""
    out = ["$"]
    for part in parts:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif _IDENT.fullmatch(part):
            out.append(f".{part}")
        else:
            # JSON string syntax, ASCII only: the path stays on one line whatever the key.
            out.append(f"[{json.dumps(part)}]")
    path = "".join(out)
    if len(path) > _MAX_PATH:
        half = _MAX_PATH // 2
        path = path[:half] + "..." + path[-half:]
    return path


def json_type(value: object) -> str:
    """What a JSON value is, for an error message: "an array", "a string", "null"..."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if value is None:
        return "null"
    return type(value).__name__


def short(value: object, limit: int = 60) -> str:
    """A short, one-line rendering of an input value for an error message."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list | tuple):
        return "an array"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    text = repr(value)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text


def _resolve(loc: tuple[str | int, ...], data: object, error_type: str) -> list[str | int]:
    """Keep the parts of a pydantic ``loc`` that index into the input.

    A loc also holds union-branch tags (``"list[...]"``, ``"int"``) and ``"[key]"``
    markers: they index nothing in the input and are dropped.
    """
    parts: list[str | int] = []
    cur: Any = data
    for i, part in enumerate(loc):
        last = i == len(loc) - 1
        in_dict = isinstance(cur, dict) and part in cur
        in_list = isinstance(cur, list) and isinstance(part, int) and 0 <= part < len(cur)
        if in_dict or in_list:
            parts.append(part)
            cur = cur[part]
        elif last and error_type == "missing" and isinstance(part, str):
            parts.append(part)
    return parts


_SIMPLE_WANTS: Final[dict[str, str]] = {
    "model_type": "an object",
    "model_attributes_type": "an object",
    "dict_type": "an object",
    "list_type": "an array",
    "tuple_type": "an array",
    "string_type": "a string",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "float_type": "a number",
    "float_parsing": "a number",
    "finite_number": "a finite number",
    "none_required": "null",
    "timezone_aware": "a date-time with a time zone (e.g. 2025-01-31T12:00:00Z)",
    "datetime_type": "an RFC 3339 date-time",
    "datetime_parsing": "an RFC 3339 date-time",
    "datetime_from_date_parsing": "an RFC 3339 date-time",
}


_TYPE_MISMATCH: Final = frozenset(
    {
        "model_type",
        "model_attributes_type",
        "dict_type",
        "list_type",
        "tuple_type",
        "string_type",
        "int_type",
        "int_parsing",
        "int_from_float",
        "bool_type",
        "bool_parsing",
        "float_type",
        "float_parsing",
        "literal_error",
        "none_required",
        "datetime_type",
        "is_instance_of",
    }
)


# A bound's phrase, by error type: the ctx key holding the bound, and how it reads.
_BOUNDS: Final[dict[str, tuple[str, str]]] = {
    "less_than_equal": ("le", "at most {}"),
    "less_than": ("lt", "less than {}"),
    "greater_than_equal": ("ge", "at least {}"),
    "greater_than": ("gt", "more than {}"),
    "string_pattern_mismatch": ("pattern", "a string matching {}"),
}
# A length bound: the ctx key, which way it bounds, and what is counted.
_LENGTHS: Final[dict[str, tuple[str, str, str]]] = {
    "too_short": ("min_length", "at least", "item"),
    "too_long": ("max_length", "at most", "item"),
    "string_too_short": ("min_length", "at least", "character"),
    "string_too_long": ("max_length", "at most", "character"),
}


def _plural(n: object, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _want(err: ErrorDetails) -> str | None:
    """What the input should have been, as a phrase; None when there is no phrase."""
    etype = err["type"]
    ctx = err.get("ctx") or {}
    simple = _SIMPLE_WANTS.get(etype)
    if simple is not None:
        return simple
    if etype == "literal_error":
        return str(ctx.get("expected", "?"))
    if etype in _BOUNDS:
        key, phrase = _BOUNDS[etype]
        return phrase.format(ctx.get(key))
    if etype in _LENGTHS:
        key, bound, unit = _LENGTHS[etype]
        return f"{bound} {_plural(ctx.get(key), unit)}"
    return None


def _problem(err: ErrorDetails) -> str:
    etype = err["type"]
    ctx = err.get("ctx") or {}
    value = err.get("input")
    if etype == "missing":
        return "required field is missing"
    if etype == "extra_forbidden":
        return "unknown field"
    if etype == "literal_error":
        return f"{short(value)} is not one of {ctx.get('expected', '?')}"
    if etype.startswith("cvg_"):
        return err["msg"]
    want = _want(err)
    if want is not None:
        return f"expected {want}, got {short(value)}"
    msg = err["msg"]
    for prefix in ("Value error, ", "Assertion failed, "):
        if msg.startswith(prefix):
            return msg[len(prefix) :]
    return f"{msg}, got {short(value)}"


def format_validation_error(error: ValidationError, data: object) -> SchemaError:
    """Turn a pydantic error into a SchemaError naming the first problem by JSON path,
    with every other problem in its ``more``.

    ``data`` is the input that was validated; it is used to tell the real path apart
    from pydantic's union-branch tags.
    """
    errors = error.errors(include_url=False)
    if not errors:  # pragma: no cover - pydantic never raises an empty error
        return SchemaError("$", str(error))
    resolved = []
    for err in errors:
        parts = _resolve(tuple(err["loc"]), data, err["type"])
        at = (err.get("ctx") or {}).get("at")
        if err["type"].startswith("cvg_") and isinstance(at, list):
            parts.extend(p for p in at if isinstance(p, str | int))
        resolved.append((parts, err))
    # One problem per spot: pydantic reports each branch of a union that failed, at
    # the spot and beneath it, and those together are one problem. An error joins the
    # first spot it lies on, beneath or above.
    spots: list[tuple[list[str | int], list[tuple[list[str | int], ErrorDetails]]]] = []
    for parts, err in resolved:
        for root, members in spots:
            n = min(len(root), len(parts))
            if root[:n] == parts[:n]:
                members.append((parts, err))
                break
        else:
            spots.append((parts, [(parts, err)]))
    first, *rest = (_one_problem(members) for _, members in spots)
    first.more = rest
    return first


def _one_problem(resolved: list[tuple[list[str | int], ErrorDetails]]) -> SchemaError:
    """The SchemaError for one spot's errors (see :func:`format_validation_error`)."""
    # The first error, unless a later one is deeper beneath the same spot: with a union
    # (`"all"` or a list of rights) the deeper error names the actual bad element.
    best_parts, best = resolved[0]
    for parts, err in resolved[1:]:
        if len(parts) > len(best_parts) and parts[: len(best_parts)] == best_parts:
            best_parts, best = parts, err
    path = json_path(best_parts)
    # Several errors at the very same spot are the branches of a union (an int, or
    # "unlimited", or [soft, hard]): say what each branch wanted.
    same = [err for parts, err in resolved if parts == best_parts]
    ours = [e for e in same if e["type"].startswith("cvg_")]
    if ours:  # a branch that matched in shape and failed one of our checks says most
        return SchemaError(path, _problem(ours[0]))
    # A branch of the input's own type (an array that is too long) says more than the
    # branches of other types ("an integer", "'unlimited'").
    shaped = [e for e in same if e["type"] not in _TYPE_MISMATCH]
    if len(same) > 1 and len(shaped) == 1:
        return SchemaError(path, _problem(shaped[0]))
    wants = [_want(e) for e in same]
    if len(same) > 1 and all(w is not None for w in wants):
        unique = list(dict.fromkeys(w for w in wants if w is not None))
        return SchemaError(path, f"expected {' or '.join(unique)}, got {short(best.get('input'))}")
    return SchemaError(path, _problem(best))
