"""``cvg.plan``: the compiled plan the kernel layer applies (docs/plan-format.md).

Every key except ``kind`` and ``schema_version`` is optional, and an omitted key means
the strict default documented on its field. Two defaults depend on the machine that
applies the plan and are therefore written as ``null``: ``arch`` (the running one) and
``seccomp.deny`` (``cvg_kernel.seccomp.DEFAULT_DENY``).
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import (
    AfterValidator,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from .base import (
    CvgModel,
    Digest,
    EnvName,
    ErrnoName,
    MessageBase,
    RuleAddress,
    SyscallName,
    check_variables,
    fail,
    variables_in,
)

__all__ = [
    "ABI_OF_FS_RIGHT",
    "FS_RIGHTS",
    "Arch",
    "Capabilities",
    "Degradation",
    "FsRight",
    "FsRule",
    "ImpliedDeny",
    "Landlock",
    "LandlockFlag",
    "NetRight",
    "NetRule",
    "Plan",
    "PlanEnvironment",
    "PlanSource",
    "RlimitName",
    "RlimitValue",
    "Scope",
    "Seccomp",
    "SocketFamily",
    "SocketFamilyName",
    "SocketRule",
    "SocketType",
    "SocketTypeName",
]

Arch = Literal["x86_64", "aarch64"]

FsRight = Literal[
    "execute",
    "write_file",
    "read_file",
    "read_dir",
    "remove_dir",
    "remove_file",
    "make_char",
    "make_dir",
    "make_reg",
    "make_sock",
    "make_fifo",
    "make_block",
    "make_sym",
    "refer",
    "truncate",
    "ioctl_dev",
    "resolve_unix",
]
ABI_OF_FS_RIGHT: Final[dict[str, int]] = {
    "execute": 1,
    "write_file": 1,
    "read_file": 1,
    "read_dir": 1,
    "remove_dir": 1,
    "remove_file": 1,
    "make_char": 1,
    "make_dir": 1,
    "make_reg": 1,
    "make_sock": 1,
    "make_fifo": 1,
    "make_block": 1,
    "make_sym": 1,
    "refer": 2,
    "truncate": 3,
    "ioctl_dev": 5,
    "resolve_unix": 9,
}
"""The Landlock ABI that introduced each filesystem right."""
FS_RIGHTS: Final[tuple[str, ...]] = tuple(ABI_OF_FS_RIGHT)

NetRight = Literal["bind_tcp", "connect_tcp"]
Scope = Literal["abstract_unix_socket", "signal"]
LandlockFlag = Literal["log_same_exec_off", "log_new_exec_on", "log_subdomains_off", "tsync"]
RlimitName = Literal[
    "cpu",
    "fsize",
    "data",
    "stack",
    "core",
    "rss",
    "nproc",
    "nofile",
    "memlock",
    "as",
    "sigpending",
    "msgqueue",
    "nice",
    "rtprio",
    "rttime",
]
SocketFamilyName = Literal["unix", "inet", "inet6", "netlink", "packet"]
SocketFamily = SocketFamilyName | Annotated[int, Field(ge=0, le=0xFFFFFFFF)]
SocketTypeName = Literal["stream", "dgram", "raw", "seqpacket"]
SocketType = SocketTypeName | Annotated[int, Field(ge=0, le=0xF)]
IoctlName = Literal["TIOCSTI", "TIOCLINUX"]

_RLIM_MAX: Final = 2**63 - 1


_Limit = Annotated[int, Field(ge=0, le=_RLIM_MAX)] | Literal["unlimited"]


def _check_soft_hard(value: list[int | str]) -> list[int | str]:
    soft, hard = value
    if isinstance(hard, int) and (not isinstance(soft, int) or soft > hard):
        fail(f"soft limit {soft} is above hard limit {hard}")
    return value


RlimitValue = (
    Annotated[int, Field(ge=0, le=_RLIM_MAX)]
    | Literal["unlimited"]
    | Annotated[
        list[_Limit],
        Field(min_length=2, max_length=2),
        AfterValidator(_check_soft_hard),
    ]
)
"""An int (soft = hard), ``"unlimited"``, or ``[soft, hard]`` (each an int or ``"unlimited"``)."""


def _check_plan_path(value: str) -> str:
    if "\x00" in value:
        fail("a path cannot contain a NUL byte")
    return value


PlanPath = Annotated[
    str,
    Field(
        min_length=1,
        max_length=4096,
        description="A path; may contain `${NAME}` for a name listed in `variables`.",
    ),
    AfterValidator(_check_plan_path),
]


class FsRule(CvgModel):
    """Allow `access` beneath `path`. On a non-directory only the file rights are kept."""

    path: PlanPath
    access: list[FsRight] = Field(min_length=1, description="Filesystem rights granted.")


class NetRule(CvgModel):
    """Allow `bind_tcp` and/or `connect_tcp` on one TCP port."""

    port: int = Field(ge=0, le=65535, description="The TCP port (host byte order).")
    access: list[NetRight] = Field(min_length=1, description="Network rights granted.")


class Landlock(CvgModel):
    """The Landlock ruleset."""

    handled_fs: Literal["all"] | list[FsRight] = Field(
        default="all",
        description=(
            'Filesystem rights the ruleset restricts; "all" means every right this kernel '
            "knows. Rights (the ABI that introduced each): execute, write_file, "
            "read_file, read_dir, remove_dir, remove_file, make_char, make_dir, make_reg, "
            "make_sock, make_fifo, make_block, make_sym (1); refer (2); truncate (3); "
            "ioctl_dev (5); resolve_unix (9)."
        ),
    )
    handled_net: Literal["all"] | list[NetRight] = Field(
        default="all", description="Network rights restricted: bind_tcp, connect_tcp (ABI 4)."
    )
    scoped: Literal["all"] | list[Scope] = Field(
        default="all", description="Scopes: abstract_unix_socket, signal (ABI 6)."
    )
    fs_rules: list[FsRule] = Field(
        default_factory=list,
        description=(
            "Allow rules. A rule whose path does not exist is skipped and reported "
            "(skipping an allow rule can only deny more)."
        ),
    )
    net_rules: list[NetRule] = Field(default_factory=list, description="TCP port rules.")
    flags: list[LandlockFlag] = Field(
        default_factory=list,
        description=(
            "restrict_self flags: log_same_exec_off, log_new_exec_on, log_subdomains_off "
            "(ABI 7), tsync (ABI 8)."
        ),
    )
    best_effort: bool = Field(
        default=False,
        description=(
            "When false, any explicitly requested right, scope or flag this kernel cannot "
            "honour is an error; when true it is dropped and reported."
        ),
    )
    required: bool = Field(
        default=True, description="When true, a kernel without Landlock is an error."
    )


def _default_socket_types() -> list[SocketType]:
    return ["stream", "dgram", "seqpacket"]


def _default_ioctl_deny() -> list[IoctlName]:
    return ["TIOCSTI", "TIOCLINUX"]


def _default_sockets() -> list[SocketRule]:
    # Matches cvg_kernel.seccomp.DEFAULT_SOCKETS.
    return [
        SocketRule(family="unix", types=["stream", "dgram", "seqpacket"]),
        SocketRule(family="inet", types=["stream", "dgram"]),
        SocketRule(family="inet6", types=["stream", "dgram"]),
    ]


class SocketRule(CvgModel):
    """One allowed `socket()` family, with the types and protocols allowed for it."""

    family: SocketFamily = Field(
        description="unix (1), inet (2), inet6 (10), netlink (16), packet (17), or a number."
    )
    types: list[SocketType] = Field(
        default_factory=_default_socket_types,
        description=(
            "Allowed types, compared as `type & 0xf`: stream (1), dgram (2), raw (3), "
            "seqpacket (5), or a number up to 15. Omitted: stream, dgram and seqpacket "
            "(raw is only ever allowed by name)."
        ),
    )
    protocols: list[Annotated[int, Field(ge=0, le=0xFFFFFFFF)]] | None = Field(
        default=None, description="Allowed protocol numbers. null or omitted: any protocol."
    )


class Seccomp(CvgModel):
    """The seccomp-bpf program. A foreign architecture, x32 numbers and numbers above the
    syscall table are always handled, whatever these say."""

    deny: list[SyscallName] | None = Field(
        default=None,
        description=(
            "System calls answered with `deny_errno`. Omitted (or null): the default deny "
            "list, `cvg_kernel.seccomp.DEFAULT_DENY`; a plan written by cvg-schema leaves "
            "the key out then."
        ),
    )
    deny_errno: ErrnoName = Field(default="EPERM", description="The errno for `deny`.")
    enosys: list[SyscallName] = Field(
        default_factory=lambda: ["clone3"],
        description="System calls answered ENOSYS, so libc falls back (clone3 to clone).",
    )
    kill: list[SyscallName] = Field(
        default_factory=list, description="System calls that kill the process."
    )
    sockets: list[SocketRule] = Field(
        default_factory=_default_sockets,
        description=(
            "`socket()` is allowed only for a listed family, type and protocol (low 32 bits "
            "compared); other families get EAFNOSUPPORT, other types or protocols EPERM. "
            "Default: unix, inet and inet6, stream and dgram, any protocol; `raw` and "
            "`packet` are never listed by the compiler."
        ),
    )
    clone_namespaces: bool = Field(
        default=False,
        description="When false, `clone` with any CLONE_NEW* flag gets EPERM.",
    )
    ioctl_deny: list[IoctlName] = Field(
        default_factory=_default_ioctl_deny,
        description="ioctl requests refused with EPERM (low 32 bits of the request).",
    )
    memfd_noexec: bool = Field(
        default=True,
        description="`memfd_create` without MFD_NOEXEC_SEAL, or with MFD_EXEC, gets EPERM.",
    )
    listen: bool = Field(
        default=True,
        description=(
            "When false, `listen` gets EPERM. The compiler writes false when the policy "
            "grants neither `tcp_bind` nor unix sockets: listen() on an unbound TCP socket "
            "binds an ephemeral port without calling bind(), out of Landlock's sight."
        ),
    )
    supervise: list[Literal["listen", "signal", "paths", "unix"]] = Field(
        default_factory=list,
        description=(
            "Calls the supervisor decides and performs itself through seccomp user "
            "notification (cvg_kernel.guard), never letting the tool's own call go on. "
            "`listen`: refused (EACCES) on a TCP socket that was never bound, performed "
            "otherwise. `signal` (below Landlock ABI 6): the kill family and SIGIO owners, "
            "allowed only inside the tool's own tree. `paths`: the calls that open, "
            "create, remove or rename by path, for directories that hold a denied or "
            "protected entry. `unix`: the calls that name a UNIX socket address, below "
            "the Landlock ABI that checks them. A plan with any needs a supervisor that "
            "serves the listener."
        ),
    )
    allow: list[SyscallName] | None = Field(
        default=None,
        description=(
            "An allow list: only these calls are allowed (the lists above still decide "
            "first, the argument filters still apply to listed calls); any other gets "
            "`deny_errno`, or kills with `on_violation: kill`. Omitted (or null): no allow "
            "list, every call the lists above do not decide is allowed."
        ),
    )
    on_violation: Literal["errno", "kill"] = Field(
        default="errno",
        description="With `allow`: a call not listed fails with `deny_errno`, or kills.",
    )

    @model_validator(mode="after")
    def _lists_are_consistent(self) -> Seccomp:
        owner: dict[str, str] = {}
        for what in ("deny", "enosys", "kill"):
            names: list[str] = getattr(self, what) or []
            for i, name in enumerate(names):
                if owner.get(name, what) != what:
                    fail(f"{name!r} is in both {owner[name]} and {what}", at=(what, i))
                owner[name] = what
        if not self.clone_namespaces and "clone3" not in owner:
            fail(
                "clone3 must be in enosys, deny or kill unless clone_namespaces is true: "
                "BPF cannot read its flags, so it would bypass the CLONE_NEW* check",
                at=("enosys",),
            )
        return self

    @model_serializer(mode="wrap")
    def _omit_default_deny(self, handler: SerializerFunctionWrapHandler) -> Any:
        # The default deny list lives in cvg_kernel; a plan says "the default" by leaving
        # the key out (cvg-kernel's standard-library reader does not take null here).
        data = handler(self)
        if self.deny is None and isinstance(data, dict):
            data.pop("deny", None)
        # Without an allow list, plans dump (and digest) as they did before it existed.
        if self.allow is None and isinstance(data, dict):
            data.pop("allow", None)
            if self.on_violation == "errno":
                data.pop("on_violation", None)
        if self.listen and isinstance(data, dict):
            data.pop("listen", None)  # plans that allow listen dump as they always did
        if not self.supervise and isinstance(data, dict):
            data.pop("supervise", None)
        return data


class Capabilities(CvgModel):
    """Capabilities: every one not kept is dropped from all five sets."""

    keep: list[Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")]] = Field(
        default_factory=list, description="Capability names to keep."
    )


def _check_plan_env_value(value: str) -> str:
    if "\x00" in value:
        fail("an environment value cannot contain a NUL byte")
    return value


class PlanEnvironment(CvgModel):
    """The tool's whole environment: `set`, plus each `pass` name copied from the caller."""

    set: dict[EnvName, Annotated[str, AfterValidator(_check_plan_env_value)]] = Field(
        default_factory=dict,
        description="Variables set to these values (which may use `${NAME}` from `variables`).",
    )
    pass_: list[EnvName] = Field(
        default_factory=list,
        alias="pass",
        description="Names copied from the caller's environment, if set there.",
    )


class Degradation(CvgModel):
    """Something the target kernel cannot enforce, dropped with `--allow-degraded`."""

    item: str = Field(
        min_length=1,
        max_length=1000,
        description="What was not enforced, e.g. `landlock.scoped: signal`.",
    )
    reason: str = Field(
        min_length=1,
        max_length=1000,
        description="Why, e.g. `needs Landlock ABI 6, this kernel has 4`.",
    )
    rule: RuleAddress | None = Field(
        default=None, description="The policy rule affected, when there is one."
    )
    abi: int | None = Field(
        default=None, ge=1, le=255, description="The Landlock ABI that would enforce it."
    )


class Expansion(CvgModel):
    """One allowed directory replaced by narrower rules so a denied path stays denied."""

    rule: RuleAddress | None = Field(
        default=None, description="The policy grant that was expanded, e.g. `filesystem.read[0]`."
    )
    path: str = Field(min_length=1, max_length=4096, description="The directory granted.")
    denied: list[str] = Field(
        default_factory=list,
        description="The `filesystem.deny` paths inside it that stay denied.",
    )
    denied_by: list[str] = Field(
        default_factory=list,
        description=(
            "For each `denied` path, in the same order, the entry that denies it: "
            "`filesystem.deny[N]`, or `cvg's own state` (cvg's config, cache and state "
            "directories, denied by every compiled policy). Named in the run record when "
            "the supervisor refuses a call there."
        ),
    )
    rules: int = Field(ge=0, description="How many rules replaced the one grant.")
    access: list[FsRight] = Field(
        default_factory=list,
        description=(
            "The grant's rights, which the supervisor gives in the held directories "
            "(seccomp `paths`, cvg_kernel.paths_guard)."
        ),
    )
    held: list[str] = Field(
        default_factory=list,
        description=(
            "The directories that lost the grant to keep a denied entry out (`path` and "
            "each one on the way to a denied entry): no Landlock rule covers them or "
            "what is created directly in them, so the supervisor performs those calls."
        ),
    )
    protected: list[str] = Field(
        default_factory=list,
        description=(
            "Protected entries inside it: they keep the grant's read, list and execute "
            "rights and lose every right to change them."
        ),
    )


class ImpliedDeny(CvgModel):
    """A secret or protected path beneath a grant that the policy did not name exactly."""

    path: str = Field(min_length=1, max_length=4096, description="The entry kept out.")
    mode: Literal["deny", "protect"] = Field(
        description="`deny`: no right at all (a secret); `protect`: readable, never changed."
    )
    rule: RuleAddress = Field(description="The grant it lies beneath, e.g. `filesystem.read[0]`.")
    entry: str = Field(
        min_length=1, max_length=4096, description="The table entry it matched, e.g. `~/.ssh`."
    )
    reason: str = Field(min_length=1, max_length=4096, description="What the entry holds or does.")


class PlanSource(CvgModel):
    """Where a plan came from (informational)."""

    policy_digest: Digest | None = Field(default=None, description="Digest of the policy.")
    policy_path: str | None = Field(
        default=None, max_length=4096, description="The policy file, when there was one."
    )
    facts_digest: Digest | None = Field(
        default=None, description="Digest of the facts it was compiled against."
    )


def _default_rlimits() -> dict[RlimitName, RlimitValue]:
    return {"core": 0}


class UnixReachEntry(CvgModel):
    """One UNIX socket path, or a tree of them, the tool may connect or send to."""

    path: str = Field(description="Absolute; may use `${NAME}` from `variables`.")
    beneath: bool = Field(
        default=False, description="true: every socket beneath this directory; false: this path."
    )


class UnixReach(CvgModel):
    """The pathname UNIX sockets the supervisor lets the tool reach (seccomp `unix`)."""

    reach: list[UnixReachEntry] = Field(
        default_factory=list,
        description=(
            "Checked against the path the address resolves to (symlinks followed, "
            "/proc magic links refused). Abstract addresses are always refused."
        ),
    )


class Plan(MessageBase):
    """A compiled plan: the exact Landlock rules, seccomp program, rlimits and environment
    the kernel layer applies (see docs/plan-format.md)."""

    kind: Literal["cvg.plan"] = Field(default="cvg.plan", description="Always `cvg.plan`.")
    arch: Arch | None = Field(
        default=None,
        description=(
            "The architecture the seccomp program is built for; a mismatch is refused. "
            "null or omitted: the running one."
        ),
    )
    landlock: Landlock = Field(default_factory=Landlock)
    seccomp: Seccomp = Field(default_factory=Seccomp)
    rlimits: dict[RlimitName, RlimitValue] = Field(
        default_factory=_default_rlimits,
        description=(
            "Lower-case RLIMIT names without the prefix. A value is an int (soft = hard), "
            '[soft, hard], or "unlimited". Anything not named is inherited; a limit is only '
            "ever lowered (a request above the current hard limit is an error). The default "
            'when the key is omitted is {"core": 0}, and `core` is 0 unless named.'
        ),
    )
    wall_clock_seconds: int | None = Field(
        default=None,
        ge=1,
        le=7 * 24 * 3600,
        description=(
            "The supervisor ends the run after this many seconds (exit 124). cvg-exec, "
            "which has no supervisor, ignores it. null: no limit."
        ),
    )
    processes: int | None = Field(
        default=None,
        ge=1,
        le=4_194_304,
        description=(
            "RLIMIT_NPROC becomes the user's current process count plus this (a backstop "
            "only; the supervisor counts too). null: not set."
        ),
    )
    capabilities: Capabilities = Field(default_factory=Capabilities)
    environment: PlanEnvironment = Field(default_factory=PlanEnvironment)
    variables: list[EnvName] = Field(
        default_factory=list,
        description=(
            "Late-bound variables (`SCRATCH`, `CWD`) that appear as `${NAME}` in paths and "
            "environment values; the caller supplies them when applying."
        ),
    )
    degraded: list[Degradation] = Field(
        default_factory=list,
        description="What compilation could not enforce on the target kernel (informational).",
    )
    expansions: list[Expansion] = Field(
        default_factory=list,
        description=(
            "Each grant narrowed to keep a `filesystem.deny` or protected path out. The "
            "supervisor serves the held directories (seccomp `paths`), so they stay "
            "listable and writable as the grant says."
        ),
    )
    implied: list[ImpliedDeny] = Field(
        default_factory=list,
        description=(
            "The secrets and protected paths beneath a grant that compiling kept out "
            "because the policy did not name them exactly (informational: `expansions` "
            "enforces them). Omitted: none."
        ),
    )
    source: PlanSource | None = Field(
        default=None, description="Where the plan came from (informational)."
    )
    unix: UnixReach | None = Field(
        default=None,
        description=(
            "With `unix` in `seccomp.supervise`: the socket paths connect() and the send "
            "calls may name, checked and performed by the supervisor (cvg_kernel.unix_guard). "
            "Omitted: none."
        ),
    )

    @model_serializer(mode="wrap")
    def _omit_no_unix(self, handler: SerializerFunctionWrapHandler) -> Any:
        # Plans without the section dump (and digest) as they did before it existed.
        data = handler(self)
        if self.unix is None and isinstance(data, dict):
            data.pop("unix", None)
        if not self.implied and isinstance(data, dict):
            data.pop("implied", None)
        return data

    @model_validator(mode="after")
    def _core_dumps_off(self) -> Plan:
        # Matches cvg-kernel: core dumps stay off unless the plan names `core`.
        self.rlimits.setdefault("core", 0)
        return self

    @model_validator(mode="after")
    def _variables_are_declared(self) -> Plan:
        allowed = frozenset(self.variables)
        hint = "; a plan lists the variables it uses in `variables`"
        for i, rule in enumerate(self.landlock.fs_rules):
            at: tuple[str | int, ...] = ("landlock", "fs_rules", i, "path")
            check_variables(rule.path, allowed, "a path", at=at, hint=hint)
        for name, value in self.environment.set.items():
            at = ("environment", "set", name)
            check_variables(value, allowed, "a value", at=at, hint=hint)
        return self

    def uses_variables(self) -> set[str]:
        """The variable names the plan's paths and environment values actually use."""
        used: set[str] = set()
        for rule in self.landlock.fs_rules:
            used.update(variables_in(rule.path))
        for value in self.environment.set.values():
            used.update(variables_in(value))
        return used
