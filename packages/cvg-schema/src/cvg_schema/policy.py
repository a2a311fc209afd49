"""``cvg.policy``: the version-1 policy a person writes or ``cvg-generate`` proposes.

Everything not granted is denied: every list defaults to empty, every switch to false,
and the resource limits to the finite values written below.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Any, Final, Literal

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
)

from .base import (
    CvgModel,
    EnvName,
    Identifier,
    MessageBase,
    RuleAddress,
    SyscallName,
    check_variables,
    fail,
)

__all__ = [
    "POLICY_SECTIONS",
    "POLICY_VARIABLES",
    "Filesystem",
    "HostPattern",
    "HostRule",
    "Ipc",
    "Network",
    "Policy",
    "PolicyEnvironment",
    "PolicyPath",
    "Port",
    "Reason",
    "Resources",
    "Syscalls",
    "host_kind",
]

POLICY_VARIABLES: Final = frozenset(
    {"CWD", "SCRATCH", "HOME", "POLICY_DIR", "PYTHON", "PYTHON_STDLIB"}
)
"""Variables a policy path or environment value may use as ``${NAME}``."""


def _check_policy_path(value: str) -> str:
    if "\x00" in value:
        fail("a path cannot contain a NUL byte")
    if not value.startswith(("/", "${")):
        fail(f"{value!r} is not absolute: a policy path starts with / or a variable like ${{CWD}}")
    check_variables(value, POLICY_VARIABLES, "a path")
    return value


def _check_policy_env_value(value: str) -> str:
    if "\x00" in value:
        fail("an environment value cannot contain a NUL byte")
    check_variables(value, POLICY_VARIABLES, "an environment value")
    return value


PolicyPath = Annotated[
    str,
    Field(
        min_length=1,
        max_length=4096,
        description=(
            "An absolute path, or one starting with a variable: `${CWD}` (the working "
            "directory at launch), `${SCRATCH}` (a fresh private directory per run), "
            "`${HOME}` (the caller's home), `${POLICY_DIR}` (the directory holding the "
            "policy file), `${PYTHON}` (the system's python3, as its real file), "
            "`${PYTHON_STDLIB}` (that interpreter's standard library). An unknown "
            "variable is an error."
        ),
        json_schema_extra={
            "pattern": r"^(/|\$\{(CWD|SCRATCH|HOME|POLICY_DIR|PYTHON|PYTHON_STDLIB)\})"
        },
        examples=["/usr", "${CWD}", "${SCRATCH}/out"],
    ),
    AfterValidator(_check_policy_path),
]
Port = Annotated[int, Field(ge=1, le=65535, description="A TCP port, 1 to 65535.")]
PolicyEnvValue = Annotated[
    str,
    Field(max_length=131072, description="A value; may use the policy variables."),
    AfterValidator(_check_policy_env_value),
]


class Filesystem(CvgModel):
    """Paths the tool may reach. Each grant covers everything beneath the path."""

    read: list[PolicyPath] = Field(
        default_factory=list,
        description="Read files and list directories beneath each path.",
    )
    write: list[PolicyPath] = Field(
        default_factory=list,
        description="Create, modify and remove beneath each path (implies read).",
    )
    execute: list[PolicyPath] = Field(
        default_factory=list,
        description=(
            "Files that may be executed, including each ELF interpreter (the dynamic "
            "loader) and each `#!` interpreter."
        ),
    )
    deny: list[PolicyPath] = Field(
        default_factory=list,
        description=(
            "Paths that must stay unreachable even beneath a granted path; a grant that "
            "cannot be narrowed around them is refused when the policy is compiled."
        ),
    )


_LABEL_RE: Final = re.compile(r"[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?")


def host_kind(value: str) -> Literal["ip", "name", "wildcard"]:
    """What a valid host pattern is: an IP literal, a host name, or a ``*.suffix``."""
    if value.startswith("*."):
        return "wildcard"
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return "name"
    return "ip"


def _check_host(value: str) -> str:
    if not value.isascii():
        fail(f"{value!r}: write an internationalized name in its xn-- (punycode) form")
    try:
        ipaddress.ip_address(value)
        return value
    except ValueError:
        pass
    if value.startswith("[") and value.endswith("]"):
        fail(f"{value!r}: write an IPv6 address without brackets")
    if value.endswith("."):
        fail(f"{value!r}: write the name without the trailing dot")
    name = value[2:] if value.startswith("*.") else value
    labels = name.lower().split(".")
    if "*" in name:
        fail(f"{value!r}: a wildcard is only allowed as the whole first label, as in *.pypi.org")
    for label in labels:
        if not _LABEL_RE.fullmatch(label):
            fail(
                f"{value!r}: {label!r} is not a host name label (letters, digits, '-' and "
                "'_', 1 to 63 of them, not starting or ending with '-')"
            )
    if labels[-1].isdigit():
        # 10.0.0.300 or 127.1 are not names; getaddrinfo would read some of them as
        # addresses, which only an IP literal rule may grant.
        fail(f"{value!r} is neither an IP address nor a host name (the last label is a number)")
    if value.startswith("*.") and len(labels) < 2:
        fail(f"{value!r}: a wildcard must keep at least two labels, as in *.pypi.org, not *.org")
    return value


HostPattern = Annotated[
    str,
    Field(
        min_length=1,
        max_length=253,
        description=(
            "A host name (`api.github.com`, matched without regard to case), a wildcard "
            "`*.pypi.org` (any name ending in `.pypi.org`, at any depth, but not "
            "`pypi.org` itself), or an IP literal (`10.0.0.5`, `::1`), which is the only "
            "way a client may ask for an address instead of a name."
        ),
        examples=["api.github.com", "*.pypi.org", "10.0.0.5"],
    ),
    AfterValidator(_check_host),
]


class HostRule(CvgModel):
    """One host (or `*.suffix`, or IP literal) and the TCP ports the tool may reach on it."""

    host: HostPattern
    ports: list[Port] = Field(
        min_length=1, description="TCP ports on that host, reached through cvg-run's proxy."
    )


class Network(CvgModel):
    """Network access. Landlock filters TCP ports, not hosts."""

    tcp_connect: list[Port] = Field(
        default_factory=list, description="TCP ports the tool may connect to (any host)."
    )
    tcp_bind: list[Port] = Field(default_factory=list, description="TCP ports it may bind.")
    udp: bool = Field(default=False, description="Whether UDP sockets may be created at all.")
    unix: bool | list[Annotated[str, Field(min_length=1)]] = Field(
        default=False,
        description=(
            "Whether `socket(AF_UNIX)` and datagram `socketpair()` are allowed (stream and "
            "seqpacket pairs always are: they reach nothing else), and which pathname "
            "sockets connect() and the send calls may reach. true: the sockets beneath "
            "the filesystem grants. A list: these socket paths, or every socket beneath "
            "a listed directory (absolute; variables allowed). Landlock checks true from "
            "ABI 9; below it, and for a list on every ABI, cvg-run's supervisor resolves "
            "the address, checks it and connects or sends itself. Abstract addresses "
            "are refused there (Landlock scopes them from ABI 6)."
        ),
    )
    hosts: list[HostRule] = Field(
        default_factory=list,
        description=(
            "Host and port pairs the tool may reach through a proxy cvg-run starts for the "
            "run (HTTP CONNECT and SOCKS5 on a loopback port, named in HTTPS_PROXY, "
            "HTTP_PROXY and ALL_PROXY). Landlock then allows TCP connect only to the "
            "proxy's port, so a tool that ignores the proxy reaches no other port; any "
            "host is still reachable on the proxy's own port number. See docs/hosts.md."
        ),
    )

    @model_serializer(mode="wrap")
    def _omit_no_hosts(self, handler: SerializerFunctionWrapHandler) -> Any:
        # A policy without hosts dumps (and so digests) exactly as it did before the
        # field existed: plan caches and recorded policy digests stay valid.
        data = handler(self)
        if not self.hosts and isinstance(data, dict):
            data.pop("hosts", None)
        return data


class Ipc(CvgModel):
    """Reaching other processes."""

    signal_outside: bool = Field(
        default=False,
        description=(
            "Whether the tool may signal processes outside the sandbox (enforced by a "
            "Landlock scope from ABI 6; below that a known limit)."
        ),
    )


MAX_SECONDS: Final = 31_536_000  # 365 days
MAX_WALL_CLOCK: Final = 604_800  # 7 days, as cvg.plan allows
MAX_MB: Final = 16_777_216  # 16 TiB
MAX_OPEN_FILES: Final = 1_048_576  # the kernel's default nr_open
MAX_PROCESSES: Final = 4_194_304  # the largest pid_max


class Resources(CvgModel):
    """Resource limits. Each is a positive integer; a value above its maximum is refused.
    `wall_clock_seconds` may be null: no wall-clock limit."""

    wall_clock_seconds: int | None = Field(
        default=60,
        ge=1,
        le=MAX_WALL_CLOCK,
        description=(
            "The run is killed (exit 124) after this many seconds. null: no wall-clock "
            "limit (a long-lived server lives as long as its client); absent: 60."
        ),
    )
    cpu_seconds: int = Field(
        default=30, ge=1, le=MAX_SECONDS, description="CPU time per process (RLIMIT_CPU)."
    )
    memory_mb: int = Field(
        default=512,
        ge=1,
        le=MAX_MB,
        description=(
            "Private writable memory per process (RLIMIT_DATA: what a process can fill, not "
            "the address space a runtime reserves), MiB. The supervisor also ends the run "
            "when the tree's resident memory plus the memfds and unlinked in-memory files it "
            "holds pass this in all."
        ),
    )
    file_size_mb: int = Field(
        default=64, ge=1, le=MAX_MB, description="Largest file the tool may write, MiB."
    )
    open_files: int = Field(
        default=256, ge=1, le=MAX_OPEN_FILES, description="Open descriptors per process."
    )
    processes: int = Field(
        default=64,
        ge=1,
        le=MAX_PROCESSES,
        description=(
            "Tasks (processes and their threads) the tool may run at once. The supervisor "
            "counts the threads of the tool's own descendants and ends the run with a named "
            "refusal past this; RLIMIT_NPROC (the user's current count plus this) is only a "
            "backstop."
        ),
    )


class PolicyEnvironment(CvgModel):
    """The tool's whole environment: built from `set` plus the `pass` names, nothing else."""

    set: dict[EnvName, PolicyEnvValue] = Field(
        default_factory=dict, description="Variables set to these values."
    )
    pass_: list[EnvName] = Field(
        default_factory=list,
        alias="pass",
        description="Names copied from the caller's environment, if set there.",
    )


class Syscalls(CvgModel):
    """Which system calls the tool may make: all but a deny list (the default), or only
    an allow list."""

    mode: Literal["denylist", "allowlist"] = Field(
        default="denylist",
        description=(
            "`denylist`: every call except the default deny list, and `allow` takes names "
            "off that list (risky). `allowlist`: only the calls in `allow`; the deny-list "
            "calls stay denied even when listed, unless cvg-validate is given --accept-risk."
        ),
    )
    allow: list[SyscallName] = Field(
        default_factory=list,
        description=(
            "denylist mode: system calls taken off the default deny list (risky). "
            "allowlist mode: the only system calls the tool may make."
        ),
    )
    on_violation: Literal["errno", "kill"] = Field(
        default="errno",
        description=(
            "allowlist mode: a call not in `allow` fails with EPERM (`errno`) or kills the "
            "process with SIGSYS (`kill`, exit status 159)."
        ),
    )

    @model_serializer(mode="wrap")
    def _omit_defaults(self, handler: SerializerFunctionWrapHandler) -> Any:
        # A deny-list policy dumps (and so digests) exactly as before the allowlist mode
        # existed: recorded policy digests and plan caches stay valid.
        data = handler(self)
        if isinstance(data, dict):
            if self.mode == "denylist":
                data.pop("mode", None)
            if self.on_violation == "errno":
                data.pop("on_violation", None)
        return data


class Reason(CvgModel):
    """Why a generated rule exists: the observed event that justified it."""

    event_id: Identifier = Field(
        description="The `id` of the event in the observation, e.g. `e42`.",
        examples=["e42"],
    )
    summary: str = Field(
        min_length=1,
        max_length=1000,
        description="One line saying what the tool did, e.g. `openat /etc/ssl/certs/ca.pem`.",
    )
    observation: str | None = Field(
        default=None,
        max_length=4096,
        description="Which observation the event is in (a digest or file name) when several.",
    )


_ADDRESS_RE: Final = re.compile(
    r"(?P<section>[a-z_]+)\.(?P<field>[a-z_]+)"
    r"(?:\[(?P<index>[0-9]+)\]|\.(?P<key>[A-Za-z_][A-Za-z0-9_]*))?"
)


def _policy_json_schema(schema: dict[str, Any]) -> None:
    """A bare policy file has no kind and no schema_version: neither is required."""


class Policy(MessageBase):
    """A cvg policy, version 1: everything not granted is denied.

    A policy file may omit `kind` and `schema_version` (a bare policy, as a person
    writes it); it is then read as `cvg.policy` of the current schema version.
    """

    model_config = ConfigDict(json_schema_extra=_policy_json_schema)

    kind: Literal["cvg.policy"] = Field(default="cvg.policy", description="Always `cvg.policy`.")
    version: Literal[1] = Field(description="The policy language version. Only 1 exists.")
    filesystem: Filesystem = Field(default_factory=Filesystem)
    network: Network = Field(default_factory=Network)
    ipc: Ipc = Field(default_factory=Ipc)
    resources: Resources = Field(default_factory=Resources)
    environment: PolicyEnvironment = Field(default_factory=PolicyEnvironment)
    syscalls: Syscalls = Field(default_factory=Syscalls)
    reasons: dict[RuleAddress, Annotated[list[Reason], Field(min_length=1)]] = Field(
        default_factory=dict,
        description=(
            "For generated policies: per rule address (`filesystem.read[2]`), the observed "
            "events that justify the rule. Every address must name an existing rule."
        ),
    )

    @field_validator("reasons")
    @classmethod
    def _reasons_point_at_rules(
        cls, value: dict[str, list[Reason]], info: ValidationInfo
    ) -> dict[str, list[Reason]]:
        for address in value:
            problem = _address_problem(address, info.data)
            if problem is not None:
                fail(problem, at=(address,))
        return value

    def rule(self, address: str) -> Any:
        """The value a rule address names, e.g. ``rule("filesystem.read[2]")``.

        Raises KeyError when the address names nothing in this policy.
        """
        problem = _address_problem(address, dict(self))
        if problem is not None:
            raise KeyError(f"{address}: {problem}")
        m = _ADDRESS_RE.fullmatch(address)
        assert m is not None
        section = getattr(self, m["section"])
        value = dict(section.model_dump(by_alias=True))[m["field"]]
        if m["index"] is not None:
            return value[int(m["index"])]
        if m["key"] is not None:
            return value[m["key"]]
        return value


POLICY_SECTIONS: Final[dict[str, type[CvgModel]]] = {
    "filesystem": Filesystem,
    "network": Network,
    "ipc": Ipc,
    "resources": Resources,
    "environment": PolicyEnvironment,
    "syscalls": Syscalls,
}
"""Each section of a policy by its key, with the model that reads it."""


def _address_problem(address: str, data: dict[str, Any]) -> str | None:
    m = _ADDRESS_RE.fullmatch(address)
    if m is None:
        return "not a rule address like filesystem.read[2]"
    section_name, field_name = m["section"], m["field"]
    model = POLICY_SECTIONS.get(section_name)
    if model is None:
        return f"no policy section {section_name!r} (sections: {', '.join(POLICY_SECTIONS)})"
    fields = {f.alias or name: name for name, f in model.model_fields.items()}
    if field_name not in fields:
        return f"{section_name} has no field {field_name!r} (fields: {', '.join(fields)})"
    section = data.get(section_name)
    if not isinstance(section, CvgModel):
        return None  # the section itself failed validation and is reported there
    value = getattr(section, fields[field_name])
    if m["index"] is not None:
        if not isinstance(value, list):
            return f"{section_name}.{field_name} is not a list"
        if int(m["index"]) >= len(value):
            n = len(value)
            return f"{section_name}.{field_name} has {n} {'entry' if n == 1 else 'entries'}"
    if m["key"] is not None:
        if not isinstance(value, dict):
            return f"{section_name}.{field_name} is not a mapping"
        if m["key"] not in value:
            return f"{section_name}.{field_name} has no entry {m['key']!r}"
    return None
