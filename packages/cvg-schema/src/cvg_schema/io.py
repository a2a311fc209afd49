"""Reading, writing and dispatching cvg messages.

``loads`` and ``read`` turn JSON into the right model by its ``kind``; every problem
comes out as a :class:`~cvg_schema.errors.SchemaError` whose text is one line naming
the first error by JSON path. ``dumps`` writes JSON with orjson, ``write_atomic`` puts
bytes on disk so a reader never sees half a file.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from contextlib import suppress
from typing import Any, Final, TypeVar, cast

import orjson
from pydantic import ValidationError
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from .base import KIND_NAMES, SCHEMA_VERSION, MessageBase
from .errors import SchemaError, format_validation_error, json_type, short
from .explanation import Explanation
from .facts import Facts
from .observation import Observation
from .plan import Plan
from .policy import Policy
from .run import RunRecord

__all__ = [
    "KINDS",
    "Message",
    "digest",
    "digest_bytes",
    "dumps",
    "json_schema",
    "load_dict",
    "load_policy_dict",
    "loads",
    "loads_as",
    "model_for",
    "read",
    "read_as",
    "read_bytes",
    "schema_bytes",
    "write_atomic",
]

Message = Facts | Policy | Plan | Observation | RunRecord | Explanation
"""Any cvg message."""

KINDS: Final[dict[str, type[Message]]] = {
    "cvg.facts": Facts,
    "cvg.policy": Policy,
    "cvg.plan": Plan,
    "cvg.observation": Observation,
    "cvg.run": RunRecord,
    "cvg.explanation": Explanation,
}
"""Every message kind and its model, in pipeline order."""

assert tuple(KINDS) == KIND_NAMES

M = TypeVar("M", bound=MessageBase)

JSON_SCHEMA_DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"


def model_for(kind: str) -> type[Message]:
    """The model of a kind: ``"cvg.plan"`` or just ``"plan"`` (case-insensitive).

    Raises ValueError naming the known kinds.
    """
    name = kind.strip().lower()
    if not name.startswith("cvg."):
        name = "cvg." + name
    if name == "cvg.record":
        name = "cvg.run"
    try:
        return KINDS[name]
    except KeyError:
        raise ValueError(
            f"unknown kind {kind!r} (known: {', '.join(k.removeprefix('cvg.') for k in KINDS)})"
        ) from None


def parse_json(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse JSON text; SchemaError (path ``$``) when it is not JSON."""
    if isinstance(data, str):
        empty = not data.strip()
    else:
        data = bytes(data)
        empty = not data.strip()
    if empty:
        raise SchemaError("$", "empty input: expected a JSON object (a cvg message)")
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as e:
        raise SchemaError("$", f"not valid JSON: {e}") from None


def _validate(model: type[M], data: dict[str, Any]) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise format_validation_error(e, data) from None


def load_dict(data: object) -> Message:
    """Validate an already parsed message (a dict), dispatching on its ``kind``."""
    if not isinstance(data, dict):
        raise SchemaError("$", f"expected a JSON object (a cvg message), got {json_type(data)}")
    if "kind" not in data:
        hint = ""
        if "version" in data:
            hint = " (a bare policy has no kind: read it with load_policy_dict or cvg-validate)"
        raise SchemaError("$", f'not a cvg message: "kind" is missing{hint}')
    kind = data["kind"]
    if not isinstance(kind, str) or kind not in KINDS:
        raise SchemaError(
            "$.kind", f"unknown message kind {short(kind)} (known: {', '.join(KINDS)})"
        )
    if "schema_version" not in data:
        raise SchemaError(
            "$.schema_version",
            f'required field is missing (this reader writes "{SCHEMA_VERSION}")',
        )
    return _validate(KINDS[kind], data)


def loads(data: bytes | bytearray | memoryview | str) -> Message:
    """Parse and validate any message. Raises only SchemaError.

    >>> loads(b'{"kind": "cvg.plan", "schema_version": "1.0"}').kind
    'cvg.plan'
    """
    return load_dict(parse_json(data))


def _expect(model: type[M], msg: MessageBase) -> M:
    if not isinstance(msg, model):
        raise SchemaError("$.kind", f"expected {model.kind_name()}, got {msg.kind_name()}")
    return msg


def loads_as(model: type[M], data: bytes | bytearray | memoryview | str) -> M:
    """Like :func:`loads`, but the message must be of this model's kind."""
    return _expect(model, loads(data))


def load_policy_dict(data: object) -> Policy:
    """Validate a policy: a ``cvg.policy`` message, or a bare policy (no ``kind`` and no
    ``schema_version``, as a person writes it in YAML), read as the current version.
    """
    if not isinstance(data, dict):
        raise SchemaError("$", f"expected a policy (a mapping), got {json_type(data)}")
    if "kind" not in data and "schema_version" not in data:
        data = {"kind": "cvg.policy", "schema_version": SCHEMA_VERSION, **data}
        try:
            return Policy.model_validate(data)
        except ValidationError as e:
            raise format_validation_error(e, data) from None
    msg = load_dict(data)
    return _expect(Policy, msg)


def dumps(msg: MessageBase, *, pretty: bool = False) -> bytes:
    """Serialize a message to JSON bytes ending in a newline.

    ``pretty`` indents by two spaces for people; the default is one compact line.
    Fields keep their model order (``kind`` and ``schema_version`` first).
    """
    option = orjson.OPT_APPEND_NEWLINE
    if pretty:
        option |= orjson.OPT_INDENT_2
    return orjson.dumps(msg.model_dump(mode="json", by_alias=True), option=option)


def digest_bytes(data: bytes) -> str:
    """``"sha256:<hex>"`` of some bytes."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def digest(msg: MessageBase) -> str:
    """The digest of a message: sha256 of its canonical JSON (sorted keys, compact).

    Two messages that validate to the same model have the same digest, however their
    files were formatted.
    """
    canonical = orjson.dumps(
        msg.model_dump(mode="json", by_alias=True), option=orjson.OPT_SORT_KEYS
    )
    return digest_bytes(canonical)


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """The bytes of a file, or of stdin when ``path`` is ``-``. OSError propagates."""
    if os.fspath(path) == "-":
        return sys.stdin.buffer.read()
    with open(path, "rb") as f:
        return f.read()


def read(path: str | os.PathLike[str]) -> Message:
    """Read and validate a message from a file (``-`` is stdin).

    Raises SchemaError for an invalid message and OSError when the file cannot be read.
    """
    return loads(read_bytes(path))


def read_as(model: type[M], path: str | os.PathLike[str]) -> M:
    """Like :func:`read`, but the message must be of this model's kind."""
    return _expect(model, read(path))


def _umask() -> int:
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


def write_atomic(path: str | os.PathLike[str], data: bytes, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` so that a reader sees the old file or the new one, never
    a mix: a temporary file in the same directory, fsync, rename over ``path``, fsync the
    directory.

    The new file gets ``mode`` if given, else the old file's mode, else ``0o666`` less
    the umask. A symlink at ``path`` is replaced, not followed.
    """
    target = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(target))
    if mode is None:
        try:
            mode = os.stat(target, follow_symlinks=False).st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(target)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


class _CvgJsonSchema(GenerateJsonSchema):
    """Also document the defaults made by a factory (``[]``, ``{"core": 0}``, a section)."""

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        factory = schema.get("default_factory")
        if factory is not None and not schema.get("default_factory_takes_data"):
            schema = cast(core_schema.WithDefaultSchema, dict(schema))
            schema.pop("default_factory")
            schema["default"] = factory()  # type: ignore[call-arg]
        return super().default_schema(schema)


def json_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a kind (``"cvg.plan"`` or ``"plan"``).

    It describes the current minor version exactly: unknown fields are refused. A
    reader of this package also accepts newer minor versions (see the README).
    """
    model = model_for(kind)
    schema = model.model_json_schema(by_alias=True, schema_generator=_CvgJsonSchema)
    return {"$schema": JSON_SCHEMA_DIALECT, **schema}


def schema_bytes(kind: str) -> bytes:
    """The exported form of a kind's JSON Schema: indented, sorted keys, final newline."""
    return orjson.dumps(
        json_schema(kind),
        option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE,
    )
