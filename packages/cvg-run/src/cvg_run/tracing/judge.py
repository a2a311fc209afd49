"""Say what refused a failed call, judged from the plan the run actually applied.

The judge sees a failed call after the fact, with the plan in hand: the Landlock
filesystem rules (variables bound), the TCP port rules, the scopes, the seccomp
section and the rlimits. It answers with a :class:`Verdict`: the mechanism
(``landlock_fs``, ``landlock_net``, ``landlock_scope``, ``seccomp``, ``rlimit``,
``supervisor`` or ``none``), the missing right, and the policy rule that would have
to grant it.

"none" is a verdict, not a shrug: ENOENT on a probe, EACCES on a path a rule does
grant (file modes, not cvg), EPERM on a signal to another user's process. Those are
recorded and never blamed on the sandbox.

Landlock's own order decides some cases: the LSM hook for bind runs before the
privileged-port check, so EACCES binding an ungranted port is Landlock's; the
credential check for kill runs before the LSM hook, so EPERM signalling another
user's process is not Landlock's.
"""

from __future__ import annotations

import os
import posixpath
import stat

from cvg_kernel.interpreter import exec_interpreter
from cvg_kernel.landlock import FS_RIGHTS, NET_RIGHTS, SCOPES
from cvg_kernel.record import Record
from cvg_trace.events import RawEvent

# typing and collections.abc only for the type checker: `cvg-run --trace` imports this
# module, and they cost its every start milliseconds.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any, Final

__all__ = ["RULE_OF_RIGHT", "Judge", "Verdict"]

RULE_OF_RIGHT: Final[dict[str, str]] = {
    "read_file": "filesystem.read",
    "read_dir": "filesystem.read",
    "execute": "filesystem.execute",
    **{
        r: "filesystem.write"
        for r in FS_RIGHTS
        if r not in ("read_file", "read_dir", "execute", "resolve_unix")
    },
    "resolve_unix": "network.unix",
}
"""The policy list whose entries grant each Landlock filesystem right."""

# mknod's S_IFMT type -> the right to make it
_MKNOD_RIGHTS: Final = {
    stat.S_IFREG: "make_reg",
    stat.S_IFIFO: "make_fifo",
    stat.S_IFSOCK: "make_sock",
    stat.S_IFCHR: "make_char",
    stat.S_IFBLK: "make_block",
}
_MKNOD_NAMES: Final = {
    "S_IFREG": "make_reg",
    "S_IFIFO": "make_fifo",
    "S_IFSOCK": "make_sock",
    "S_IFCHR": "make_char",
    "S_IFBLK": "make_block",
}
# Why the filter refuses calls that are not on the deny list (by their arguments).
_ARG_CHECKS: Final = {
    "clone": "new namespaces are never granted",
    "ioctl": "TIOCSTI and TIOCLINUX push input into a terminal; never granted",
    "memfd_create": "an executable memfd runs code no execute rule saw; never granted",
    "sendto": "TCP fast open connects past Landlock's port check; never granted",
    "sendmsg": "TCP fast open connects past Landlock's port check; never granted",
    "sendmmsg": "TCP fast open connects past Landlock's port check; never granted",
}
# Rights checked on the directory a file is made in or removed from.
_DIRECTORY_RIGHTS: Final = frozenset(
    {"make_char", "make_dir", "make_reg", "make_sock", "make_fifo", "make_block", "make_sym",
     "remove_dir", "remove_file"}
)  # fmt: skip
# Errors that say a call was refused (as opposed to a file missing, a bad argument).
_REFUSALS: Final = frozenset({"EACCES", "EPERM", "EXDEV"})


class Verdict(Record, frozen=False):
    """What refused a failed call, and what the user would change."""

    mechanism: str
    right: str | None = None
    rule: str | None = None
    reason: str = ""  # the parenthesised part of the stderr line
    what: str = ""  # "open /x for read", "connect tcp port 8080"
    resolved: str | None = None  # the file Landlock judged, when links lead elsewhere

    @property
    def blames_cvg(self) -> bool:
        return self.mechanism != "none"


_PROC_SELF: Final = ("/proc/self", "/proc/thread-self")


def _proc_of(path: str, pid: int) -> str:
    """``/proc/self/x`` as process ``pid`` sees it (its thread, for thread-self)."""
    for prefix in _PROC_SELF:
        if path == prefix or path.startswith(prefix + "/"):
            return f"/proc/{pid}" + path[len(prefix) :]
    return path


def _realpath(path: str) -> str:
    """The path Landlock judges: symbolic links resolved, as far as they exist now."""
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return posixpath.normpath(path)


def _inside(path: str, parent: str) -> bool:
    return parent == "/" or path == parent or path.startswith(parent + "/")


def _expand(value: str, variables: Mapping[str, str]) -> str:
    for name, bound in variables.items():
        value = value.replace("${" + name + "}", bound)
    return value


def _handled(value: object, every: Sequence[str]) -> frozenset[str]:
    if value is None or value == "all":
        return frozenset(every)
    if isinstance(value, list):
        return frozenset(str(v) for v in value)
    return frozenset()


def _uids_of(pid: int) -> set[int] | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Uid:"):
                    return {int(x) for x in line.split()[1:]}
    except OSError:
        return None
    return None


class Judge:
    """Attribute failed calls of one run to the mechanism that refused them.

    ``plan`` is the plan applied (``${SCRATCH}`` and ``${CWD}`` bound by
    ``variables``); ``in_sandbox`` says whether a pid belongs to the tool's tree
    (the processes of the trace).
    """

    def __init__(
        self,
        plan: Mapping[str, Any],
        variables: Mapping[str, str],
        *,
        uid: int | None = None,
    ) -> None:
        landlock = plan.get("landlock") or {}
        self.landlock_on = bool(landlock) or "landlock" not in plan
        self.handled_fs = _handled(landlock.get("handled_fs", "all"), tuple(FS_RIGHTS))
        self.handled_net = _handled(landlock.get("handled_net", "all"), tuple(NET_RIGHTS))
        self.scoped = _handled(landlock.get("scoped", "all"), tuple(SCOPES))
        # Rights the kernel could not enforce are not enforced: leave them out.
        for d in plan.get("degraded") or []:
            item = str(d.get("item", "")) if isinstance(d, dict) else ""
            if item == "landlock.scoped: signal":
                self.scoped -= {"signal"}
            elif item == "landlock.scoped: abstract_unix_socket":
                self.scoped -= {"abstract_unix_socket"}
        self.fs_rules: list[tuple[str, frozenset[str]]] = []
        for rule in landlock.get("fs_rules") or []:
            path = _expand(str(rule.get("path", "")), variables)
            self.fs_rules.append((_realpath(path), frozenset(rule.get("access") or ())))
        self.ports: dict[str, list[int]] = {"connect_tcp": [], "bind_tcp": []}
        for rule in landlock.get("net_rules") or []:
            for right in rule.get("access") or ():
                if right in self.ports:
                    self.ports[right].append(int(rule.get("port", -1)))
        sec = plan.get("seccomp") or {}
        from cvg_kernel.seccomp import DEFAULT_DENY, DEFAULT_SOCKETS, DENY_REASONS

        self.deny = frozenset(sec.get("deny", DEFAULT_DENY))
        # With an allow list, every call not on it is refused by the filter itself.
        listed = sec.get("allow")
        self.allow: frozenset[str] | None = None if listed is None else frozenset(listed)
        self.deny_errno = str(sec.get("deny_errno") or "EPERM")
        self.deny_reasons = DENY_REASONS
        sockets = sec.get("sockets", DEFAULT_SOCKETS)
        self.socket_types: dict[str, frozenset[str]] = {}
        for entry in sockets:
            fam = str(entry.get("family"))
            types = entry.get("types") or ("stream", "dgram", "seqpacket", "raw")
            self.socket_types[fam] = self.socket_types.get(fam, frozenset()) | frozenset(types)
        self.rlimits = plan.get("rlimits") or {}
        self.processes = plan.get("processes")
        self.uid = os.geteuid() if uid is None else uid

    # ---------------------------------------------------------------- rights

    def _granted(self, path: str, right: str) -> bool:
        # Landlock judges the file a path resolves to, wherever the links point.
        real = _realpath(path)
        for rule_path, access in self.fs_rules:
            if right in access and _inside(real, rule_path):
                return True
        return False

    def _missing(self, path: str, rights: Sequence[str]) -> str | None:
        """The first of ``rights`` Landlock handles and no rule grants at ``path``."""
        for right in rights:
            if right in self.handled_fs and not self._granted(path, right):
                return right
        return None

    def _fs(self, what: str, right: str | None, where: str = "") -> Verdict:
        if right is None:
            return Verdict("none", what=what, reason="granted: refused by file permissions")
        rule = RULE_OF_RIGHT[right]
        covers = f"no {rule} grant covers {where or 'it'}"
        if right == "refer":
            covers = f"moving between directories needs both in {rule}"
        return Verdict("landlock_fs", right, rule, f"{covers}; Landlock right {right}", what)

    # ---------------------------------------------------------------- entry

    def __call__(
        self,
        event: RawEvent,
        *,
        flags: str = "",
        mode: str = "",
        in_tree: bool = True,
        from_seccomp: bool = False,
    ) -> Verdict:
        """Judge one failed call. ``flags`` are an open call's flags as strace
        printed them, ``mode`` mknod's mode; ``in_tree`` says whether a signal's
        target is one of the tool's own processes."""
        err = event.result
        name = event.syscall
        what = _describe(event, flags)
        pid, path = event.pid, event.path
        if pid and path and path.startswith(_PROC_SELF):
            # /proc/self here would be this process: judge the caller's own entry.
            event = event.copy()
            event.path = _proc_of(path, pid)
        # seccomp first: its answer comes before anything else sees the call.
        if self.allow is not None and name not in self.allow and err == self.deny_errno:
            return Verdict(
                "seccomp", None, "syscalls.allow", "not in syscalls.allow", f"syscall {name}"
            )
        if name in self.deny and err == self.deny_errno:
            reason = self.deny_reasons.get(name, "on the seccomp deny list")
            return Verdict(
                "seccomp",
                None,
                "syscalls.allow",
                f"seccomp: not in syscalls.allow; allowing it {reason}",
                name,
            )
        if event.op == "socket":
            return self._socket(event, err)
        if from_seccomp:
            # Reported by the filter itself: an argument check no policy rule opens.
            reason = _ARG_CHECKS.get(name, "refused by an argument check")
            return Verdict("seccomp", None, None, f"seccomp: {reason}", name)
        if err == "EAGAIN" and name in ("clone", "fork", "vfork", "clone3"):
            if self.rlimits.get("nproc") is not None or self.processes is not None:
                return Verdict(
                    "rlimit",
                    "nproc",
                    "resources.processes",
                    "RLIMIT_NPROC reached: resources.processes",
                    f"{name}",
                )
            return Verdict("none", what=name)
        if name in ("clone", "fork", "vfork") and err == "EPERM":
            return Verdict("seccomp", None, None, "seccomp: new namespaces are never granted", name)
        if err == "ENOMEM" and name in ("mmap", "mremap", "brk"):
            for limit in ("data", "as"):
                if self.rlimits.get(limit) is not None:
                    return Verdict(
                        "rlimit",
                        limit,
                        "resources.memory_mb",
                        f"RLIMIT_{limit.upper()} reached: resources.memory_mb",
                        name,
                    )
            return Verdict("none", what=name)
        if err == "EMFILE":
            return Verdict(
                "rlimit",
                "nofile",
                "resources.open_files",
                "RLIMIT_NOFILE reached: resources.open_files",
                what,
            )
        if err == "EFBIG":
            return Verdict(
                "rlimit",
                "fsize",
                "resources.file_size_mb",
                "RLIMIT_FSIZE reached: resources.file_size_mb",
                what,
            )
        if event.op in ("connect", "bind"):
            return self._net(event, err, what)
        if event.op == "signal":
            return self._signal(event, err, what, in_tree)
        if err not in _REFUSALS or event.path is None:
            return Verdict("none", what=what, reason="the tool's own failure, not a refusal")
        if err == "EXDEV":
            return self._refer(event, what)
        if err != "EACCES":
            return Verdict("none", what=what)
        return self._path(event, flags, mode, what)

    def _path(self, event: RawEvent, flags: str, mode: str, what: str) -> Verdict:
        verdict = self._path_rights(event, flags, mode, what)
        path = event.path
        if verdict.mechanism != "landlock_fs" or path is None or verdict.right == "refer":
            return verdict
        if verdict.resolved is not None or event.op in ("rename", "link"):
            return verdict
        # Landlock judges where symbolic links lead: name that file, since the grant
        # has to cover it, not the name the tool used.
        if verdict.right in _DIRECTORY_RIGHTS:
            parent = posixpath.dirname(path) or "/"
            real_parent = _realpath(parent)
            if real_parent != parent:
                verdict.resolved = posixpath.join(real_parent, posixpath.basename(path))
                verdict.reason = verdict.reason.replace(
                    "its directory", f"{real_parent}, where its directory leads", 1
                )
        elif "interpreter" not in verdict.reason:
            real = _realpath(path)
            if real != path:
                verdict.resolved = real
                verdict.reason = verdict.reason.replace(
                    "covers it", f"covers {real}, where it leads", 1
                )
        return verdict

    def _path_rights(self, event: RawEvent, flags: str, mode: str, what: str) -> Verdict:
        path = event.path
        assert path is not None
        op = event.op
        name = event.syscall
        parent = posixpath.dirname(path) or "/"
        if op == "execute":
            right = self._missing(path, ("execute",))
            if right is not None:
                return self._fs(what, right)
            interp = exec_interpreter(path)
            if interp is not None and self._missing(interp, ("execute",)):
                v = self._fs(what, "execute", interp)
                v.reason = f"its interpreter {interp}: " + v.reason
                return v
            return self._fs(what, None)
        if name == "ftruncate" or name.startswith("truncate"):
            return self._fs(what, self._missing(path, ("truncate",)))
        if op in ("read", "write", "create") and name in ("open", "openat", "openat2", "creat"):
            opened = set(flags.split("|")) if flags else set()
            if name == "creat":
                opened |= {"O_CREAT", "O_WRONLY", "O_TRUNC"}
            exists = os.path.lexists(path)
            if "O_CREAT" in opened and not exists:
                return self._fs(what, self._missing(parent, ("make_reg",)), "its directory")
            needs: list[str] = []
            if "O_WRONLY" in opened or "O_RDWR" in opened:
                needs.append("write_file")
            if "O_WRONLY" not in opened:
                directory = "O_DIRECTORY" in opened or os.path.isdir(path)
                needs.insert(0, "read_dir" if directory else "read_file")
            if "O_TRUNC" in opened and not os.path.isdir(path):
                needs.append("truncate")
            return self._fs(what, self._missing(path, needs))
        if op == "create":
            if name in ("mkdir", "mkdirat"):
                right = "make_dir"
            elif name in ("symlink", "symlinkat"):
                right = "make_sym"
            elif name in ("mknod", "mknodat"):
                right = next((r for n, r in _MKNOD_NAMES.items() if n in mode), "make_reg")
            else:
                right = "make_reg"
            return self._fs(what, self._missing(parent, (right,)), "its directory")
        if op == "remove":
            right = "remove_dir" if name == "rmdir" or "AT_REMOVEDIR" in flags else "remove_file"
            return self._fs(what, self._missing(parent, (right,)), "its directory")
        if op in ("rename", "link"):
            # The new name is made in the destination's directory, and a rename
            # removes the old one from the source's: name the one a grant must cover.
            dest = event.path2 or path
            dest_parent = posixpath.dirname(dest) or "/"
            kind = "make_dir" if os.path.isdir(dest if op == "rename" else path) else "make_reg"
            right = self._missing(dest_parent, (kind,))
            if right is not None:
                v = self._fs(what, right, dest_parent)
                v.resolved = dest
                return v
            if op == "rename":
                removal = "remove_dir" if kind == "make_dir" else "remove_file"
                right = self._missing(parent, (removal,))
                if right is not None:
                    return self._fs(what, right, parent)
            return self._fs(what, None)
        if op == "chdir":
            return self._fs(what, self._missing(path, ("read_dir",)))
        return Verdict("none", what=what)

    def _refer(self, event: RawEvent, what: str) -> Verdict:
        """EXDEV: Landlock refuses a link or rename between directories without
        refer; or the two are on different filesystems, which is not cvg."""
        src, dst = event.path, event.path2
        if src is None or dst is None or "refer" not in self.handled_fs:
            return Verdict("none", what=what)
        try:
            same_fs = (
                os.stat(posixpath.dirname(src) or "/").st_dev
                == os.stat(posixpath.dirname(dst) or "/").st_dev
            )
        except OSError:
            same_fs = True
        if not same_fs:
            return Verdict("none", what=what, reason="different filesystems")
        src_dir = posixpath.dirname(src) or "/"
        dst_dir = posixpath.dirname(dst) or "/"
        if src_dir == dst_dir and event.op == "rename":
            return Verdict("none", what=what)
        missing = self._missing(src_dir, ("refer",)) or self._missing(dst_dir, ("refer",))
        if missing is None:
            return Verdict("none", what=what)
        return self._fs(what, "refer")

    # ---------------------------------------------------------------- network, ipc

    def _net(self, event: RawEvent, err: str, what: str) -> Verdict:
        family = event.family
        address = event.address or ""
        if family == "unix" and address.startswith("@"):
            if err == "EPERM" and "abstract_unix_socket" in self.scoped:
                return Verdict(
                    "landlock_scope",
                    "abstract_unix_socket",
                    None,
                    "abstract UNIX sockets outside the sandbox are never granted",
                    what,
                )
            return Verdict("none", what=what)
        tcp = family in ("inet", "inet6") and event.sock_type in ("stream", None)
        right = "connect_tcp" if event.op == "connect" else "bind_tcp"
        if not tcp or err != "EACCES" or right not in self.handled_net or event.port is None:
            return Verdict("none", what=what)
        ports = self.ports[right]
        if event.port in ports:
            return Verdict("none", what=what, reason="granted: refused by the system")
        rule = "network.tcp_connect" if right == "connect_tcp" else "network.tcp_bind"
        grants = ", ".join(str(p) for p in sorted(set(ports))) or "no port"
        return Verdict("landlock_net", right, rule, f"{rule} grants {grants}", what)

    def _signal(self, event: RawEvent, err: str, what: str, in_tree: bool) -> Verdict:
        target = event.target_pid
        if err != "EPERM" or "signal" not in self.scoped or in_tree or target is None:
            return Verdict("none", what=what)
        if target <= 0:
            return Verdict("none", what=what)  # process groups: not judged
        uids = _uids_of(target)
        if uids is not None and self.uid != 0 and self.uid not in uids:
            # The credential check comes before Landlock's: another user's process.
            return Verdict("none", what=what, reason="another user's process")
        return Verdict(
            "landlock_scope", "signal", "ipc.signal_outside", "ipc.signal_outside is false", what
        )

    def _socket(self, event: RawEvent, err: str) -> Verdict:
        family = event.family
        kind = event.sock_type
        what = f"socket {family or '?'} {kind or ''}".rstrip()
        if err not in ("EAFNOSUPPORT", "EPERM", "EACCES"):
            return Verdict("none", what=what)
        allowed = self.socket_types.get(str(family))
        if allowed is None or (kind is not None and kind not in allowed):
            if family == "unix":
                rule: str | None = "network.unix"
            elif family in ("inet", "inet6") and kind == "dgram":
                rule = "network.udp"
            elif family in ("inet", "inet6") and kind == "stream":
                # No TCP port is granted at all, so the filter refuses the socket itself,
                # before any connect names the port the tool wanted.
                rule = "network.tcp_connect"
            else:
                rule = None
            if rule == "network.tcp_connect":
                reason = "no TCP port is granted (network.tcp_connect and tcp_bind are empty)"
            else:
                reason = f"{rule} is false" if rule else "never granted by a policy"
            return Verdict("seccomp", None, rule, f"seccomp: {reason}", what)
        return Verdict("none", what=what)

    # ---------------------------------------------------------------- ends of runs

    @staticmethod
    def ended(meaning: str, detail: str | None) -> Verdict | None:
        """The supervisor's own refusal, when it ended the run."""
        text = detail or ""
        if meaning == "signaled" and text == "killed by SIGSYS":
            # strace's "+++ killed by" line does not come under -e signal=none, so the
            # tool's own death is judged from its status.
            return _sigsys()
        if meaning == "wall_clock":
            return Verdict("supervisor", None, "resources.wall_clock_seconds", text, "run")
        if meaning != "limit":
            return None
        if "processes=" in text:
            return Verdict("supervisor", None, "resources.processes", text, "run")
        if "cpu_seconds=" in text:
            return Verdict("supervisor", None, "resources.cpu_seconds", text, "run")
        if "memory_mb=" in text:
            return Verdict("supervisor", None, "resources.memory_mb", text, "run")
        return Verdict("supervisor", None, None, text, "run")

    @staticmethod
    def killed(signal_name: str) -> Verdict | None:
        """A process killed by the signal an rlimit sends."""
        if signal_name == "SIGXFSZ":
            return Verdict(
                "rlimit",
                "fsize",
                "resources.file_size_mb",
                "RLIMIT_FSIZE reached: resources.file_size_mb",
                "write",
            )
        if signal_name == "SIGXCPU":
            return Verdict(
                "rlimit",
                "cpu",
                "resources.cpu_seconds",
                "RLIMIT_CPU reached: resources.cpu_seconds",
                "run",
            )
        if signal_name == "SIGSYS":
            return _sigsys()
        return None


# The kernel kills before anything is reported, so the call itself has no name here;
# traced with on_violation: errno, the same run names it.
def _sigsys() -> Verdict:
    return Verdict(
        "seccomp",
        None,
        "syscalls.on_violation",
        "a call not in syscalls.allow with on_violation: kill, or a foreign-architecture "
        "call; with on_violation: errno, --trace names it",
        "process killed by SIGSYS",
    )


def _describe(event: RawEvent, flags: str) -> str:
    """``open /x for read``, ``connect tcp port 8080``, ``execute /usr/bin/ls``."""
    op = event.op
    path = event.path or "?"
    name = event.syscall
    if name in ("open", "openat", "openat2", "creat"):
        opened = set(flags.split("|")) if flags else set()
        if name == "creat" or ("O_CREAT" in opened and not os.path.lexists(path)):
            return f"create {path}"
        if "O_RDWR" in opened:
            return f"open {path} for read and write"
        if "O_WRONLY" in opened:
            return f"open {path} for write"
        if "O_DIRECTORY" in opened or os.path.isdir(path):
            return f"open {path} for listing"
        return f"open {path} for read"
    if op == "execute":
        return f"execute {path}"
    if op in ("create", "remove", "chdir"):
        return f"{op} {path}"
    if op in ("rename", "link"):
        return f"{op} {path} to {event.path2 or '?'}"
    if name.startswith("truncate") or name == "ftruncate":
        return f"truncate {path}"
    if op in ("connect", "bind"):
        fam = event.family
        if fam in ("inet", "inet6"):
            proto = "udp" if event.sock_type == "dgram" else "tcp"
            return f"{op} {proto} port {event.port}"
        if fam == "unix":
            return f"{op} unix socket {event.address or path}"
        return f"{op} {fam}"
    if op == "signal":
        return f"signal pid {event.target_pid}"
    return f"{name} {path}" if event.path else name
