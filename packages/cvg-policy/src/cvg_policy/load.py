"""Loading a policy file: YAML or JSON text to a validated :class:`cvg_schema.Policy`.

Every problem is a :class:`~cvg_policy.errors.PolicyError` whose text is one line naming
the file, the line and the key::

    p.yaml:7: filesystem.read[2]: 'usr' is not absolute: a policy path starts with / ...

The text is composed into a YAML node tree first (so every key and list item keeps its
line), then turned into plain data by hand: duplicate keys, tags other than plain YAML
types, merge keys, recursive aliases and alias bombs are refused there, before the
schema ever sees the data. JSON is YAML, but a document that starts with ``{`` is parsed
with a JSON parser, so its syntax errors are JSON's own.
"""

from __future__ import annotations

import codecs
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import yaml

from cvg_schema import Policy
from cvg_schema.base import CvgModel
from cvg_schema.errors import SchemaError, short
from cvg_schema.io import load_policy_dict
from cvg_schema.policy import POLICY_SECTIONS, Reason, Resources

from .errors import PolicyError

__all__ = [
    "MAX_ALIAS_NODES",
    "MAX_DEPTH",
    "MAX_POLICY_BYTES",
    "STDIN_NAME",
    "LoadedPolicy",
    "address_of",
    "load_policy",
    "parent_address",
    "read_policy_file",
]

MAX_POLICY_BYTES: Final = 1 << 20
"""The largest policy accepted: 1 MiB (a generated policy is a few KiB)."""

MAX_ALIAS_NODES: Final = 10_000
"""How many nodes aliases may add in all when expanded (an alias bomb adds billions)."""

MAX_DEPTH: Final = 32
"""The deepest nesting accepted; a policy needs 5 levels."""

STDIN_NAME: Final = "<stdin>"

_IDENT: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LAST_PART: Final = re.compile(r'(?:\.[A-Za-z_][A-Za-z0-9_]*|\[[0-9]+\]|\["(?:[^"\\]|\\.)*"\])$')

_TAG_PREFIX: Final = "tag:yaml.org,2002:"
_SCALAR_TAGS: Final = frozenset(_TAG_PREFIX + t for t in ("str", "int", "float", "bool", "null"))
_MAP_TAG: Final = _TAG_PREFIX + "map"
_SEQ_TAG: Final = _TAG_PREFIX + "seq"
_MERGE_TAG: Final = _TAG_PREFIX + "merge"


@dataclass(frozen=True)
class LoadedPolicy:
    """A validated policy and where it came from.

    ``lines`` maps each rule address (``filesystem.read[2]``, ``network.udp``,
    ``environment.set.PATH``; ``""`` for the whole document) to its 1-based line.
    ``policy_dir`` is the absolute directory of the file, None for stdin.
    """

    policy: Policy
    filename: str = STDIN_NAME
    policy_dir: str | None = None
    lines: Mapping[str, int] = field(default_factory=dict)

    def line_of(self, address: str | None) -> int | None:
        """The line of ``address``, else of the nearest enclosing key that has one."""
        return _line_of(self.lines, address)


def address_of(parts: tuple[str | int, ...] | list[str | int]) -> str:
    """``("filesystem", "read", 2)`` -> ``filesystem.read[2]``: a JSON path without ``$.``.

    Written the way cvg_schema names paths in its errors, so the two match.
    """
    out: list[str] = []
    for part in parts:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif _IDENT.fullmatch(part):
            out.append(f".{part}" if out else part)
        else:
            out.append(f"[{json.dumps(part)}]")
    return "".join(out)


def parent_address(address: str) -> str | None:
    """``filesystem.read[2]`` -> ``filesystem.read`` -> ``filesystem`` -> ``""`` -> None."""
    if not address:
        return None
    m = _LAST_PART.search(address)
    return "" if m is None else address[: m.start()]


def _line_of(lines: Mapping[str, int], address: str | None) -> int | None:
    current: str | None = address or ""
    while current is not None:
        line = lines.get(current)
        if line is not None:
            return line
        current = parent_address(current)
    return None


# --- reading ------------------------------------------------------------------------


def read_policy_file(path: str) -> bytes:
    """The bytes of a policy file, ``-`` meaning stdin; at most MAX_POLICY_BYTES + 1.

    OSError propagates (a missing file, a directory, no permission): the caller decides
    what that means. Reading stops one byte past the limit, so a huge file (or an endless
    stream) is not read whole just to be refused.
    """
    import sys

    if path == "-":
        stream = sys.stdin.buffer if sys.stdin is not None else None
        if stream is None:
            raise OSError("stdin is closed")
        return _read_limited(stream)
    if os.path.isdir(path):
        raise IsADirectoryError(21, "Is a directory", path)
    with open(path, "rb") as f:
        return _read_limited(f)


def _read_limited(stream: Any) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size <= MAX_POLICY_BYTES:
        chunk = stream.read(MAX_POLICY_BYTES + 1 - size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


# --- decoding -----------------------------------------------------------------------


def _decode(data: bytes | str, filename: str) -> str:
    if isinstance(data, str):
        text = data
        if len(text.encode("utf-8", "surrogatepass")) > MAX_POLICY_BYTES:
            raise _too_big(filename)
    else:
        if len(data) > MAX_POLICY_BYTES:
            raise _too_big(filename)
        text = _decode_bytes(bytes(data), filename)
    text = text.removeprefix("\ufeff")
    nul = text.find("\x00")
    if nul >= 0:
        raise PolicyError(
            "binary data (a NUL byte), not a policy: expected YAML or JSON text",
            file=filename,
            line=text.count("\n", 0, nul) + 1,
        )
    return text


def _too_big(filename: str) -> PolicyError:
    return PolicyError(
        f"larger than {MAX_POLICY_BYTES // (1 << 20)} MiB: refused (a policy is a few KiB)",
        file=filename,
    )


def _decode_bytes(data: bytes, filename: str) -> str:
    for bom, encoding in (
        (codecs.BOM_UTF32_LE, "utf-32"),
        (codecs.BOM_UTF32_BE, "utf-32"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if data.startswith(bom):
            try:
                return data.decode(encoding)
            except UnicodeDecodeError:
                break
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        if b"\x00" in data:
            line = data.count(b"\n", 0, data.index(b"\x00")) + 1
            raise PolicyError(
                "binary data (a NUL byte), not a policy: expected YAML or JSON text",
                file=filename,
                line=line,
            ) from None
        line = data.count(b"\n", 0, e.start) + 1
        raise PolicyError(
            f"not UTF-8 text: byte 0x{data[e.start]:02x} cannot be decoded "
            "(a policy is YAML or JSON in UTF-8)",
            file=filename,
            line=line,
        ) from None


# --- the node tree ------------------------------------------------------------------


def _short_tag(tag: str) -> str:
    return "!!" + tag[len(_TAG_PREFIX) :] if tag.startswith(_TAG_PREFIX) else tag


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


class _Builder:
    """Turns a composed node tree into plain data, recording the line of every address."""

    def __init__(self, loader: yaml.SafeLoader, filename: str) -> None:
        self.loader = loader
        self.filename = filename
        self.lines: dict[str, int] = {}
        self.visited: set[int] = set()
        self.active: set[int] = set()
        self.alias_nodes = 0

    def error(self, message: str, node: yaml.Node, parts: list[str | int]) -> PolicyError:
        return PolicyError(
            message, file=self.filename, line=_line(node), address=address_of(parts) or None
        )

    def build(self, node: yaml.Node, parts: list[str | int]) -> Any:
        if len(parts) > MAX_DEPTH:
            raise self.error(f"nested more than {MAX_DEPTH} levels deep", node, parts[:2])
        key = id(node)
        if key in self.active:
            raise self.error("a recursive alias (an anchor used inside itself)", node, parts)
        if key in self.visited:
            # The node is reached a second time: through an alias. Count what it adds.
            self.alias_nodes += 1
            if self.alias_nodes > MAX_ALIAS_NODES:
                raise self.error(
                    f"aliases expand to more than {MAX_ALIAS_NODES} nodes: refused "
                    "(an alias bomb?)",
                    node,
                    parts,
                )
        self.visited.add(key)
        self.active.add(key)
        try:
            if isinstance(node, yaml.MappingNode):
                return self._mapping(node, parts)
            if isinstance(node, yaml.SequenceNode):
                return self._sequence(node, parts)
            return self._scalar(node, parts)
        finally:
            self.active.discard(key)

    def _check_tag(self, node: yaml.Node, parts: list[str | int], expected: str) -> None:
        if node.tag != expected:
            raise self.error(
                f"YAML tag {_short_tag(node.tag)} is not allowed: a policy holds only "
                "mappings, lists, strings, numbers and true/false",
                node,
                parts,
            )

    def _mapping(self, node: yaml.MappingNode, parts: list[str | int]) -> dict[str, Any]:
        self._check_tag(node, parts, _MAP_TAG)
        out: dict[str, Any] = {}
        first_line: dict[str, int] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                raise self.error(
                    "merge keys (<<) are not supported: write the keys out", key_node, parts
                )
            if not isinstance(key_node, yaml.ScalarNode):
                raise self.error(
                    "a key must be a plain string, not a list or mapping", key_node, parts
                )
            key = self._scalar(key_node, parts)
            if not isinstance(key, str):
                raise self.error(
                    f"the key {key_node.value or '(empty)'} is read as {_kind_of(key)}, "
                    f'not a string: quote it ("{key_node.value}")',
                    key_node,
                    parts,
                )
            here = [*parts, key]
            line = _line(key_node)
            if key in out:
                raise self.error(
                    f"duplicate key {key!r} (first at line {first_line[key]}): "
                    "each key may appear once",
                    key_node,
                    here,
                )
            first_line[key] = line
            self.lines.setdefault(address_of(here), line)
            out[key] = self.build(value_node, here)
        return out

    def _sequence(self, node: yaml.SequenceNode, parts: list[str | int]) -> list[Any]:
        self._check_tag(node, parts, _SEQ_TAG)
        out: list[Any] = []
        for i, item in enumerate(node.value):
            here = [*parts, i]
            self.lines.setdefault(address_of(here), _line(item))
            out.append(self.build(item, here))
        return out

    def _scalar(self, node: yaml.Node, parts: list[str | int]) -> Any:
        if not isinstance(node, yaml.ScalarNode):  # pragma: no cover - composer node kinds
            raise self.error("unexpected YAML node", node, parts)
        if node.tag not in _SCALAR_TAGS:
            hint = ""
            if node.tag in (_TAG_PREFIX + "timestamp", _TAG_PREFIX + "binary"):
                hint = ": quote the value to make it a string"
            raise self.error(
                f"YAML tag {_short_tag(node.tag)} is not allowed{hint} (a policy holds only "
                "mappings, lists, strings, numbers and true/false)",
                node,
                parts,
            )
        try:
            value = self.loader.construct_object(node)
        except ValueError:
            # int() refuses more than 4300 digits; no limit of a policy is near that.
            raise self.error(
                f"the number {node.value[:20]}... is far too large", node, parts
            ) from None
        except yaml.YAMLError as e:
            raise self.error(f"invalid value: {_yaml_problem(e)}", node, parts) from None
        if isinstance(value, str) and not _valid_unicode(value):
            raise self.error(_SURROGATE, node, parts)
        return value


def _kind_of(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return type(value).__name__


def _yaml_problem(e: yaml.YAMLError) -> str:
    if isinstance(e, yaml.MarkedYAMLError):
        problem = e.problem or ""
        if "'\\t'" in problem or "\\t" in problem:
            return "a tab character where YAML expects spaces (indent with spaces only)"
        parts = [p for p in (e.context, problem) if p]
        return " ".join(": ".join(parts).split()) or "syntax error"
    return " ".join(str(e).split())


def _yaml_error(e: yaml.YAMLError, filename: str) -> PolicyError:
    line = None
    if isinstance(e, yaml.MarkedYAMLError):
        mark = e.problem_mark or e.context_mark
        if mark is not None:
            line = mark.line + 1
    return PolicyError(f"invalid YAML: {_yaml_problem(e)}", file=filename, line=line)


def _compose(text: str, filename: str) -> tuple[Any, dict[str, int], bool]:
    """(data, lines, empty) from YAML text; PolicyError for anything unreadable."""
    try:
        loader = yaml.SafeLoader(text)  # the reader refuses unprintable characters here
    except yaml.reader.ReaderError as e:
        code = e.character if isinstance(e.character, int) else 0
        escape = f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
        raise PolicyError(
            f"invalid YAML: the character U+{code:04X} cannot stand in a YAML file "
            f'(write it as an escape in a double-quoted string: "{escape}")',
            file=filename,
            line=text.count("\n", 0, max(e.position, 0)) + 1,
        ) from None
    except yaml.YAMLError as e:
        raise _yaml_error(e, filename) from None
    try:
        try:
            root = loader.get_single_node()
        except yaml.YAMLError as e:
            raise _yaml_error(e, filename) from None
        except RecursionError:
            raise PolicyError("nested too deeply to read", file=filename) from None
        if root is None:
            return None, {}, True
        builder = _Builder(loader, filename)
        builder.lines[""] = _line(root)
        data = builder.build(root, [])
        return data, builder.lines, False
    finally:
        loader.dispose()


_SURROGATE: Final = "invalid Unicode: a lone surrogate (\\ud800-\\udfff) is not a character"


def _valid_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_json_data(data: Any, filename: str, lines: Mapping[str, int]) -> None:
    """What the YAML builder refuses, for parsed JSON: deep nesting, lone surrogates."""
    stack: list[tuple[Any, list[str | int]]] = [(data, [])]
    while stack:
        value, parts = stack.pop()
        if len(parts) > MAX_DEPTH:
            raise PolicyError(f"nested more than {MAX_DEPTH} levels deep", file=filename)
        if isinstance(value, str):
            if not _valid_unicode(value):
                address = address_of(parts)
                raise PolicyError(
                    _SURROGATE,
                    file=filename,
                    line=_line_of(lines, address),
                    address=address or None,
                )
        elif isinstance(value, dict):
            for k, v in value.items():
                if not _valid_unicode(k):
                    raise PolicyError(_SURROGATE + " (in a key)", file=filename)
                stack.append((v, [*parts, k]))
        elif isinstance(value, list):
            stack.extend((v, [*parts, i]) for i, v in enumerate(value))


# --- JSON ---------------------------------------------------------------------------


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _parse_json(text: str, filename: str) -> tuple[Any, dict[str, int]]:
    duplicate: str | None = None
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        raise PolicyError(
            f"invalid JSON: {e.msg} (column {e.colno})", file=filename, line=e.lineno
        ) from None
    except _DuplicateKey as e:
        duplicate = e.key
        data = None
    except RecursionError:
        raise PolicyError("nested too deeply to read", file=filename) from None
    except ValueError as e:
        # Infinity/NaN, or an integer of more than 4300 digits.
        raise PolicyError(f"invalid JSON: {' '.join(str(e).split())}", file=filename) from None
    # The lines come from reading the same text as YAML (JSON is YAML); when that fails
    # (a tab, an escape YAML does not know), the errors just have no line.
    try:
        _, lines, _ = _compose(text, filename)
    except PolicyError as e:
        if duplicate is not None and e.message.startswith("duplicate key"):
            raise
        lines = {}
    if duplicate is not None:
        raise PolicyError(f"duplicate key {duplicate!r}: each key may appear once", file=filename)
    _check_json_data(data, filename, lines)
    return data, lines


# --- messages -----------------------------------------------------------------------

_PORT_FIELD: Final = re.compile(r"network\.(tcp_connect|tcp_bind)\[[0-9]+\]")
_RESOURCE_FIELD: Final = re.compile(r"resources\.([a-z_]+)")
_RESOURCE_UNITS: Final[dict[str, str]] = {
    "wall_clock_seconds": "seconds",
    "cpu_seconds": "seconds",
    "memory_mb": "MiB",
    "file_size_mb": "MiB",
    "open_files": "descriptors",
    "processes": "processes",
}


def _resource_range(name: str) -> str | None:
    """``"1 to 604800 seconds (7 days)"``, from the schema's own bounds."""
    info = Resources.model_fields.get(name)
    if info is None or name not in _RESOURCE_UNITS:
        return None
    low = next((m.ge for m in info.metadata if getattr(m, "ge", None) is not None), None)
    high = next((m.le for m in info.metadata if getattr(m, "le", None) is not None), None)
    if low is None or high is None:
        return None
    unit = _RESOURCE_UNITS[name]
    extra = ""
    if unit == "seconds" and high % 86400 == 0:
        extra = f" ({high // 86400} days)"
    elif unit == "MiB" and high % (1 << 20) == 0:
        extra = f" ({high >> 20} TiB)"
    return f"{low} to {high} {unit}{extra}"


_OUT_OF_RANGE: Final = re.compile(r"expected (?:at most|at least) -?[0-9]+, got (?P<value>.+)")


_NAME_PATTERNS: Final[dict[str, str]] = {
    "^[a-z_][a-z0-9_]{0,63}$": "is not a system call name (lower-case letters, digits and _)",
    "^[A-Za-z_][A-Za-z0-9_]{0,255}$": (
        "is not an environment variable name (letters, digits and _, not starting with a digit)"
    ),
}
_PATTERN_MISMATCH: Final = re.compile(
    r"expected a string matching (?P<pattern>.+), got (?P<value>.+)"
)


_SECTION_MODELS: Final[dict[str, type[CvgModel]]] = {"": Policy, **POLICY_SECTIONS}
_REASON_ITEM: Final = re.compile(r'reasons\["[^"]*"\]\[[0-9]+\]')


def _known_keys(parent: str) -> list[str]:
    model = _SECTION_MODELS.get(parent)
    if model is None and _REASON_ITEM.fullmatch(parent):
        model = Reason
    if model is None:
        return []
    return [f.alias or name for name, f in model.model_fields.items()]


def _polish(address: str, problem: str, data: object) -> str:
    """Clearer words for a few schema messages (ranges, names, the version), in YAML's
    terms: a list and a mapping rather than an array and an object."""
    problem = problem.replace("an array", "a list").replace("an object", "a mapping")
    if problem == "unknown field":
        known = _known_keys(parent_address(address) or "")
        if known:
            return f"unknown field (known here: {', '.join(known)})"
    p = _PATTERN_MISMATCH.fullmatch(problem)
    if p is not None and p["pattern"] in _NAME_PATTERNS:
        return f"{p['value']} {_NAME_PATTERNS[p['pattern']]}"
    m = _OUT_OF_RANGE.fullmatch(problem)
    if m is not None:
        value = m["value"]
        if _PORT_FIELD.fullmatch(address):
            return f"port {value} is out of range: a TCP port is 1 to 65535"
        r = _RESOURCE_FIELD.fullmatch(address)
        bounds = _resource_range(r[1]) if r is not None else None
        if r is not None and bounds is not None:
            return f"{value} is out of range: {r[1]} is {bounds}"
    if address == "version" and isinstance(data, dict):
        version = data.get("version")
        if problem == "required field is missing":
            return "required field is missing: a policy starts with version: 1"
        if isinstance(version, int) and not isinstance(version, bool):
            return (
                f"policy version {version} is not supported: this cvg reads version 1 "
                "(is cvg older than the policy?)"
            )
        return f"expected the number 1, got {short(version)}"
    return problem


def _schema_error(
    e: SchemaError, data: object, lines: Mapping[str, int], filename: str
) -> PolicyError:
    path = e.path
    address = path[1:].removeprefix(".") if path.startswith("$") else path
    problem = _polish(address, e.problem, data)
    if not address and not isinstance(data, dict):
        problem = problem.replace("a policy (a mapping)", "a policy (a mapping with version: 1)")
    error = PolicyError(
        problem, file=filename, line=_line_of(lines, address), address=address or None
    )
    error.more = [_schema_error(other, data, lines, filename) for other in e.more]
    return error


# --- the entry point ----------------------------------------------------------------


def load_policy(data: bytes | str, *, filename: str = STDIN_NAME) -> LoadedPolicy:
    """Read and validate a policy from YAML or JSON text (bytes are UTF-8).

    Accepts a bare policy (``version: 1``) and a ``cvg.policy`` message such as
    cvg-generate writes (with ``kind``, ``schema_version`` and ``reasons``).
    ``filename`` names the source in errors; ``"-"`` and ``"<stdin>"`` mean stdin, and
    anything else is also taken as the path whose directory is ``${POLICY_DIR}``.

    Raises PolicyError, and nothing else, for any input.
    """
    if filename == "-":
        filename = STDIN_NAME
    text = _decode(data, filename)
    if text.lstrip(" \t\r\n").startswith("{"):
        parsed, lines = _parse_json(text, filename)
        empty = False
    else:
        parsed, lines, empty = _compose(text, filename)
    if empty:
        raise PolicyError(
            "empty: expected a policy (a mapping starting with version: 1)", file=filename
        )
    try:
        policy = load_policy_dict(parsed)
    except SchemaError as e:
        raise _schema_error(e, parsed, lines, filename) from None
    except RecursionError:  # pragma: no cover - depth is capped before validation
        raise PolicyError("nested too deeply to validate", file=filename) from None
    policy_dir = None
    if filename != STDIN_NAME:
        policy_dir = os.path.dirname(os.path.abspath(filename))
    return LoadedPolicy(policy=policy, filename=filename, policy_dir=policy_dir, lines=lines)
