"""Reading a big observation in bounded memory: its events streamed and grouped.

A long trace repeats itself: a million events of a test suite name some thirty
thousand paths. The generator's answer for an event depends only on what the event
says (its operation, path, result, pid, ...), never on its ``id`` or ``time``, except
through the events it cites and counts. So the events are read one by one from the
JSON text and grouped by everything but ``id`` and ``time``; each group's first event
is validated as an :class:`Event`, and only the first :data:`KEPT` occurrences of a
group are kept, in their places, as :class:`Occurrence` objects (the group's fields
with the occurrence's own id and time). The last kept one carries the count of those
left out (its ``weight``): the generator cites at most
:data:`~cvg_generate.generate.MAX_REASONS` events and shows at most
:data:`~cvg_generate.generate.NOTE_IDS` ids per rule or note, which are always among
the first :data:`KEPT` of their groups, and counts the rest.

The kept sequence answers every question the generator asks of the whole: the first
event, the first of each kind, the set of pids, the earliest and the latest time (the
first event with each is kept too), and the event each executable names (kept too:
when the executables come after the events in the text, the events are read again).

Anything this reader does not expect (not an object, a key twice, an event that does
not validate, an id used twice, a dangling reference) raises :class:`Unexpected`:
the caller then reads the input whole, the plain way, which names the problem exactly.
"""

from __future__ import annotations

import io
import json
import math
import re
from array import array
from collections.abc import Callable, Iterator, Sequence
from typing import IO, Any, Final, cast

import orjson

from cvg_schema import Event, Observation
from cvg_schema.errors import SchemaError
from cvg_schema.io import load_dict
from cvg_schema.observation import Executable

__all__ = ["KEPT", "Occurrence", "Unexpected", "observations"]

KEPT: Final = 5
"""Occurrences of one group kept in full; must be at least the most events a rule
cites (MAX_REASONS) and the most ids a note shows (NOTE_IDS), plus one to carry the
count of the rest."""

_CHUNK: Final = 1 << 22
_BATCH: Final = 1 << 16
_WS: Final = re.compile(r"[ \t\n\r]*")
_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}").fullmatch
_SERIAL: Final = re.compile(r"e[1-9][0-9]{0,8}").fullmatch


class Unexpected(Exception):
    """Not what this reader handles: read the input the plain way."""


class _Again(Exception):
    """The executables name events that were not kept: read again, keeping them."""

    def __init__(self, wanted: set[str]) -> None:
        super().__init__("read again")
        self.wanted = wanted


_FIELDS: Final = tuple(Event.model_fields)
_PATH: Final = _FIELDS.index("path")
_MAX_PATH: Final = 4096
"""Event.path's max_length: the one check a path of an already validated shape needs."""


def _fast_init() -> Callable[..., None]:
    """``Occurrence.__init__``: every field set in one tuple assignment, not a loop (it
    runs once per kept event, which in a tree walk is nearly every event)."""
    targets = ", ".join(f"self.{name}" for name in _FIELDS)
    code = (
        "def __init__(self, fields, eid, time):\n"
        f"    {targets}, = fields\n"
        "    self.id = eid\n"
        "    self.time = time\n"
        "    self.weight = 1\n"
    )
    namespace: dict[str, Any] = {}
    exec(code, namespace)  # the code is made from the model's field names alone
    return cast(Callable[..., None], namespace["__init__"])


class Occurrence:
    """One kept event: the fields of its group's validated :class:`Event` with this
    occurrence's own ``id`` and ``time``, and ``weight``, how many events of the trace
    it stands for (itself and, on the last kept one of a group, the occurrences left
    out). Plain slots, not a model: the generator reads each field of each kept event
    several times, and a model's memory per event is what this reader saves."""

    __slots__ = (*_FIELDS, "weight")
    __init__ = _fast_init()
    id: str
    time: float | None
    path: str | None
    weight: int

    def __repr__(self) -> str:
        return f"Occurrence({self.id!r}, x{self.weight})"


class _Ids:
    """Every id seen, to refuse one used twice: ids like ``e123`` (what cvg-observe
    writes) as bits, any other in a set."""

    def __init__(self) -> None:
        self.bits = bytearray()
        self.other: set[str] = set()


class _Text:
    """JSON text read in chunks: a window ``buf`` and a position in it."""

    def __init__(self, f: IO[bytes]) -> None:
        self.f = io.TextIOWrapper(f, encoding="utf-8", errors="strict", newline="")
        self.buf = ""
        self.pos = 0
        self.eof = False
        self.tried = -1
        # The C scanner json.loads uses, one value at a time (untyped in typeshed).
        decoder = json.JSONDecoder(parse_constant=_no_constant)
        self.scan: Callable[[str, int], tuple[Any, int]] = decoder.scan_once  # type: ignore[attr-defined]

    def more(self) -> bool:
        if self.eof:
            return False
        try:
            chunk = self.f.read(_CHUNK)
        except UnicodeDecodeError:
            raise Unexpected("not UTF-8") from None
        if not chunk:
            self.eof = True
            return False
        self.buf = self.buf[self.pos :] + chunk
        self.tried -= self.pos
        self.pos = 0
        return True

    def skip(self) -> str:
        """The next character after whitespace ("" at the end), not consumed."""
        while True:
            self.pos = _WS.match(self.buf, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.more():
                return ""

    def batch(self) -> list[Any] | None:
        """Whole elements of the array being read, parsed at once by orjson (many times
        faster than one by one): the text up to the last ``},`` in the window, which
        parses as elements only when it ends where one does (not inside a string or
        a nested object). None when it does not, or when there is too little text."""
        if self.pos < self.tried:
            return None
        cut = self.buf.rfind("},", self.pos)
        if cut - self.pos < _BATCH:
            return None
        try:
            values = orjson.loads("[" + self.buf[self.pos : cut + 1] + "]")
        except orjson.JSONDecodeError:
            # One element at a time up to there, then try again.
            self.tried = cut
            return None
        self.pos = cut + 1
        return values  # type: ignore[no-any-return]

    def expect(self, char: str) -> None:
        if self.skip() != char:
            raise Unexpected(f"expected {char!r}")
        self.pos += 1

    def value(self) -> Any:
        """The next JSON value. One that ends where the window ends may be cut short
        (a number), so the window grows first."""
        self.skip()
        while True:
            try:
                value, end = self.scan(self.buf, self.pos)
            except (StopIteration, ValueError, RecursionError):
                end = -1
            if end != -1 and end < len(self.buf):
                self.pos = end
                return value
            if not self.more():
                if end == -1:
                    raise Unexpected("not valid JSON")
                self.pos = end
                return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class _Events:
    """The events array, grouped as it is read.

    A group's key is its shape (everything but ``id``, ``time`` and ``path``, as JSON)
    and its path: a tree walk names a path of its own in nearly every event, in a few
    shapes. Each shape is validated once, with its first event; a path is valid on its
    own (a string of at most :data:`_MAX_PATH` characters, or null), whatever the rest
    of its event holds, so an event of a known shape needs only its path checked."""

    def __init__(self, wanted: set[str]) -> None:
        self.wanted = wanted
        # JSON -> (fields, its groups by path). A group is its one occurrence until a
        # second comes (most of a tree walk's come once), then [fields, path, count,
        # last kept occurrence].
        self.shapes: dict[bytes, tuple[tuple[Any, ...], dict[str | None, Any]]] = {}
        self.kept: list[Occurrence] = []
        self.ids = _Ids()
        self.n = 0
        # The first event with the latest and with the earliest time, when not kept:
        # (index, group, id, time).
        self.latest: tuple[int, list[Any], str, float] | None = None
        self.earliest: tuple[int, list[Any], str, float] | None = None
        self.hi = -math.inf
        self.lo = math.inf
        self.kept_at = array("q")

    def add(self, values: list[Any]) -> None:
        """Group each event of ``values`` (in the order of the trace). One loop with
        everything it touches in locals: it runs once per event of the trace."""
        shapes, kept, kept_at = self.shapes, self.kept, self.kept_at
        wanted, bits, other = self.wanted, self.ids.bits, self.ids.other
        dumps, serial, valid_id, occurrence = orjson.dumps, _SERIAL, _ID, Occurrence
        i = self.n
        for ev in values:
            try:
                eid = ev.pop("id")
                t = ev.pop("time", None)
                path = ev.pop("path", None)
            except (AttributeError, KeyError, TypeError):
                raise Unexpected("an event is not an object with an id") from None
            # A repeated id: refused. Serial ids (e123, what cvg-observe writes) as bits.
            if type(eid) is str and serial(eid):
                n = int(eid[1:])
                byte, bit = n >> 3, 1 << (n & 7)
                if byte >= len(bits):
                    bits.extend(bytes(max(byte + 1 - len(bits), len(bits))))
                if bits[byte] & bit:
                    raise Unexpected("an event id is used twice")
                bits[byte] |= bit
            elif type(eid) is not str or eid in other or not valid_id(eid):
                raise Unexpected("an event id")
            else:
                other.add(eid)
            if t is not None and (type(t) is not float or t - t != 0.0 or t < 0):
                if type(t) is not int or abs(t) >= 2**53 or t < 0:
                    raise Unexpected("an event time")
                t = float(t)  # as the schema reads it
            if path is not None and (type(path) is not str or len(path) > _MAX_PATH):
                raise Unexpected("an event path")
            try:
                key = dumps(ev)
            except orjson.JSONEncodeError:
                raise Unexpected("an event value") from None
            shape = shapes.get(key)
            if shape is None:
                shape = self._shape(ev, eid, t, path, key)
            fields, groups = shape
            group: Any = groups.get(path)
            if group is None:
                keep = True
                occ = groups[path] = occurrence(fields, eid, t)
                occ.path = path
                kept.append(occ)
                kept_at.append(i)
            else:
                if type(group) is not list:
                    group = groups[path] = [fields, path, 1, group]
                count = group[2]
                group[2] = count + 1
                keep = count < KEPT or eid in wanted
                if keep:
                    occ = occurrence(fields, eid, t)
                    occ.path = path
                    kept.append(occ)
                    kept_at.append(i)
                    if count < KEPT:
                        group[3] = occ
                    else:
                        group[2] -= 1  # counted by itself, not on the group's last kept one
            if t is not None:
                if t > self.hi:
                    self.hi = t
                    self.latest = None if keep else (i, group, eid, t)
                if t < self.lo:
                    self.lo = t
                    self.earliest = None if keep else (i, group, eid, t)
            i += 1
        self.n = i

    def _shape(
        self, ev: dict[str, Any], eid: str, t: float | None, path: str | None, key: bytes
    ) -> tuple[tuple[Any, ...], dict[str | None, Any]]:
        """A new shape: its first event validated, its fields kept."""
        try:
            event = Event.model_validate({**ev, "id": eid, "time": t, "path": path})
        except ValueError:  # pydantic's ValidationError is one
            raise Unexpected("an event does not validate") from None
        fields = tuple(getattr(event, name) for name in _FIELDS)
        # A copy of the key: orjson's output keeps its whole working buffer (some 4 KB).
        shape: tuple[tuple[Any, ...], dict[str | None, Any]] = (fields, {})
        self.shapes[bytes(memoryview(key))] = shape
        return shape

    def finish(self) -> list[Occurrence]:
        for extra in {x[0]: x for x in (self.latest, self.earliest) if x is not None}.values():
            i, group, eid, t = extra
            at = _bisect(self.kept_at, i)
            occ = Occurrence(group[0], eid, t)
            occ.path = group[1]
            self.kept.insert(at, occ)
            self.kept_at.insert(at, i)
            group[2] -= 1
        for _fields, groups in self.shapes.values():
            for group in groups.values():
                if type(group) is list and group[2] > KEPT:
                    group[3].weight += group[2] - KEPT
        return self.kept


def _bisect(xs: Sequence[int], x: int) -> int:
    lo, hi = 0, len(xs)
    while lo < hi:
        mid = (lo + hi) // 2
        if xs[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _document(text: _Text, wanted: set[str]) -> Observation:
    text.expect("{")
    rest: dict[str, Any] = {}
    events: _Events | None = None
    if text.skip() == "}":
        text.pos += 1
    else:
        while True:
            key = text.value()
            if type(key) is not str or key in rest or (key == "events" and events):
                raise Unexpected("a key")
            text.expect(":")
            if key == "events":
                events = _Events(wanted)
                _array(text, events)
            else:
                rest[key] = text.value()
            if _closed(text, "}"):
                break
    return _observation(rest, events or _Events(wanted), wanted)


def _array(text: _Text, events: _Events) -> None:
    text.expect("[")
    if text.skip() == "]":
        text.pos += 1
        return
    while True:
        values = text.batch()
        events.add([text.value()] if values is None else values)
        if _closed(text, "]"):
            return


def _closed(text: _Text, close: str) -> bool:
    """Past the comma after a member (False) or the ``close`` that ends them (True)."""
    c = text.skip()
    text.pos += 1
    if c == close:
        return True
    if c != ",":
        raise Unexpected(f"expected , or {close}")
    return False


def _observation(rest: dict[str, Any], events: _Events, wanted: set[str]) -> Observation:
    if rest.get("kind") != "cvg.observation":
        raise Unexpected("not an observation")
    exes = rest.pop("executables", [])
    try:
        obs = load_dict({**rest, "events": []})
        executables = [Executable.model_validate(x) for x in exes]
    except (SchemaError, ValueError, TypeError):  # pydantic's ValidationError is a ValueError
        raise Unexpected("the observation does not validate") from None
    assert isinstance(obs, Observation)
    kept = events.finish()
    named = {x.event_id for x in executables if x.event_id is not None}
    missing = named - {o.id for o in kept}
    if missing:
        if missing <= wanted:
            raise Unexpected("an executable names no event")
        raise _Again(wanted | missing)
    return obs.model_copy(update={"executables": executables, "events": cast(list[Event], kept)})


def observations(f: IO[bytes]) -> Iterator[Observation]:
    """Each observation in ``f`` (a seekable binary file: several documents one after
    another are several observations), its events grouped. Raises :class:`Unexpected`
    for anything but well-formed, valid observations."""
    wanted: set[str] = set()
    while True:
        f.seek(0)
        text = _Text(f)
        out: list[Observation] = []
        try:
            while text.skip():
                out.append(_document(text, wanted))
        except _Again as again:
            wanted = again.wanted
            text.f.detach()
            continue
        text.f.detach()
        if not out:
            raise Unexpected("no document")
        yield from out
        return
