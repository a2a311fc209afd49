"""Writing a policy back out: reviewable YAML, or a ``cvg.policy`` JSON message.

:func:`render_yaml` writes every section in the order of docs/policy.md, each key
explicitly (what is not granted shows as ``[]`` or ``false``), and puts each generated
rule's reasons as comments directly above the rule::

    filesystem:
      read:
        # e12: openat /usr/lib/python3.11/os.py (read)
        - /usr/lib/python3.11

Comments are not data: the YAML re-loads to an equal policy without its reasons. The
JSON form (:func:`render_json`) keeps them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

import yaml

from cvg_schema import Policy
from cvg_schema.io import dumps
from cvg_schema.policy import Reason

__all__ = ["SECTION_ORDER", "double_quoted", "render_json", "render_yaml", "yaml_scalar"]

SECTION_ORDER: Final[tuple[tuple[str, tuple[str, ...]], ...]] = (
    ("filesystem", ("read", "write", "execute", "deny")),
    ("network", ("tcp_connect", "tcp_bind", "udp", "unix")),
    ("ipc", ("signal_outside",)),
    (
        "resources",
        (
            "wall_clock_seconds",
            "cpu_seconds",
            "memory_mb",
            "file_size_mb",
            "open_files",
            "processes",
        ),
    ),
    ("environment", ("set", "pass")),
    ("syscalls", ("allow",)),
)
"""Sections and their keys in the order of the policy format (docs/policy.md)."""

_OPTIONAL_AROUND: Final[dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {
    "syscalls": (("mode",), ("on_violation",)),
}
"""Keys written only away from their default, before and after a section's keys: a
deny-list policy reads as it always did, an allowlist one says so first."""

_HEADER: Final = (
    "# Generated rules: the comments above a rule name the observed events behind it\n"
    "# (event id: what the tool did).\n"
)
_INDENT: Final = "  "

# Characters that may stand raw in a YAML stream (PyYAML's reader), less the line
# breaks YAML 1.1 knows besides \n (NEL, LS, PS): anything else is escaped.
_RAW_OK: Final = re.compile(
    "[\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]*"
)
_SHORT_ESCAPES: Final[dict[str, str]] = {
    "\\": "\\\\",
    '"': '\\"',
    "\n": "\\n",
    "\t": "\\t",
    "\r": "\\r",
}


def double_quoted(text: str) -> str:
    r"""``text`` as one double-quoted scalar that YAML (``yaml.safe_load``) and JSON
    both read back as ``text``, on one line.

    Backslash, quote, line feed, tab and carriage return take their short escapes
    (``\\``, ``\"``, ``\n``, ``\t``, ``\r``); a character YAML may not hold raw (the
    other control characters, DEL, NEL, the line and paragraph separators, a lone
    surrogate) is written ``\uXXXX``; every other character stands as it is. A
    character above U+FFFF stays raw: ``json.dumps`` would split it into a surrogate
    pair, which YAML reads as two lone surrogates. (JSON, unlike YAML, reads a lone
    high surrogate followed by a lone low one as the one character they make.)
    """
    out = ['"']
    for ch in text:
        if ch in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[ch])
        elif _RAW_OK.fullmatch(ch):
            out.append(ch)
        else:  # below U+10000: every astral character is raw-ok
            out.append(f"\\u{ord(ch):04x}")
    out.append('"')
    return "".join(out)


def yaml_scalar(value: object) -> str:
    """One YAML scalar on one line that reads back as ``value`` (str, int, bool, None)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if not isinstance(value, str):
        raise TypeError(f"not a policy scalar: {type(value).__name__}")
    if not _RAW_OK.fullmatch(value) or value != value.strip(" ") or not value:
        return '""' if not value else double_quoted(value)
    # Plain or single-quoted, as PyYAML judges it safe to read back as this string.
    text = yaml.safe_dump(
        value, default_flow_style=True, width=1 << 30, allow_unicode=True, explicit_end=False
    )
    text = text.removesuffix("\n").removesuffix("\n...").removesuffix("...")
    text = text.rstrip("\n")
    if "\n" in text:  # pragma: no cover - single-line input stays single-line
        return double_quoted(value)
    return text


def _comment(text: str) -> str:
    # A comment is one line: any line break or control character becomes a space.
    return " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())


def _reason_lines(reasons: Sequence[Reason], indent: str) -> list[str]:
    out = []
    for r in reasons:
        where = f" in {_comment(r.observation)}" if r.observation else ""
        out.append(f"{indent}# {_comment(r.event_id)}{where}: {_comment(r.summary)}")
    return out


def render_yaml(policy: Policy) -> str:
    """The policy as YAML: sections in docs/policy.md order, reasons as comments."""
    reasons: Mapping[str, list[Reason]] = policy.reasons
    lines: list[str] = []
    if reasons:
        lines.append(_HEADER.rstrip("\n"))
    lines.append(f"version: {policy.version}")
    data = policy.model_dump(mode="json", by_alias=True)
    for section, keys in SECTION_ORDER:
        lines.append(f"{section}:")
        values: dict[str, Any] = data[section]
        before, after = _OPTIONAL_AROUND.get(section, ((), ()))
        for key in (*before, *keys, *after):
            if key not in values:
                continue  # left out of the dump at its default (syscalls.mode: denylist)
            address = f"{section}.{key}"
            lines.extend(_reason_lines(reasons.get(address, []), _INDENT))
            lines.extend(_render_field(address, key, values[key], reasons))
    return "\n".join(lines) + "\n"


def _render_field(
    address: str, key: str, value: Any, reasons: Mapping[str, list[Reason]]
) -> list[str]:
    head = f"{_INDENT}{yaml_scalar(key)}:"
    item_indent = _INDENT * 2
    if isinstance(value, list):
        if not value:
            return [f"{head} []"]
        out = [head]
        for i, item in enumerate(value):
            out.extend(_reason_lines(reasons.get(f"{address}[{i}]", []), item_indent))
            out.append(f"{item_indent}- {yaml_scalar(item)}")
        return out
    if isinstance(value, dict):
        if not value:
            return [f"{head} {{}}"]
        out = [head]
        for k, v in value.items():
            out.extend(_reason_lines(reasons.get(f"{address}.{k}", []), item_indent))
            out.append(f"{item_indent}{yaml_scalar(k)}: {yaml_scalar(v)}")
        return out
    return [f"{head} {yaml_scalar(value)}"]


def render_json(policy: Policy) -> str:
    """The policy as a ``cvg.policy`` JSON message (indented), reasons kept."""
    return dumps(policy, pretty=True).decode("utf-8")
