"""The learning sandbox: what a tool may do while cvg-observe watches it.

Reads are allowed everywhere except the secrets below; writes only under the working
directory (not when it is a system tree or holds a home; only its existing folders,
not its dot-files, when it is the home), the scratch directory, /tmp and /dev/shm
(POSIX shared memory and semaphores: Python's multiprocessing keeps its locks there,
and refusing it would make the tool fail while it is watched) and /dev/null; anything
may be executed;
TCP and UDP reach every port (Landlock does not handle the network here, and every
connect and bind is recorded); UNIX sockets are refused (seccomp), so D-Bus, the
ssh-agent and docker.sock stay out of reach; cvg's seccomp deny list applies. The
policy goes through :func:`cvg_policy.compile.compile_policy` like any other, so each
secret is kept out by ``filesystem.deny`` (deny inside allow). The scratch directory is
``${SCRATCH}`` in the plan, bound when it is applied, so one compile serves every run
in a working directory: it is kept by :mod:`.plan_cache`, which compiles again when any
input or anything the compile looked at has changed.

:class:`Judge` then says which failed events the sandbox itself caused
(``denied_while_learning``): an EACCES on a path no Landlock rule of the plan grants
the needed right for, an EPERM from a call on the seccomp deny list, a socket family
the filter does not allow.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from cvg_policy.defaults import broad_reason
from cvg_policy.expand import FsView, inside
from cvg_policy.secrets import HOME_SECRETS, SYSTEM_SECRETS, passwd_home, secret_paths
from cvg_policy.variables import context
from cvg_trace.events import RawEvent

from . import plan_cache

__all__ = [
    "HOME_SECRETS",
    "SYSTEM_SECRETS",
    "Judge",
    "LearningPlan",
    "learning_plan",
    "secret_paths",
]

SCRATCH: Final = "${SCRATCH}"

# cvg-run's default policy's limits (tests/test_observe_learning.py holds them to
# default_policy.yaml): the rlimits a tool runs under are the same whether it is watched
# or run. The wall clock is cvg-observe's own (--timeout), not the plan's.
RUN_RESOURCES: Final = {
    "wall_clock_seconds": None,
    "cpu_seconds": 300,
    "memory_mb": 4096,
    "file_size_mb": 1024,
    "open_files": 1024,
    "processes": 256,
}


def _workspace_roots(cwd: str, home: str | None) -> tuple[list[str], str | None]:
    """Where the tool may write beneath its working directory while learning, and a
    note when that is not the directory itself. A system tree, or a directory holding
    a home, is not writable at all (a tool started in / would otherwise write the whole
    system). The home is writable only in its existing folders that are not dot-files:
    its dot-files are where shells, desktops and package managers start programs from
    (~/.bashrc, ~/.config/autostart, ~/.local/bin), and a new entry directly in it
    could be one of those."""
    reason = broad_reason(cwd, home)
    if reason is None:
        return [cwd], None
    if not reason.startswith("a home directory"):
        return [], (
            f"learning sandbox: the working directory {cwd} is {reason}: not writable "
            "while learning"
        )
    try:
        names = sorted(os.listdir(cwd))
    except OSError:
        names = []
    folders = [
        os.path.join(cwd, n)
        for n in names
        if not n.startswith(".")
        and os.path.isdir(os.path.join(cwd, n))
        and not os.path.islink(os.path.join(cwd, n))
    ]
    return folders, (
        f"learning sandbox: the working directory {cwd} is the home: writable only in "
        f"its existing folders ({', '.join(os.path.basename(f) for f in folders) or 'none'}), "
        "not its dot-files nor new entries directly in it"
    )


@dataclass
class LearningPlan:
    """A compiled learning plan and what the judge needs to know about it."""

    plan: dict[str, Any]
    denied: list[str]  # the filesystem.deny paths, as given
    fs_rules: list[tuple[str, frozenset[str]]]
    deny_syscalls: frozenset[str]
    deny_errno: str
    socket_families: frozenset[str]
    notes: list[str] = field(default_factory=list)


def learning_plan(
    cwd: str,
    home: str | None,
    scratch: str,
    env: Mapping[str, str] | None = None,
) -> LearningPlan:
    """Compile the learning sandbox for this working directory, home and scratch.

    The plan names the scratch directory ``${SCRATCH}``, bound when it is prepared
    (``prepare(plan, {"SCRATCH": scratch, ...})``), so the same plan serves every run
    in this working directory. ``env`` is the environment the tool will get (default:
    this process's); every variable in it is passed through. Raises
    cvg_policy.PolicyError when it cannot be compiled."""
    denied = secret_paths(cwd, home)
    workspace, workspace_note = _workspace_roots(cwd, home)
    # A scratch directory inside a secret would lose its grant to the deny, which only
    # a path known when compiling can: keep it concrete there (as rare as a TMPDIR so).
    real_scratch = os.path.realpath(scratch)
    hidden = any(inside(real_scratch, os.path.realpath(d)) for d in denied)
    write = [*workspace, scratch if hidden else SCRATCH, "/tmp", "/dev/shm", "/dev/null"]
    write = [w for w in write if w == SCRATCH or os.path.exists(w)]
    policy = {
        "kind": "cvg.policy",
        "version": 1,
        "filesystem": {"read": ["/"], "write": write, "execute": ["/"], "deny": denied},
        # Port 1 only so that TCP sockets are allowed; the port rules are removed
        # below, so every port can be connected to and bound.
        "network": {"tcp_connect": [1], "tcp_bind": [], "udp": True, "unix": False},
        # Signals reach only the tool's own processes: Landlock's scope (ABI 6), or below
        # it the supervisor (cvg-observe serves the calls: cvg_kernel.guard).
        "ipc": {"signal_outside": False},
        "resources": RUN_RESOURCES,
    }
    variables = context(cwd=cwd, home=home or passwd_home() or "/")
    made = plan_cache.compiled(
        {"policy": policy, "variables": variables},
        lambda view: _compile(policy, variables, view),
        writable=[real_scratch, *(w for w in write if w != SCRATCH)],
    )
    plan = made["plan"]
    # The tool's environment is the caller's, every variable passed as it is.
    names = [n for n in (os.environ if env is None else env) if _env_name(n)]
    plan["environment"] = {"set": {}, "pass": names}
    families = frozenset(s["family"] for s in plan["seccomp"]["sockets"])
    fs_rules = [
        (real_scratch if r["path"] == SCRATCH else r["path"], frozenset(r["access"]))
        for r in plan["landlock"]["fs_rules"]
    ]
    return LearningPlan(
        plan=plan,
        denied=denied,
        fs_rules=fs_rules,
        deny_syscalls=frozenset(plan["seccomp"]["deny"]),
        deny_errno=str(plan["seccomp"].get("deny_errno") or "EPERM"),
        socket_families=families,
        notes=[*([workspace_note] if workspace_note else []), *made["notes"]],
    )


def _compile(policy: dict[str, Any], variables: dict[str, str], view: FsView) -> dict[str, Any]:
    """The learning plan (its environment left to the caller) and its notes, compiled
    by cvg-policy from ``policy``, looking at the filesystem only through ``view``."""
    from cvg_policy.compile import WRITE_RIGHTS, compile_report
    from cvg_schema import Policy

    # The secrets are denied above by name; protected paths stay writable while learning
    # (the generator never grants them), so nothing is implied.
    compiled = compile_report(
        Policy.model_validate(policy), variables=variables, view=view, implied=False
    )
    plan = compiled.plan.model_dump(mode="json", by_alias=True)
    landlock = plan["landlock"]
    landlock["handled_net"] = []
    landlock["net_rules"] = []
    # Every port may be bound while learning, so listen() is too (the policy above
    # grants no tcp_bind, which would refuse it); the signal guard below ABI 6 stays.
    seccomp = plan["seccomp"]
    seccomp.pop("listen", None)
    # Only the signal guard is served while learning: held directories are widened
    # below instead, and every socket may be reached (the network is observed).
    supervise = [c for c in seccomp.pop("supervise", None) or () if c == "signal"]
    plan.pop("unix", None)
    if supervise:
        seccomp["supervise"] = supervise
    plan["degraded"] = [d for d in plan["degraded"] if not d["item"].startswith("network.")]
    # A write root with a secret inside (a .env in the working directory) was split into
    # rules for its children, so nothing could be created directly in it. Landlock adds
    # up the rights of a path's ancestors, so a rule on the root itself with every write
    # right but read_file brings creating, writing and listing back and still leaves the
    # secret unreadable (writes there are allowed anyway: it is beneath a write root).
    notes = []
    roots = {view.realpath(w) for w in policy["filesystem"]["write"] if w != SCRATCH}
    for e in compiled.plan.expansions:
        if e.path in roots:
            access = [r for r in landlock["handled_fs"] if r in WRITE_RIGHTS and r != "read_file"]
            landlock["fs_rules"].append({"path": e.path, "access": access})
            notes.append(
                f"learning sandbox: {e.path} was split into {e.rules} rules to keep "
                f"{', '.join(e.denied)} unreadable; files created directly in it during the "
                "run could be written but not read back"
            )
        else:
            notes.append(
                f"learning sandbox: {e.path} was split into {e.rules} rules to keep "
                f"{', '.join(e.denied)} unreadable; it could not be listed, nor could what "
                "appeared directly in it during the run be read"
            )
    return {"plan": plan, "notes": notes}


def _env_name(name: str) -> bool:
    return (
        bool(name)
        and len(name) <= 256
        and (name[0].isalpha() or name[0] == "_")
        and name.isascii()
        and all(c.isalnum() or c == "_" for c in name)
    )


_NEEDS: Final[dict[str, frozenset[str]]] = {
    "read": frozenset({"read_file", "read_dir"}),
    "execute": frozenset({"execute"}),
    "write": frozenset({"write_file", "truncate"}),
    "create": frozenset({"make_reg", "make_dir", "make_sym", "make_sock", "make_fifo"}),
    "remove": frozenset({"remove_file", "remove_dir"}),
    "rename": frozenset({"refer", "make_reg", "remove_file"}),
    "link": frozenset({"refer", "make_reg"}),
}


class Judge:
    """Decides which failed events the learning sandbox caused, and by what."""

    def __init__(self, plan: LearningPlan) -> None:
        self.plan = plan

    def _granted(self, path: str, needs: Iterable[str]) -> bool:
        needed = frozenset(needs)
        candidates = {path}
        try:
            candidates.add(os.path.realpath(path))
        except (OSError, ValueError):
            pass
        for p in candidates:
            for rule_path, access in self.plan.fs_rules:
                if access & needed and inside(p, rule_path):
                    return True
        return False

    def __call__(self, event: RawEvent) -> str | None:
        """``"landlock"`` or ``"seccomp"`` when the sandbox refused ``event``; else None."""
        result = event.result
        if result == "ok":
            return None
        if event.syscall in self.plan.deny_syscalls and result == self.plan.deny_errno:
            return "seccomp"
        if event.op == "socket" and result in ("EAFNOSUPPORT", "EPERM", "EACCES"):
            family = event.family
            if isinstance(family, str) and family not in self.plan.socket_families:
                return "seccomp"
            if event.sock_type == "raw":
                return "seccomp"
            return None
        if result not in ("EACCES", "EPERM") or event.path is None:
            return None
        needs = _NEEDS.get(event.op)
        if needs is None or not event.path.startswith("/"):
            return None
        if event.op in ("create", "remove") and event.path2 is None:
            # Creating and removing are checked on the parent directory (and opening an
            # existing file with O_CREAT as a write to the file itself).
            parent = os.path.dirname(event.path) or "/"
            if self._granted(parent, needs):
                return None
            if event.op == "create" and self._granted(event.path, _NEEDS["write"]):
                return None
            return "landlock"
        if event.op == "read":
            # A file needs read_file; listing a directory needs read_dir.
            if self._granted(event.path, ("read_file",)):
                return None
            if os.path.isdir(event.path) and self._granted(event.path, ("read_dir",)):
                return None
            return "landlock"
        paths = [event.path] + ([event.path2] if event.path2 else [])
        if all(self._granted(p, needs) for p in paths):
            return None
        return "landlock"
