"""``cvg.run``: the record ``cvg-run`` leaves for every run."""

from __future__ import annotations

from typing import Any, Final, Literal, get_args

from pydantic import (
    AwareDatetime,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from .base import (
    CvgModel,
    Digest,
    ErrnoName,
    Identifier,
    MessageBase,
    RuleAddress,
    SyscallName,
    by_id,
    fail,
    fail_on_repeats,
)
from .observation import EventOp
from .plan import Degradation, FsRight, NetRight, Plan, RlimitName, Scope

__all__ = [
    "Connection",
    "Denial",
    "ExitInfo",
    "ExitMeaning",
    "Mechanism",
    "ProtectedCreated",
    "RunRecord",
    "Scratch",
    "Timings",
]

ExitMeaning = Literal[
    "exited",
    "signaled",
    "wall_clock",
    "not_started",
    "not_executable",
    "not_found",
    "limit",
    "protected_created",
]
Mechanism = Literal[
    "landlock_fs", "landlock_net", "landlock_scope", "seccomp", "rlimit", "supervisor", "none"
]

_FIXED_STATUS: Final[dict[str, int]] = {
    "wall_clock": 124,
    "not_started": 125,
    "not_executable": 126,
    "not_found": 127,
    "protected_created": 122,
}
_RIGHTS: Final[dict[str, frozenset[str]]] = {
    "landlock_fs": frozenset(get_args(FsRight)),
    "landlock_net": frozenset(get_args(NetRight)),
    "landlock_scope": frozenset(get_args(Scope)),
    "rlimit": frozenset(get_args(RlimitName)),
}


class ExitInfo(CvgModel):
    """How the run ended: cvg-run's exit status and what it means."""

    status: int = Field(ge=0, le=255, description="cvg-run's own exit status.")
    meaning: ExitMeaning = Field(
        description=(
            "exited: the tool's own status; signaled: 128+N, killed by signal N; "
            "wall_clock: 124, killed at the wall clock; not_started: 125 (bad or refused "
            "policy, internal error); not_executable: 126 (including a missing execute "
            "grant); not_found: 127; limit: the supervisor ended the run at a resource "
            "limit (e.g. too many processes); protected_created: 122, a protected path "
            "that did not exist at the start existed after the run (see "
            "`protected_created`; the detail says the tool's own status)."
        )
    )
    signal: int | None = Field(
        default=None, ge=1, le=64, description="The signal number, when signaled."
    )
    detail: str | None = Field(
        default=None,
        max_length=2000,
        description="One line for a person, e.g. the reason a policy was refused.",
    )

    @model_validator(mode="after")
    def _status_matches_meaning(self) -> ExitInfo:
        expected = _FIXED_STATUS.get(self.meaning)
        if expected is not None and self.status != expected:
            fail(
                f"meaning {self.meaning} has exit status {expected}, not {self.status}",
                at=("status",),
            )
        if self.meaning == "signaled":
            if self.signal is None:
                fail("meaning signaled needs the signal number", at=("signal",))
            if self.status != 128 + self.signal:
                fail(
                    f"signal {self.signal} gives exit status {128 + self.signal}, "
                    f"not {self.status}",
                    at=("status",),
                )
        elif self.signal is not None:
            fail(
                f"signal is only set when meaning is signaled, not {self.meaning}",
                at=("signal",),
            )
        return self


class Timings(CvgModel):
    """How long the run took."""

    wall_seconds: float = Field(ge=0, description="Elapsed time from start to the end.")
    cpu_seconds: float | None = Field(
        default=None,
        ge=0,
        description="User plus system CPU time of the tool and its reaped descendants.",
    )


class Scratch(CvgModel):
    """The run's private `${SCRATCH}` directory."""

    path: str = Field(min_length=1, max_length=4096)
    kept: bool = Field(description="True when it was kept after the run (--keep-scratch).")


class Denial(CvgModel):
    """One operation the sandbox refused (recorded with `--trace`)."""

    id: Identifier = Field(
        description="Stable within the record: `d1`, `d2`, ... An explanation cites it.",
        examples=["d1"],
    )
    pid: int | None = Field(default=None, ge=1, le=4_194_304, description="The process.")
    syscall: SyscallName = Field(description="The refused system call.")
    op: EventOp | None = Field(default=None, description="What kind of access it was.")
    path: str | None = Field(default=None, max_length=4096, description="The file, if any.")
    port: int | None = Field(default=None, ge=0, le=65535, description="The port, if any.")
    errno: ErrnoName | None = Field(
        default=None,
        description="The error the call got; null when the refusal was not an error return.",
    )
    mechanism: Mechanism = Field(
        description=(
            "What refused it: a Landlock filesystem right, network right or scope, the "
            "seccomp filter, an rlimit, the supervisor, or none (the call failed for a "
            "reason of its own)."
        )
    )
    right: str | None = Field(
        default=None,
        max_length=64,
        description=(
            "The missing right: a Landlock right or scope name for the landlock_* "
            "mechanisms, an rlimit name for rlimit."
        ),
    )
    rule: RuleAddress | None = Field(
        default=None,
        description="The policy rule that would have to grant it, e.g. `filesystem.read`.",
    )
    time: float | None = Field(default=None, ge=0, description="Seconds since the epoch.")
    expected: bool = Field(
        default=False,
        description=(
            "A refusal every policy gives and nothing needs: the tool reading its own "
            "`/proc/<pid>` entries (cgroup, maps, mountinfo...), which Landlock cannot "
            "grant per process. Kept in the record, counted apart, never printed."
        ),
    )
    detail: str | None = Field(
        default=None, max_length=4096, description="The trace line or other detail."
    )

    @model_validator(mode="after")
    def _right_matches_mechanism(self) -> Denial:
        allowed = _RIGHTS.get(self.mechanism)
        if self.right is not None and allowed is not None and self.right not in allowed:
            fail(
                f"{self.right!r} is not a {self.mechanism} right "
                f"(one of {', '.join(sorted(allowed))})",
                at=("right",),
            )
        return self


class Connection(CvgModel):
    """One connection the tool asked the `network.hosts` proxy for, allowed or refused."""

    time: float = Field(ge=0, description="When the request was judged, seconds since the epoch.")
    protocol: Literal["http-connect", "http", "socks5", "unknown"] = Field(
        description=(
            "How it was asked: HTTP CONNECT, a plain HTTP request with an absolute URL, "
            "SOCKS5, or unknown when the request could not be read."
        )
    )
    host: str | None = Field(
        default=None,
        max_length=300,
        description="The host asked for, as the client wrote it; null when unreadable.",
    )
    port: int | None = Field(default=None, ge=0, le=65535, description="The port asked for.")
    verdict: Literal["allowed", "refused", "failed"] = Field(
        description=(
            "allowed: relayed; refused: no `network.hosts` rule grants it (or the request "
            "was malformed or too slow); failed: granted, but the host could not be "
            "resolved or reached."
        )
    )
    reason: str = Field(min_length=1, max_length=1000, description="One line saying why.")
    rule: RuleAddress | None = Field(
        default=None, description="The rule that granted it, e.g. `network.hosts[0]`."
    )
    address: str | None = Field(
        default=None, max_length=64, description="The address the proxy connected to."
    )
    bytes_up: int | None = Field(
        default=None, ge=0, description="Bytes relayed from the tool to the host."
    )
    bytes_down: int | None = Field(
        default=None, ge=0, description="Bytes relayed from the host to the tool."
    )


class ProtectedCreated(CvgModel):
    """A protected path (docs/protected-paths.md) that did not exist when the tool
    started and existed once its processes were gone: created during the run, or a
    link or file planted on the way to it. cvg-run moves it aside."""

    path: str = Field(min_length=1, max_length=4096, description="Where it was found.")
    kind: Literal["file", "directory", "symlink", "other"] = Field(
        description="What it was, never followed: a symbolic link is moved as a link."
    )
    protects: str = Field(
        min_length=1,
        max_length=4096,
        description=(
            "The protected path it stands for: `path` itself, or one beneath it when "
            "`path` is a link or file planted on the way (a `.git` file naming another "
            "git directory)."
        ),
    )
    reason: str = Field(min_length=1, max_length=1000, description="Why that path is protected.")
    moved_to: str | None = Field(
        default=None,
        max_length=4096,
        description=(
            "Where cvg-run moved it: beside it, renamed `NAME.cvg-moved-RUNID`, in the "
            "same directory. Null when it could not be moved (`error` says why)."
        ),
    )
    error: str | None = Field(
        default=None, max_length=1000, description="Why it could not be moved, if it was not."
    )

    @model_validator(mode="after")
    def _moved_or_why_not(self) -> ProtectedCreated:
        if (self.moved_to is None) == (self.error is None):
            fail("exactly one of moved_to and error is set", at=("moved_to",))
        return self


class RunRecord(MessageBase):
    """The record of one cvg-run: what ran under which policy, and how it ended."""

    kind: Literal["cvg.run"] = Field(default="cvg.run", description="Always `cvg.run`.")
    run_id: Identifier = Field(description="Unique per run; names the record in the state dir.")
    policy_digest: Digest = Field(description="Digest of the policy the run used.")
    policy_path: str | None = Field(
        default=None,
        max_length=4096,
        description="The policy file; null for the embedded default policy.",
    )
    plan: Plan | None = Field(
        default=None, description="The plan applied (null when the tool was not started)."
    )
    plan_digest: Digest | None = Field(
        default=None, description="Digest of the plan, when it is stored elsewhere."
    )
    plan_path: str | None = Field(
        default=None, max_length=4096, description="Where the plan is stored (with its digest)."
    )
    argv: list[str] = Field(min_length=1, description="The command.")
    cwd: str = Field(min_length=1, max_length=4096, description="Its working directory.")
    exit: ExitInfo
    timings: Timings
    peak_rss_kb: int | None = Field(
        default=None, ge=0, le=2**53, description="Largest resident set of any process, KiB."
    )
    allow_degraded: bool = Field(default=False, description="Whether --allow-degraded was given.")
    degraded: list[Degradation] = Field(
        default_factory=list, description="Every rule that was not enforced."
    )
    traced: bool = Field(
        default=False, description="Whether --trace was on (denials are only complete then)."
    )
    denials: list[Denial] = Field(default_factory=list)
    scratch: Scratch | None = Field(default=None, description="null when none was made.")
    connections: list[Connection] = Field(
        default_factory=list,
        description=(
            "With `network.hosts`: each connection the proxy allowed or refused, in order "
            "(the first 10000; `connections_omitted` counts the rest)."
        ),
    )
    connections_omitted: int = Field(
        default=0, ge=0, description="Connections past the first 10000, not listed."
    )
    protected_created: list[ProtectedCreated] = Field(
        default_factory=list,
        description=(
            "Protected paths beneath the plan's write grants that did not exist when the "
            "tool started and existed once its processes were gone, each moved aside; "
            "with any, the exit is `protected_created` (122). Absent when none."
        ),
    )
    limits_by: Literal["cgroup2", "cgroup1", "sampled"] | None = Field(
        default=None,
        description=(
            "What held `processes` and `memory_mb` to the tool's whole tree: a cgroup "
            "(v2 or v1; exact counts, and memory the kernel holds for the tool is "
            "charged), or `sampled` (the supervisor's scans of the tree). Null with "
            "neither limit."
        ),
    )

    @model_serializer(mode="wrap")
    def _omit_no_connections(self, handler: SerializerFunctionWrapHandler) -> Any:
        # A run without network.hosts writes the record it always did.
        data = handler(self)
        if isinstance(data, dict):
            if not self.connections:
                data.pop("connections", None)
            if not self.connections_omitted:
                data.pop("connections_omitted", None)
            if self.seal is None:  # and one without a key, the record it always did
                data.pop("seal", None)
            if self.limits_by is None:
                data.pop("limits_by", None)
            if not self.protected_created:
                data.pop("protected_created", None)
        return data

    started: AwareDatetime = Field(strict=False, description="When the run started.")
    ended: AwareDatetime = Field(strict=False, description="When it ended.")
    seal: str | None = Field(
        default=None,
        pattern=r"^hmac-sha256:[0-9a-f]{64}$",
        description=(
            "HMAC-SHA256, under the user's key in cvg's state directory, of the record's "
            "bytes as cvg-run wrote them without this member (always the last). Absent "
            "when the key could not be used; `cvg-explain --apply` refuses a record "
            "whose seal is absent or does not match."
        ),
    )

    @model_validator(mode="after")
    def _consistent(self) -> RunRecord:
        if self.plan_path is not None and self.plan_digest is None:
            fail("plan_path needs plan_digest", at=("plan_digest",))
        if self.ended < self.started:
            fail("ended is before started", at=("ended",))
        fail_on_repeats((d.id for d in self.denials), "denials", "id", "denial id {} is used")
        if bool(self.protected_created) != (self.exit.meaning == "protected_created"):
            fail(
                "exit meaning protected_created goes with a non-empty protected_created",
                at=("protected_created",),
            )
        return self

    def denial(self, denial_id: str) -> Denial:
        """The denial with this id; KeyError when there is none."""
        return by_id(self.denials, denial_id)
