"""Minimal edits to a policy's text: add a list item, set a value, add a missing key.

The policy is edited as text, never re-serialised, so every comment (cvg-validate writes
each rule's reason as one) and every other line stays exactly as it was. Where to edit
comes from the node marks of ``yaml.compose``: a list written in block style gets a new
``- item`` line under its last item, a flow list (``read: [/usr, /etc]``) gets the item
before its ``]``, a missing key is added after the last key of its section, a missing
section after the last line of the document. A document starting with ``{`` is JSON and
is edited as JSON (quoted keys and strings, commas).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

import yaml

from cvg_policy.render import double_quoted

__all__ = [
    "EditError",
    "Value",
    "add_host",
    "add_item",
    "render_host",
    "render_scalar",
    "set_value",
]

Value = str | int | bool

# Stands for "the indent of the key" in a value's text until the key's column is known;
# a policy can hold no NUL, so it cannot clash with the value itself.
_INDENT: Final = "\x00"
_PLAIN: Final = re.compile(r"[A-Za-z0-9_/.+@%-][A-Za-z0-9_/.+@%=-]*")


class EditError(ValueError):
    """The text cannot be edited this way (not a mapping at the top, a section of the
    wrong shape). The policy loader would have refused it already, so this is rare."""


@dataclass(frozen=True)
class _Doc:
    text: str
    root: yaml.MappingNode
    json: bool


def _compose(text: str) -> _Doc:
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as e:
        raise EditError(f"cannot read the policy as YAML: {' '.join(str(e).split())}") from None
    if not isinstance(root, yaml.MappingNode):
        raise EditError("the policy is not a mapping")
    return _Doc(text, root, text.lstrip(" \t\r\n\ufeff").startswith("{"))


def render_scalar(value: Value, as_json: bool = False) -> str:
    """A value as YAML (or JSON) text: plain when that reads back as the same string."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if not as_json and _PLAIN.fullmatch(value):
        try:
            if yaml.safe_load(value) == value:
                return value
        except yaml.YAMLError:
            pass
    quoted: str = double_quoted(value)  # cvg_policy ships no py.typed: say what it is
    return quoted


def _key(name: str, as_json: bool) -> str:
    return double_quoted(name) if as_json else name


def _find(node: yaml.MappingNode, name: str) -> tuple[yaml.Node, yaml.Node] | None:
    for key_node, value_node in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.value == name:
            return key_node, value_node
    return None


def _is_null(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null"


def _last_end(node: yaml.Node) -> int:
    """Where the text of ``node`` really ends. A block collection's own end mark lies
    at the next token, past any comment lines after it, so descend to its last leaf."""
    if isinstance(node, yaml.MappingNode) and not node.flow_style and node.value:
        return _last_end(node.value[-1][1])
    if isinstance(node, yaml.SequenceNode) and not node.flow_style and node.value:
        return _last_end(node.value[-1])
    return int(node.end_mark.index)


def _line_end(text: str, index: int) -> int:
    """The index just past the newline of the line holding ``index``."""
    nl = text.find("\n", index)
    return len(text) if nl < 0 else nl + 1


def _insert_lines(text: str, index: int, lines: str) -> str:
    """Insert whole lines after the line holding ``index``."""
    at = _line_end(text, index)
    prefix = text[:at]
    if prefix and not prefix.endswith("\n"):
        prefix += "\n"
    return prefix + lines + text[at:]


def _column(text: str, index: int) -> int:
    start = text.rfind("\n", 0, index) + 1
    return index - start


def _dash_column(text: str, item: yaml.Node) -> int:
    """The column of the ``-`` that introduces a block list item."""
    index = int(item.start_mark.index)
    start = text.rfind("\n", 0, index) + 1
    dash = text.rfind("-", start, index)
    return dash - start if dash >= 0 else _column(text, index)


def _flow_item(doc: _Doc, seq: yaml.SequenceNode, rendered: str) -> str:
    text = doc.text
    if not seq.value:
        # "[]" or "[ ]": the new item goes right after "[".
        at = int(seq.start_mark.index) + 1
        return text[:at] + rendered + text[at:]
    last = seq.value[-1]
    at = int(last.end_mark.index)
    if len(seq.value) > 1 and seq.value[-2].start_mark.line != last.start_mark.line:
        # One item per line: keep it that way.
        indent = " " * _column(text, int(last.start_mark.index))
        return text[:at] + ",\n" + indent + rendered + text[at:]
    return text[:at] + ", " + rendered + text[at:]


def _replace(text: str, start: int, end: int, new: str) -> str:
    return text[:start] + new + text[end:]


def _add_key(doc: _Doc, mapping: yaml.MappingNode, name: str, value_text: str) -> str:
    """Add ``name: value_text`` as the last key of ``mapping`` (value_text is one line,
    or block lines indented relative to the key's column with ``_INDENT``)."""
    text = doc.text
    key = _key(name, doc.json)
    if mapping.flow_style:
        if not mapping.value:
            at = int(mapping.start_mark.index) + 1
            return _replace(text, at, at, f"{key}: {value_text.replace(_INDENT, '')}")
        last_key, last_value = mapping.value[-1]
        at = _last_end(last_value)
        first_key = mapping.value[0][0]
        if last_key.start_mark.line != mapping.start_mark.line or (
            first_key.start_mark.line != mapping.start_mark.line
        ):
            indent = " " * _column(text, int(last_key.start_mark.index))
            value = value_text.replace(_INDENT, indent)
            return _replace(text, at, at, f",\n{indent}{key}: {value}")
        return _replace(text, at, at, f", {key}: {value_text.replace(_INDENT, '')}")
    if not mapping.value:  # pragma: no cover - an empty block mapping is written {}
        raise EditError("cannot add to an empty block mapping")
    first_key = mapping.value[0][0]
    indent = " " * _column(text, int(first_key.start_mark.index))
    at = _last_end(mapping.value[-1][1])
    sep = "" if value_text.startswith("\n") else " "
    return _insert_lines(text, at, f"{indent}{key}:{sep}{value_text.replace(_INDENT, indent)}\n")


def _under_null_key(doc: _Doc, key_node: yaml.Node, null: yaml.Node, body: list[str]) -> str:
    """Give a key whose value is empty or null (``read:``, ``network: ~``) a block body.

    ``body`` lines are relative to the key; they are indented two more than it."""
    text = doc.text
    start, end = int(null.start_mark.index), int(null.end_mark.index)
    if end > start:
        # An explicit null ("~", "null"): remove it, keep the key and its comment.
        text = text[:start].rstrip(" ") + text[end:]
    indent = " " * (_column(text, int(key_node.start_mark.index)) + 2)
    lines = "".join(f"{indent}{line}\n" for line in body)
    return _insert_lines(text, int(key_node.end_mark.index), lines)


def _section(doc: _Doc, section: str) -> tuple[yaml.Node, yaml.Node] | None:
    return _find(doc.root, section)


def _keep_line_ends(edit: Callable[[str], str], text: str) -> str:
    """Edit with "\\n" line ends, then give the text back the ones it had."""
    if "\r\n" not in text:
        return edit(text)
    return edit(text.replace("\r\n", "\n")).replace("\n", "\r\n")


def add_item(text: str, section: str, field: str, value: Value) -> str:
    """``text`` with ``value`` appended to the list ``section.field``, created if missing."""
    return _keep_line_ends(lambda t: _add_item(t, section, field, value), text)


def _add_item(text: str, section: str, field: str, value: Value) -> str:
    doc = _compose(text)
    return _add_rendered(doc, section, field, render_scalar(value, doc.json))


def _add_rendered(doc: _Doc, section: str, field: str, rendered: str) -> str:
    found = _section(doc, section)
    if found is None:
        return _add_section(doc, section, field, _list_text(doc, rendered))
    key_node, sec = found
    if _is_null(sec):
        if doc.json or _flow_context(doc, key_node):
            return _replace_null(doc, sec, "{" + f"{_key(field, doc.json)}: [{rendered}]" + "}")
        return _under_null_key(doc, key_node, sec, [f"{field}:", f"  - {rendered}"])
    if not isinstance(sec, yaml.MappingNode):
        raise EditError(f"{section} is not a mapping")
    entry = _find(sec, field)
    if entry is None:
        return _add_key(doc, sec, field, _list_text(doc, rendered, flow=sec.flow_style))
    fkey, seq = entry
    if _is_null(seq):
        if doc.json or sec.flow_style:
            return _replace_null(doc, seq, f"[{rendered}]")
        return _under_null_key(doc, fkey, seq, [f"- {rendered}"])
    if not isinstance(seq, yaml.SequenceNode):
        raise EditError(f"{section}.{field} is not a list")
    return _append(doc, seq, rendered)


def _append(doc: _Doc, seq: yaml.SequenceNode, rendered: str) -> str:
    if seq.flow_style:
        return _flow_item(doc, seq, rendered)
    dash = " " * _dash_column(doc.text, seq.value[0])
    return _insert_lines(doc.text, _last_end(seq), f"{dash}- {rendered}\n")


def render_host(host: str, port: int, as_json: bool = False) -> str:
    """A ``network.hosts`` entry as a one-line flow mapping."""
    return (
        "{"
        + f"{_key('host', as_json)}: {render_scalar(host, as_json)}, "
        + f"{_key('ports', as_json)}: [{port}]"
        + "}"
    )


def add_host(text: str, host: str, port: int) -> str:
    """``text`` with ``port`` granted on ``host`` in ``network.hosts``: appended to the
    ports of the entry naming exactly that host, else a new entry at the end."""
    return _keep_line_ends(lambda t: _add_host(t, host, port), text)


def _add_host(text: str, host: str, port: int) -> str:
    doc = _compose(text)
    found = _section(doc, "network")
    if found is not None and isinstance(found[1], yaml.MappingNode):
        entry = _find(found[1], "hosts")
        if entry is not None and isinstance(entry[1], yaml.SequenceNode):
            for item in entry[1].value:
                if not isinstance(item, yaml.MappingNode):
                    continue
                named = _find(item, "host")
                if named is None or str(named[1].value).lower() != host.lower():
                    continue
                ports = _find(item, "ports")
                if ports is None or not isinstance(ports[1], yaml.SequenceNode):
                    raise EditError(f"network.hosts entry {host} has no list of ports")
                return _append(doc, ports[1], str(port))
    return _add_rendered(doc, "network", "hosts", render_host(host, port, doc.json))


def set_value(text: str, section: str, field: str, value: Value) -> str:
    """``text`` with ``section.field`` set to the scalar ``value``, added if missing."""
    return _keep_line_ends(lambda t: _set_value(t, section, field, value), text)


def _set_value(text: str, section: str, field: str, value: Value) -> str:
    doc = _compose(text)
    rendered = render_scalar(value, doc.json)
    found = _section(doc, section)
    if found is None:
        return _add_section(doc, section, field, rendered)
    key_node, sec = found
    if _is_null(sec):
        if doc.json or _flow_context(doc, key_node):
            return _replace_null(doc, sec, "{" + f"{_key(field, doc.json)}: {rendered}" + "}")
        return _under_null_key(doc, key_node, sec, [f"{field}: {rendered}"])
    if not isinstance(sec, yaml.MappingNode):
        raise EditError(f"{section} is not a mapping")
    entry = _find(sec, field)
    if entry is None:
        return _add_key(doc, sec, field, rendered)
    fkey, node = entry
    if not isinstance(node, yaml.ScalarNode):
        raise EditError(f"{section}.{field} is not a single value")
    start, end = int(node.start_mark.index), int(node.end_mark.index)
    if start == end and not doc.json:
        # "field:" with nothing after the colon.
        at = int(fkey.end_mark.index) + 1
        return _replace(doc.text, at, at, f" {rendered}")
    return _replace(doc.text, start, end, rendered)


def _flow_context(doc: _Doc, key_node: yaml.Node) -> bool:
    return bool(doc.root.flow_style)


def _replace_null(doc: _Doc, null: yaml.Node, new: str) -> str:
    start, end = int(null.start_mark.index), int(null.end_mark.index)
    if start == end:
        new = " " + new
    return _replace(doc.text, start, end, new)


def _list_text(doc: _Doc, rendered: str, flow: bool = True) -> str:
    """A one-item list as the value of a new key. Block style in a block section
    (``_INDENT`` stands for the key's indent), flow style inside a flow mapping or JSON."""
    if doc.json or flow:
        return f"[{rendered}]"
    return "\n" + _INDENT + "  - " + rendered


def _add_section(doc: _Doc, section: str, field: str, value_text: str) -> str:
    key = _key(field, doc.json)
    if doc.root.flow_style:
        body = "{" + f"{key}: {value_text.replace(_INDENT, '')}" + "}"
        return _add_key(doc, doc.root, section, body)
    if value_text.startswith("["):
        # A new block section: its list is written in block style like the rest.
        value_text = "\n" + _INDENT + "  - " + value_text[1:-1]
    if not doc.root.value:  # pragma: no cover - a policy has at least version
        raise EditError("the policy is empty")
    first_key = doc.root.value[0][0]
    base = " " * _column(doc.text, int(first_key.start_mark.index))
    inner = base + "  "
    sep = "" if value_text.startswith("\n") else " "
    lines = f"{base}{section}:\n{inner}{key}:{sep}{value_text.replace(_INDENT, inner)}\n"
    return _insert_lines(doc.text, _last_end(doc.root.value[-1][1]), lines)
