"""Checks beyond the schema: variables, paths, syscall names and risky grants.

:func:`check` returns :class:`~cvg_policy.errors.Finding` s, each naming its rule by
address and line. An error makes the policy invalid; a warning says why a valid grant
is risky, or that a path does not exist here.
"""

from __future__ import annotations

import difflib
import glob
import os
import platform
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Final

from cvg_kernel import syscall_table
from cvg_kernel.seccomp import ARCH_SPECIFIC, DEFAULT_DENY, DEFAULT_ENOSYS, DENY_REASONS

from .errors import Finding, PolicyError
from .load import LoadedPolicy
from .protected import protected_reason
from .secrets import secret_variable
from .variables import LATE_BOUND, VARIABLES, expand

__all__ = [
    "DENY_REASONS",
    "RISKY_PORTS",
    "RISKY_WRITES",
    "check",
    "errors",
    "machine_arch",
    "warnings",
]

_VAR_RE: Final = re.compile(r"\$\{([^}]*)\}")


RISKY_PORTS: Final[dict[int, str]] = {
    21: "ftp: plain-text file transfer out",
    22: "ssh: remote shells, tunnels and file copies out",
    23: "telnet: remote shells",
    25: "smtp: mail out, a classic exfiltration channel",
    53: "dns: DNS over TCP, used for tunnelling data out",
    445: "smb: file shares",
    465: "smtp (submissions): mail out",
    587: "smtp (submission): mail out",
    1080: "socks proxy: relays to any host and port, around the port filter",
    3128: "http proxy: relays to any host and port, around the port filter",
    3389: "rdp: remote desktops",
    4444: "the default port of reverse shells (metasploit)",
    5900: "vnc: remote desktops",
    6667: "irc: botnet command and control",
    6697: "irc over TLS: botnet command and control",
    9050: "tor socks proxy: anonymous relay to anywhere",
}
"""Well-known ports of exfiltration, remote shells and relays, each with its reason."""

RISKY_WRITES: Final[dict[str, str]] = {
    "/": "the whole filesystem",
    "/etc": "the system configuration (passwd, sudoers, cron, ld.so.preload)",
    "/usr": "the system's programs and libraries",
    "/bin": "the system's programs",
    "/sbin": "the system's programs",
    "/lib": "the system's libraries",
    "/lib64": "the system's libraries",
    "/boot": "the kernel and boot loader",
    "/var": "system state, logs and spools",
    "/home": "every user's home",
    "/root": "root's home",
    "/opt": "installed software",
    "/proc": "process and kernel settings (/proc/sys, other processes' memory)",
    "/sys": "kernel and device settings",
    "/dev": "devices (disks, terminals)",
    "/run": "runtime sockets and pid files (docker, D-Bus, systemd)",
    "/tmp": "every user's temporary files (use ${SCRATCH}, a private directory per run)",
}
"""Trees a write grant should not cover as a whole, with what they hold."""

_SOCKETS: Final[dict[str, str]] = {
    "/var/run/docker.sock": "the docker socket: root on the host",
    "/run/docker.sock": "the docker socket: root on the host",
    "/run/containerd/containerd.sock": "the containerd socket: root on the host",
    "/run/podman/podman.sock": "the podman socket: root on the host",
    "/run/dbus/system_bus_socket": "the system D-Bus",
}

# What cvg-run sets (in both cases) to point the tool at the network.hosts proxy.
_PROXY_VARIABLES: Final = frozenset({"https_proxy", "http_proxy", "all_proxy", "no_proxy"})

_FS_FIELDS: Final = ("read", "write", "execute", "deny")
_GRANTS: Final = ("read", "write", "execute")


def machine_arch() -> str:
    """This machine's architecture in the syscall table's terms (``x86_64``, ``aarch64``)."""
    machine = platform.machine()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(machine.lower(), machine)


def errors(findings: Iterable[Finding]) -> list[Finding]:
    """The errors among ``findings``."""
    return [f for f in findings if f.severity == "error"]


def warnings(findings: Iterable[Finding]) -> list[Finding]:
    """The warnings among ``findings``."""
    return [f for f in findings if f.severity == "warning"]


def _within(inner: str, outer: str) -> bool:
    """True when ``inner`` is ``outer`` or beneath it (both normalized)."""
    if outer == "/":
        return inner.startswith("/")
    return inner == outer or inner.startswith(outer.rstrip("/") + "/")


def _resolve(path: str) -> str:
    """The path with symlinks resolved (as far as they exist), normalized."""
    if "${" in path:
        return os.path.normpath(path)
    return os.path.realpath(path)


class _Checker:
    def __init__(
        self,
        loaded: LoadedPolicy,
        variables: Mapping[str, str],
        strict: bool,
        arch: str,
        env: Mapping[str, str],
        abi: int | None,
        accept_risk: bool = False,
    ) -> None:
        self.accept_risk = accept_risk
        self.loaded = loaded
        self.policy = loaded.policy
        self.variables = variables
        self.strict = strict
        self.arch = arch
        self.env = env
        self.abi = abi
        self.findings: list[Finding] = []

    def add(self, severity: str, address: str, message: str) -> None:
        assert severity in ("error", "warning")
        self.findings.append(
            Finding(
                "error" if severity == "error" else "warning",
                address,
                message,
                file=self.loaded.filename,
                line=self.loaded.line_of(address),
            )
        )

    # -- values --------------------------------------------------------------------

    def values(self) -> Iterator[tuple[str, str]]:
        """Every (address, string) that may hold a variable."""
        fs = self.policy.filesystem
        for name in _FS_FIELDS:
            for i, value in enumerate(getattr(fs, name)):
                yield f"filesystem.{name}[{i}]", value
        for key, value in self.policy.environment.set.items():
            yield _env_address(key), value

    def expanded(self, address: str, value: str) -> str | None:
        """``value`` with its variables replaced (late-bound ones kept); None after an
        error or when a variable has no value here (both reported)."""
        for name in _VAR_RE.findall(value):
            if name in LATE_BOUND:
                continue
            if name not in VARIABLES:
                known = ", ".join("${" + n + "}" for n in VARIABLES)
                self.add("error", address, f"unknown variable ${{{name}}} (known: {known})")
                return None
            if name not in self.variables:
                self.add(
                    "error" if self.strict else "warning",
                    address,
                    f"${{{name}}} has no value here, so {value!r} was not checked",
                )
                return None
        try:
            return expand(value, self.variables)
        except PolicyError as e:  # an unterminated ${ and the like
            self.add("error", address, e.message)
            return None

    # -- the checks ----------------------------------------------------------------

    def run(self) -> list[Finding]:
        paths: dict[str, list[tuple[str, str, str]]] = {name: [] for name in _FS_FIELDS}
        for address, value in self.values():
            out = self.expanded(address, value)
            if out is None or not address.startswith("filesystem."):
                continue
            field = address.split(".")[1].split("[")[0]
            path = os.path.normpath(out) if out.startswith("/") else out
            paths[field].append((address, value, path))
        for field in _GRANTS:
            for address, value, path in paths[field]:
                self.check_exists(address, value, path)
        for address, value, path in paths["write"]:
            self.check_write(address, value, path)
        for field in _GRANTS:
            for address, value, path in paths[field]:
                self.check_sockets(address, value, path, field)
        self.check_write_execute(paths["write"], paths["execute"])
        self.check_nested_in_write(paths)
        self.check_syscalls()
        self.check_network()
        self.check_ipc_env()
        return self.findings

    def check_exists(self, address: str, value: str, path: str) -> None:
        if "${" in path:  # late bound (${SCRATCH}): it exists only during a run
            return
        try:
            os.stat(path)
        except FileNotFoundError:
            shown = value if value == path else f"{value} ({path})"
            if os.path.islink(path):
                target = os.readlink(path)
                message = f"{shown} is a symlink to {target}, which does not exist"
            else:
                message = f"{shown} does not exist"
            self.add("error" if self.strict else "warning", address, message)
        except NotADirectoryError:
            self.add(
                "error" if self.strict else "warning",
                address,
                f"{value} does not exist (a parent is not a directory)",
            )
        except OSError:
            pass  # no permission to look: it may exist; the kernel will decide

    def check_nested_in_write(self, paths: Mapping[str, list[tuple[str, str, str]]]) -> None:
        # The tool may replace anything beneath a write grant with a symlink, so a grant
        # nested there names whatever the tool chose, from its next run on. cvg opens such
        # a rule without following links and refuses to run when one is there.
        for field in _GRANTS:
            for address, value, path in paths[field]:
                for w_address, w_value, w_path in paths["write"]:
                    if w_address == address or path == w_path or not _within(path, w_path):
                        continue
                    self.add(
                        "warning",
                        address,
                        f"{field} grant on {value} is inside the write grant {w_value} "
                        f"({w_address}): the tool can replace it with a symlink; cvg-run "
                        "then refuses to run (125) rather than follow it",
                    )
                    break

    def check_write(self, address: str, value: str, path: str) -> None:
        resolved = _resolve(path)
        shown = value if resolved == value else f"{value} (resolves to {resolved})"
        home = self.variables.get("HOME")
        protected = protected_reason(value, home, self.env) or protected_reason(
            resolved, home, self.env
        )
        if protected is not None:
            self.add(
                "warning",
                address,
                f"writes {shown}, a protected path: {protected}; a tool that writes it "
                "runs code outside the sandbox later (docs/protected-paths.md)",
            )
            return
        if home and resolved == _resolve(os.path.normpath(home)) and resolved != "/":
            self.add(
                "warning",
                address,
                f"writes {shown}, the whole home directory: shell startup files, ~/.ssh, "
                "credentials; grant the few directories the tool needs",
            )
            return
        for tree, holds in RISKY_WRITES.items():
            if resolved == tree or resolved == _resolve(tree):
                self.add("warning", address, f"writes {shown} as a whole: {holds}")
                return

    def socket_paths(self) -> dict[str, str]:
        """Sockets a grant should not reach: fixed ones, ssh-agent's, the user's D-Bus."""
        out = dict(_SOCKETS)
        for path in sorted(glob.glob("/tmp/ssh-*")):
            out[path] = "an ssh-agent socket directory: the user's ssh keys"
        auth = self.env.get("SSH_AUTH_SOCK")
        if auth and auth.startswith("/"):
            out[os.path.normpath(auth)] = (
                "the ssh-agent socket ($SSH_AUTH_SOCK): the user's ssh keys"
            )
            out[os.path.dirname(os.path.normpath(auth))] = (
                "the ssh-agent socket's directory ($SSH_AUTH_SOCK): the user's ssh keys"
            )
        runtime = self.env.get("XDG_RUNTIME_DIR")
        if runtime and runtime.startswith("/"):
            out[os.path.join(os.path.normpath(runtime), "bus")] = "the user's D-Bus session"
        return out

    def check_sockets(self, address: str, value: str, path: str, field: str) -> None:
        if "${" in path:
            return
        resolved = _resolve(path)
        if path.startswith("/tmp/ssh-") or resolved.startswith("/tmp/ssh-"):
            self.add(
                "warning",
                address,
                f"{field} grant on {value}: an ssh-agent socket directory (the user's ssh keys)",
            )
            return
        sockets = self.socket_paths()
        for sock, what in sockets.items():
            if _within(path, sock) or _within(resolved, sock) or _within(resolved, _resolve(sock)):
                self.add("warning", address, f"{field} grant on {value}: {what}")
                return
        # A grant on a tree holding a socket reaches it too, if the socket exists here.
        for sock, what in sockets.items():
            if os.path.lexists(sock) and (_within(sock, path) or _within(_resolve(sock), resolved)):
                self.add(
                    "warning", address, f"{field} grant on {value}, which holds {sock}: {what}"
                )
                return

    def check_write_execute(
        self, writes: list[tuple[str, str, str]], executes: list[tuple[str, str, str]]
    ) -> None:
        for e_address, e_value, e_path in executes:
            e_res = _resolve(e_path)
            for w_address, w_value, w_path in writes:
                w_res = _resolve(w_path)
                if _within(e_res, w_res) or _within(w_res, e_res):
                    self.add(
                        "warning",
                        e_address,
                        f"execute {e_value} overlaps write {w_value} ({w_address}): the tool "
                        "can write a program and then run it",
                    )
                    break

    def check_syscalls(self) -> None:
        table = syscall_table.TABLES.get(self.arch)
        allowlist = self.policy.syscalls.mode == "allowlist"
        if not allowlist and self.policy.syscalls.on_violation != "errno":
            self.add(
                "warning",
                "syscalls.on_violation",
                "on_violation applies only with mode: allowlist; the deny list answers EPERM",
            )
        if allowlist and not self.policy.syscalls.allow:
            self.add(
                "warning",
                "syscalls.allow",
                "allowlist mode with an empty allow list: the tool may make no call but the "
                "few the launcher needs to exec it",
            )
        for i, name in enumerate(self.policy.syscalls.allow):
            address = f"syscalls.allow[{i}]"
            if table is None:
                if i == 0:
                    self.add(
                        "warning",
                        address,
                        f"no syscall table for {self.arch}: names were not checked",
                    )
            elif name not in table and name not in ARCH_SPECIFIC:
                close = difflib.get_close_matches(name, list(table), n=1, cutoff=0.75)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                self.add("error", address, f"unknown system call {name!r} on {self.arch}{hint}")
                continue
            if name in DEFAULT_DENY:
                reason = DENY_REASONS.get(name, "a call the default deny list closes")
                if allowlist and not self.accept_risk:
                    self.add(
                        "warning",
                        address,
                        f"{name} is on the default deny list and stays denied in allowlist "
                        f"mode; --accept-risk allows it, which {_opens(reason)}",
                    )
                else:
                    self.add("warning", address, f"allowing {name} {_opens(reason)}")
            elif allowlist and name not in DEFAULT_ENOSYS:
                continue
            elif name in DEFAULT_ENOSYS:
                self.add(
                    "warning",
                    address,
                    f"{name} is answered ENOSYS whatever the policy says (its flags are out "
                    "of the filter's reach, so the C library falls back to a call it can "
                    "check): listing it changes nothing",
                )
            elif table is not None:
                self.add(
                    "warning",
                    address,
                    f"{name} is not on the default deny list: listing it changes nothing",
                )

    def check_network(self) -> None:
        net = self.policy.network
        for field, verb in (("tcp_connect", "connect to"), ("tcp_bind", "listen on")):
            for i, port in enumerate(getattr(net, field)):
                reason = RISKY_PORTS.get(port)
                if reason is not None:
                    self.add(
                        "warning",
                        f"network.{field}[{i}]",
                        f"may {verb} port {port} on any host: {reason}",
                    )
        self.check_hosts()
        if net.udp:
            self.add(
                "warning",
                "network.udp",
                "UDP to any host and port: Landlock filters TCP ports only, so this also "
                "allows DNS tunnelling and other exfiltration over UDP",
            )
        if net.unix and (self.abi is None or self.abi < 9):
            self.add(
                "warning",
                "network.unix",
                "socket(AF_UNIX) reaches every unix socket on the host (D-Bus, docker, "
                "ssh-agent): below Landlock ABI 9 no filesystem rule restricts connecting "
                "to one",
            )

    def check_hosts(self) -> None:
        net = self.policy.network
        seen: dict[tuple[str, int], str] = {}
        for i, rule in enumerate(net.hosts):
            for j, port in enumerate(rule.ports):
                address = f"network.hosts[{i}].ports[{j}]"
                if port in net.tcp_connect:
                    self.add(
                        "error",
                        address,
                        f"port {port} of {rule.host} is also in network.tcp_connect, which "
                        "grants it on every host: drop it from one of the two",
                    )
                key = (rule.host.lower(), port)
                if key in seen:
                    self.add("warning", address, f"{rule.host}:{port} is already in {seen[key]}")
                seen.setdefault(key, address)
        if not net.hosts:
            return
        if net.udp:
            self.add(
                "warning",
                "network.udp",
                "network.hosts filters TCP through the proxy only: UDP still reaches any "
                "host and port",
            )
        env = self.policy.environment
        for name in env.set:
            if name.lower() in _PROXY_VARIABLES:
                self.add(
                    "warning",
                    _env_address(name),
                    f"{name} is replaced by cvg-run's proxy address when network.hosts is set",
                )
        for i, name in enumerate(env.pass_):
            if name.lower() in _PROXY_VARIABLES:
                self.add(
                    "warning",
                    f"environment.pass[{i}]",
                    f"{name} is replaced by cvg-run's proxy address when network.hosts is set",
                )

    def check_ipc_env(self) -> None:
        if self.policy.ipc.signal_outside:
            self.add(
                "warning",
                "ipc.signal_outside",
                "may signal (kill, stop) the user's processes outside the sandbox",
            )
        for i, name in enumerate(self.policy.environment.pass_):
            if secret_variable(name):
                self.add(
                    "warning",
                    f"environment.pass[{i}]",
                    f"passes {name} from the caller: it looks like a secret or a key agent",
                )
        for name in self.policy.environment.set:
            if secret_variable(name):
                self.add(
                    "warning",
                    _env_address(name),
                    f"sets {name} in the policy file: it looks like a secret, and its value "
                    "is then written down here; pass it from the caller (environment.pass)",
                )


def _opens(reason: str) -> str:
    return f"opens what the deny list closes: {reason}"


def _env_address(key: str) -> str:
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        return f"environment.set.{key}"
    return f'environment.set["{key}"]'


def check(
    loaded: LoadedPolicy,
    *,
    variables: Mapping[str, str],
    strict: bool = False,
    arch: str | None = None,
    env: Mapping[str, str] | None = None,
    abi: int | None = None,
    accept_risk: bool = False,
) -> list[Finding]:
    """Check a loaded policy beyond its schema; return errors and warnings in order.

    - A variable that is unknown is an error; one with no value in ``variables`` (other
      than the late-bound ``${SCRATCH}``) is a warning, an error with ``strict``.
    - A granted path that does not exist is a warning, an error with ``strict``.
      Symlinks are followed: ``/lib -> usr/lib`` is fine.
    - A name in ``syscalls.allow`` unknown on ``arch`` (default: this machine) is an
      error; one from the default deny list is a warning saying what it opens (in
      allowlist mode: that it stays denied, unless ``accept_risk``).
    - Risky grants are warnings with their reason: writing ``/``, ``/etc``, ``/usr``,
      ``${HOME}``, ``/proc``, ``/sys``, ``/dev``, ``/run`` and the like as a whole; the
      docker socket or an ssh-agent socket (``env``'s ``SSH_AUTH_SOCK``, default the
      process environment, and ``/tmp/ssh-*``) in any grant; write and execute on the
      same tree; well-known exfiltration ports; ``udp`` and ``unix`` (below Landlock
      ABI 9, or when ``abi`` is unknown); ``signal_outside``; secrets in ``pass``; a
      write grant on a protected path (``cvg_policy.protected``: ``~/.bashrc``,
      ``.git/config``, ``~/.local/bin``, cvg's own state) or inside one.
    - A ``network.hosts`` port that ``tcp_connect`` also grants (on every host) is an
      error; UDP beside hosts, a repeated host:port, and proxy variables the proxy will
      replace are warnings.
    """
    checker = _Checker(
        loaded,
        variables,
        strict,
        arch or machine_arch(),
        os.environ if env is None else env,
        abi,
        accept_risk,
    )
    return checker.run()
