"""Explain, rule by rule, how this kernel enforces a policy (``cvg-validate --explain``).

Every rule of the policy gets a status from the facts cvg-probe proved live:

- ``enforced``: every mechanism the rule relies on is available and proven here;
- ``partial``: some are, some are not (``lost`` says what no longer holds);
- ``unenforceable``: none are.

The explanation compiles the policy for the facts' ABI first, so what it says about
symlinks, missing paths and deny expansions is exactly what the plan will do.
:data:`STANDING_LIMITS` lists what the policy language cannot express on any kernel.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Final, Literal

from cvg_kernel.seccomp import DEFAULT_DENY
from cvg_schema import Degradation, Facts, Plan, Policy
from cvg_schema.plan import ABI_OF_FS_RIGHT, ImpliedDeny

from .compile import Compiled, compile_report
from .errors import Finding
from .expand import inside
from .variables import late_bound_in

__all__ = [
    "FEATURES",
    "STANDING_LIMITS",
    "Report",
    "RuleExplanation",
    "StandingLimit",
    "Status",
    "explain_policy",
    "report_dict",
]

Status = Literal["enforced", "partial", "unenforceable"]


@dataclass(frozen=True)
class RuleExplanation:
    """How one policy rule is enforced here."""

    address: str  # e.g. "filesystem.read[0]", "network.tcp_connect[1]", "resources.cpu_seconds"
    status: Status
    mechanism: str  # e.g. "Landlock read_file+read_dir", "seccomp socket filter"
    abi: int | None  # the Landlock ABI the mechanism needs, when it is Landlock
    lost: str | None  # what does not hold here, when status is not "enforced"
    note: str | None = None  # what else is worth knowing (a symlink, an expansion, a cost)


@dataclass(frozen=True)
class StandingLimit:
    """Something the policy language cannot express at all, on any kernel."""

    topic: str
    reason: str


STANDING_LIMITS: Final[tuple[StandingLimit, ...]] = (
    StandingLimit(
        "hosts",
        "tcp_connect names TCP ports only: Landlock filters ports, not addresses, so a "
        "granted port is reachable on every host. network.hosts filters host:port in "
        "cvg-run's proxy, for tools that use the proxy variables; Landlock then allows "
        "connect only to the proxy's port, so any host is still reachable directly on "
        "that one port number (chosen per run), and the proxy itself is reachable by "
        "every local process during the run",
    ),
    StandingLimit(
        "udp",
        "UDP is all or nothing (a seccomp socket filter): no released Landlock ABI filters "
        "UDP by port",
    ),
    StandingLimit(
        "file metadata",
        "stat, chmod, chown and utime are outside Landlock: the tool can see that any path "
        "exists and change the metadata of files it owns, granted or not",
    ),
    StandingLimit(
        "dynamic loader",
        "an execute grant does not stop `ld.so ./file` (or `python file`) from running a "
        "file the tool can only read: treat every read grant as an execute grant",
    ),
    StandingLimit(
        "protected paths created during a run",
        "a protected path that does not exist when the run starts (a new .git/hooks entry, "
        "~/.config/autostart, ~/.local/bin) can be created beneath a write grant: cvg-run "
        "moves it aside once the tool's tree is gone and exits 122, but until then it is "
        "there for anything outside the sandbox (docs/protected-paths.md)",
    ),
    StandingLimit(
        "terminal",
        "TIOCSTI and TIOCLINUX are refused, but what the tool writes to a terminal reaches "
        "the emulator unfiltered: escape sequences can set its title or, where it allows "
        "OSC 52, the clipboard; give an untrusted tool a pipe, not the terminal",
    ),
    StandingLimit(
        "core helper",
        "core dumps are off (RLIMIT_CORE 0), but when the host's core_pattern is a pipe "
        "(apport, systemd-coredump) the kernel ignores that limit: a tool that crashes "
        "itself starts the helper, as root and outside the sandbox, with its memory",
    ),
    StandingLimit(
        "deny expansion",
        "a filesystem.deny is compiled into rules on the siblings of each path toward it: "
        "entries created later in an expanded directory are not covered (denied until "
        "recompiled), and the expanded directories themselves lose the grant",
    ),
    StandingLimit(
        "signals below ABI 6",
        "without Landlock's signal scope (ABI 6) cvg-run's supervisor decides every signal "
        "the tool sends (seccomp user notification): it is sent from the supervisor, so the "
        "receiver sees the supervisor's pid as the sender; the warm Sandbox API cannot do "
        "this and runs such a policy only as degraded",
    ),
    StandingLimit(
        "unix sockets through the supervisor",
        "with network.unix below Landlock ABI 9, connect and the sends to an address are "
        "performed by cvg-run's supervisor (servers see its pid in SO_PEERCRED); sendmsg on "
        "a stream socket goes on as the tool's own call, and a datagram socket swapped in "
        "at its number meanwhile reaches a datagram server unchecked",
    ),
    StandingLimit(
        "supervisor killed",
        "a supervisor killed with SIGKILL cannot clean up: processes the tool started can be "
        "left running (they stay confined, but are no longer limited in time)",
    ),
)

FEATURES: Final[dict[str, str]] = {
    "seccomp": "seccomp.filter",
    "signal": "landlock.scope.signal",
    "abstract_unix_socket": "landlock.scope.abstract_unix_socket",
    "connect_tcp": "landlock.net.connect_tcp",
    "bind_tcp": "landlock.net.bind_tcp",
    "cpu": "rlimit.cpu",
    "as": "rlimit.as",
    "data": "rlimit.data",
    "fsize": "rlimit.fsize",
    "nofile": "rlimit.nofile",
    "nproc": "rlimit.nproc",
}
"""The cvg-probe feature names this module reads (Landlock fs rights are
``landlock.fs.<right>``)."""


def _fs_feature(right: str) -> str:
    return f"landlock.fs.{right}"


@dataclass(frozen=True)
class _Part:
    """One mechanism a rule relies on: available when the ABI has it and the feature is
    proven (``feature`` None: nothing to prove, e.g. the supervisor)."""

    feature: str | None
    abi: int | None
    lost: str


@dataclass
class Report:
    """The explanation of one policy against one set of facts."""

    kernel: str
    arch: str
    abi: int
    rules: list[RuleExplanation]
    standing_limits: tuple[StandingLimit, ...]
    degraded: list[Degradation]
    findings: list[Finding]
    plan: Plan = field(repr=False)

    def rule(self, address: str) -> RuleExplanation:
        """The explanation of one rule address. KeyError if the policy has no such rule."""
        for r in self.rules:
            if r.address == address:
                return r
        raise KeyError(address)


class _Judge:
    def __init__(self, facts: Facts, abi: int) -> None:
        self.facts = facts
        self.abi = abi

    def missing(self, part: _Part) -> str | None:
        if part.abi is not None and self.abi < part.abi:
            have = "no Landlock" if self.abi == 0 else f"ABI {self.abi}"
            what = f"{part.feature} needs" if part.feature else "needs"
            return f"{part.lost} ({what} Landlock ABI {part.abi}, this kernel has {have})"
        if part.feature is not None and not self.facts.proven(part.feature):
            f = self.facts.feature(part.feature)
            why = "not probed" if f is None else f"probe failed: {f.error or f.how}"
            return f"{part.lost} ({part.feature} not proven: {why})"
        return None

    def rule(
        self,
        address: str,
        mechanism: str,
        parts: Sequence[_Part],
        *,
        abi: int | None = None,
        note: str | None = None,
    ) -> RuleExplanation:
        lost = [m for m in (self.missing(p) for p in parts) if m is not None]
        if not lost:
            status: Status = "enforced"
        elif len(lost) == len(parts):
            status = "unenforceable"
        else:
            status = "partial"
        return RuleExplanation(address, status, mechanism, abi, "; ".join(lost) or None, note)


def _join(notes: Sequence[str | None]) -> str | None:
    text = "; ".join(n for n in notes if n)
    return text or None


_LOST_FS: Final[dict[str, str]] = {
    "read_file": "reading files is not restricted",
    "read_dir": "listing directories is not restricted",
    "execute": "executing files is not restricted",
    "write_file": "writing files is not restricted",
    "truncate": "truncating files is not restricted",
    "ioctl_dev": "device ioctls are not restricted",
    "refer": "renaming or linking across directories is not restricted",
    "resolve_unix": "connecting to pathname unix sockets is not restricted",
}


def _fs_parts(rights: Sequence[str]) -> list[_Part]:
    return [
        _Part(
            _fs_feature(r),
            ABI_OF_FS_RIGHT[r],
            _LOST_FS.get(r, f"{r.replace('_', ' ')} is not restricted"),
        )
        for r in rights
    ]


def _implied_note(implied: ImpliedDeny) -> str:
    kept = "denied" if implied.mode == "deny" else "kept read-only"
    what = "secret" if implied.mode == "deny" else "protected path"
    return (
        f"{implied.path} is {kept}, implied: a {what} ({implied.entry}: {implied.reason}); "
        "a grant naming it exactly grants it"
    )


def _explain_filesystem(policy: Policy, c: Compiled, judge: _Judge) -> list[RuleExplanation]:
    out: list[RuleExplanation] = []
    abi = c.abi
    fs = policy.filesystem
    for name in ("read", "write", "execute"):
        for i in range(len(getattr(fs, name))):
            address = f"filesystem.{name}[{i}]"
            notes: list[str | None] = []
            if address in c.missing:
                out.append(
                    RuleExplanation(
                        address,
                        "enforced",
                        "none: the path does not exist, so nothing is granted",
                        None,
                        None,
                        f"{c.missing[address]} is missing; compile again once it exists",
                    )
                )
                continue
            path = c.paths[address]
            rights = list(c.rights.get(address, []))
            if address in c.resolved:
                shown, real = c.resolved[address]
                notes.append(f"{shown} is a symlink: the rule is on {real}")
            if late_bound_in(path):
                notes.append(f"{path} is resolved when the plan is applied")
            for e in c.plan.expansions:
                if e.path == path:
                    notes.append(
                        f"narrowed around {', '.join(e.denied)} into {e.rules} rules: "
                        f"{e.path} itself is no longer granted and entries created in it "
                        "later are not covered"
                    )
            notes.extend(_implied_note(i) for i in c.plan.implied if i.rule == address)
            if name == "write" and 1 <= abi < 2:
                notes.append(
                    "refer needs Landlock ABI 2: moving or linking files between "
                    "directories is always denied (more restrictive, not less)"
                )
            if name == "execute" or "execute" in rights:
                notes.append("the dynamic loader can run any readable file (standing limit)")
            parts = _fs_parts(rights) if abi > 0 else []
            writable = "write_file" in rights or any(
                inside(path, c.paths[a]) and "write_file" in c.rights.get(a, []) for a in c.paths
            )
            if not writable:
                # What a read-only grant promises beyond reading: the lost rights are
                # the ones compile lists as degraded for it.
                parts.append(_Part(_fs_feature("truncate"), 3, "files beneath can be truncated"))
                if inside(path, "/dev") or inside("/dev", path):
                    parts.append(
                        _Part(
                            _fs_feature("ioctl_dev"),
                            5,
                            "devices opened beneath accept any ioctl",
                        )
                    )
            if abi == 0:
                parts.insert(0, _Part(None, 1, "filesystem access is not restricted"))
            shown_rights = "+".join(r for r in rights if r != "resolve_unix") or "nothing"
            out.append(
                judge.rule(
                    address,
                    f"Landlock {shown_rights}",
                    parts,
                    abi=1,  # every filesystem grant is enforced from ABI 1; see lost for more
                    note=_join(notes),
                )
            )
    for i, _ in enumerate(fs.deny):
        address = f"filesystem.deny[{i}]"
        narrowed = c.deny_effect.get(address, [])
        notes = []
        if narrowed:
            expanded = [
                e
                for e in c.plan.expansions
                if any(c.paths.get(a) == e.path for a in narrowed) and e.denied
            ]
            rules = sum(e.rules for e in expanded)
            mechanism = (
                f"Landlock: {len(expanded)} grant(s) narrowed into {rules} rules"
                if expanded
                else "Landlock: the grants inside it are removed"
            )
            notes.append(f"affects {', '.join(dict.fromkeys(narrowed))}")
            if expanded:
                notes.append("entries created later in an expanded directory are not covered")
        else:
            mechanism = "Landlock default deny (inside no grant: this entry changes nothing)"
        parts = [
            _Part(None, 1, "no Landlock: the denied path is reachable"),
            _Part(_fs_feature("read_file"), 1, "reading the denied path is not prevented"),
        ]
        out.append(judge.rule(address, mechanism, parts, abi=1, note=_join(notes)))
    return out


def _explain_network(policy: Policy, judge: _Judge) -> list[RuleExplanation]:
    out: list[RuleExplanation] = []
    net = policy.network
    seccomp = FEATURES["seccomp"]
    tcp = bool(net.tcp_connect or net.tcp_bind or net.hosts)
    for key, right, verb in (
        ("tcp_connect", "connect_tcp", "connected to"),
        ("tcp_bind", "bind_tcp", "bound"),
    ):
        ports: list[int] = getattr(net, key)
        address = f"network.{key}"
        if not tcp:
            out.append(
                judge.rule(
                    address,
                    "seccomp socket filter: no TCP sockets at all",
                    [_Part(seccomp, None, "TCP sockets can be created")],
                )
            )
        else:
            allowed = (
                f"ports {', '.join(map(str, ports))}; every other port denied"
                if ports
                else "no port granted: every port denied"
            )
            if key == "tcp_connect" and net.hosts:
                allowed += "; plus the network.hosts proxy's port, chosen per run"
            out.append(
                judge.rule(
                    address,
                    f"Landlock {right} ({allowed}); seccomp allows TCP stream sockets only "
                    "(no MPTCP or SCTP)",
                    [
                        _Part(FEATURES[right], 4, f"any TCP port can be {verb}"),
                        _Part(seccomp, None, "MPTCP and SCTP stream sockets are not refused"),
                    ],
                    abi=4,
                )
            )
        for i, port in enumerate(ports):
            out.append(
                judge.rule(
                    f"{address}[{i}]",
                    f"Landlock {right} rule on port {port}",
                    [
                        _Part(
                            FEATURES[right],
                            4,
                            f"ports are not filtered: not only {port}, every port can be {verb}",
                        )
                    ],
                    abi=4,
                    note="any host: Landlock filters ports, not addresses",
                )
            )
    out.extend(_explain_hosts(policy, judge))
    if net.udp:
        out.append(
            judge.rule(
                "network.udp",
                "seccomp socket filter: UDP datagram sockets allowed (protocol 0 or 17)",
                [_Part(seccomp, None, "other datagram protocols (ICMP, UDP-Lite) are not refused")],
                note="UDP reaches any host and port (standing limit)",
            )
        )
    else:
        out.append(
            judge.rule(
                "network.udp",
                "seccomp socket filter: no datagram inet/inet6 sockets",
                [_Part(seccomp, None, "UDP sockets can be created")],
            )
        )
    if net.unix:
        out.append(
            judge.rule(
                "network.unix",
                "seccomp socket filter allows AF_UNIX; pathname sockets: Landlock "
                "resolve_unix (ABI 9, unix: true), else cvg-run's supervisor checks and "
                "performs connect and the sends to an address, and refuses abstract ones",
                [_Part(seccomp, None, "unix sockets can be created and connected anywhere")],
            )
        )
    else:
        out.append(
            judge.rule(
                "network.unix",
                "seccomp socket filter: no socket(AF_UNIX) (socketpair stays allowed)",
                [_Part(seccomp, None, "unix sockets can be created and connected anywhere")],
            )
        )
    return out


_HOSTS_BYPASS: Final = (
    "a tool that ignores the proxy variables can connect to any host and port directly"
)


def _explain_hosts(policy: Policy, judge: _Judge) -> list[RuleExplanation]:
    net = policy.network
    if not net.hosts:
        return []
    seccomp = FEATURES["seccomp"]
    dns = "DNS and UDP are allowed (network.udp)" if net.udp else "DNS and UDP are denied"
    out = [
        judge.rule(
            "network.hosts",
            "cvg-run's proxy (HTTP CONNECT, plain HTTP, SOCKS5 on 127.0.0.1, a port chosen "
            "per run) relays only the listed host:port pairs and resolves names itself; "
            "Landlock connect_tcp allows only the proxy's port",
            [
                _Part(FEATURES["connect_tcp"], 4, _HOSTS_BYPASS),
                _Part(seccomp, None, "MPTCP and SCTP stream sockets are not refused"),
            ],
            abi=4,
            note=(
                "filters tools that honour HTTPS_PROXY, HTTP_PROXY or ALL_PROXY (set by "
                "cvg-run, with NO_PROXY empty); a tool that connects directly is refused by "
                "Landlock on every port but the proxy's, and on that one port number any "
                f"host is reachable directly; {dns}; IP literals only when listed; "
                "cvg-exec alone starts no proxy"
            ),
        )
    ]
    for i, rule in enumerate(net.hosts):
        if rule.host.startswith("*."):
            what, how = f"any name ending in {rule.host[1:]}", f"any depth, not {rule.host[2:]}"
        else:
            try:
                ipaddress.ip_address(rule.host)
                what, how = f"the address {rule.host}", "asked for as that literal"
            except ValueError:
                what, how = rule.host, "any case, resolved by the proxy"
        ports = ", ".join(map(str, rule.ports))
        out.append(
            judge.rule(
                f"network.hosts[{i}]",
                f"proxy allows {what} on port{'s' if len(rule.ports) > 1 else ''} {ports} ({how})",
                [_Part(FEATURES["connect_tcp"], 4, _HOSTS_BYPASS)],
                abi=4,
            )
        )
    return out


def _explain_ipc(policy: Policy, judge: _Judge) -> list[RuleExplanation]:
    if policy.ipc.signal_outside:
        return [
            RuleExplanation(
                "ipc.signal_outside",
                "enforced",
                "none: signals to other processes are allowed (permission checks apply)",
                None,
                None,
            )
        ]
    if judge.abi < 6:
        # cvg-run's supervisor scopes signals instead (seccomp.supervise: signal).
        return [
            judge.rule(
                "ipc.signal_outside",
                "cvg-run's supervisor, through seccomp user notification: the kill family "
                "and SIGIO owners only inside the tool's own tree; capabilities dropped",
                [
                    _Part(
                        FEATURES["seccomp"],
                        None,
                        "processes of the same user outside the sandbox can be signalled",
                    )
                ],
                note="the warm Sandbox API has no supervisor: there it is degraded",
            )
        ]
    return [
        judge.rule(
            "ipc.signal_outside",
            "Landlock scope signal; capabilities dropped (no CAP_KILL)",
            [
                _Part(
                    FEATURES["signal"],
                    6,
                    "processes of the same user outside the sandbox can be signalled",
                ),
                # Without CAP_KILL the kernel's own check still limits signals to processes
                # of the same user: the part that holds at every ABI.
                _Part(None, None, "processes of other users can be signalled"),
            ],
            abi=6,
        )
    ]


def _explain_resources(policy: Policy, facts: Facts, judge: _Judge) -> list[RuleExplanation]:
    res = policy.resources
    out = [
        judge.rule(
            "resources.wall_clock_seconds",
            "supervisor (cvg-run)",
            [_Part(None, None, "")],
            note=(
                "no limit (null)"
                if res.wall_clock_seconds is None
                else f"{res.wall_clock_seconds} s; cvg-exec alone has no supervisor and ignores it"
            ),
        )
    ]
    for key, limit, name, note in (
        ("cpu_seconds", "cpu", "RLIMIT_CPU", "CPU seconds per process"),
        (
            "memory_mb",
            "data",
            "RLIMIT_DATA",
            "private writable memory per process (not address space reserved); the "
            "supervisor bounds the tree's resident memory in all",
        ),
        ("file_size_mb", "fsize", "RLIMIT_FSIZE", "largest file a process may write"),
        ("open_files", "nofile", "RLIMIT_NOFILE", "descriptors per process"),
    ):
        out.append(
            judge.rule(
                f"resources.{key}",
                f"rlimit {name}",
                [_Part(FEATURES[limit], None, f"{name} is not applied")],
                note=note,
            )
        )
    root = facts.euid == 0
    out.append(
        judge.rule(
            "resources.processes",
            "supervisor (cvg-run) counts the tool's descendants; rlimit RLIMIT_NPROC backstop",
            [
                _Part(None, None, ""),
                _Part(FEATURES["nproc"], None, "no RLIMIT_NPROC backstop"),
            ],
            note=(
                "RLIMIT_NPROC does not bind root: the supervisor's count is the limit"
                if root
                else "RLIMIT_NPROC counts every process of the user (a backstop only)"
            ),
        )
    )
    return out


def _explain_environment(policy: Policy) -> list[RuleExplanation]:
    out = []
    mechanism = "environment built from the policy alone when the tool is executed"
    for name, value in policy.environment.set.items():
        late = late_bound_in(value)
        note = f"uses ${{{late[0]}}}, bound per run" if late else None
        out.append(
            RuleExplanation(f"environment.set.{name}", "enforced", mechanism, None, None, note)
        )
    for i, name in enumerate(policy.environment.pass_):
        out.append(
            RuleExplanation(
                f"environment.pass[{i}]",
                "enforced",
                mechanism,
                None,
                None,
                f"{name} is copied from the caller's environment when set there",
            )
        )
    return out


def _allow_entry(judge: _Judge, i: int, note: str, listed: str) -> RuleExplanation:
    """The explanation of ``syscalls.allow[i]`` in a policy whose filter is a ``listed`` list."""
    return judge.rule(
        f"syscalls.allow[{i}]",
        "seccomp filter",
        [_Part(FEATURES["seccomp"], None, f"the rest of the {listed} list is not enforced either")],
        note=note,
    )


def _explain_allowlist(policy: Policy, judge: _Judge, plan: Any) -> list[RuleExplanation]:
    seccomp = FEATURES["seccomp"]
    allowed = set(plan.seccomp.allow or ())
    answer = "kills the process (SIGSYS)" if policy.syscalls.on_violation == "kill" else "EPERM"
    extra = len(allowed - set(policy.syscalls.allow))
    out = [
        judge.rule(
            "syscalls.allow",
            f"seccomp filter: only {len(allowed)} system calls ({extra} of them what the "
            f"launcher needs before exec); any other {answer}",
            [_Part(seccomp, None, "no system call is denied")],
        )
    ]
    for i, name in enumerate(policy.syscalls.allow):
        if name in DEFAULT_DENY:
            note = (
                "taken off the default deny list (risky)"
                if name in allowed
                else "on the default deny list: stays denied (cvg-validate --accept-risk)"
            )
        else:
            note = "allowed (argument filters stay)"
        out.append(_allow_entry(judge, i, note, "allow"))
    return out


def _explain_syscalls(policy: Policy, judge: _Judge, plan: Any) -> list[RuleExplanation]:
    if policy.syscalls.mode == "allowlist":
        return _explain_allowlist(policy, judge, plan)
    seccomp = FEATURES["seccomp"]
    allow = policy.syscalls.allow
    kept = [n for n in DEFAULT_DENY if n not in allow]
    out = [
        judge.rule(
            "syscalls.allow",
            f"seccomp filter: {len(kept)} system calls on the default deny list stay denied",
            [_Part(seccomp, None, "no system call is denied")],
        )
    ]
    for i, name in enumerate(allow):
        note = (
            "taken off the default deny list (risky)"
            if name in DEFAULT_DENY
            else "not on the default deny list: no effect (argument filters stay)"
        )
        out.append(_allow_entry(judge, i, note, "deny"))
    return out


def explain_policy(
    policy: Policy,
    *,
    facts: Facts,
    variables: Mapping[str, str],
    policy_path: str | None = None,
    accept_risk: bool = False,
) -> Report:
    """Explain every rule of ``policy`` on the kernel ``facts`` describes.

    Raises PolicyError when the policy cannot be compiled (e.g. an unknown system call).
    """
    compiled = compile_report(
        policy,
        variables=variables,
        facts=facts,
        policy_path=policy_path,
        accept_risk=accept_risk,
    )
    judge = _Judge(facts, compiled.abi)
    rules = [
        *_explain_filesystem(policy, compiled, judge),
        *_explain_network(policy, judge),
        *_explain_ipc(policy, judge),
        *_explain_resources(policy, facts, judge),
        *_explain_environment(policy),
        *_explain_syscalls(policy, judge, compiled.plan),
    ]
    return Report(
        kernel=facts.kernel,
        arch=facts.arch,
        abi=compiled.abi,
        rules=rules,
        standing_limits=STANDING_LIMITS,
        degraded=list(compiled.plan.degraded),
        findings=list(compiled.findings),
        plan=compiled.plan,
    )


def report_dict(report: Report) -> dict[str, Any]:
    """The report as plain JSON-ready data (for ``--explain --json``)."""
    counts = {s: 0 for s in ("enforced", "partial", "unenforceable")}
    for r in report.rules:
        counts[r.status] += 1
    return {
        "kernel": report.kernel,
        "arch": report.arch,
        "landlock_abi": report.abi,
        "summary": counts,
        "rules": [asdict(r) for r in report.rules],
        "degraded": [d.model_dump(mode="json") for d in report.degraded],
        "warnings": [
            {"address": f.address, "severity": f.severity, "message": f.message}
            for f in report.findings
        ],
        "standing_limits": [asdict(s) for s in report.standing_limits],
    }
