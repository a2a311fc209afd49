"""Compile a policy into a plan (docs/plan-format.md) for one Landlock ABI.

The plan is exact for its target: handled rights, network rights and scopes are listed
explicitly for that ABI rather than as ``"all"``, and ``best_effort`` is false, so a
plan compiled for ABI 6 refuses to load on an ABI-4 kernel instead of silently
enforcing less. Whatever the target ABI cannot enforce is listed in ``degraded`` with
the policy rule it weakens, which is what cvg-run shows before refusing (or, with
``--allow-degraded``, running anyway).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from cvg_kernel import libc
from cvg_kernel.landlock import FILE_RIGHTS, KNOWN_ABI, effective_abi
from cvg_kernel.seccomp import ARCH_SPECIFIC, DEFAULT_DENY, LAUNCHER_ALLOW
from cvg_kernel.seccomp import table as syscall_table
from cvg_schema import FS_RIGHTS, Degradation, Facts, Plan, Policy, digest
from cvg_schema.base import variables_in
from cvg_schema.plan import ABI_OF_FS_RIGHT

from .errors import Finding, PolicyError
from .expand import DEFAULT_MAX_RULES, Deny, FsView, Grant, OsView, apply_denies, inside
from .implied import Implied, implied_denies
from .own_state import own_state_denies
from .variables import LATE_BOUND, expand, late_bound_in

__all__ = [
    "EXECUTE_RIGHTS",
    "READ_RIGHTS",
    "WRITE_RIGHTS",
    "Compiled",
    "compile_policy",
    "compile_report",
    "handled_fs_for",
    "target_abi",
]

MIB: Final = 1024 * 1024

READ_RIGHTS: Final = frozenset({"read_file", "read_dir"})
# Write implies read. make_char/make_block are never granted: a device node the tool
# creates would reach hardware no path rule describes (and needs CAP_MKNOD anyway).
# refer lets files move between directories the tool may write, both ends granted.
# ioctl_dev: device ioctls on devices the tool may write to (a tty, /dev/null).
WRITE_RIGHTS: Final = READ_RIGHTS | frozenset(
    {
        "write_file",
        "remove_file",
        "remove_dir",
        "make_reg",
        "make_dir",
        "make_sock",
        "make_fifo",
        "make_sym",
        "truncate",
        "refer",
        "ioctl_dev",
    }
)
# The kernel maps an executable to run it, which Landlock checks as read_file; read_dir
# on a directory grant so the tool can find what it may run there.
EXECUTE_RIGHTS: Final = frozenset({"execute", "read_file", "read_dir"})

# Connecting to a pathname UNIX socket is controlled from ABI 9 (resolve_unix). It goes
# with write (a socket the tool may create, it may use), and with read when the policy
# allows socket(AF_UNIX) at all, so network.unix reaches the sockets the tool can see.
_RESOLVE_UNIX: Final = "resolve_unix"

_LISTS: Final = ("read", "write", "execute")
_IPPROTO_TCP: Final = 6
_IPPROTO_UDP: Final = 17


def _order(rights: frozenset[str] | set[str]) -> list[str]:
    return [r for r in FS_RIGHTS if r in rights]


def handled_fs_for(abi: int) -> list[str]:
    """The filesystem rights a plan for Landlock ABI ``abi`` handles: every one that ABI
    knows, make_char and make_block included (handled and never granted: always denied).

    At ABI 0 the list is ABI 1's (see ``compile_report``)."""
    level = max(abi, 1)
    return [r for r in FS_RIGHTS if ABI_OF_FS_RIGHT[r] <= min(level, KNOWN_ABI)]


def target_abi(abi: int | None = None, facts: Facts | None = None) -> int:
    """The ABI to compile for: the facts' effective ABI, else ``abi``, else this kernel's."""
    if facts is not None:
        return facts.effective_landlock_abi
    if abi is not None:
        if abi < 0:
            raise PolicyError(f"Landlock ABI {abi} is negative")
        return abi
    return int(effective_abi()[0])


@dataclass
class Compiled:
    """A plan and what compiling it noticed."""

    plan: Plan
    abi: int
    findings: list[Finding] = field(default_factory=list)
    # Per filesystem rule address: (the path as written after expansion, its real path),
    # only where they differ (a symlink such as /lib -> usr/lib).
    resolved: dict[str, tuple[str, str]] = field(default_factory=dict)
    # Per filesystem grant address (read/write/execute): the path it became in the plan
    # before any deny narrowed it (the real path, or the late-bound one as written).
    paths: dict[str, str] = field(default_factory=dict)
    # Per filesystem grant address: the rights its own rule carries at the target ABI
    # (before merging with other grants on the same path).
    rights: dict[str, list[str]] = field(default_factory=dict)
    # Per filesystem rule address whose path did not exist: the expanded path.
    missing: dict[str, str] = field(default_factory=dict)
    # Per filesystem.deny address: the grant addresses it narrowed or removed.
    deny_effect: dict[str, list[str]] = field(default_factory=dict)
    # The table patterns looked at for implied denies, with what each matched: a plan
    # holds while they match the same (cvg-run's cache compares them).
    watched: dict[str, list[str]] = field(default_factory=dict)


def _expand(value: str, variables: Mapping[str, str], address: str) -> str:
    try:
        out = expand(value, variables)
    except PolicyError as e:
        raise PolicyError(e.message, address=address) from None
    # A compile-time value that itself contains "${...}" would be read as a variable when
    # the plan is applied (a working directory named "${SCRATCH}" must not become one).
    kept = [n for n in variables_in(value) if n in LATE_BOUND]
    if variables_in(out) != kept or ("${" in out and not kept):
        raise PolicyError(
            f"{value!r} expands to {out!r}: a variable's value may not contain '${{'",
            address=address,
        )
    return out


def _fs_grants(
    policy: Policy,
    variables: Mapping[str, str],
    view: FsView,
    out: Compiled,
) -> list[Grant]:
    rights_of = {"read": READ_RIGHTS, "write": WRITE_RIGHTS, "execute": EXECUTE_RIGHTS}
    merged: dict[str, tuple[set[str], list[str], bool]] = {}
    for name in _LISTS:
        for i, raw in enumerate(getattr(policy.filesystem, name)):
            address = f"filesystem.{name}[{i}]"
            path = _expand(raw, variables, address)
            rights = set(rights_of[name])
            if name == "write" or (name == "read" and policy.network.unix is True):
                rights.add(_RESOLVE_UNIX)
            if late_bound_in(path):
                # Resolved only when the plan is applied (cvg-kernel opens the path and
                # keeps only the file rights on a non-directory). ".." would climb out of
                # the per-run directory into whatever holds it, which nobody can review.
                if ".." in path.split("/"):
                    raise PolicyError(f"{raw}: '..' after ${{SCRATCH}}", address=address)
                key, late = os.path.normpath(path), True
            else:
                if not os.path.isabs(path):
                    raise PolicyError(f"{path!r} is not absolute", address=address)
                # Landlock attaches a rule to the inode the path resolves to, so the plan
                # carries the real path: /lib -> usr/lib is /usr/lib, and a rule follows
                # /etc/resolv.conf to wherever it points now.
                try:
                    real = view.realpath(path)
                    kind = view.kind(real)
                except OSError as e:
                    # cvg-kernel, opening it as the same user, would fail the same way.
                    raise PolicyError(
                        f"cannot look at {path}: {e.strerror or e}", address=address
                    ) from None
                if kind == "missing":
                    # Skipping an allow rule can only deny more; cvg-kernel would skip it.
                    out.missing[address] = path
                    out.findings.append(
                        Finding("warning", address, f"{path} does not exist: nothing granted")
                    )
                    continue
                if real != os.path.normpath(path):
                    out.resolved[address] = (path, real)
                if kind != "dir":
                    rights &= FILE_RIGHTS
                key, late = real, False
            out.paths[address] = key
            out.rights[address] = sorted(rights)
            entry = merged.setdefault(key, (set(), [], late))
            entry[0].update(rights)
            entry[1].append(address)
    _refuse_links_in_write_grants(policy, variables, view)
    return [
        Grant(path, frozenset(rights), tuple(addresses), late)
        for path, (rights, addresses, late) in merged.items()
    ]


def _refuse_links_in_write_grants(
    policy: Policy, variables: Mapping[str, str], view: FsView
) -> None:
    """A grant nested in a write grant must not resolve through a link beneath it: the
    tool may have planted that link in an earlier run, so that ``read: work/data``
    names whatever it chose. cvg-kernel opens such rules with RESOLVE_NO_SYMLINKS;
    this is the same refusal at compile time, where the plan would carry the target."""
    writes = []
    for raw in policy.filesystem.write:
        path = expand(raw, variables)
        if not late_bound_in(path):
            writes.append(os.path.normpath(path))
    if not writes:
        return
    for name in _LISTS:
        for i, raw in enumerate(getattr(policy.filesystem, name)):
            path = expand(raw, variables)
            if late_bound_in(path):
                continue  # resolved when applied, where cvg-kernel refuses links
            path = os.path.normpath(path)
            for outer in writes:
                if path == outer or not inside(path, outer):
                    continue
                expected = os.path.join(view.realpath(outer), os.path.relpath(path, outer))
                if view.realpath(path) != expected:
                    raise PolicyError(
                        f"{raw} resolves through a symbolic link beneath the write grant "
                        f"{outer}, where the tool may have planted it; grant the target "
                        "itself, or remove the link",
                        address=f"filesystem.{name}[{i}]",
                    )


def _denies(policy: Policy, variables: Mapping[str, str], view: FsView) -> list[Deny]:
    out = []
    for i, raw in enumerate(policy.filesystem.deny):
        address = f"filesystem.deny[{i}]"
        path = _expand(raw, variables, address)
        if late_bound_in(path):
            # The expansion lists directories at compile time; ${SCRATCH} does not exist
            # yet, so a deny inside it cannot be honoured and is refused, not dropped.
            raise PolicyError(
                f"{raw}: a deny path cannot use ${{{late_bound_in(path)[0]}}}, which is "
                "only known when the plan is applied",
                address=address,
            )
        if not os.path.isabs(path):
            raise PolicyError(f"{path!r} is not absolute", address=address)
        # The real path: the inode to keep unreachable. A missing one is still denied by
        # name (its parent is expanded, so creating it later is not covered either).
        out.append(Deny(view.realpath(path), address))
    return out


# Their ioctls do nothing useful without capabilities (RNDADDENTROPY and the
# like need CAP_SYS_ADMIN, which the tool never holds), so reading them below
# ABI 5 loses nothing; refusing every policy that reads /dev/urandom on a stock
# Ubuntu 24.04 kernel would.
_HARMLESS_DEVICES = frozenset(
    {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}
)


def _dev_related(path: str) -> bool:
    # Device nodes live in /dev; a read grant there (or on / or anything holding /dev)
    # is where an unhandled ioctl_dev matters.
    if path in _HARMLESS_DEVICES:
        return False
    return inside(path, "/dev") or inside("/dev", path)


def _degrade(
    out: list[Degradation], item: str, reason: str, rule: str | None, abi: int | None
) -> None:
    out.append(Degradation(item=item, reason=reason, rule=rule, abi=abi))


def compile_report(
    policy: Policy,
    *,
    variables: Mapping[str, str],
    abi: int | None = None,
    facts: Facts | None = None,
    policy_path: str | None = None,
    max_rules: int = DEFAULT_MAX_RULES,
    view: FsView | None = None,
    accept_risk: bool = False,
    implied: bool = True,
) -> Compiled:
    """Compile ``policy`` and keep what compilation noticed (see :class:`Compiled`).

    ``variables`` holds the compile-time variables (see ``variables.context``);
    ``${SCRATCH}`` stays as it is and is listed in ``plan.variables``.
    In allowlist mode the plan's allow list is ``syscalls.allow`` plus what the launcher
    calls before exec (``cvg_kernel.seccomp.LAUNCHER_ALLOW``); a listed call of the default
    deny list stays denied unless ``accept_risk``.
    With ``implied`` (the default) the secrets and protected paths beneath the grants
    are kept out unless named (:mod:`cvg_policy.implied`); the learning sandbox, which
    denies the secrets itself and lets the tool write what it would, passes False.
    Raises PolicyError naming the rule for anything that cannot be compiled.
    """
    view = OsView() if view is None else view
    target = target_abi(abi, facts)
    arch = facts.arch if facts is not None else libc.machine()
    arch = {"arm64": "aarch64"}.get(arch, arch)
    if arch not in ("x86_64", "aarch64"):
        raise PolicyError(f"architecture {arch!r} is not supported (x86_64, aarch64)")
    out = Compiled(plan=Plan.model_validate({"kind": "cvg.plan"}), abi=target)
    degraded: list[Degradation] = []

    fs = _filesystem(policy, variables, view, out, target, max_rules, implied)
    net = _network(policy, target, degraded)
    scoped = _scopes(policy, target, degraded)
    _filesystem_degradations(policy, target, out, fs.grants, degraded)
    seccomp = _seccomp(policy, arch, net, target, accept_risk)
    if fs.expansions:
        # A held directory has no rule (Landlock would refuse listing it and creating
        # in it): the supervisor serves the calls that name a path there.
        seccomp["supervise"] = [*seccomp.get("supervise", ()), "paths"]
    res = policy.resources  # bounds (wall clock at most 7 days, as a plan holds) are the schema's
    env_set = {
        name: _expand(value, variables, f"environment.set.{name}")
        for name, value in policy.environment.set.items()
    }
    used: set[str] = set()
    unix_section = _unix_reach(policy, variables, view, fs) if "unix" in seccomp.get(
        "supervise", ()) else None  # fmt: skip
    reach_paths = [e["path"] for e in (unix_section or {}).get("reach", [])]
    for value in (*(r["path"] for r in fs.rules), *env_set.values(), *reach_paths):
        used.update(late_bound_in(value))
    source: dict[str, Any] = {"policy_digest": digest(policy), "policy_path": policy_path}
    if facts is not None:
        source["facts_digest"] = digest(facts)

    plan = {
        "kind": "cvg.plan",
        "arch": arch,
        "landlock": {
            "handled_fs": fs.handled,
            "handled_net": net.handled,
            "scoped": scoped,
            "fs_rules": fs.rules,
            "net_rules": net.rules,
            "flags": [],
            "best_effort": False,
            # At ABI 0 the rules above are written for ABI 1, so the same plan confines
            # on a kernel that has Landlock after all; not required, because there is
            # none on the target and `degraded` already says what that costs.
            "required": target > 0,
        },
        "seccomp": seccomp,
        "rlimits": {
            "cpu": res.cpu_seconds,
            "data": res.memory_mb * MIB,
            "fsize": res.file_size_mb * MIB,
            "nofile": res.open_files,
            "core": 0,
        },
        "processes": res.processes,
        "wall_clock_seconds": res.wall_clock_seconds,
        "environment": {"set": env_set, "pass": list(policy.environment.pass_)},
        "variables": sorted(used),
        "degraded": [d.model_dump() for d in degraded],
        "expansions": [e.model_dump() for e in fs.expansions],
        "implied": fs.implied,
        "source": source,
    }
    if unix_section is not None:
        plan["unix"] = unix_section
    out.plan = Plan.model_validate(plan)
    return out


@dataclass
class _Fs:
    handled: list[str]
    rules: list[dict[str, Any]]
    grants: list[Grant]
    expansions: list[Any]
    unix_grants: list[str]
    implied: list[dict[str, str]]


def _filesystem(
    policy: Policy,
    variables: Mapping[str, str],
    view: FsView,
    out: Compiled,
    target: int,
    max_rules: int,
    with_implied: bool,
) -> _Fs:
    """Grants, denies narrowed into them, and the rules the target ABI can hold."""
    grants = _fs_grants(policy, variables, view, out)
    denies = _denies(policy, variables, view) + own_state_denies(grants, view)
    named = {
        name: [p for a, p in out.paths.items() if a.startswith(f"filesystem.{name}[")]
        for name in _LISTS
    }
    implied = Implied()
    if with_implied:
        implied = implied_denies(
            grants, named, view, cwd=variables.get("CWD"), home=variables.get("HOME"),
            env=os.environ, explicit=denies,
        )  # fmt: skip
    out.watched = implied.watched
    denies += implied.denies
    result = apply_denies(grants, denies, view=view, max_rules=max_rules)
    out.findings.extend(result.findings)
    out.deny_effect = result.effect
    handled_fs = handled_fs_for(target)
    handled_set = frozenset(handled_fs)
    out.rights = {a: _order(set(r) & handled_set) for a, r in out.rights.items()}
    rules: dict[str, set[str]] = {}
    for g in result.grants:
        rules.setdefault(g.path, set()).update(g.access & handled_set)
    fs_rules = [
        {"path": path, "access": _order(rights)} for path, rights in sorted(rules.items()) if rights
    ]
    if len(fs_rules) > max_rules:
        raise PolicyError(f"the plan needs {len(fs_rules)} filesystem rules, more than {max_rules}")
    # network.unix: true reaches the sockets beneath the grants that carry resolve_unix,
    # narrowed around denies as Landlock's rules are (the supervisor's list below ABI 9).
    unix = sorted({g.path for g in result.grants if _RESOLVE_UNIX in g.access})
    cited = [
        {"path": d.path, "mode": d.mode, "rule": rule, "entry": entry, "reason": why}
        for d in implied.denies
        for rule, entry, why in [implied.cited[d.path]]
    ]
    return _Fs(handled_fs, fs_rules, grants, list(result.expansions), unix, cited)


@dataclass
class _Net:
    handled: list[str]
    rules: list[dict[str, Any]]
    sockets: list[dict[str, Any]]
    tcp: bool  # TCP sockets may be made at all


def _network(policy: Policy, target: int, degraded: list[Degradation]) -> _Net:
    """Landlock's port rules (ABI 4) and the seccomp socket filter (every ABI)."""
    net = policy.network
    net_rights: dict[int, set[str]] = {}
    for port in net.tcp_connect:
        net_rights.setdefault(port, set()).add("connect_tcp")
    for port in net.tcp_bind:
        net_rights.setdefault(port, set()).add("bind_tcp")
    for i, rule in enumerate(net.hosts):
        for j, port in enumerate(rule.ports):
            if port in net.tcp_connect:
                # tcp_connect reaches every host on that port directly, so the proxy's
                # host filter would promise what the kernel does not hold.
                raise PolicyError(
                    f"port {port} of {rule.host} is also in network.tcp_connect, which "
                    "grants it on every host: drop it from one of the two",
                    address=f"network.hosts[{i}].ports[{j}]",
                )
    # network.hosts goes through cvg-run's proxy: TCP sockets are allowed, and cvg-run
    # adds the one connect rule for the proxy's port, chosen per run, to this plan.
    tcp = bool(net_rights) or bool(net.hosts)
    sockets: list[dict[str, Any]] = []
    if net.unix:
        sockets.append({"family": "unix", "types": ["stream", "dgram", "seqpacket"]})
    for family in ("inet", "inet6"):
        # Landlock's TCP rules see only IPPROTO_TCP: protocol 0 or 6 keeps MPTCP (262)
        # and SCTP (132) stream sockets out, which would otherwise bypass the port rules.
        if tcp:
            sockets.append({"family": family, "types": ["stream"], "protocols": [0, _IPPROTO_TCP]})
        # UDP only (not ICMP "ping" sockets or UDP-Lite): all Landlock cannot filter.
        if net.udp:
            sockets.append({"family": family, "types": ["dgram"], "protocols": [0, _IPPROTO_UDP]})
    # With neither TCP nor UDP granted, inet/inet6 are not listed at all: socket() fails
    # with EAFNOSUPPORT, so "no network" holds even where Landlock has no TCP rules.
    if target >= 4:
        handled = ["bind_tcp", "connect_tcp"]
        rules = [{"port": p, "access": sorted(r)} for p, r in sorted(net_rights.items())]
    else:
        handled, rules = [], []
        _network_below_abi_4(policy, target, tcp, degraded)
    return _Net(handled, rules, sockets, tcp)


def _network_below_abi_4(
    policy: Policy, target: int, tcp: bool, degraded: list[Degradation]
) -> None:
    net = policy.network
    if tcp:
        for key in ("tcp_connect", "tcp_bind"):
            ports = getattr(net, key)
            what = f"only ports {', '.join(map(str, ports))}" if ports else "no port"
            verb = "connected to" if key == "tcp_connect" else "bound"
            _degrade(
                degraded,
                f"network.{key}: {what}",
                f"TCP port rules need Landlock ABI 4, the target has {target}: "
                f"any TCP port can be {verb}",
                f"network.{key}",
                4,
            )
    if net.hosts:
        _degrade(
            degraded,
            "network.hosts: only through the proxy",
            f"TCP port rules need Landlock ABI 4, the target has {target}: a tool that "
            "ignores the proxy variables can connect to any host and port directly",
            "network.hosts",
            4,
        )


def _scopes(policy: Policy, target: int, degraded: list[Degradation]) -> list[str]:
    """Landlock's scopes (ABI 6). Below it the supervisor scopes signals instead (see
    :func:`_seccomp`); abstract sockets need the scope only when AF_UNIX is granted."""
    if target >= 6:
        # Abstract UNIX sockets name no file, so no path rule covers them: always scoped.
        return ["abstract_unix_socket"] + ([] if policy.ipc.signal_outside else ["signal"])
    if policy.network.unix and not _unix_supervised(policy, target):
        # With unix false seccomp refuses socket(AF_UNIX), which covers abstract
        # sockets at every ABI; only a granted AF_UNIX needs the scope. Where the
        # supervisor mediates the UNIX calls it refuses abstract addresses itself.
        _degrade(
            degraded,
            "landlock.scoped: abstract_unix_socket",
            f"abstract UNIX socket scoping needs Landlock ABI 6, the target has {target}: "
            "the tool can connect to abstract sockets outside the sandbox",
            "network.unix",
            6,
        )
    return []


def _filesystem_degradations(
    policy: Policy, target: int, out: Compiled, grants: list[Grant], degraded: list[Degradation]
) -> None:
    """What the target ABI cannot hold of the filesystem rules."""
    if target == 0:
        for name in (*_LISTS, "deny"):
            for i, value in enumerate(getattr(policy.filesystem, name)):
                _degrade(
                    degraded,
                    f"filesystem.{name}[{i}]: {value}",
                    "the target kernel has no Landlock: filesystem access is not restricted",
                    f"filesystem.{name}[{i}]",
                    1,
                )
        return
    for name in ("read", "execute"):
        for i in range(len(getattr(policy.filesystem, name))):
            address = f"filesystem.{name}[{i}]"
            if address in out.missing:
                continue
            path = out.paths[address]
            if any(inside(path, g.path) and "write_file" in g.access for g in grants):
                continue
            # refer below ABI 2 is not here: unhandled, cross-directory rename and
            # link are always denied, which is stricter (explain says so).
            if target < 3:
                _degrade(
                    degraded,
                    f"{address}: truncate",
                    f"truncate is controlled from Landlock ABI 3, the target has {target}: "
                    f"files beneath {path} can be truncated, as can any file anywhere that "
                    "the user may write by its permissions",
                    address,
                    3,
                )
            if target < 5 and _dev_related(path):
                _degrade(
                    degraded,
                    f"{address}: ioctl_dev",
                    f"device ioctls are controlled from Landlock ABI 5, the target has "
                    f"{target}: devices opened beneath {path} accept any ioctl",
                    address,
                    5,
                )


def _seccomp(
    policy: Policy, arch: str, net: _Net, target: int, accept_risk: bool
) -> dict[str, Any]:
    """The filter: sockets, listen, what the supervisor decides, and the lists."""
    known = syscall_table(arch)
    allow = set()
    for i, name in enumerate(policy.syscalls.allow):
        if name not in known and name not in ARCH_SPECIFIC:
            raise PolicyError(
                f"unknown system call {name!r} on {arch}", address=f"syscalls.allow[{i}]"
            )
        allow.add(name)
    seccomp: dict[str, Any] = {"sockets": net.sockets}
    supervise = []
    if not (policy.network.tcp_bind or policy.network.unix):
        seccomp["listen"] = False
    elif net.tcp:
        # A TCP socket can be made: listen() on one never bound would bind an ephemeral
        # port beside the granted ones, so the supervisor decides each listen().
        supervise.append("listen")
    if _unix_supervised(policy, target):
        # Below ABI 9 (or for a list of sockets, which Landlock cannot say) the
        # supervisor resolves, checks and performs connect and the sends to an address
        # (cvg_kernel.unix_guard), against the plan's `unix` section.
        supervise.append("unix")
    if target < 6 and not policy.ipc.signal_outside:
        # Below ABI 6 the supervisor scopes signals (cvg_kernel.guard): the filter hands
        # it every call that can signal another process.
        supervise.append("signal")
    if supervise:
        seccomp["supervise"] = supervise
    if policy.syscalls.mode == "allowlist":
        # The deny list still decides first: a listed deny-list call stays denied unless
        # the risk was accepted (cvg-validate --accept-risk), so an allow list generated
        # from a trace cannot quietly reopen ptrace or mount.
        taken_off = allow if accept_risk else set()
        seccomp["deny"] = [n for n in DEFAULT_DENY if n not in taken_off]
        launcher = {n for n in LAUNCHER_ALLOW if n in known}
        seccomp["allow"] = sorted((allow - set(seccomp["deny"])) | launcher)
        seccomp["on_violation"] = policy.syscalls.on_violation
    else:
        # Not on the deny list (e.g. read): nothing to take off, nothing to do.
        seccomp["deny"] = [n for n in DEFAULT_DENY if n not in allow]
    return seccomp


def _unix_supervised(policy: Policy, target: int) -> bool:
    unix = policy.network.unix
    return bool(unix) and (target < 9 or unix is not True)


def _unix_reach(
    policy: Policy, variables: Mapping[str, str], view: FsView, fs: _Fs
) -> dict[str, Any]:
    """The plan's `unix` section: what the supervisor lets connect and send reach."""
    unix = policy.network.unix
    if unix is True:
        return {"reach": [{"path": p, "beneath": True} for p in fs.unix_grants]}
    reach = []
    for i, raw in enumerate(unix or []):
        address = f"network.unix[{i}]"
        path = _expand(raw, variables, address)
        if late_bound_in(path):
            reach.append({"path": os.path.normpath(path), "beneath": True})
            continue
        if not os.path.isabs(path):
            raise PolicyError(f"{path!r} is not absolute", address=address)
        # A socket may not exist yet (its server starts later): a missing path is kept.
        real = view.realpath(path)
        reach.append({"path": real, "beneath": view.kind(real) == "dir"})
    return {"reach": reach}


def compile_policy(
    policy: Policy,
    *,
    variables: Mapping[str, str],
    abi: int | None = None,
    facts: Facts | None = None,
    policy_path: str | None = None,
    max_rules: int = DEFAULT_MAX_RULES,
    accept_risk: bool = False,
) -> Plan:
    """Compile ``policy`` to a plan for one Landlock ABI: ``facts``' effective ABI when
    given, else ``abi``, else this kernel's (capped by CVG_LANDLOCK_ABI_MAX).

    Raises PolicyError (naming the rule) for anything that cannot be compiled.
    """
    return compile_report(
        policy,
        variables=variables,
        abi=abi,
        facts=facts,
        policy_path=policy_path,
        max_rules=max_rules,
        accept_risk=accept_risk,
    ).plan


def degraded_by_rule(plan: Plan) -> dict[str, list[Degradation]]:
    """The plan's degradations grouped by policy rule address (None: no single rule)."""
    out: dict[str, list[Degradation]] = {}
    for d in plan.degraded:
        out.setdefault(d.rule or "", []).append(d)
    return out
