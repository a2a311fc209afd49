"""Replay an observation against a policy: which of the tool's own successful calls the
compiled plan would refuse.

A learned policy should hold for the sessions it was learned from. Running those
sessions again would repeat their side effects (files written, commits made, branches
checked out), so each observed call that succeeded is judged against the plan instead,
as the kernel would judge it (on this machine's files now, links resolved: replay
soon after learning): the union of the Landlock rights of every rule on the
path or an ancestor; in a held directory (a deny inside a grant) the rights the
supervisor serves, never for a denied entry nor, to change it, a protected one; a TCP
connect or bind against the port rules. What a plan refuses on purpose shows here too
(a secret, a protected path, cvg's own state): a policy that refuses its own sessions
breaks its server, whatever the reason.

Not judged either: reads of a process's own /proc entries, which no policy can grant.
Judged: file reads, writes, creations, removals, renames, links, executions and
directory listings, TCP connect and bind. Not judged: stat and chdir (Landlock does not
restrict them), signals, sockets, sends, UDP and UNIX sockets.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from cvg_schema import Observation, Plan, Policy
from cvg_schema.observation import Event

from .compile import compile_policy
from .defaults import is_per_process
from .variables import context

__all__ = ["Refusal", "replay"]

_MAKE_BY_SYSCALL: Mapping[str, str] = {
    "mkdir": "make_dir", "mkdirat": "make_dir",
    "symlink": "make_sym", "symlinkat": "make_sym",
    "mknod": "make_reg", "mknodat": "make_reg",
}  # fmt: skip
_REMOVE_BY_SYSCALL: Mapping[str, str] = {"rmdir": "remove_dir"}
_CHANGES = frozenset(
    {"write_file", "truncate", "remove_file", "remove_dir", "make_reg", "make_dir",
     "make_sym", "make_sock", "make_fifo", "make_char", "make_block", "refer"}
)  # fmt: skip


@dataclass(frozen=True)
class Refusal:
    """An observed call that succeeded while learning and that the plan refuses."""

    event: str  # the event's id in its observation
    op: str
    path: str
    right: str  # the Landlock right (or `connect_tcp`/`bind_tcp`) it lacks

    def line(self) -> str:
        return f"{self.event}: {self.op} {self.path} needs {self.right}"


class _Rights:
    """What the plan gives a path, as the kernel and the supervisor would."""

    def __init__(self, plan: Plan, scratch: Sequence[str]) -> None:
        self.rules: dict[str, set[str]] = {}
        for rule in plan.landlock.fs_rules:
            for path in _concrete(rule.path, scratch):
                self.rules.setdefault(path, set()).update(rule.access)
        self.held: dict[str, set[str]] = {}
        self.denied: set[str] = set()
        self.protected: set[str] = set()
        for exp in plan.expansions:
            for held in exp.held:
                self.held.setdefault(held, set()).update(exp.access)
            self.denied.update(exp.denied)
            self.protected.update(exp.protected)
        self.ports = {(r.port, a) for r in plan.landlock.net_rules for a in r.access}
        handled = plan.landlock.handled_net
        self.net_handled = set(handled) if isinstance(handled, list) else None

    def of(self, path: str) -> set[str]:
        got: set[str] = set()
        p = path
        while True:
            got |= self.rules.get(p, set())
            if p == "/":
                break
            p = posixpath.dirname(p)
        parent = posixpath.dirname(path)
        if parent in self.held and path not in self.denied:
            got |= self.held[parent]
        if path in self.held:  # the held directory itself: listed by the supervisor
            got |= self.held[path]
        if self._under(path, self.denied):
            return set()
        if self._under(path, self.protected):
            got -= _CHANGES
        return got

    def in_dir(self, path: str, right: str) -> bool:
        """``right`` on the directory holding ``path`` (to make or remove an entry
        there); never to change a denied or protected entry."""
        if self._under(path, self.denied) or self._under(path, self.protected):
            return False
        return right in self.of(posixpath.dirname(path))

    @staticmethod
    def _under(path: str, roots: Iterable[str]) -> bool:
        return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)

    def net(self, right: str, port: int | None) -> bool:
        if self.net_handled is not None and right not in self.net_handled:
            return True
        return port is not None and (port, right) in self.ports


def _concrete(path: str, scratch: Sequence[str]) -> list[str]:
    if "${SCRATCH}" not in path:
        return [path]
    return [path.replace("${SCRATCH}", s) for s in scratch]


def _needs(event: Event) -> Iterator[tuple[str, str]]:
    """(path, right) pairs the call needed; a right prefixed "dir:" is on the parent."""
    op, path = event.op, event.path or ""
    if op == "read":
        yield path, "read_dir" if event.directory else "read_file"
    elif op == "write":
        yield path, "write_file"
    elif op == "execute":
        yield path, "execute"
    elif op == "create" and event.syscall not in _MAKE_BY_SYSCALL and os.path.lexists(path):
        yield path, "write_file"  # an open with O_CREAT of a file that is there
    elif op == "create":
        yield path, "dir:" + _MAKE_BY_SYSCALL.get(event.syscall, "make_reg")
    elif op == "remove":
        yield path, "dir:" + _REMOVE_BY_SYSCALL.get(event.syscall, "remove_file")
    elif op == "rename" and event.path2:
        yield path, "dir:remove_file"
        yield event.path2, "dir:make_reg"
    elif op == "link" and event.path2:
        yield event.path2, "dir:make_reg"


def _judge(event: Event, rights: _Rights) -> Refusal | None:
    if event.op in ("connect", "bind") and event.family == "inet" and event.sock_type == "stream":
        right = "connect_tcp" if event.op == "connect" else "bind_tcp"
        if not rights.net(right, event.port):
            return Refusal(event.id, event.op, f"tcp port {event.port}", right)
        return None
    for named, right in _needs(event):
        if not named.startswith("/"):
            continue  # not resolved while learning: nothing to judge
        if right == "read_file" and is_per_process(named):
            # A process's own /proc entries are new inodes in every process: a read of
            # them is refused under every policy (cvg-run marks it expected).
            continue
        # Landlock judges the inode a path names: its links resolved, the last one
        # too except for an entry made or removed in its directory.
        if right.startswith("dir:"):
            path = posixpath.join(
                os.path.realpath(posixpath.dirname(named)), posixpath.basename(named)
            )
        else:
            path = os.path.realpath(named)
        if right.startswith("dir:"):
            if not rights.in_dir(path, right[4:]):
                return Refusal(event.id, event.op, path, right[4:])
        elif right not in rights.of(path):
            return Refusal(event.id, event.op, path, right)
    return None


def replay(policy: Policy, observation: Observation, *, abi: int | None = None) -> list[Refusal]:
    """Each call of ``observation`` that succeeded and that ``policy``, compiled for the
    observation's working directory and home, would refuse. Raises PolicyError when
    the policy cannot be compiled."""
    variables = context(cwd=observation.cwd, home=observation.home)
    plan = compile_policy(policy, variables=variables, abi=abi)
    rights = _Rights(plan, observation.scratch)
    out = []
    for event in observation.events:
        if event.result != "ok":
            continue
        refused = _judge(event, rights)
        if refused is not None:
            out.append(refused)
    return out
