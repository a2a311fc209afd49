"""Small value classes, declared like dataclasses, without importing dataclasses.

``dataclasses`` pulls in ``inspect`` and builds each class with ``exec()``:
together about a quarter of a cold ``cvg-run`` start, and cold start is a
number users compare. A ``Record`` subclass lists its fields as annotations,
with defaults as class attributes (``Factory(list)`` for a fresh mutable one),
and gets ``__init__``, ``__eq__``, ``__hash__`` and ``__repr__``. Records are
frozen unless declared with ``frozen=False``.
"""

from __future__ import annotations

# collections.abc is this module, behind the collections package: its imports cost
# every cold start milliseconds.
from _collections_abc import Callable

# typing only for the type checker: importing it costs every cold start.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class Factory:
    """A default made fresh for each instance (``Factory(list)``)."""

    __slots__ = ("make",)

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make


class Record:
    _fields: tuple[str, ...] = ()
    _frozen: bool = True

    def __init_subclass__(cls, frozen: bool = True, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        names: list[str] = []
        for klass in reversed(cls.__mro__):
            # Not inspect.get_annotations: importing inspect is what this avoids.
            own = klass.__dict__.get("__annotations__", {})  # noqa: RUF063
            for name, annotation in own.items():
                if name.startswith("_") or str(annotation).startswith("ClassVar"):
                    continue
                if name not in names:
                    names.append(name)
        cls._fields = tuple(names)
        cls._frozen = frozen

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        fields = self._fields
        if len(args) > len(fields):
            raise TypeError(f"{type(self).__name__} takes {len(fields)} arguments")
        values = dict(zip(fields, args, strict=False))
        for name, value in kwargs.items():
            if name not in fields or name in values:
                raise TypeError(f"{type(self).__name__}: unexpected or repeated {name!r}")
            values[name] = value
        for name in fields:
            if name not in values:
                try:
                    default = getattr(type(self), name)
                except AttributeError:
                    raise TypeError(f"{type(self).__name__}: missing {name!r}") from None
                values[name] = default.make() if isinstance(default, Factory) else default
        for name in fields:
            object.__setattr__(self, name, values[name])

    def __setattr__(self, name: str, value: Any) -> None:
        if self._frozen:
            raise AttributeError(f"{type(self).__name__} is frozen")
        object.__setattr__(self, name, value)

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._fields)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        if not self._frozen:
            raise TypeError(f"unhashable type: {type(self).__name__!r}")
        return hash(self._values())

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__name__}({inner})"
