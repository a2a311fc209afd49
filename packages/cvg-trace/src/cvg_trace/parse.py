"""Read strace's text output, one line at a time, into :class:`Record` objects.

The input is what ``strace -f -ttt -yy -o FILE`` writes: ``PID TIME NAME(ARGS) = RET``
lines, calls split into ``<unfinished ...>`` and ``<... NAME resumed>`` halves (joined
here by pid), ``+++ exited with N +++`` / ``+++ killed by SIGX +++`` lines and
``--- SIGX {...} ---`` lines. Nothing is loaded whole: :func:`parse_lines` is a
generator, and the only state kept is one half-finished call per pid.

Arguments are split at the top level only (a ``{...}`` or ``[...]`` stays one argument)
by a one-pass scanner that knows strace's quoted strings (``"a\\"b"``) and ``-yy``
descriptor annotations (``3</path/with\\76>``, ``AT_FDCWD</cwd>``,
``1</dev/null<char 1:3>>``), so a parenthesis or comma inside a path never splits.
"""

from __future__ import annotations

import re

# typing, collections.abc and dataclasses only for the type checker: `cvg-run --trace`
# imports this module, and they cost its every start milliseconds (dataclasses pulls
# in inspect, dis and ast).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import Final, Literal

__all__ = [
    "Fd",
    "Record",
    "TraceParser",
    "Value",
    "parse_fd",
    "parse_lines",
    "unescape",
]

if TYPE_CHECKING:
    RecordKind = Literal["syscall", "exit", "killed", "signal"]


class Value:
    """Equality and repr over ``_FIELDS``, for slotted classes that were dataclasses
    (dataclasses pulls in inspect, dis and ast: see the imports above)."""

    __slots__ = ()
    _FIELDS: tuple[str, ...] = ()

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self._FIELDS)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()

    # No __hash__: defining __eq__ leaves it None, and the values are mutable, like the
    # dataclasses they were (Fd, frozen, defines its own).

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={v!r}" for n, v in zip(self._FIELDS, self._values(), strict=True))
        return f"{type(self).__name__}({inner})"


class Record(Value):
    """One completed system call, or a process exit, kill or signal delivery."""

    __slots__ = _FIELDS = ("kind", "pid", "time", "name", "args", "ret", "ret_fd", "errno",
                           "status")  # fmt: skip

    def __init__(
        self,
        kind: RecordKind,
        pid: int,
        time: float | None,
        name: str = "",  # syscall name; for signal/killed the signal name
        args: list[str] | None = None,  # top-level arguments, raw strace text
        ret: str | None = None,  # "0", "3", "?", "0x7f..."; None for non-syscalls
        ret_fd: str | None = None,  # the -yy annotation of a returned descriptor, unescaped
        errno: str | None = None,  # "ENOENT", "ERESTARTSYS"
        status: int | None = None,  # exit status (exit) or signal number (killed)
    ) -> None:
        self.kind: RecordKind = kind
        self.pid = pid
        self.time = time
        self.name = name
        self.args: list[str] = [] if args is None else args
        self.ret = ret
        self.ret_fd = ret_fd
        self.errno = errno
        self.status = status


# ---------------------------------------------------------------- the grammar

_STR: Final = r'"(?:[^"\\]++|\\.)*+"(?:\.\.\.)?'
# A -yy annotation, the part after the number: `3</etc/x>`, `AT_FDCWD</cwd>`,
# `1</dev/null<char 1:3>>`, `3<TCP:[1.2.3.4:5->6.7.8.9:10]>`. Inside, strace escapes `<`,
# `>`, `"` and `\`, so a bracket or comma there never ends an argument.
# A socket's annotation holds its ends in brackets, joined by "->" (UNIX-STREAM:[4->5],
# TCP:[1.2.3.4:5->6.7.8.9:80]), so a ">" inside the brackets does not end it.
# IPv6 ends are bracketed too: TCPv6:[[::1]:80->[::1]:4000].
_SOCKET_ANNOT: Final = (
    r"<[A-Za-z][\w-]*+:\[" r'(?:[^\[\]"\\]++|\\.|\[[^\[\]]*+\]|"(?:[^"\\]|\\.)*+")*+' r"\]>"
)
_ANNOT: Final = rf"(?:{_SOCKET_ANNOT}|<(?:[^<>\\]++|\\.|<[^<>]*+>)*+>)"
_ANNOT_RE: Final = re.compile(_ANNOT)


# Plain text inside arguments: anything but quotes, brackets, commas and `<`.
_PLAIN_RE: Final = re.compile(r'[^"()\[\]{},<]+')
_OPENERS: Final = {"(": ")", "[": "]", "{": "}"}
_CLOSERS: Final = frozenset(")]}")
_CALL_TAIL_RE: Final = re.compile(r"\s+=\s+(.*)", re.DOTALL)


def _string_end(text: str, i: int) -> int:
    """The end of the quoted string at ``text[i]`` (with a ``...`` suffix), or -1."""
    n = len(text)
    j = i + 1
    while j < n:
        c = text[j]
        if c == "\\":
            j += 2
        elif c == '"':
            j += 1
            return j + 3 if text.startswith("...", j) else j
        else:
            j += 1
    return -1


def _annotation_end(text: str, i: int) -> int:
    """The end of the ``-yy`` annotation at ``text[i] == "<"``, or -1 when that ``<``
    is plain text: ``<`` then escapes, plain characters and one level of ``<...>``, or
    a socket's bracketed ends."""
    m = _ANNOT_RE.match(text, i)
    return m.end() if m is not None else -1


def _scan(text: str, start: int = 0) -> tuple[list[str], int] | None:
    """Split ``text`` from ``start`` into top-level arguments, up to the ``)`` that
    closes the call (its index is returned) or the end of the text (``len``).

    Strings and -yy annotations are skipped whole, so a bracket or comma inside a
    path never splits; ``{...}``, ``[...]`` and ``(...)`` nest to any depth. None when
    the brackets do not pair up. A scanner rather than one regular expression: an
    expression for nested brackets grows exponentially with the depth, and compiling
    one deep enough costs about a second at every start of cvg-run --trace.
    """
    args: list[str] = []
    stack: list[str] = []
    n = len(text)
    i = arg_start = start
    plain = _PLAIN_RE.match
    while i < n:
        m = plain(text, i)
        if m is not None:
            i = m.end()
            if i >= n:
                break
        c = text[i]
        if c == '"':
            end = _string_end(text, i)
            if end < 0:
                return None
            i = end
        elif c == "<":
            end = _annotation_end(text, i)
            i = end if end > 0 else i + 1
        elif c in _OPENERS:
            stack.append(_OPENERS[c])
            i += 1
        elif c in _CLOSERS:
            if stack:
                if stack.pop() != c:
                    return None
                i += 1
            elif c == ")":
                last = text[arg_start:i].lstrip()
                if last or args:
                    args.append(last)
                return args, i
            else:
                return None
        else:  # a top-level comma
            if not stack:
                args.append(text[arg_start:i].lstrip())
                arg_start = i + 1
            i += 1
    if stack:
        return None
    last = text[arg_start:].lstrip()
    if last or args:
        args.append(last)
    return args, n


# The result: a number or `?`, an optional -yy annotation, an optional errno name.
_RET_RE: Final = re.compile(
    r"(?P<val>-?\d+|0x[0-9a-fA-F]+|\?)"
    rf"(?P<fd>{_ANNOT})?"
    r"(?:\s+(?P<errno>E[A-Z0-9]+))?"
)
# The same, matching the whole result text (an errno's description in parentheses).
_RET_FULL_RE: Final = re.compile(
    r"\s*(?P<val>-?\d+|0x[0-9a-fA-F]+|\?)"
    rf"(?P<fd>{_ANNOT})?"
    r"(?:\s+(?P<errno>E[A-Z0-9]+))?(?:\s+\([^()]*\))?\s*$"
)
# One argument of a call without brackets: strings, descriptors and plain text.
_FLAT_ARG_RE: Final = re.compile(rf"\s*+((?>{_STR}|{_ANNOT}|[^\",<]++|<)++)")
# Text with an odd number of unescaped quotes cannot be a complete argument list.
_QUOTE_RE: Final = re.compile(r'\\.|"')


def _is_time(text: str) -> bool:
    head, dot, tail = text.partition(".")
    return bool(dot) and head.isdigit() and tail.isdigit()


def _balanced(text: str) -> bool:
    """True when the quotes in ``text`` pair up (so a ") = " found by rpartition is
    outside every string)."""
    if '"' not in text:
        return True
    if "\\" not in text:
        return text.count('"') % 2 == 0
    return sum(1 for m in _QUOTE_RE.finditer(text) if m.group() == '"') % 2 == 0


# `PID TIME REST` as written by -o FILE, or `[pid PID] TIME REST` on a terminal.
_PREFIX_RE: Final = re.compile(r"(?:(?:\[pid\s+)?(\d+)\]?\s+)?(?:(\d+\.\d+)\s+)?(.*)", re.DOTALL)
_NAME_RE: Final = re.compile(r"([a-z_][a-z0-9_]*)\(")
_RESUMED_RE: Final = re.compile(r"<\.\.\. ([a-z_][a-z0-9_]*) resumed>(.*)", re.DOTALL)
_UNFINISHED: Final = " <unfinished ...>"
# The call a line is of: `<... name resumed>` or the first `name(`.
_CALL_NAME_RE: Final = re.compile(r"<\.\.\. ([a-z_][a-z0-9_]*) resumed>|\b([a-z_][a-z0-9_]*)\(")
_EXITED_RE: Final = re.compile(r"\+\+\+ exited with (\d+) \+\+\+")
_KILLED_RE: Final = re.compile(r"\+\+\+ killed by (SIG[A-Z0-9+-]+)")
_SIGNAL_RE: Final = re.compile(r"--- (SIG[A-Z0-9+-]+)")

_ESCAPE_RE: Final = re.compile(rb"\\(?:([0-7]{1,3})|x([0-9a-fA-F]{2})|(.))", re.DOTALL)
_SIMPLE_ESCAPES: Final = {
    b"n": b"\n",
    b"t": b"\t",
    b"r": b"\r",
    b"v": b"\v",
    b"f": b"\f",
    b"a": b"\a",
    b"b": b"\b",
    b"e": b"\x1b",
}


def _escape_sub(m: re.Match[bytes]) -> bytes:
    octal, hexa, char = m.groups()
    if octal is not None:
        return bytes((int(octal, 8) & 0xFF,))
    if hexa is not None:
        return bytes((int(hexa, 16),))
    return _SIMPLE_ESCAPES.get(char, char)


def unescape(text: str) -> str:
    """Undo strace's C-style escapes (``\\n``, ``\\"``, ``\\\\``, ``\\76``, ``\\x3e``).

    strace prints bytes; the result is decoded as UTF-8, and bytes that are not UTF-8
    come out as ``\\xNN`` (JSON cannot carry undecodable bytes).
    """
    if "\\" not in text:
        return text
    raw = _ESCAPE_RE.sub(_escape_sub, text.encode("utf-8", "surrogateescape"))
    return raw.decode("utf-8", "backslashreplace")


def string_arg(arg: str) -> str | None:
    """The value of a quoted string argument (``"..."``), unescaped; None otherwise.

    A string strace truncated (``"..."...``) is returned as far as it goes.
    """
    if len(arg) >= 2 and arg[0] == '"':
        end = len(arg) - 3 if arg.endswith('"...') else len(arg)
        if end >= 2 and arg[end - 1] == '"':
            return unescape(arg[1 : end - 1])
    return None


class Fd(Value):
    """A descriptor argument: its number (None for AT_FDCWD) and what -yy said it is."""

    __slots__ = _FIELDS = ("number", "target")

    number: int | None
    target: str | None  # "/etc/hostname", "TCP:[...]", "pipe:[12]"; None when not decoded

    def __init__(self, number: int | None, target: str | None) -> None:
        object.__setattr__(self, "number", number)
        object.__setattr__(self, "target", target)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Fd is frozen")

    def __hash__(self) -> int:  # frozen, unlike the other values
        return hash(self._values())

    @property
    def path(self) -> str | None:
        """The file it refers to, when that is a path."""
        t = self.target
        if t is None or not t.startswith("/"):
            return None
        return t


_DEVICE_SUFFIX_RE: Final = re.compile(r"<(?:char|block) \d+:\d+>$")


def _annotation(body: str) -> str:
    """The inside of ``<...>`` made plain: unescaped, without ``<char 1:3>`` or
    `` (deleted)``."""
    if body.endswith(">"):
        body = _DEVICE_SUFFIX_RE.sub("", body)
    value = unescape(body)
    if value.endswith(" (deleted)") and value.startswith("/"):
        value = value[: -len(" (deleted)")]
    return value


def parse_fd(arg: str) -> Fd | None:
    """``3</etc/x>`` -> Fd(3, "/etc/x"); ``AT_FDCWD</w>`` -> Fd(None, "/w");
    ``AT_FDCWD`` -> Fd(None, None); ``5`` -> Fd(5, None); anything else None."""
    lt = arg.find("<")
    head = arg if lt < 0 else arg[:lt]
    if head == "AT_FDCWD":
        number = None
    elif head.isdigit() or (head.startswith("-") and head[1:].isdigit()):
        number = int(head)
    else:
        return None
    if lt < 0:
        return Fd(number, None)
    if not arg.endswith(">"):
        return Fd(number, None)
    return Fd(number, _annotation(arg[lt + 1 : -1]))


def split_args(text: str) -> list[str]:
    """The top-level arguments of ``text`` (what is between a call's parentheses)."""
    scanned = _scan(text)
    return [] if scanned is None else [a for a in scanned[0] if a]


_SIGNUM: Final = {
    "SIGHUP": 1, "SIGINT": 2, "SIGQUIT": 3, "SIGILL": 4, "SIGTRAP": 5, "SIGABRT": 6,
    "SIGBUS": 7, "SIGFPE": 8, "SIGKILL": 9, "SIGUSR1": 10, "SIGSEGV": 11, "SIGUSR2": 12,
    "SIGPIPE": 13, "SIGALRM": 14, "SIGTERM": 15, "SIGSTKFLT": 16, "SIGCHLD": 17,
    "SIGCONT": 18, "SIGSTOP": 19, "SIGTSTP": 20, "SIGTTIN": 21, "SIGTTOU": 22,
    "SIGURG": 23, "SIGXCPU": 24, "SIGXFSZ": 25, "SIGVTALRM": 26, "SIGPROF": 27,
    "SIGWINCH": 28, "SIGIO": 29, "SIGPWR": 30, "SIGSYS": 31,
}  # fmt: skip


def signal_number(name: str) -> int | None:
    """``SIGKILL`` -> 9 (x86_64/aarch64 numbering); ``SIGRT_3`` -> 37; else None."""
    if name in _SIGNUM:
        return _SIGNUM[name]
    if name.startswith("SIGRT_") and name[6:].isdigit():
        return 34 + int(name[6:])
    if name == "SIGRTMIN":
        return 34
    return None


class TraceParser:
    """Turn strace lines into records, joining split calls by pid.

    ``feed`` takes one line (with or without its newline) and returns the record it
    completes, or None (the first half of a split call, a blank or foreign line).
    ``skipped`` counts lines that were not understood.
    """

    __slots__ = ("_pending", "skipped", "skipped_by_call", "skipped_lines", "unmatched")

    KEPT_LINES: Final = 5
    """Skipped lines kept as they were, to show what was not understood."""

    def __init__(self) -> None:
        # pid -> (time of the first half, syscall name, argument text so far)
        self._pending: dict[int, tuple[float | None, str, str]] = {}
        self.skipped = 0
        # The call each skipped line was of, where its name could be read ("" if not).
        self.skipped_by_call: dict[str, int] = {}
        self.skipped_lines: list[str] = []
        self.unmatched = 0  # resumed halves whose first half was never seen

    def feed(self, line: str) -> Record | None:
        line = line.rstrip("\n")
        if not line:
            return None
        skipped = self.skipped
        rec = self._feed(line)
        if self.skipped != skipped:
            self._note_skipped(line)
        return rec

    def _note_skipped(self, line: str) -> None:
        m = _CALL_NAME_RE.search(line)
        name = (m.group(1) or m.group(2)) if m is not None else ""
        self.skipped_by_call[name] = self.skipped_by_call.get(name, 0) + 1
        if len(self.skipped_lines) < self.KEPT_LINES:
            self.skipped_lines.append(line[:300])

    def _feed(self, line: str) -> Record | None:
        when: float | None
        parts = line.split(None, 2)
        if len(parts) == 3 and parts[0].isdigit() and _is_time(parts[1]):
            # The usual `PID TIME REST` of `strace -f -ttt -o FILE`.
            pid, when, rest = int(parts[0]), float(parts[1]), parts[2]
        else:
            m = _PREFIX_RE.match(line)
            if m is None:
                self.skipped += 1
                return None
            pid = int(m.group(1)) if m.group(1) is not None else 0  # 0: not printed
            stamp = m.group(2)
            when = float(stamp) if stamp is not None else None
            rest = m.group(3)
        first = rest[:1]
        if first == "<":
            return self._resumed(pid, when, rest)
        if first == "+":
            return self._process(pid, when, rest)
        if first == "-":
            s = _SIGNAL_RE.match(rest)
            if s is None:
                self.skipped += 1
                return None
            return Record("signal", pid, when, s.group(1))
        n = _NAME_RE.match(rest)
        if n is None:
            self.skipped += 1
            return None
        name = n.group(1)
        body = rest[n.end() :]
        if body.endswith(_UNFINISHED):
            self._pending[pid] = (when, name, body[: -len(_UNFINISHED)])
            return None
        return self._complete(pid, when, name, body)

    def _resumed(self, pid: int, when: float | None, rest: str) -> Record | None:
        r = _RESUMED_RE.match(rest)
        if r is None:
            self.skipped += 1
            return None
        name, tail = r.group(1), r.group(2)
        pending = self._pending.pop(pid, None)
        if pending is None or pending[1] != name:
            # A thread's execve finishes in the thread-group leader's pid.
            found = None
            if name in ("execve", "execveat"):
                for other, item in self._pending.items():
                    if item[1] == name:
                        found = other
                        break
            if found is not None:
                pending = self._pending.pop(found)
            else:
                self.unmatched += 1
                pending = (when, name, "")
        start, _, text = pending
        if tail.endswith(_UNFINISHED):  # interrupted again: `<... x resumed> <unfinished ...>`
            self._pending[pid] = (start, name, text + tail[: -len(_UNFINISHED)])
            return None
        return self._complete(pid, start if start is not None else when, name, text + tail)

    def _complete(self, pid: int, when: float | None, name: str, body: str) -> Record | None:
        # Fast path: the last ") = " ends the arguments unless the result's own -yy
        # annotation holds one (then the result does not parse and the full grammar
        # decides); arguments without brackets split with a simpler expression.
        args_text, sep, ret = body.rpartition(") = ")
        r = _RET_FULL_RE.match(ret) if sep else None
        if r is None or not _balanced(args_text):
            scanned = _scan(body)
            tail = _CALL_TAIL_RE.match(body, scanned[1] + 1) if scanned is not None else None
            if scanned is None or scanned[1] >= len(body) or tail is None:
                self.skipped += 1
                return None
            args = scanned[0]
            ret = tail.group(1)
            r = _RET_RE.match(ret)
        elif "(" in args_text or "{" in args_text or "[" in args_text:
            whole = _scan(args_text)
            if whole is None:
                self.skipped += 1
                return None
            args = whole[0]
        else:
            args = _FLAT_ARG_RE.findall(args_text)
        rec = Record("syscall", pid, when, name, args)
        if r is None:
            rec.ret = ret.strip() or "?"
            return rec
        rec.ret = r.group("val")
        fd = r.group("fd")
        if fd is not None:
            rec.ret_fd = _annotation(fd[1:-1])
        rec.errno = r.group("errno")
        return rec

    def _process(self, pid: int, when: float | None, rest: str) -> Record | None:
        # An unfinished call never finishes once its process is gone.
        e = _EXITED_RE.match(rest)
        if e is not None:
            self._pending.pop(pid, None)
            return Record("exit", pid, when, status=int(e.group(1)))
        k = _KILLED_RE.match(rest)
        if k is not None:
            self._pending.pop(pid, None)
            name = k.group(1)
            return Record("killed", pid, when, name, status=signal_number(name))
        # "+++ superseded by execve in pid N +++": the thread is gone, not the process.
        if "superseded" in rest:
            return None
        self.skipped += 1
        return None

    def pending(self) -> int:
        """How many calls are still waiting for their second half."""
        return len(self._pending)

    def in_flight(self) -> dict[int, tuple[float | None, str, str]]:
        """The calls waiting for their second half: pid -> (time, name, argument text)."""
        return self._pending


def parse_lines(lines: Iterable[str], parser: TraceParser | None = None) -> Iterator[Record]:
    """Records from strace lines, in order of completion."""
    p = TraceParser() if parser is None else parser
    feed = p.feed
    for line in lines:
        rec = feed(line)
        if rec is not None:
            yield rec
