"""One denial to its cause, the policy rule involved and the smallest change that allows it.

The record says what was refused and by which mechanism; this module reads the policy
to say why (which grant is missing, or which grant covers the path with the wrong
rights) and proposes the narrowest change: the exact file rather than its directory,
the exact port rather than a range, one limit raised rather than all.
"""

from __future__ import annotations

import math
import os
import posixpath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from cvg_kernel.interpreter import exec_interpreter
from cvg_kernel.seccomp import DENY_REASONS
from cvg_policy.defaults import is_per_process
from cvg_schema.run import Connection, Denial

from .change import Change, Context
from .risk import RiskNote, risk_of

__all__ = ["Change", "Context", "Finding", "attribute", "attribute_connection", "variable_form"]


@dataclass(frozen=True)
class Finding:
    cause: str
    rule: str | None
    change: Change | None = None
    risk: RiskNote | None = None


# Rights Landlock checks on the directory that holds the entry, not on the entry.
_PARENT_RIGHTS: Final = frozenset(
    {
        "make_reg",
        "make_dir",
        "make_sock",
        "make_fifo",
        "make_sym",
        "remove_file",
        "remove_dir",
        "refer",
    }
)
_WRITE_RIGHTS: Final = frozenset({"write_file", "truncate", "ioctl_dev"}) | _PARENT_RIGHTS
_OP_RIGHT: Final = {
    "read": "read_file",
    "write": "write_file",
    "create": "make_reg",
    "remove": "remove_file",
    "rename": "refer",
    "link": "refer",
    "execute": "execute",
    "connect": "connect_tcp",
    "bind": "bind_tcp",
    "signal": "signal",
}

# Calls that fail with EPERM for want of a capability: cvg-run drops every capability,
# and a policy has no way to hand one back.
_NEEDS_ROOT: Final = frozenset(
    {
        "setuid",
        "setgid",
        "setreuid",
        "setregid",
        "setresuid",
        "setresgid",
        "setgroups",
        "setfsuid",
        "setfsgid",
        "chown",
        "fchown",
        "lchown",
        "fchownat",
        "mknod",
        "mknodat",
        "chroot",
        "mount",
        "umount2",
        "sethostname",
        "setdomainname",
        "settimeofday",
        "clock_settime",
        "reboot",
        "init_module",
        "finit_module",
        "delete_module",
        "iopl",
        "ioperm",
        "setpriority",
        "sched_setscheduler",
        "capset",
        "setrlimit",
        "prlimit64",
    }
)

_RESOURCE_OF_RLIMIT: Final = {
    "as": "memory_mb",
    "data": "memory_mb",
    "rss": "memory_mb",
    "nproc": "processes",
    "nofile": "open_files",
    "fsize": "file_size_mb",
    "cpu": "cpu_seconds",
}
_RESOURCE_MAX: Final = {
    "memory_mb": 16_777_216,
    "processes": 4_194_304,
    "open_files": 1_048_576,
    "file_size_mb": 16_777_216,
    "cpu_seconds": 31_536_000,
    "wall_clock_seconds": 604_800,
}
_RESOURCE_WORDS: Final = {
    "memory_mb": "private writable memory per process",
    "processes": "processes at once",
    "open_files": "open descriptors per process",
    "file_size_mb": "largest file size",
    "cpu_seconds": "CPU seconds per process",
    "wall_clock_seconds": "seconds of wall clock",
}
_UNITS: Final = {
    "memory_mb": "MiB",
    "file_size_mb": "MiB",
    "cpu_seconds": "s",
    "wall_clock_seconds": "s",
    "processes": "",
    "open_files": "",
}

_MMAP_LEN: Final = re.compile(r"\bmmap\(\s*[^,]*,\s*(\d+)")
_RESIDENT: Final = re.compile(r"held (\d+) MiB resident")
_PROCESS_COUNT: Final = re.compile(r"(\d+)\s+(?:processes|tasks)")
_AF: Final = re.compile(r"\bAF_([A-Z0-9]+)")
_SOCK: Final = re.compile(r"\bSOCK_(STREAM|DGRAM|RAW|SEQPACKET|PACKET)\b")


def variable_form(path: str, variables: Mapping[str, str]) -> str:
    """``path`` written with the most specific of ``${SCRATCH}``, ``${CWD}``, ``${HOME}``
    that holds it, so the grant means the same thing on the next run."""
    best: tuple[int, str] | None = None
    for name in ("SCRATCH", "CWD", "HOME"):
        base = variables.get(name)
        if not base or base == "/" or not os.path.isabs(base):
            continue
        base = posixpath.normpath(base)
        holds = path == base or path.startswith(base + "/")
        if holds and (best is None or len(base) > best[0]):
            best = (len(base), name)
    if best is None:
        return path
    length, name = best
    return "${" + name + "}" + path[length:]


def real_path(path: str) -> str:
    """``path`` with symlinks resolved as far as they exist here; as written when it
    cannot be looked at (a NUL byte from a hostile record, a loop)."""
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return posixpath.normpath(path)


def _expand(value: str, variables: Mapping[str, str]) -> str | None:
    out = value
    for name, base in variables.items():
        out = out.replace("${" + name + "}", base)
    if "${" in out:
        return None
    return posixpath.normpath(out)


def _inside(path: str, parent: str) -> bool:
    return parent == "/" or path == parent or path.startswith(parent.rstrip("/") + "/")


def _covering(ctx: Context, field: str, path: str) -> list[tuple[int, str]]:
    """The ``(index, value)`` of each entry of ``filesystem.<field>`` beneath which
    ``path`` lies (the path as written and as resolved are both tried)."""
    paths = {posixpath.normpath(path), real_path(path)}
    out = []
    for i, raw in enumerate(getattr(ctx.policy.filesystem, field)):
        grant = _expand(raw, ctx.variables)
        if grant is None:
            continue
        grants = {grant, real_path(grant)}
        if any(_inside(p, g) for p in paths for g in grants):
            out.append((i, raw))
    return out


def _refs(field: str, entries: list[tuple[int, str]]) -> str:
    return ", ".join(f"filesystem.{field}[{i}] ({raw})" for i, raw in entries)


def _fs(d: Denial, ctx: Context) -> Finding:
    right = d.right or _OP_RIGHT.get(d.op or "", "read_file")
    path = d.path
    if path is None:
        return Finding(
            f"Landlock refused {d.syscall} ({right}), but the record names no path",
            d.rule,
        )
    path = posixpath.normpath(path)
    denied = _covering(ctx, "deny", path)
    if denied:
        i, raw = denied[0]
        return Finding(
            f"{path} lies beneath filesystem.deny[{i}] ({raw}), which keeps it unreachable "
            "whatever is granted; remove that entry only if the tool truly needs it",
            f"filesystem.deny[{i}]",
        )
    if is_per_process(path):
        return Finding(
            f"{d.syscall} was refused on {path}, the process's own /proc entry: each "
            "process has new inodes there, so no filesystem rule written before the run "
            "can name them (a rule on /proc/self would name cvg-run's own); no policy "
            "change fixes it, and most programs fall back when it is refused",
            None,
        )
    if right in ("make_char", "make_block"):
        return Finding(
            f"{d.syscall} tried to create a device node at {path}: no policy grants that "
            "(it would reach hardware no path rule describes, and needs root anyway)",
            None,
        )
    if right == "execute":
        field, verb = "execute", "executing"
    elif right in _WRITE_RIGHTS:
        field, verb = "write", _write_verb(right)
    elif right in ("read_file", "read_dir"):
        field, verb = "read", "listing" if right == "read_dir" else "reading"
    else:
        return Finding(
            f"Landlock refused {d.syscall} on {path} ({right}); no policy rule grants "
            f"{right} on its own",
            d.rule,
        )
    target = posixpath.dirname(path) if right in _PARENT_RIGHTS else path
    target = target or "/"
    rule = f"filesystem.{field}"
    grants = _covering(ctx, field, target)
    if field == "read":
        grants += [(i, raw) for i, raw in _covering(ctx, "write", target)]
        if right == "read_file":
            grants += _covering(ctx, "execute", target)
    if grants and right == "execute":
        interp = _interpreter_of(d, path)
        if interp is not None and not _covering(ctx, "execute", interp):
            # The kernel opens the interpreter for exec too ("#!" line or ELF PT_INTERP),
            # and Landlock wants execute on it as well.
            change = Change("add", "filesystem", "execute", variable_form(interp, ctx.variables))
            return Finding(
                f"{d.syscall} was refused executing {path}: the file itself is granted by "
                f"{_refs(field, grants)}, but its interpreter {interp} is not in "
                "filesystem.execute",
                rule,
                change,
                risk_of(change, ctx, real_path=interp),
            )
    if grants:
        return Finding(
            f"{path} is covered by {_refs(field, grants)}, yet {d.syscall} was refused "
            f"{verb} it (the grant's path may not have existed, or resolved elsewhere, "
            "when the policy was compiled); no further grant would change that",
            rule,
        )
    others = []
    for other in ("read", "write", "execute"):
        if other != field:
            others += [(other, i, raw) for i, raw in _covering(ctx, other, target)]
    where = target if target == path else f"{target} (the directory that holds {path})"
    if others:
        names = ", ".join(f"filesystem.{o}[{i}] ({raw})" for o, i, raw in others)
        cause = (
            f"{d.syscall} was refused {verb} {path}: {where} is covered only by {names}, "
            f"which does not allow {verb}; no {rule} grant covers it"
        )
    else:
        cause = f"{d.syscall} was refused {verb} {path}: no {rule} grant covers {where}"
    value = variable_form(target, ctx.variables)
    change = Change("add", "filesystem", field, value)
    return Finding(cause, rule, change, risk_of(change, ctx, real_path=target))


_INTERP_NOTE: Final = re.compile(r"its interpreter (/[^:]+): ")


def _interpreter_of(d: Denial, path: str) -> str | None:
    """The program the kernel also opens to run ``path``: named by the record's detail
    when the tracer saw it, else read from the file (``#!`` or the ELF PT_INTERP)."""
    m = _INTERP_NOTE.search(d.detail or "")
    if m is not None:
        return m.group(1)
    return exec_interpreter(path)


def _write_verb(right: str) -> str:
    if right.startswith("make_"):
        return "creating"
    if right.startswith("remove_"):
        return "removing"
    if right == "refer":
        return "moving or linking"
    if right == "truncate":
        return "truncating"
    if right == "ioctl_dev":
        return "an ioctl on"
    return "writing"


def _net(d: Denial, ctx: Context) -> Finding:
    right = d.right or _OP_RIGHT.get(d.op or "", "connect_tcp")
    field = "tcp_bind" if right == "bind_tcp" else "tcp_connect"
    rule = f"network.{field}"
    verb = "binding" if field == "tcp_bind" else "connecting to"
    if d.port is None:
        return Finding(
            f"Landlock refused {d.syscall} ({verb} a TCP port), but the record names no port",
            rule,
        )
    granted = getattr(ctx.policy.network, field)
    cause = f"{d.syscall} was refused {verb} TCP port {d.port}: {rule} "
    cause += f"grants only {', '.join(map(str, granted))}" if granted else "grants no port"
    change = Change("add", "network", field, d.port)
    return Finding(cause, rule, change, risk_of(change, ctx))


def _scope(d: Denial, ctx: Context) -> Finding:
    right = d.right or ("signal" if d.op == "signal" else None)
    if right == "signal":
        change = Change("set", "ipc", "signal_outside", True)
        return Finding(
            f"{d.syscall} was refused signalling a process outside the sandbox: "
            "ipc.signal_outside is false",
            "ipc.signal_outside",
            change,
            risk_of(change, ctx),
        )
    return Finding(
        f"{d.syscall} was refused reaching an abstract UNIX socket outside the sandbox: "
        "cvg always scopes abstract sockets (they name no file a rule could grant), so no "
        "policy can allow it; give the tool a pathname socket under a granted directory",
        None,
    )


# socket(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC|SOCK_NONBLOCK): glibc's nscd client.
_NSCD_PROBE: Final = re.compile(
    r"socket\(\s*(?:AF_(?:UNIX|LOCAL)|0x1|1)\s*,\s*"
    r"(?:0x80801|526337|SOCK_STREAM\|SOCK_CLOEXEC\|SOCK_NONBLOCK)\b"
)
_SOCKET_ARGS: Final = re.compile(
    r"\bsocket(?:pair)?\(\s*(0x[0-9a-fA-F]+|\d+)\s*,\s*(0x[0-9a-fA-F]+|\d+)"
)
_FAMILY_NUMBERS: Final = {1: "UNIX", 2: "INET", 10: "INET6", 16: "NETLINK", 17: "PACKET"}
_TYPE_NUMBERS: Final = {1: "STREAM", 2: "DGRAM", 3: "RAW", 5: "SEQPACKET", 10: "PACKET"}


def _socket_kind(d: Denial) -> tuple[str | None, str | None]:
    """The family and type of a refused socket call, from its detail: strace's names
    (``socket(AF_INET, SOCK_DGRAM, ...)``) or the raw registers (``socket(2, 2, 0)``)."""
    text = d.detail or ""
    family = _AF.search(text)
    sock = _SOCK.search(text)
    fam = family.group(1) if family else None
    kind = sock.group(1) if sock else None
    raw = _SOCKET_ARGS.search(text)
    if raw is not None:
        f, t = int(raw.group(1), 0), int(raw.group(2), 0)
        fam = fam or _FAMILY_NUMBERS.get(f & 0xFFFFFFFF, str(f))
        kind = kind or _TYPE_NUMBERS.get(t & 0xF, str(t & 0xF))
    if fam == "LOCAL":
        fam = "UNIX"
    return fam, kind


def _seccomp(d: Denial, ctx: Context) -> Finding:
    name = d.syscall
    if name in DENY_REASONS:
        change = Change("add", "syscalls", "allow", name)
        return Finding(
            f"{name} is on cvg's default seccomp deny list (it {DENY_REASONS[name]}); "
            "syscalls.allow does not list it",
            "syscalls.allow",
            change,
            risk_of(change, ctx),
        )
    if name in ("socket", "socketpair"):
        return _socket(d, ctx)
    if name in ("clone", "clone3"):
        why = (
            "clone3 always gets ENOSYS under cvg (BPF cannot read its flags; the C library "
            "falls back to clone)"
            if name == "clone3"
            else "a clone with a namespace flag (CLONE_NEW*) is always refused: namespaces "
            "hand out capabilities, and syscalls.allow cannot lift an argument check"
        )
        return Finding(f"{why}; no policy can allow it", None)
    if name == "ioctl":
        return Finding(
            "ioctl TIOCSTI/TIOCLINUX (typing into a terminal) is always refused: it would "
            "let the tool type commands into the caller's shell; no policy can allow it",
            None,
        )
    if name == "memfd_create":
        return Finding(
            "memfd_create without MFD_NOEXEC_SEAL is always refused: an executable memfd "
            "runs code no execute rule saw; no policy can allow it (create it with "
            "MFD_NOEXEC_SEAL)",
            None,
        )
    if name in ("sendto", "sendmsg", "sendmmsg"):
        return Finding(
            f"{name} with MSG_FASTOPEN is always refused: it connects past Landlock's TCP "
            "port check; no policy can allow it (use connect, then send)",
            None,
        )
    return Finding(
        f"the seccomp filter refused {name} ({d.errno or 'no errno'}); it is not on the "
        "deny list syscalls.allow can change, so no policy can allow it",
        d.rule,
    )


def _socket(d: Denial, ctx: Context) -> Finding:
    family, kind = _socket_kind(d)
    if family is None:
        if d.rule == "network.unix":
            family = "UNIX"
        elif d.rule == "network.udp":
            family, kind = "INET", "DGRAM"
    if family == "UNIX":
        change = Change("set", "network", "unix", True)
        cause = f"{d.syscall}(AF_UNIX) was refused: network.unix is false"
        if _NSCD_PROBE.search(d.detail or ""):
            cause += (
                " (a non-blocking AF_UNIX stream socket is how the C library looks for nscd "
                "during a user or host lookup, and it carries on without one: if the tool "
                "did not fail here, leave it refused)"
            )
        return Finding(
            cause,
            "network.unix",
            change,
            risk_of(change, ctx),
        )
    if family in ("INET", "INET6") and kind == "DGRAM":
        change = Change("set", "network", "udp", True)
        return Finding(
            f"{d.syscall}(AF_{family}, SOCK_DGRAM) was refused: network.udp is false",
            "network.udp",
            change,
            risk_of(change, ctx),
        )
    if family in ("INET", "INET6") and kind in ("STREAM", None):
        net = ctx.policy.network
        if not (net.tcp_connect or net.tcp_bind or net.hosts):
            # No TCP grant at all: the filter refuses TCP sockets outright, so the tool
            # never got as far as naming a port, and no exact fix can be written.
            return Finding(
                f"{d.syscall}(AF_{family}, SOCK_STREAM) was refused: the policy grants no "
                "TCP port, so TCP sockets are not allowed at all; the port the tool wanted "
                "is unknown (it never reached connect or bind): add that port to "
                "network.tcp_connect (or network.tcp_bind), then run with --trace again "
                "to check it",
                "network.tcp_connect",
            )
        return Finding(
            f"{d.syscall}(AF_{family}) was refused although the policy grants TCP ports: "
            "only plain TCP (protocol 0 or 6) is allowed, not MPTCP or SCTP, whose "
            "connections Landlock's port rules do not see; no policy can allow it",
            None,
        )
    what = f"AF_{family}" if family else "this socket family"
    if kind:
        what += f", SOCK_{kind}"
    return Finding(
        f"{d.syscall}({what}) was refused: cvg allows only UNIX, TCP and UDP sockets "
        "(raw, packet and netlink sockets reach the host's network stack directly); no "
        "policy can allow it",
        None,
    )


def _raise(d: Denial, ctx: Context, field: str, how: str) -> Finding:
    value = getattr(ctx.policy.resources, field)
    if value is None:  # wall_clock_seconds: null, no limit now: nothing to raise
        return Finding(f"{how}: resources.{field} is now null (no limit)", f"resources.{field}")
    current = int(value)
    new = current * 2
    if field == "memory_mb":
        m = _MMAP_LEN.search(d.detail or "")
        if m is not None:
            need = int(m.group(1)) / (1 << 20)
            new = max(new, int(math.ceil((current + need) / 64) * 64))
        held = _RESIDENT.search(d.detail or "")
        if held is not None:
            # What the tree held when it was stopped, and a quarter more: it was growing.
            new = max(new, int(math.ceil(int(held.group(1)) * 1.25 / 64) * 64))
    if field == "processes":
        m = _PROCESS_COUNT.search(d.detail or "")
        if m is not None:
            new = max(new, int(m.group(1)) + 1)
    new = min(new, _RESOURCE_MAX[field])
    rule = f"resources.{field}"
    unit = _UNITS[field]
    cause = f"{how}: {rule} is {current}{(' ' + unit) if unit else ''} ({_RESOURCE_WORDS[field]})"
    if new <= current:
        return Finding(cause + ", already the most a policy may give", rule)
    change = Change("set", "resources", field, new)
    return Finding(cause, rule, change, risk_of(change, ctx, current=current))


def _rlimit(d: Denial, ctx: Context) -> Finding:
    right = d.right or _infer_rlimit(d)
    if right == "core":
        return Finding(
            "core dumps are always off under cvg (a dump could carry secrets out); no "
            "policy can turn them on",
            None,
        )
    field = _RESOURCE_OF_RLIMIT.get(right or "")
    if field is None:
        return Finding(
            f"{d.syscall} hit the {right or 'an'} rlimit, which no policy setting controls",
            d.rule,
        )
    how = f"{d.syscall} failed ({d.errno or 'refused'}) at the RLIMIT_{(right or '').upper()}"
    return _raise(d, ctx, field, how)


def _infer_rlimit(d: Denial) -> str | None:
    if d.errno == "ENOMEM":
        return "data"
    if d.errno == "EAGAIN" and d.syscall in ("clone", "clone3", "fork", "vfork"):
        return "nproc"
    if d.errno in ("EMFILE",):
        return "nofile"
    if d.errno == "EFBIG":
        return "fsize"
    return None


def _supervisor(d: Denial, ctx: Context) -> Finding:
    from .guarded import guarded  # it builds on this module's findings

    found = guarded(d, ctx)
    if found is not None:
        return found
    rule = d.rule or ""
    right = d.right or ""
    if "processes" in rule or right in ("processes", "nproc"):
        return _raise(d, ctx, "processes", "the supervisor ended the run: too many processes")
    if "wall_clock" in rule or "wall" in right:
        return _raise(
            d, ctx, "wall_clock_seconds", "the supervisor ended the run at the wall clock"
        )
    if "memory" in rule or right in ("as", "data", "memory"):
        return _raise(d, ctx, "memory_mb", "the supervisor ended the run: too much memory")
    if "cpu" in rule or right == "cpu":
        return _raise(d, ctx, "cpu_seconds", "the supervisor ended the run: too much CPU time")
    return Finding(f"the supervisor refused {d.syscall}: {d.detail or 'no detail'}", d.rule)


def _none(d: Denial, ctx: Context) -> Finding:
    # A port below 1024 needs CAP_NET_BIND_SERVICE: bind says EACCES, not EPERM.
    if (d.errno == "EPERM" and d.syscall in _NEEDS_ROOT) or (
        d.syscall == "bind" and d.errno == "EACCES"
    ):
        return Finding(
            f"{d.syscall} needs root privileges (a capability), and cvg-run drops every "
            "capability, even for root; no policy can grant one",
            None,
        )
    return Finding(
        f"the tool's own failure, not cvg: {d.syscall} failed with "
        f"{d.errno or 'an error'} for a reason of its own, which no policy change affects",
        None,
    )


_BY_MECHANISM: Final[dict[str, Callable[[Denial, Context], Finding]]] = {
    "landlock_fs": _fs,
    "landlock_net": _net,
    "landlock_scope": _scope,
    "seccomp": _seccomp,
    "rlimit": _rlimit,
    "supervisor": _supervisor,
}


def attribute(d: Denial, ctx: Context) -> Finding:
    """The cause of ``d``, the rule involved and the smallest fix (None if none can)."""
    return _BY_MECHANISM.get(d.mechanism, _none)(d, ctx)


def _host_matches(pattern: str, host: str) -> bool:
    pattern, host = pattern.lower(), host.lower()
    if pattern.startswith("*."):
        return host.endswith(pattern[1:])
    return pattern == host


def attribute_connection(conn: Connection, ctx: Context) -> Finding:
    """A connection the ``network.hosts`` proxy refused: the host and port to grant."""
    host, port = conn.host, conn.port
    if host is None or port is None:
        return Finding(
            f"the network.hosts proxy refused a {conn.protocol} request it could not read "
            f"({conn.reason}); no policy change allows a malformed request",
            None,
        )
    covering = [
        (i, rule)
        for i, rule in enumerate(ctx.policy.network.hosts)
        if _host_matches(rule.host, host)
    ]
    if any(port in rule.ports for _, rule in covering):
        return Finding(
            f"the network.hosts proxy refused {host}:{port} although a rule grants it "
            f"({conn.reason}); no policy change would alter that",
            "network.hosts",
        )
    if covering:
        names = ", ".join(f"network.hosts[{i}] ({rule.host})" for i, rule in covering)
        cause = f"the proxy refused {host}:{port}: {names} grants {host} but not port {port}"
    else:
        cause = f"the proxy refused {host}:{port}: no network.hosts rule names {host}"
    change = Change("host", "network", "hosts", host, port)
    return Finding(cause, "network.hosts", change, risk_of(change, ctx))
