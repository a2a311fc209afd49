"""seccomp-bpf: the default deny list, the program builder and an installable filter.

:func:`build_program` turns the plan's ``seccomp`` section (docs/plan-format.md) into
a classic BPF program for x86_64 or aarch64. :class:`Filter` prepares that program
in the parent, so that the forked child only has to make one syscall.

Syscall numbers come from the generated table (``cvg_kernel.syscall_table``), never
from the running system, so a plan compiles the same everywhere and the aarch64
program can be built and checked on an x86_64 host.
"""

from __future__ import annotations

import ctypes
import errno as _errno

# collections.abc is this module, behind the collections package: its imports cost
# every cold start milliseconds.
from _collections_abc import Iterable, Mapping, Sequence

from cvg_kernel import census, libc, syscall_table
from cvg_kernel.bpf import (
    AUDIT_ARCH_AARCH64,
    AUDIT_ARCH_X86_64,
    JMP_JEQ_K,
    JMP_JSET_K,
    LD_W_ABS,
    RET_K,
    SECCOMP_DATA_ARCH,
    SECCOMP_DATA_NR,
    SECCOMP_RET_ACTION_FULL,
    SECCOMP_RET_ALLOW,
    SECCOMP_RET_ERRNO,
    SECCOMP_RET_KILL_PROCESS,
    SECCOMP_RET_USER_NOTIF,
    Assembler,
    BpfError,
    Instruction,
    arg_high,
    arg_low,
    disassemble,
    ret_errno,
    validate,
)

# The default deny list (grouped, with what each group would open) and the names it may
# hold that an architecture lacks live in the census of every syscall, re-exported here.
from cvg_kernel.census import ARCH_SPECIFIC as ARCH_SPECIFIC
from cvg_kernel.census import DENY_GROUPS as DENY_GROUPS
from cvg_kernel.record import Record

# typing only for the type checker: importing it costs every cold start.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class SeccompError(ValueError):
    """A seccomp spec that cannot be compiled, or a filter that cannot be installed."""


ARCHES = ("x86_64", "aarch64")
AUDIT_ARCH = {"x86_64": AUDIT_ARCH_X86_64, "aarch64": AUDIT_ARCH_AARCH64}

# x32 calls carry AUDIT_ARCH_X86_64, so the arch check alone lets them through.
X32_SYSCALL_BIT = 0x40000000

SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_NEW_LISTENER = 1 << 3

# Marks the shared ENOSYS verdict (clone3, x32, numbers newer than the table): an
# answer that makes libc fall back, not a denial, so the notifying variant keeps it.
ENOSYS_VERDICT = "ENOSYS: not a denial, libc falls back"
SUPERVISED_VERDICT = "the supervisor decides and performs the call"

# All CLONE_NEW* flags: NEWTIME 0x80, NEWNS 0x20000, NEWCGROUP, NEWUTS, NEWIPC,
# NEWUSER, NEWPID, NEWNET (0x02000000..0x40000000).
CLONE_NEW_MASK = 0x7E020080

# sendto/sendmsg with MSG_FASTOPEN connect implicitly, inside tcp_sendmsg, without
# the security_socket_connect hook where Landlock checks the TCP port: measured
# here, a fast-open sendto delivered data to a port a connect() to got EACCES.
# Refused whatever the plan says; TCP_FASTOPEN_CONNECT + connect() still works.
MSG_FASTOPEN = 0x20000000
# Where each sending call keeps its flags.
_SEND_FLAGS_ARG = {"sendto": 3, "sendmsg": 2, "sendmmsg": 3}
MFD_NOEXEC_SEAL = 0x0008
MFD_EXEC = 0x0010

# Calls that change another process when given its pid (or a process group, or every
# process of the user): measured here, a same-user process outside the sandbox could be
# given RLIMIT_CPU=1 (killed, round the signal scope), its nice value, CPU affinity,
# scheduling policy and I/O priority changed, and cvg-run's own RLIMIT_NOFILE set to 0.
# Each call is allowed only on the caller itself. An entry lists alternatives, each a
# conjunction of (argument word, value); a call matching none gets EPERM. pid_t and
# id_t are 32 bits wide, so the low word is the whole argument.
PRIO_PROCESS = 0
IOPRIO_WHO_PROCESS = 1
SELF_ONLY: Mapping[str, tuple[tuple[tuple[int, int], ...], ...]] = {
    # pid 0 is the caller; another pid only to read its limits (new_limit NULL).
    "prlimit64": (((arg_low(0), 0),), ((arg_low(2), 0), (arg_high(2), 0))),
    # PRIO_PGRP and PRIO_USER reach the process group and every process of the user.
    "setpriority": (((arg_low(0), PRIO_PROCESS), (arg_low(1), 0)),),
    "sched_setaffinity": (((arg_low(0), 0),),),
    "sched_setscheduler": (((arg_low(0), 0),),),
    "sched_setparam": (((arg_low(0), 0),),),
    "sched_setattr": (((arg_low(0), 0),),),
    "ioprio_set": (((arg_low(0), IOPRIO_WHO_PROCESS), (arg_low(1), 0)),),
    # Another process's robust futex list address: a pointer into its memory layout.
    "get_robust_list": (((arg_low(0), 0),),),
}
AF_UNIX = 1

# asm-generic/ioctls.h values, shared by x86_64 and aarch64.
IOCTL_REQUESTS: dict[str, int] = {
    "TIOCSTI": 0x5412,  # push bytes into a terminal's input: types commands into the parent shell
    "TIOCLINUX": 0x541C,  # console selection paste does the same on a VT (CVE-2023-28100)
}

SOCKET_FAMILIES: dict[str, int] = {"unix": 1, "inet": 2, "inet6": 10, "netlink": 16, "packet": 17}
SOCKET_TYPES: dict[str, int] = {"stream": 1, "dgram": 2, "raw": 3, "seqpacket": 5}
# A socket entry without "types" allows these. Not "any type": raw must be asked for
# by name, and SOCK_PACKET (10) on AF_INET silently becomes a packet socket.
_DEFAULT_ENTRY_TYPES = ("stream", "dgram", "seqpacket")
_SOCK_TYPE_MASK = 0xF  # the rest of socket()'s type argument is SOCK_CLOEXEC/NONBLOCK

DEFAULT_DENY: tuple[str, ...] = tuple(name for names, _ in DENY_GROUPS for name in names)

DENY_REASONS: Mapping[str, str] = {name: reason for names, reason in DENY_GROUPS for name in names}
"""What allowing each call of the default deny list opens, in a few words."""

# Tuples inside, so a caller cannot edit the default by accident; json.dumps still
# writes them as lists when a compiler copies the default into a plan.
DEFAULT_SOCKETS: tuple[Mapping[str, Any], ...] = (
    {"family": "unix", "types": ("stream", "dgram", "seqpacket")},
    {"family": "inet", "types": ("stream", "dgram")},
    {"family": "inet6", "types": ("stream", "dgram")},
)

DEFAULT_ENOSYS: tuple[str, ...] = ("clone3",)
DEFAULT_IOCTL_DENY: tuple[str, ...] = ("TIOCSTI", "TIOCLINUX")

# What the launchers (cvg_kernel.plan.Prepared, cvg-run's child and warm helper) call
# between installing the filter and exec'ing the tool, measured with strace -f: handing
# the listener over, taking the run's descriptors, resetting signals, the exec itself, and
# reporting a failed exec. An allow list that left one out would refuse the tool before it
# starts, so compilers add these to every allow list (names missing on an arch skipped).
LAUNCHER_ALLOW: tuple[str, ...] = (
    "execve",
    "rt_sigaction",
    "rt_sigprocmask",
    "rt_sigreturn",
    "restart_syscall",
    "read",  # the supervisor's answer to the listener's handover (cvg_kernel.notify)
    "close",
    "dup2",
    "dup3",
    "chdir",
    "write",
    "exit",
    "exit_group",
    "mmap",
    "munmap",
    "brk",
    "futex",
)

VIOLATIONS = ("errno", "kill")
"""What a call outside an allow list gets: ``deny_errno``, or the process killed."""

SPEC_KEYS = frozenset(
    {
        "allow",
        "on_violation",
        "deny",
        "deny_errno",
        "enosys",
        "kill",
        "sockets",
        "clone_namespaces",
        "ioctl_deny",
        "memfd_noexec",
        "listen",
        "supervise",
    }
)

SUPERVISED = ("listen", "signal", "paths", "unix")
"""What ``supervise`` may name: calls the supervisor checks and performs itself
(:mod:`cvg_kernel.guard`). ``listen``: refused on a TCP socket that was never bound
(it would bind an ephemeral port out of Landlock's sight), performed otherwise.
``signal``: every way to signal another process (the kill family, and a file's SIGIO
owner through fcntl and ioctl), allowed only inside the tool's own tree: what
Landlock's signal scope does from ABI 6, for kernels below it. ``paths``: the calls
that name a path to open, create, remove or rename (:data:`PATH_CALLS`), for the
directories Landlock cannot express (a denied entry inside a granted directory).
``unix``: the calls that name a UNIX socket's address (:data:`UNIX_CALLS`), below the
Landlock ABI that checks connect() to a pathname socket."""

PATH_CALLS = (
    "open", "openat", "openat2", "creat", "mkdir", "mkdirat", "mknod", "mknodat",
    "unlink", "unlinkat", "rmdir", "rename", "renameat", "renameat2", "link", "linkat",
    "symlink", "symlinkat", "truncate",
)  # fmt: skip
"""The calls of the ``paths`` group (those an architecture lacks are left out)."""

UNIX_CALLS = ("connect", "sendto", "sendmsg", "sendmmsg")
"""The calls of the ``unix`` group."""

GROUP_CALLS: Mapping[str, tuple[str, ...]] = {"paths": PATH_CALLS, "unix": UNIX_CALLS}
"""The groups whose calls go to the supervisor whole, whatever their arguments."""

SIGNAL_CALLS = ("kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo",
                "pidfd_send_signal")  # fmt: skip
F_SETOWN, F_SETOWN_EX = 8, 15
OWNER_IOCTLS = {"FIOSETOWN": 0x8901, "SIOCSPGRP": 0x8902}


def errno_value(name: str) -> int:
    """The number of an errno name (``"EPERM"`` -> 1); any name in :mod:`errno`."""
    value = getattr(_errno, name, None) if isinstance(name, str) else None
    if not (
        isinstance(name, str)
        and name.startswith("E")
        and name.isupper()
        and isinstance(value, int)
        and not isinstance(value, bool)
        and value > 0
    ):
        raise SeccompError(f"unknown errno name {name!r}")
    return value


def table(arch: str) -> Mapping[str, int]:
    """The syscall name -> number table for ``arch``."""
    if arch not in ARCHES:
        raise SeccompError(f"unsupported architecture {arch!r}; expected one of {ARCHES}")
    return syscall_table.TABLES[arch]


def _names(what: str, value: Iterable[str]) -> list[str]:
    # A bare string would otherwise be read as a list of one-letter names.
    if isinstance(value, str | bytes):
        raise SeccompError(f"{what} must be a list of names, not {value!r}")
    out: list[str] = []
    for name in value:
        if not isinstance(name, str):
            raise SeccompError(f"{what}: {name!r} is not a name")
        if name not in out:
            out.append(name)
    return out


def _number(what: str, value: object, names: Mapping[str, int], limit: int) -> int:
    if isinstance(value, str):
        if value not in names:
            raise SeccompError(f"unknown {what} {value!r}; known: {', '.join(names)}")
        return names[value]
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= limit:
        raise SeccompError(f"{what} {value!r} is neither a name nor a number in 0..{limit}")
    return value


class SocketRule(Record):
    """One normalised ``sockets`` entry; ``protocols`` None means any protocol."""

    family: int
    types: tuple[int, ...]
    protocols: tuple[int, ...] | None


def socket_rules(sockets: Iterable[Mapping[str, Any]]) -> list[SocketRule]:
    """Validate and normalise the ``sockets`` list."""
    if isinstance(sockets, Mapping | str | bytes):
        raise SeccompError("sockets must be a list of {family, types?, protocols?} objects")
    rules: list[SocketRule] = []
    for entry in sockets:
        if not isinstance(entry, Mapping):
            raise SeccompError(f"socket entry {entry!r} is not an object")
        unknown = set(entry) - {"family", "types", "protocols"}
        if unknown:
            raise SeccompError(f"socket entry {dict(entry)!r}: unknown key(s) {sorted(unknown)}")
        if "family" not in entry:
            raise SeccompError(f"socket entry {dict(entry)!r} has no family")
        family = _number("socket family", entry["family"], SOCKET_FAMILIES, 0xFFFFFFFF)
        raw_types = entry.get("types", _DEFAULT_ENTRY_TYPES)
        if isinstance(raw_types, str | bytes) or not isinstance(raw_types, Iterable):
            raise SeccompError(f"socket types must be a list, not {raw_types!r}")
        types = tuple(
            dict.fromkeys(
                _number("socket type", t, SOCKET_TYPES, _SOCK_TYPE_MASK) for t in raw_types
            )
        )
        protocols: tuple[int, ...] | None = None
        if entry.get("protocols") is not None:
            raw_protocols = entry["protocols"]
            if isinstance(raw_protocols, str | bytes) or not isinstance(raw_protocols, Iterable):
                raise SeccompError(f"socket protocols must be a list, not {raw_protocols!r}")
            protocols = tuple(
                dict.fromkeys(_number("socket protocol", p, {}, 0xFFFFFFFF) for p in raw_protocols)
            )
        rules.append(SocketRule(family, types, protocols))
    return rules


class Compiled(Record):
    """A built program plus what was left out of it, for the plan's report."""

    arch: str
    annotated: tuple[tuple[Instruction, str], ...]
    skipped: tuple[str, ...]  # deny-list names this architecture does not have

    @property
    def program(self) -> list[Instruction]:
        return [insn for insn, _ in self.annotated]


def compile_spec(
    arch: str,
    *,
    deny: Iterable[str] = DEFAULT_DENY,
    deny_errno: str = "EPERM",
    enosys: Iterable[str] = DEFAULT_ENOSYS,
    kill: Iterable[str] = (),
    sockets: Iterable[Mapping[str, Any]] = DEFAULT_SOCKETS,
    clone_namespaces: bool = False,
    ioctl_deny: Iterable[str] = DEFAULT_IOCTL_DENY,
    memfd_noexec: bool = True,
    allow: Iterable[str] | None = None,
    on_violation: str = "errno",
    listen: bool = True,
    supervise: Iterable[str] = (),
) -> Compiled:
    """:func:`build_program`, keeping comments and the names skipped for this arch."""
    spec = _checked(
        arch, deny=deny, deny_errno=deny_errno, enosys=enosys, kill=kill, sockets=sockets,
        clone_namespaces=clone_namespaces, ioctl_deny=ioctl_deny, memfd_noexec=memfd_noexec,
        allow=allow, on_violation=on_violation, listen=listen, supervise=supervise,
    )  # fmt: skip
    asm = Assembler()
    _whole_calls(asm, spec)
    blocks = _dispatch(asm, spec)
    _rest(asm, spec)
    _argument_blocks(asm, spec, blocks)
    _verdicts(asm, spec)
    try:
        annotated = asm.assemble_annotated()
    except BpfError as e:
        raise SeccompError(f"cannot assemble the seccomp program: {e}") from e
    return Compiled(arch, tuple(annotated), tuple(spec.skipped))


class _Spec(Record):
    """A seccomp spec checked and resolved to numbers for one architecture."""

    arch: str
    numbers: Mapping[str, int]
    allowed: dict[str, int] | None  # None: no allow list
    owner: dict[str, str]  # name -> the list (kill, enosys, deny) that decides it
    resolved: dict[str, list[tuple[str, int]]]
    ioctl_numbers: list[tuple[str, int]]
    rules: list[SocketRule]
    supervised: list[str]
    clone_namespaces: bool
    memfd_noexec: bool
    listen: bool
    deny_errno: str
    deny_action: int
    on_violation: str
    skipped: list[str]

    def filtered(self, call: str) -> bool:
        """Whether ``call`` gets its argument filter: not decided whole by a list, and
        not left out of an allow list (then it is refused whatever its arguments)."""
        return call not in self.owner and (self.allowed is None or call in self.allowed)

    @property
    def signals(self) -> bool:
        return "signal" in self.supervised


def _checked(
    arch: str,
    *,
    deny: Iterable[str],
    deny_errno: str,
    enosys: Iterable[str],
    kill: Iterable[str],
    sockets: Iterable[Mapping[str, Any]],
    clone_namespaces: bool,
    ioctl_deny: Iterable[str],
    memfd_noexec: bool,
    allow: Iterable[str] | None,
    on_violation: str,
    listen: bool,
    supervise: Iterable[str],
) -> _Spec:
    """Every name, number, flag and entry of the spec checked; SeccompError otherwise."""
    numbers = table(arch)
    skipped: list[str] = []
    deny_action = ret_errno(errno_value(deny_errno))
    if on_violation not in VIOLATIONS:
        raise SeccompError(
            f"on_violation must be one of {', '.join(VIOLATIONS)}, not {on_violation!r}"
        )
    allowed: dict[str, int] | None = None
    if allow is not None:
        allowed = {}
        for name in _names("allow", allow):
            if name not in numbers:
                if name in ARCH_SPECIFIC:
                    skipped.append(name)
                    continue
                raise SeccompError(f"allow: unknown syscall {name!r} on {arch}")
            allowed[name] = numbers[name]
    owner, resolved = _lists(arch, numbers, skipped, kill=kill, enosys=enosys, deny=deny)
    if not clone_namespaces and "clone3" not in owner:
        raise SeccompError(
            "clone3 must be in enosys, deny or kill unless clone_namespaces is true: "
            "BPF cannot read its flags, so it would bypass the CLONE_NEW* check"
        )
    ioctl_numbers = []
    for name in _names("ioctl_deny", ioctl_deny):
        if name not in IOCTL_REQUESTS:
            raise SeccompError(f"unknown ioctl {name!r}; known: {', '.join(IOCTL_REQUESTS)}")
        ioctl_numbers.append((name, IOCTL_REQUESTS[name]))
    rules = socket_rules(sockets)
    for flag, value in (
        ("clone_namespaces", clone_namespaces),
        ("memfd_noexec", memfd_noexec),
        ("listen", listen),
    ):
        if not isinstance(value, bool):
            raise SeccompError(f"{flag} must be true or false, not {value!r}")
    supervised = _names("supervise", supervise)
    for name in supervised:
        if name not in SUPERVISED:
            raise SeccompError(f"supervise: {name!r} is not one of {', '.join(SUPERVISED)}")
    return _Spec(
        arch, numbers, allowed, owner, resolved, ioctl_numbers, rules, supervised,
        clone_namespaces, memfd_noexec, listen, deny_errno, deny_action, on_violation, skipped,
    )  # fmt: skip


def _lists(
    arch: str,
    numbers: Mapping[str, int],
    skipped: list[str],
    **lists: Iterable[str],
) -> tuple[dict[str, str], dict[str, list[tuple[str, int]]]]:
    """The whole-syscall lists (kill, enosys, deny, in that order) resolved to numbers; a
    name in two lists is an error, a deny name this arch lacks is skipped if it may."""
    owner: dict[str, str] = {}
    resolved: dict[str, list[tuple[str, int]]] = {}
    for what, value in lists.items():
        resolved[what] = []
        for name in _names(what, value):
            if name in owner:
                raise SeccompError(f"syscall {name!r} is in both {owner[name]} and {what}")
            owner[name] = what
            if name not in numbers:
                if what == "deny" and name in ARCH_SPECIFIC:
                    skipped.append(name)
                    continue
                raise SeccompError(f"{what}: unknown syscall {name!r} on {arch}")
            resolved[what].append((name, numbers[name]))
    return owner, resolved


def _whole_calls(asm: Assembler, spec: _Spec) -> None:
    """Verdicts on the whole call: foreign arch, unknown numbers, the lists, and the
    calls that go to the supervisor or are refused outright."""
    numbers = spec.numbers
    # 1. A foreign ABI (i386 int 0x80, arm32 compat) numbers syscalls differently, so
    #    nothing below would mean what it says: kill rather than guess.
    asm.load(SECCOMP_DATA_ARCH)
    asm.jeq(AUDIT_ARCH[spec.arch], None, "kill", comment=f"only {spec.arch} syscalls")
    # 2. Numbers this table does not know are syscalls newer than the deny list.
    asm.load(SECCOMP_DATA_NR)
    if spec.arch == "x86_64":
        asm.jge(X32_SYSCALL_BIT, "enosys", comment="x32 ABI")
    asm.jgt(max(numbers.values()), "enosys", comment="newer than the syscall table")
    # 3. Whole-syscall lists.
    for what in ("kill", "enosys", "deny"):
        for _, nr in spec.resolved[what]:
            asm.jeq(nr, what, comment=what)
    # listen() on an unbound TCP socket binds an ephemeral port without bind(), where
    # Landlock's bind rule would look: with nothing to listen on, refuse the call;
    # otherwise the supervisor looks at the socket and listens on it itself.
    if not spec.listen and "listen" not in spec.owner:
        asm.jeq(numbers["listen"], "eperm", comment="listen: no tcp_bind, no unix")
    elif "listen" in spec.supervised and spec.filtered("listen"):
        asm.jeq(numbers["listen"], "supervised", comment="listen: the supervisor decides")
    if spec.signals:
        for call in SIGNAL_CALLS:
            if call in numbers and spec.filtered(call):
                asm.jeq(numbers[call], "supervised", comment=f"{call}: the supervisor decides")
    for group, calls in GROUP_CALLS.items():
        if group in spec.supervised:
            for call in calls:
                if call in numbers and spec.filtered(call):
                    why = f"{call}: the supervisor ({group})"
                    asm.jeq(numbers[call], "supervised", comment=why)


def _dispatch(asm: Assembler, spec: _Spec) -> list[str]:
    """4-7. Jumps to the argument filters; the names of the blocks to emit."""
    numbers = spec.numbers
    wanted = [
        ("socket", True),
        ("clone", not spec.clone_namespaces),
        ("ioctl", bool(spec.ioctl_numbers) or spec.signals),
        ("fcntl", spec.signals),
        ("memfd_create", spec.memfd_noexec),
        *((call, True) for call in _SEND_FLAGS_ARG),
        ("socketpair", True),
        *((call, call in numbers) for call in SELF_ONLY),
    ]
    blocks = []
    for call, wanted_here in wanted:
        if wanted_here and spec.filtered(call):
            asm.jeq(numbers[call], call)
            blocks.append(call)
    return blocks


def _rest(asm: Assembler, spec: _Spec) -> None:
    """8. Everything else: with no allow list, every call the census decided (its lists
    and argument checks came first); a call it has not classified, or a number in a gap
    of the table, gets ENOSYS. With an allow list, only the listed calls."""
    if spec.allowed is None:
        known = census.decided()
        decided = sorted({nr for name, nr in spec.numbers.items() if name in known})
        _allow_tree(asm, _ranges(decided), "census", miss="enosys")
    else:
        listed = sorted({nr for name, nr in spec.allowed.items() if name not in spec.owner})
        _allow_tree(asm, _ranges(listed), "allow tree")


def _argument_blocks(asm: Assembler, spec: _Spec, blocks: Sequence[str]) -> None:
    if "socket" in blocks:
        _socket_block(asm, spec.rules)
    if "clone" in blocks:
        asm.label("clone")
        asm.load(arg_low(0), comment="clone flags")
        asm.jset(CLONE_NEW_MASK, "eperm", "allow", comment="CLONE_NEW*")
    if "ioctl" in blocks:
        asm.label("ioctl")
        asm.load(arg_low(1), comment="ioctl request (unsigned int)")
        for name, request in spec.ioctl_numbers:
            asm.jeq(request, "eperm", comment=name)
        if spec.signals:
            for name, request in OWNER_IOCTLS.items():
                asm.jeq(request, "supervised", comment=f"{name}: SIGIO owner")
        asm.ja("allow")
    if "fcntl" in blocks:
        asm.label("fcntl")
        asm.load(arg_low(1), comment="fcntl command")
        asm.jeq(F_SETOWN, "supervised", comment="F_SETOWN: SIGIO owner")
        asm.jeq(F_SETOWN_EX, "supervised", "allow", comment="F_SETOWN_EX: SIGIO owner")
    if "memfd_create" in blocks:
        asm.label("memfd_create")
        asm.load(arg_low(1), comment="memfd_create flags")
        asm.jset(MFD_EXEC, "eperm", comment="MFD_EXEC")
        asm.jset(MFD_NOEXEC_SEAL, "allow", "eperm", comment="MFD_NOEXEC_SEAL")
    for call, index in _SEND_FLAGS_ARG.items():
        if call in blocks:
            asm.label(call)
            asm.load(arg_low(index), comment=f"{call} flags")
            asm.jset(MSG_FASTOPEN, "eperm", "allow", comment="MSG_FASTOPEN")
    if "socketpair" in blocks:
        _socketpair_block(asm, spec.rules)
    for call, alternatives in SELF_ONLY.items():
        if call in blocks:
            _self_only_block(asm, call, alternatives)


def _verdicts(asm: Assembler, spec: _Spec) -> None:
    # Shared verdicts last: the kernel wants a ret at the end, and jumps only go forward.
    asm.label("allow")
    asm.ret(SECCOMP_RET_ALLOW)
    asm.label("kill")
    asm.ret(SECCOMP_RET_KILL_PROCESS)
    asm.label("enosys")
    asm.ret(ret_errno(_errno.ENOSYS), comment=ENOSYS_VERDICT)
    asm.label("deny")
    asm.ret(spec.deny_action, comment=f"deny ({spec.deny_errno})")
    asm.label("eperm")
    asm.ret(ret_errno(_errno.EPERM))
    if spec.supervised:
        asm.label("supervised")
        asm.ret_supervised(comment=SUPERVISED_VERDICT)
    if spec.allowed is not None:
        violation = SECCOMP_RET_KILL_PROCESS if spec.on_violation == "kill" else spec.deny_action
        asm.label("unlisted")
        asm.ret(violation, comment=f"not in the allow list ({spec.on_violation})")


def _ranges(numbers: Sequence[int]) -> list[tuple[int, int]]:
    """Sorted numbers as maximal runs ``(first, last)``."""
    out: list[tuple[int, int]] = []
    for nr in numbers:
        if out and out[-1][1] == nr - 1:
            out[-1] = (out[-1][0], nr)
        else:
            out.append((nr, nr))
    return out


_TREE_COMMENT = {"unlisted": "allow list", "enosys": "classified by the census"}


def _allow_tree(
    asm: Assembler, ranges: Sequence[tuple[int, int]], label: str, miss: str = "unlisted"
) -> None:
    # A binary search over the allowed runs (A holds nr): a lookup costs a few
    # comparisons instead of one per listed call, and a call outside every run
    # reaches "unlisted".
    if len(ranges) > 4:
        mid = len(ranges) // 2
        asm.jge(ranges[mid][0], f"{label} r", comment="allow list: upper half")
        _allow_tree(asm, ranges[:mid], f"{label} l", miss)
        asm.label(f"{label} r")
        _allow_tree(asm, ranges[mid:], f"{label} r", miss)
        return
    for i, (first, last) in enumerate(ranges):
        # Ascending runs: past this one, try the next; below its start, nothing later
        # can match either.
        nxt = f"{label} {i + 1}" if i + 1 < len(ranges) else miss
        if i:
            asm.label(f"{label} {i}")
        asm.jgt(last, nxt)
        if first == last:
            asm.jeq(first, "allow", miss, comment=_TREE_COMMENT[miss])
        else:
            asm.jge(first, "allow", miss, comment=_TREE_COMMENT[miss])
    if not ranges:
        asm.ja(miss)


def _socket_block(asm: Assembler, rules: Sequence[SocketRule]) -> None:
    # int arguments: the kernel reads only the low 32 bits, so must the filter, or junk
    # in the high word would change the filter's answer but not the kernel's.
    asm.label("socket")
    by_family: dict[int, list[SocketRule]] = {}
    for rule in rules:
        by_family.setdefault(rule.family, []).append(rule)
    asm.load(arg_low(0), comment="socket family")
    for family in by_family:
        asm.jeq(family, f"family {family}")
    asm.ret(ret_errno(_errno.EAFNOSUPPORT), comment="family not allowed")
    for family, family_rules in by_family.items():
        asm.label(f"family {family}")
        for j, rule in enumerate(family_rules):
            here = f"family {family} rule {j}"
            nope = "eperm" if j == len(family_rules) - 1 else f"family {family} rule {j + 1}"
            if j:
                asm.label(here)
            asm.load(arg_low(1), comment="socket type")
            asm.and_(_SOCK_TYPE_MASK)
            matched = "allow" if rule.protocols is None else f"{here} protocol"
            for t in rule.types:
                asm.jeq(t, matched)
            asm.ja(nope)
            if rule.protocols is None:
                continue
            asm.label(matched)
            asm.load(arg_low(2), comment="socket protocol")
            for p in rule.protocols:
                asm.jeq(p, "allow")
            asm.ja(nope)


def _unix_dgram_allowed(rules: Sequence[SocketRule]) -> bool:
    return any(
        r.family == AF_UNIX
        and SOCKET_TYPES["dgram"] in r.types
        and (r.protocols is None or 0 in r.protocols)
        for r in rules
    )


def _socketpair_block(asm: Assembler, rules: Sequence[SocketRule]) -> None:
    # A stream or seqpacket pair is connected to itself for good: connect() gets EISCONN
    # and an address given to send is refused. A datagram socket of a pair can still
    # sendto() or connect() any pathname or abstract socket it can name, so it is only
    # allowed where the policy lets the tool make unix datagram sockets anyway.
    asm.label("socketpair")
    asm.load(arg_low(0), comment="socketpair family")
    asm.jeq(AF_UNIX, None, "socketpair family", comment="AF_UNIX")
    asm.load(arg_low(1), comment="socketpair type")
    asm.and_(_SOCK_TYPE_MASK)
    asm.jeq(SOCKET_TYPES["stream"], "allow")
    if _unix_dgram_allowed(rules):
        asm.jeq(SOCKET_TYPES["dgram"], "allow", comment="unix dgram granted")
    asm.jeq(SOCKET_TYPES["seqpacket"], "allow", "eperm")
    asm.label("socketpair family")
    asm.ret(ret_errno(_errno.EAFNOSUPPORT), comment="socketpair: only AF_UNIX")


def _self_only_block(
    asm: Assembler, call: str, alternatives: Sequence[Sequence[tuple[int, int]]]
) -> None:
    asm.label(call)
    for i, conjunction in enumerate(alternatives):
        nope = "eperm" if i == len(alternatives) - 1 else f"{call} or {i + 1}"
        if i:
            asm.label(f"{call} or {i}")
        for j, (offset, value) in enumerate(conjunction):
            last = j == len(conjunction) - 1
            asm.load(offset, comment=f"{call}: only the caller itself")
            asm.jeq(value, "allow" if last else None, nope)


def build_program(
    arch: str,
    *,
    deny: Iterable[str] = DEFAULT_DENY,
    deny_errno: str = "EPERM",
    enosys: Iterable[str] = DEFAULT_ENOSYS,
    kill: Iterable[str] = (),
    sockets: Iterable[Mapping[str, Any]] = DEFAULT_SOCKETS,
    clone_namespaces: bool = False,
    ioctl_deny: Iterable[str] = DEFAULT_IOCTL_DENY,
    memfd_noexec: bool = True,
    allow: Iterable[str] | None = None,
    on_violation: str = "errno",
    listen: bool = True,
    supervise: Iterable[str] = (),
) -> list[Instruction]:
    """Compile a plan's ``seccomp`` section into a BPF program for ``arch``.

    In order: a foreign audit arch kills the process; on x86_64 an x32 number, and on
    both any number above the table's highest, get ENOSYS; then ``kill``,
    ``enosys`` and ``deny`` by name; then ``socket`` (family, ``type & 0xf`` and
    protocol, low 32 bits each), ``clone`` (any CLONE_NEW* flag unless
    ``clone_namespaces``), ``ioctl`` (``ioctl_deny`` requests) and ``memfd_create``
    (must seal exec, must not ask for it) by argument; everything else is allowed, or,
    with ``allow`` (an allow list), allowed only when listed: any other call gets
    ``deny_errno``, or kills the process when ``on_violation`` is ``"kill"``. The lists
    above still decide first, and the argument filters apply to the listed calls.

    Raises :class:`SeccompError` for an unknown name, a name in two lists, an unknown
    errno or ioctl, a malformed socket entry, or clone3 left allowed while namespaces
    are forbidden. ``deny`` names missing on ``arch`` are skipped only when they are
    architecture-specific (:data:`ARCH_SPECIFIC`).
    """
    return compile_spec(
        arch,
        deny=deny,
        deny_errno=deny_errno,
        enosys=enosys,
        kill=kill,
        sockets=sockets,
        clone_namespaces=clone_namespaces,
        ioctl_deny=ioctl_deny,
        memfd_noexec=memfd_noexec,
        allow=allow,
        on_violation=on_violation,
        listen=listen,
        supervise=supervise,
    ).program


def notifying(
    arch: str, program: Sequence[Instruction], comments: Sequence[str] = (), errors: bool = True
) -> list[Instruction]:
    """``program`` with every ERRNO denial turned into SECCOMP_RET_USER_NOTIF.

    ALLOW, KILL and the ENOSYS verdict (marked by its comment, :data:`ENOSYS_VERDICT`)
    are left as they are. Installed with a listener, a denied call then waits for the
    supervisor, which answers with the errno the original program would have given
    (:mod:`cvg_kernel.notify`) and never lets the call run. The bpf assembler refuses
    to emit USER_NOTIF on purpose, so the substitution is made on the finished program.

    One check comes first: ``seccomp()`` asking for a listener of its own
    (SECCOMP_FILTER_FLAG_NEW_LISTENER) gets EBUSY. The kernel gives that answer
    itself while our listener is open, but once it is closed (the supervisor gone)
    it would let the tool install a listener; a USER_NOTIF verdict of the newest
    filter takes precedence, so the tool could then answer CONTINUE to a call ours
    refused (measured on 6.18: ``personality`` ran). The plain program has no such
    check because ERRNO always beats USER_NOTIF.
    """
    out: list[Instruction] = [
        (LD_W_ABS, 0, 0, SECCOMP_DATA_ARCH),
        (JMP_JEQ_K, 0, 5, AUDIT_ARCH[arch]),  # foreign arch: the program below kills it
        (LD_W_ABS, 0, 0, SECCOMP_DATA_NR),
        (JMP_JEQ_K, 0, 3, table(arch)["seccomp"]),
        (LD_W_ABS, 0, 0, arg_low(1)),  # seccomp(op, unsigned int flags, args)
        (JMP_JSET_K, 0, 1, SECCOMP_FILTER_FLAG_NEW_LISTENER),
        (RET_K, 0, 0, ret_errno(_errno.EBUSY)),
    ]
    for pc, insn in enumerate(program):
        code, _, _, k = insn
        comment = comments[pc] if pc < len(comments) else ""
        if (
            errors
            and code == RET_K
            and (k & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_ERRNO
            and comment != ENOSYS_VERDICT
        ):
            out.append((RET_K, 0, 0, SECCOMP_RET_USER_NOTIF))
        else:
            out.append(insn)
    validate(out)
    return out


NOTIFY_PREFIX_LEN = 7
"""Instructions :func:`notifying` puts before the program (the listener check)."""


class _SockFilter(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_uint16),
        ("jt", ctypes.c_uint8),
        ("jf", ctypes.c_uint8),
        ("k", ctypes.c_uint32),
    ]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


# The largest value of each field of a BPF instruction: code, jt, jf, k.
_FIELD_MAX = (0xFFFF, 0xFF, 0xFF, 0xFFFFFFFF)


class Filter:
    """A seccomp program, laid out in C memory ahead of time.

    Build it in the parent (:meth:`build`), fork, and call :meth:`install` in the
    child: that makes one syscall with memory prepared here and allocates nothing.

    :meth:`with_listener` gives the variant that reports denials to a supervisor:
    ``instructions`` is what gets installed, ``errno_program`` the plain program
    whose answers the supervisor gives back (the same tuple for a plain filter).
    """

    def __init__(self, compiled: Compiled, *, listener: bool = False) -> None:
        self.arch = compiled.arch
        self.skipped = compiled.skipped
        self.listener = listener
        self._compiled = compiled
        self.errno_program: tuple[Instruction, ...] = tuple(compiled.program)
        self.instructions: tuple[Instruction, ...] = self.errno_program
        self._comments = [c for _, c in compiled.annotated]
        # Calls the supervisor performs itself (cvg_kernel.guard) need a listener even
        # when denials are not reported; the listener check comes first either way.
        self.supervised = SUPERVISED_VERDICT in self._comments
        if listener or self.supervised:
            self.instructions = tuple(
                notifying(self.arch, self.errno_program, self._comments, errors=listener)
            )
            self._comments = [
                "notify mode: no listener for the tool",
                *[""] * (NOTIFY_PREFIX_LEN - 2),
                "seccomp(NEW_LISTENER): EBUSY",
                *self._comments,
            ]
        n = len(self.instructions)
        self._array = (_SockFilter * n)(*(_SockFilter(*insn) for insn in self.instructions))
        self._prog = _SockFprog(n, ctypes.cast(self._array, ctypes.POINTER(_SockFilter)))
        self._prog_ptr = ctypes.pointer(self._prog)
        # Passed as unsigned long so the variadic syscall() sees full registers.
        self._mode = ctypes.c_ulong(SECCOMP_SET_MODE_FILTER)
        self._flags = ctypes.c_ulong(
            SECCOMP_FILTER_FLAG_NEW_LISTENER if listener or self.supervised else 0
        )
        running = libc.machine()
        self._nr: int | None = (
            syscall_table.TABLES[running]["seccomp"] if running == self.arch else None
        )

    @classmethod
    def build(cls, arch: str | None = None, **spec: Any) -> Filter:
        """Compile ``spec`` (the plan's ``seccomp`` keys) for ``arch`` (default: running)."""
        unknown = set(spec) - SPEC_KEYS
        if unknown:
            raise SeccompError(f"unknown seccomp key(s): {', '.join(sorted(unknown))}")
        return cls(compile_spec(arch or libc.machine(), **spec))

    def data(self) -> dict[str, Any]:
        """The assembled program as plain data (lists, strings, integers), for a cache:
        :meth:`from_data` gives this filter back without assembling it again."""
        c = self._compiled
        return {
            "arch": c.arch,
            "annotated": [[*insn, comment] for insn, comment in c.annotated],
            "skipped": list(c.skipped),
        }

    @classmethod
    def from_data(cls, data: object) -> Filter:
        """The filter :meth:`data` described. Raises SeccompError when ``data`` is not
        such a description (a damaged cache is then a miss)."""
        bad = SeccompError("not a filter's data")
        if not isinstance(data, dict):
            raise bad
        arch, annotated, skipped = data.get("arch"), data.get("annotated"), data.get("skipped")
        if arch not in syscall_table.TABLES or not isinstance(annotated, list) or not annotated:
            raise bad
        if not isinstance(skipped, list) or not all(type(n) is str for n in skipped):
            raise bad
        rows = []
        for row in annotated:
            if not isinstance(row, list) or len(row) != 5 or type(row[4]) is not str:
                raise bad
            insn = tuple(row[:4])
            if not all(
                type(v) is int and 0 <= v <= m for v, m in zip(insn, _FIELD_MAX, strict=True)
            ):
                raise bad
            rows.append((insn, row[4]))
        return cls(Compiled(arch=arch, annotated=tuple(rows), skipped=tuple(skipped)))

    def with_listener(self) -> Filter:
        """The same filter with its denials sent to a listener (:func:`notifying`)."""
        return Filter(self._compiled, listener=True)

    def disassemble(self) -> str:
        """The program as text, syscall numbers named, each rule's purpose noted."""
        names = {nr: name for name, nr in table(self.arch).items()}
        return disassemble(
            self.instructions,
            syscall_names=names,
            comments=self._comments,
        )

    def install(self) -> int:
        """Install the filter on the calling thread. Irrevocable: call it in the child.

        The caller must set no_new_privs first (``prctl(PR_SET_NO_NEW_PRIVS, 1)``);
        without it the kernel refuses (EACCES) unless the caller holds CAP_SYS_ADMIN.
        Returns 0, or for a :meth:`with_listener` filter the listener descriptor
        (close-on-exec). Raises ``OSError`` with the kernel's errno if the kernel
        refuses; a listener is refused with EBUSY when a filter already installed on
        this process has one.
        """
        if self._nr is None:
            raise SeccompError(f"this filter is for {self.arch}, not {libc.machine()}")
        return libc.syscall(self._nr, self._mode, self._flags, self._prog_ptr)
