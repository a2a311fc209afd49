"""What every cvg message shares: ``kind``, ``schema_version`` and the strictness rules.

Versioning rule (the same for every kind):

- ``schema_version`` is ``"MAJOR.MINOR"``. This reader understands major
  :data:`SUPPORTED_MAJOR` and writes :data:`SCHEMA_VERSION`.
- Another major version is refused with a clear error.
- A newer minor version of the same major is accepted. Fields this reader does not
  know are then ignored (a newer writer may have added them).
- At the current (or an older) minor, an unknown field is an error, so a typo in a
  hand-written file is caught instead of silently meaning "default".

Every model is strict: ``"60"`` is not an integer and ``1`` is not ``true``.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from contextvars import ContextVar
from typing import Annotated, Any, ClassVar, Final, Literal, NoReturn, Protocol, Self, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

__all__ = [
    "KIND_NAMES",
    "SCHEMA_VERSION",
    "SUPPORTED_MAJOR",
    "CvgModel",
    "Digest",
    "EnvName",
    "ErrnoName",
    "Identifier",
    "Kind",
    "MessageBase",
    "RuleAddress",
    "SyscallName",
    "by_id",
    "fail",
    "fail_on_repeats",
    "parse_version",
]

SUPPORTED_MAJOR: Final = 1
"""The only major ``schema_version`` this reader accepts."""

CURRENT_MINOR: Final = 0
"""The newest minor version this reader knows every field of."""

SCHEMA_VERSION: Final = f"{SUPPORTED_MAJOR}.{CURRENT_MINOR}"
"""The version this package writes: ``"1.0"``."""

Kind = Literal[
    "cvg.facts", "cvg.policy", "cvg.plan", "cvg.observation", "cvg.run", "cvg.explanation"
]
KIND_NAMES: Final[tuple[str, ...]] = (
    "cvg.facts",
    "cvg.policy",
    "cvg.plan",
    "cvg.observation",
    "cvg.run",
    "cvg.explanation",
)

_VERSION_RE: Final = re.compile(r"(0|[1-9][0-9]{0,8})\.(0|[1-9][0-9]{0,8})")
_VERSION_PATTERN: Final = rf"^{SUPPORTED_MAJOR}\.(0|[1-9][0-9]*)$"

# Set while a message of a newer minor version is being validated: nested models then
# drop the fields they do not know instead of refusing them.
_LENIENT: ContextVar[bool] = ContextVar("cvg_schema_lenient", default=False)


def fail(message: str, error_type: str = "cvg_invalid", at: tuple[str | int, ...] = ()) -> NoReturn:
    """Raise a validation error whose message is exactly ``message``.

    ``at`` is where the problem is, relative to the model being validated (for a
    model-level check that blames one field or entry); the error's JSON path ends there.
    """
    if at:
        raise PydanticCustomError(error_type, message, {"at": list(at)})
    raise PydanticCustomError(error_type, message)


def fail_on_repeats(keys: Iterable[str], field: str, key: str, what: str) -> set[str]:
    """The set of ``keys`` (the ``key`` of each entry of list ``field``); fails at
    the first one seen again with ``"<what> '<key>' <...> twice"``."""
    seen: set[str] = set()
    for i, k in enumerate(keys):
        if k in seen:
            fail(f"{what.format(repr(k))} twice", at=(field, i, key))
        seen.add(k)
    return seen


class _HasId(Protocol):
    @property
    def id(self) -> str: ...


_Entry = TypeVar("_Entry", bound=_HasId)


def by_id(entries: Iterable[_Entry], entry_id: str) -> _Entry:
    """The entry with this id; KeyError when there is none."""
    for entry in entries:
        if entry.id == entry_id:
            return entry
    raise KeyError(entry_id)


def parse_version(value: object) -> tuple[int, int] | None:
    """``"1.0"`` -> ``(1, 0)``; None when ``value`` is not a ``MAJOR.MINOR`` string."""
    if not isinstance(value, str):
        return None
    m = _VERSION_RE.fullmatch(value)
    if m is None:
        return None
    return int(m.group(1)), int(m.group(2))


# Shared string types. Patterns become part of the exported JSON Schemas.

Identifier = Annotated[
    str,
    Field(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$",
        description="An identifier: letters, digits and `_.:-`, at most 128 characters.",
    ),
]
Digest = Annotated[
    str,
    Field(
        pattern=r"^sha256:[0-9a-f]{64}$",
        description='A content digest: "sha256:" and 64 lower-case hex digits.',
        examples=["sha256:" + "0" * 64],
    ),
]
SyscallName = Annotated[
    str,
    Field(
        pattern=r"^[a-z_][a-z0-9_]{0,63}$",
        description="A Linux system call name, as in the syscall table (e.g. `ptrace`).",
    ),
]
ErrnoName = Annotated[
    str,
    Field(
        pattern=r"^E[A-Z0-9]{1,31}$",
        description="An errno name such as `EACCES` or `EPERM`.",
    ),
]
EnvName = Annotated[
    str,
    Field(
        pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,255}$",
        description="An environment variable name.",
    ),
]
RuleAddress = Annotated[
    str,
    Field(
        pattern=r"^[a-z_]+\.[a-z_]+(\[(0|[1-9][0-9]*)\]|\.[A-Za-z_][A-Za-z0-9_]*)?$",
        description=(
            "The address of a policy rule: `SECTION.FIELD`, `SECTION.FIELD[INDEX]` for a "
            "list entry, or `SECTION.FIELD.KEY` for a mapping entry, e.g. "
            "`filesystem.read[2]`, `network.udp`, `environment.set.PATH`."
        ),
        examples=["filesystem.read[2]", "network.tcp_connect[0]", "ipc.signal_outside"],
    ),
]


def _close_match(key: str, known: frozenset[str]) -> str:
    match = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""


class CvgModel(BaseModel):
    """Base of every cvg model: strict types, no unknown fields (see the module doc)."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, defer_build=True)

    _cvg_is_message: ClassVar[bool] = False

    @classmethod
    def _cvg_known_keys(cls) -> frozenset[str]:
        cached = cls.__dict__.get("_cvg_known_cache")
        if cached is None:
            cached = frozenset(f.alias or name for name, f in cls.model_fields.items())
            type.__setattr__(cls, "_cvg_known_cache", cached)
        assert isinstance(cached, frozenset)
        return cached

    @model_validator(mode="wrap")
    @classmethod
    def _cvg_unknown_fields(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        if not isinstance(data, dict):
            return handler(data)
        token = None
        ignore_unknown = False
        if cls._cvg_is_message:
            version = parse_version(data.get("schema_version"))
            if version is not None and version[0] == SUPPORTED_MAJOR:
                if version[1] > CURRENT_MINOR:
                    token = _LENIENT.set(True)
            else:
                # The version itself is wrong: report that, not the fields it may explain.
                ignore_unknown = True
        try:
            known = cls._cvg_known_keys()
            unknown = [k for k in data if k not in known]
            if unknown:
                if ignore_unknown or _LENIENT.get():
                    data = {k: v for k, v in data.items() if k in known}
                else:
                    key = unknown[0]
                    hint = _close_match(key, known) if isinstance(key, str) else ""
                    raise PydanticCustomError(
                        "cvg_unknown_field", "unknown field{hint}", {"at": [key], "hint": hint}
                    )
            return handler(data)
        finally:
            if token is not None:
                _LENIENT.reset(token)


def _message_json_schema(schema: dict[str, Any]) -> None:
    required = schema.setdefault("required", [])
    for name in ("schema_version", "kind"):
        if name not in required:
            required.insert(0, name)


class MessageBase(CvgModel):
    """Common head of every message: ``kind`` and ``schema_version``."""

    model_config = ConfigDict(json_schema_extra=_message_json_schema)

    _cvg_is_message: ClassVar[bool] = True

    kind: str = Field(description="The message kind.")
    schema_version: str = Field(
        default=SCHEMA_VERSION,
        description=(
            f'"MAJOR.MINOR". A reader refuses another major version than {SUPPORTED_MAJOR} '
            "and accepts a newer minor (ignoring the fields it does not know); at the "
            "current minor an unknown field is an error."
        ),
        json_schema_extra={"pattern": _VERSION_PATTERN, "examples": [SCHEMA_VERSION]},
    )

    @field_validator("schema_version", mode="before")
    @classmethod
    def _check_schema_version(cls, value: object) -> object:
        version = parse_version(value)
        if version is None:
            shown = repr(value) if isinstance(value, str) else type(value).__name__
            fail(f'schema_version must be a string "MAJOR.MINOR" such as "1.0", got {shown}')
        if version[0] != SUPPORTED_MAJOR:
            fail(
                f"{cls.kind_name()} schema_version {value} is not supported "
                f"(this reader understands {SUPPORTED_MAJOR}.x)",
                "cvg_unsupported_version",
            )
        return value

    @classmethod
    def kind_name(cls) -> str:
        """The ``kind`` string of this message class, e.g. ``"cvg.plan"``."""
        default = cls.model_fields["kind"].default
        return default if isinstance(default, str) else cls.__name__


_VAR_RE: Final = re.compile(r"\$\{([^}]*)\}")


def variables_in(value: str) -> list[str]:
    """The ``${NAME}`` variable names used in ``value``, in order of appearance."""
    return _VAR_RE.findall(value)


def check_variables(
    value: str,
    allowed: frozenset[str],
    where: str,
    at: tuple[str | int, ...] = (),
    hint: str = "",
) -> None:
    """Refuse a ``${NAME}`` not in ``allowed`` and an unterminated ``${``."""
    for name in variables_in(value):
        if name not in allowed:
            known = ", ".join("${" + n + "}" for n in sorted(allowed)) or "none"
            fail(f"unknown variable ${{{name}}} in {where} (known: {known}){hint}", at=at)
    if "${" in _VAR_RE.sub("", value):
        fail(f"unterminated ${{ in {where}", at=at)
