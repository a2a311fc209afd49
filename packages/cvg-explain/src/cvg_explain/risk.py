"""How much a fix widens what the tool can do: low, medium or high, with the reason.

High: a secret, a write to a protected path (``cvg_policy.protected``: ``~/.bashrc``,
``.git/config``, ``~/.local/bin``, cvg's own state), a write to a system tree, write and
execute together on the same files, a directory that covers the home, a secret that
exists or a protected path (for a write), any network port (Landlock filters ports, not
hosts), UDP and UNIX sockets, and any call taken off the seccomp deny list. Medium: any
other whole directory to read or write, signals outside the sandbox, large resource
limits. Low: one more file, a modest limit.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass
from typing import Final, Literal

from cvg_kernel.seccomp import DENY_REASONS
from cvg_policy.implied import secrets_beneath
from cvg_policy.protected import protected_beneath, protected_reason
from cvg_policy.secrets import secret_reason

from .change import Change, Context

__all__ = ["LEVELS", "SYSTEM_TREES", "RiskNote", "risk_of"]

Level = Literal["low", "medium", "high"]
LEVELS: Final[tuple[Level, ...]] = ("low", "medium", "high")

SYSTEM_TREES: Final = (
    "/usr",
    "/etc",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/boot",
    "/var",
    "/opt",
    "/srv",
    "/root",
    "/proc",
    "/sys",
    "/snap",
    "/nix",
)
"""Trees that belong to the system: writing beneath one changes what every user runs."""

# A memory or process limit above these is rated medium: room for a runaway tool to
# take the machine down with it.
_LARGE: Final = {"memory_mb": 4096, "processes": 256, "open_files": 4096}


@dataclass(frozen=True)
class RiskNote:
    level: Level
    text: str


def _inside(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent + "/")


def _system_tree(path: str) -> str | None:
    if path == "/":
        return "/"
    for tree in SYSTEM_TREES:
        if _inside(path, tree):
            return tree
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError):
        return None
    if real != path:
        return _system_tree(real) if real != "/" else "/"
    return None


def _expanded(ctx: Context, field: str) -> list[str]:
    out = []
    for raw in getattr(ctx.policy.filesystem, field):
        value = raw
        for name, base in ctx.variables.items():
            value = value.replace("${" + name + "}", base)
        if "${" not in value:
            out.append(posixpath.normpath(value))
    return out


def _overlaps(path: str, others: list[str]) -> bool:
    return any(_inside(path, o) or _inside(o, path) for o in others)


def _is_dir(path: str) -> bool:
    try:
        return os.path.isdir(path)
    except ValueError:  # a NUL byte
        return False


def risk_of(
    change: Change, ctx: Context, *, real_path: str | None = None, current: int | None = None
) -> RiskNote:
    """The risk of applying ``change`` to the policy in ``ctx``."""
    section, field, value = change.section, change.field, change.value
    if section == "filesystem":
        return _fs_risk(field, str(value), real_path or str(value), ctx)
    if section == "network":
        if field in ("tcp_connect", "tcp_bind"):
            verb = "connect to" if field == "tcp_connect" else "accept connections on"
            return RiskNote(
                "high",
                f"a network port: the tool may {verb} TCP port {value} on any host "
                "(Landlock filters ports, not hosts)",
            )
        if field == "hosts":
            return RiskNote(
                "medium",
                f"the tool may reach {value} on TCP port {change.port} through the proxy "
                "(one named host, not every host on that port)",
            )
        if field == "udp":
            return RiskNote(
                "high", "UDP sockets reach any host and port (DNS tunnelling, exfiltration)"
            )
        if field == "unix" and change.op == "add":
            return RiskNote(
                "high",
                f"the tool may reach the service listening on {value}, outside the sandbox, "
                "and whatever that service does for its clients",
            )
        if field == "unix":
            return RiskNote(
                "high",
                "UNIX sockets reach local services outside the sandbox (D-Bus, docker.sock, "
                "ssh-agent) before Landlock ABI 9, where cvg-run refuses the policy unless "
                "run with --allow-degraded",
            )
    if section == "ipc":
        return RiskNote(
            "medium",
            "the tool may signal (stop, kill) other processes of the same user outside the sandbox",
        )
    if section == "syscalls":
        reason = DENY_REASONS.get(str(value), "is on the default deny list")
        return RiskNote("high", f"no policy should allow {value}: it {reason}")
    if section == "resources":
        limit = _LARGE.get(field)
        was = f" from {current}" if current is not None else ""
        if limit is not None and isinstance(value, int) and value > limit:
            return RiskNote(
                "medium", f"raises {field}{was} to {value}, above {limit}: room for a runaway"
            )
        return RiskNote("low", f"raises {field}{was} to {value}")
    return RiskNote("medium", f"changes {section}.{field}")  # pragma: no cover


def _fs_risk(field: str, written: str, path: str, ctx: Context) -> RiskNote:
    home = ctx.variables.get("HOME") or ctx.home
    secret = secret_reason(path, home) or secret_reason(written, home)
    verb = {"read": "reading", "write": "writing", "execute": "executing"}[field]
    if secret is not None:
        return RiskNote("high", f"grants {verb} a secret: {secret}")
    protected = protected_reason(path, home) or protected_reason(written, home)
    if field == "write" and protected is not None:
        return RiskNote(
            "high",
            f"writes a protected path: {protected} (--apply writes it only with "
            f"--accept-protected {written})",
        )
    tree = _system_tree(path)
    if field == "write" and tree is not None:
        return RiskNote("high", f"a write to a system tree ({tree})")
    if field == "write" and _overlaps(path, _expanded(ctx, "execute")):
        return RiskNote(
            "high",
            f"write plus execute together: {written} is also executable, so the tool could "
            "run code it wrote",
        )
    if field == "execute" and _overlaps(path, _expanded(ctx, "write")):
        return RiskNote(
            "high",
            f"write plus execute together: {written} is also writable, so the tool could "
            "run code it wrote",
        )
    if home and _inside(posixpath.normpath(home), path):
        # Before looking at the disk: a home that is not here (a record from another
        # machine) is still a home.
        return RiskNote(
            "high",
            f"grants {verb} everything beneath {written}, which covers the whole home "
            f"{home} (its secrets, keys and startup files)",
        )
    if _is_dir(path):
        covered = _covers(field, path, ctx, home)
        if covered is not None:
            return RiskNote("high", f"grants {verb} everything beneath {written}, {covered}")
        return RiskNote("medium", f"grants {verb} everything beneath the directory {written}")
    return RiskNote("low", f"grants {verb} the one file {written}")


def _covers(field: str, path: str, ctx: Context, home: str | None) -> str | None:
    """What makes a grant on the directory ``path`` high risk beyond its own name: a
    secret that exists beneath it (which the compiled plan keeps out unless the policy
    names it, but a grant meant to reach it is still a grant of a secret), or (for a
    write) a protected path."""
    cwd = ctx.variables.get("CWD")
    secrets = [s for s, _ in secrets_beneath(path, cwd, home)]
    if secrets:
        shown = ", ".join(secrets[:3]) + (", ..." if len(secrets) > 3 else "")
        return f"which holds secrets ({shown})"
    if field == "write":
        found = [p for p, _ in protected_beneath(path, cwd, home)]
        if found:
            shown = ", ".join(found[:3]) + (", ..." if len(found) > 3 else "")
            return f"which holds protected paths ({shown})"
    return None
