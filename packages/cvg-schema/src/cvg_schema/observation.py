"""``cvg.observation``: what a tool did, as ``cvg-observe`` saw it or ``cvg-import`` read it.

Each event has a stable ``id`` (``e1``, ``e2``, ...) that a generated policy cites as the
reason for a rule. An imported observation is ``partial``: the foreign report may leave
things out (a runtime's own reads, failed operations), so absence proves nothing, and
each imported event carries its provenance in ``source``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    JsonValue,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from .base import CvgModel, Identifier, MessageBase, SyscallName, by_id, fail, fail_on_repeats
from .plan import SocketFamily, SocketTypeName

__all__ = ["Event", "EventOp", "Executable", "Observation", "Result"]

EventOp = Literal[
    "read",
    "write",
    "create",
    "remove",
    "rename",
    "link",
    "execute",
    "connect",
    "bind",
    "send",
    "socket",
    "signal",
    "stat",
    "chdir",
    "wait",
    "other",
]
"""``wait``: the tool waited for input from outside: it accepted on a listening
socket, or read its stdin when that was a pipe, socket or terminal (a server or an
interactive tool, whose lifetime is its client's). Grants nothing."""

Result = Annotated[
    str,
    Field(
        pattern=r"^(ok|E[A-Z0-9]{1,31})$",
        description='"ok", or the errno name the call failed with (e.g. `EACCES`).',
        examples=["ok", "ENOENT"],
    ),
]


class Executable(CvgModel):
    """A file the tool executed, with what the kernel needed to run it."""

    path: str = Field(min_length=1, max_length=4096, description="The executed file.")
    interpreter: str | None = Field(
        default=None,
        max_length=4096,
        description="The ELF interpreter (PT_INTERP, the dynamic loader), if any.",
    )
    shebang: list[Annotated[str, Field(min_length=1, max_length=4096)]] = Field(
        default_factory=list,
        description=(
            "The `#!` chain, outermost first: each interpreter path as the kernel "
            "resolved it (a script run by /usr/bin/env python3 gives [/usr/bin/env])."
        ),
    )
    event_id: Identifier | None = Field(
        default=None, description="The `execute` event that ran it."
    )


class Event(CvgModel):
    """One thing the tool did."""

    id: Identifier = Field(
        description="Stable within the observation: `e1`, `e2`, ... A policy reason cites it.",
        examples=["e42"],
    )
    pid: int | None = Field(
        default=None, ge=1, le=4_194_304, description="The process; null when not known."
    )
    op: EventOp = Field(description="What kind of access this was.")
    syscall: SyscallName = Field(description="The system call, e.g. `openat`.")
    path: str | None = Field(
        default=None,
        max_length=4096,
        description=(
            "The file involved, absolute (resolved against the process's working "
            "directory), or as reported when it could not be resolved."
        ),
    )
    path2: str | None = Field(
        default=None,
        max_length=4096,
        description="The second path of a rename or link (the new name).",
    )
    port: int | None = Field(
        default=None, ge=0, le=65535, description="The port of a connect, bind or send."
    )
    address: str | None = Field(
        default=None,
        max_length=4096,
        description=(
            "The peer or local address without the port (an IP address, or a unix socket "
            "path). Informational: policies filter ports, not hosts."
        ),
    )
    family: SocketFamily | None = Field(default=None, description="The socket family.")
    sock_type: SocketTypeName | None = Field(default=None, description="The socket type.")
    target_pid: int | None = Field(
        default=None,
        ge=-(2**31),
        le=2**31 - 1,
        description="For `signal`: the pid argument (negative for a process group).",
    )
    result: Result = Field(description='"ok" or the errno name.')
    time: float | None = Field(
        default=None,
        ge=0,
        description="Seconds since the epoch (strace -ttt); null when the source had no time.",
    )
    directory: bool = Field(
        default=False,
        description=(
            "A `read` that opened a directory to list it (O_DIRECTORY): evidence that the "
            "tool walks it, whatever is on disk when the policy is generated."
        ),
    )
    denied_while_learning: bool = Field(
        default=False,
        description=(
            "The learning sandbox refused this attempt (cvg-observe runs the tool confined). "
            "cvg-generate never grants such an event unless told to (`--grant-denied`)."
        ),
    )
    denied_by: Literal["landlock", "seccomp"] | None = Field(
        default=None,
        description="Which mechanism refused it, when `denied_while_learning`.",
    )
    source: dict[str, JsonValue] | None = Field(
        default=None,
        description=(
            "Provenance of an imported event: the foreign record it came from (e.g. "
            "{tool, capability, target, decoy, result})."
        ),
    )

    @model_serializer(mode="wrap")
    def _omit_not_directory(self, handler: SerializerFunctionWrapHandler) -> Any:
        # Without it, an event dumps (and digests) as it did before the field.
        data = handler(self)
        if not self.directory and isinstance(data, dict):
            data.pop("directory", None)
        return data

    @model_validator(mode="after")
    def _denial_is_consistent(self) -> Event:
        if self.denied_by is not None and not self.denied_while_learning:
            fail("denied_by is set but denied_while_learning is false", at=("denied_by",))
        return self


class Observation(MessageBase):
    """What a tool did: its command, its events (each with an `id`), its executables."""

    kind: Literal["cvg.observation"] = Field(
        default="cvg.observation", description="Always `cvg.observation`."
    )
    argv: list[str] = Field(
        default_factory=list,
        description="The command observed. May be empty only in a partial observation.",
    )
    cwd: str | None = Field(
        default=None,
        max_length=4096,
        description="Its working directory (becomes `${CWD}`); null only when partial.",
    )
    home: str | None = Field(
        default=None, max_length=4096, description="The HOME it ran with (becomes `${HOME}`)."
    )
    scratch: list[Annotated[str, Field(min_length=1, max_length=4096)]] = Field(
        default_factory=list,
        description="Private temporary directories it was given (each becomes `${SCRATCH}`).",
    )
    strace_version: str | None = Field(
        default=None, max_length=100, description="The strace that observed it, e.g. `6.1`."
    )
    executables: list[Executable] = Field(default_factory=list)
    events: list[Event] = Field(default_factory=list)
    exit_status: int | None = Field(
        default=None, ge=0, le=255, description="The command's exit status, when known."
    )
    syscalls: dict[SyscallName, Annotated[int, Field(ge=1)]] | None = Field(
        default=None,
        description=(
            "Every system call the command and its children made, by name, with how "
            "many times (calls that never return, such as `exit_group`, included). "
            "Absent when the observer did not record them (an imported report, or an "
            "observation made before this field existed)."
        ),
    )
    peak_rss_kb: int | None = Field(
        default=None,
        ge=1,
        description=(
            "The largest resident set any one process of the run reached, KiB (the "
            "kernel's high-water mark, ru_maxrss of the reaped tree). Absent when not "
            "measured."
        ),
    )
    tree_rss_kb: int | None = Field(
        default=None,
        ge=1,
        description=(
            "The most resident memory the tool's processes held at once, KiB, sampled "
            "every 0.25 s (a shorter peak can be missed). Absent when not measured."
        ),
    )
    environment: dict[str, str | None] | None = Field(
        default=None,
        description=(
            "Variables the tool was given beyond its caller's session (cvg-observe: "
            "those its parent's environment lacks or holds otherwise), by name; null as "
            "the value of a name that looks like a secret, whose value is never recorded. "
            "Absent when not known."
        ),
    )
    partial: bool = Field(
        default=False,
        description=(
            "True when the observation is known to be incomplete (imported reports leave "
            "out a runtime's own reads and most failed operations)."
        ),
    )
    source: dict[str, JsonValue] | None = Field(
        default=None,
        description=(
            "Provenance of an imported observation: the foreign tool, its report format "
            "and version, the report's path and digest."
        ),
    )
    notes: list[Annotated[str, Field(max_length=2000)]] = Field(
        default_factory=list,
        description="Known limitations of this observation, one sentence each.",
    )

    @model_serializer(mode="wrap")
    def _omit_unmeasured(self, handler: SerializerFunctionWrapHandler) -> Any:
        # Without them, an observation dumps (and digests) as it did before these fields.
        data = handler(self)
        if isinstance(data, dict):
            for key in ("syscalls", "peak_rss_kb", "tree_rss_kb", "environment"):
                if getattr(self, key) is None:
                    data.pop(key, None)
        return data

    @model_validator(mode="after")
    def _consistent(self) -> Observation:
        if not self.partial:
            if not self.argv:
                fail("argv is empty (allowed only when partial is true)", at=("argv",))
            if self.cwd is None:
                fail("cwd is missing (allowed only when partial is true)", at=("cwd",))
        seen = fail_on_repeats((e.id for e in self.events), "events", "id", "event id {} is used")
        for i, exe in enumerate(self.executables):
            if exe.event_id is not None and exe.event_id not in seen:
                fail(f"{exe.event_id!r} names no event", at=("executables", i, "event_id"))
        return self

    def event(self, event_id: str) -> Event:
        """The event with this id; KeyError when there is none."""
        return by_id(self.events, event_id)

    def executions(self) -> Iterator[tuple[Executable, Event]]:
        """Each executable with the event that ran it; one that names none is left out."""
        for exe in self.executables:
            if exe.event_id is None:
                continue
            try:
                event = self.event(exe.event_id)
            except KeyError:
                continue
            yield exe, event
