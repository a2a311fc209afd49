"""From observations to the smallest policy that lets the tool do what it did.

Each event becomes the grant Landlock needs for it, on the resolved path, in policy
form (``${CWD}``, ``${SCRATCH}``, ``${HOME}``):

- a file read: ``read`` on that file; a directory listed: ``read`` on the directory
  (Landlock cannot grant listing without the files beneath, and interpreters need the
  listing: Python's import system finds no module in a directory it cannot list);
- a file opened for writing: ``write`` on that file; a name created, removed, renamed
  or linked: ``write`` on its directory (Landlock checks those on the parent), or on
  the directory above a chain of directories the tool made itself;
- an execution: ``execute`` on the file, its ELF interpreter and its ``#!`` chain;
- a TCP connect or bind: the port, also when the peer refused it (an unlisted port
  fails with EACCES, and a client that falls back on ECONNREFUSED would not);
- a failed look-up (ENOENT): nothing. Measured on Linux 6.18 (tests/test_enoent.py):
  Landlock checks after the path walk, so every ENOENT probe stays ENOENT with no
  grant at all.

Then rules are made fewer, each change explained in its reasons: what the tool did in
its working directory becomes one rule on ``${CWD}`` (its workspace: other inputs
use other names there), and eight or more files read directly in one directory become
a rule on the directory. No rule ever covers a directory of BROAD (``/``, ``/usr``,
``/etc``, ``${HOME}``, ...) as a whole; secrets and decoys are never granted, nor is
write on a protected path (``cvg_policy.protected``: ``~/.bashrc``, ``.git/config``);
events the learning sandbox denied are granted only with ``grant_denied``. The
workspace is writable only when the tool wrote beneath it. When the working directory
means nothing (``cwd`` false: a server its client starts anywhere), each directory its
command line names is a workspace instead (``_named_roots``).
"""

from __future__ import annotations

import functools
import math
import os
import posixpath
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from cvg_kernel.seccomp import DEFAULT_DENY
from cvg_policy.protected import protected_reason
from cvg_policy.secrets import secret_paths, secret_reason, secret_variable
from cvg_schema import Event, Observation, Policy
from cvg_schema.policy import Reason

from .allowlist import ALWAYS, family, load_baselines, runtimes_of, shipped
from .baselines import Baseline, baselines, interpreter_of, resolver, utilities
from .packaged import index as package_index
from .paths import PathContext, installed_tree, is_broad, is_per_process, parent, within
from .scripts import MAKES, SHELLS, script_programs

__all__ = ["DEFAULT_HEADROOM", "SYSCALL_MODES", "Generated", "Source", "generate"]

SINK_DEVICES: Final = ("/dev/null",)
"""Devices every generated policy may write: writing them reaches nothing."""
SOURCE_DEVICES: Final = ("/dev/urandom", "/dev/random", "/dev/zero")
"""Read by any program on some input (git reads /dev/urandom for a temporary file's
name where getrandom() is not used): they hold nothing and reach nothing."""
_BUILDERS: Final = frozenset(
    {"cc1", "cc1plus", "collect2", "ld", "ld.bfd", "ld.gold", "ld.lld", "as", "rustc",
     "go", "javac", "clang", "tcc"}
)  # fmt: skip
"""A compiler, an assembler or a linker: a tool that runs one builds programs."""
_CHANGES: Final = frozenset({"write", "create", "remove", "rename", "link"})
"""Operations that change a path: never granted on a protected one."""

SYSCALL_MODES: Final = ("denylist", "allowlist")

SIBLINGS: Final = 8
"""Files read directly in one directory before the directory itself is granted."""

MAX_REASONS: Final = 4
"""Events cited per rule and observation (the last one counts the rest)."""

NOTE_IDS: Final = 5
"""Event ids a note shows (it counts the rest)."""

DEFAULT_HEADROOM: Final = 4.0

MIN_MEMORY: Final = 512
"""memory_mb at least: another input's data is larger, and a runtime's private memory
(what RLIMIT_DATA counts) runs ahead of what it has touched."""

SERVER_CPU: Final = 3600
"""CPU seconds per process for a server: an hour of work, however long it idles."""

_CONNECT_OUTCOMES: Final = frozenset(
    {"ok", "ECONNREFUSED", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ECONNRESET", "EALREADY"}
)
_BIND_OUTCOMES: Final = frozenset({"ok", "EADDRINUSE"})
_NOTE_ID: Final = re.compile(r" \[(e[A-Za-z0-9_.:-]+)\]")
_PATH_ENV: Final = ("/usr/local/bin", "/usr/bin", "/bin")
_ENV_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,255}")
_PASS_ENV: Final = ("LANG", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TERM", "TZ")


@dataclass
class Source:
    """One observation and the name its reasons cite (None when it is the only one)."""

    obs: Observation
    name: str | None = None


@dataclass
class _Rule:
    reasons: list[Reason] = field(default_factory=list)
    counts: dict[str | None, int] = field(default_factory=dict)
    why: str | None = None  # how the rule was widened, said in its first reason

    def cite(self, event: Event, summary: str, name: str | None, times: int = 1) -> None:
        """Cite ``event`` (among the first :data:`MAX_REASONS`) and count it ``times``:
        more than once for an event that stands for others (see :mod:`.grouped`)."""
        n = self.counts.get(name, 0)
        self.counts[name] = n + times
        if n < MAX_REASONS:
            self.reasons.append(Reason(event_id=event.id, summary=summary, observation=name))

    def traced(self, event: Event, name: str | None) -> None:
        """Cite an event of the trace for what it did, counted as often as it occurred
        (its summary made only when it is among those cited)."""
        n = self.counts.get(name, 0)
        self.counts[name] = n + _weight(event)
        if n < MAX_REASONS:
            self.reasons.append(
                Reason(event_id=event.id, summary=_summary(event), observation=name)
            )

    def absorb(self, other: _Rule) -> None:
        for r in other.reasons:
            n = self.counts.get(r.observation, 0)
            if n < MAX_REASONS:
                self.reasons.append(r)
            self.counts[r.observation] = n + 1
        for name, n in other.counts.items():
            shown = sum(1 for r in other.reasons if r.observation == name)
            self.counts[name] = self.counts.get(name, 0) + n - shown

    def final(self) -> list[Reason]:
        out: list[Reason] = []
        for i, r in enumerate(self.reasons):
            summary = r.summary
            if i == 0 and self.why:
                summary = f"{self.why}; e.g. {summary}"
            last_of_obs = all(o.observation != r.observation for o in self.reasons[i + 1 :])
            more = self.counts.get(r.observation, 0) - sum(
                1 for o in self.reasons if o.observation == r.observation
            )
            if last_of_obs and more > 0:
                summary = f"{summary} (and {more} more events)"
            out.append(
                Reason(event_id=r.event_id, summary=summary[:1000], observation=r.observation)
            )
        return out


@dataclass
class Generated:
    """The policy, and what was left out (one line each, for stderr)."""

    policy: Policy
    notes: list[str]


def _summary(e: Event, path: str | None = None) -> str:
    what = path if path is not None else e.path
    if e.op == "wait":
        what = f"waited on {e.address or 'input'}"
    if what is None and e.op == "socket":
        what = " ".join(str(x) for x in (e.family, e.sock_type) if x is not None) or None
    text = f"{e.syscall} {what}" if what else e.syscall
    extra: list[str] = []
    if e.port is not None:
        host = f"{e.address}:{e.port}" if e.address else f"port {e.port}"
        text = f"{e.syscall} {host}"
    if e.op not in ("execute", "wait") and e.op != e.syscall:
        extra.append(e.op)
    if e.result != "ok":
        extra.append(f"{e.result}")
    if e.denied_while_learning:
        extra.append(f"denied while learning by {e.denied_by or 'the sandbox'}")
    return f"{text} ({', '.join(extra)})" if extra else text


def _weight(e: Event) -> int:
    """How many events of the trace ``e`` stands for: more than one for a kept
    occurrence that counts those left out (see :mod:`.grouped`)."""
    return getattr(e, "weight", 1)


def _marked_never(e: Event) -> str | None:
    """Why the event's source forbids granting it (cvg-import's ``never_grant``:
    "decoy", "secret" or "failed"; or a decoy, secret or canary flag), else None."""
    src = e.source or {}
    never = src.get("never_grant")
    if never:
        return f"its source marks it never to be granted ({never})"
    for key in ("decoy", "secret", "canary"):
        if src.get(key):
            return f"its source marks it a {key}"
    return None


class _Builder:
    def __init__(
        self,
        grant_denied: bool,
        headroom: float,
        workspace: bool = True,
        syscalls: str = "denylist",
        cwd: bool = True,
    ) -> None:
        if syscalls not in SYSCALL_MODES:
            raise ValueError(f"syscalls mode {syscalls!r}: expected one of {SYSCALL_MODES}")
        self.syscall_mode = syscalls
        # allowlist mode: each call seen, and each runtime seen (for its baseline).
        self.calls: dict[str, _Rule] = {}
        self.runtimes: dict[str, tuple[Event, str | None]] = {}
        self.first: tuple[Event, str | None] | None = None
        self.grant_denied = grant_denied
        self.workspace = workspace and cwd
        self.cwd = cwd
        self.headroom = headroom
        self.fs: dict[str, dict[str, _Rule]] = {"read": {}, "write": {}, "execute": {}}
        self.deny: dict[str, _Rule] = {}
        self.connect: dict[int, _Rule] = {}
        self.bind: dict[int, _Rule] = {}
        self.switches: dict[str, _Rule] = {}  # network.udp, network.unix, ipc.signal_outside
        self.syscalls: dict[str, _Rule] = {}
        self.env_set: dict[str, tuple[str, _Rule]] = {}
        self.env_pass: dict[str, _Rule] = {}
        self.resources: dict[str, tuple[int | None, _Rule]] = {}
        self._notes: dict[str, tuple[list[str], list[int]]] = {}
        self.path_dirs: list[str] = []
        # cwd false: the directories the command line names (policy form), each a
        # workspace of its own (see _named_roots).
        self.roots: tuple[str, ...] = ()
        # Judged once per path and home, not once per event: a trace repeats its paths,
        # and each judgement is some ninety pattern matches.
        self.secret_reason = functools.lru_cache(maxsize=None)(secret_reason)
        self.protected_reason = functools.lru_cache(maxsize=None)(protected_reason)

    def note(self, text: str, times: int = 1) -> None:
        """Say what was left out; the same thing for several events is one line.
        ``times``: how many events the one whose id the text names stands for."""
        m = _NOTE_ID.search(text)
        key = text if m is None else text[: m.start()] + " [{ids}]" + text[m.end() :]
        ids, count = self._notes.setdefault(key, ([], [0]))
        if m is not None:
            if len(ids) < NOTE_IDS:
                ids.append(m.group(1))
            count[0] += times

    def _note_lines(self) -> list[str]:
        out = []
        for key, (ids, (count,)) in self._notes.items():
            more = f" and {count - NOTE_IDS} more" if count > NOTE_IDS else ""
            out.append(key.replace("{ids}", ", ".join(ids) + more) if "{ids}" in key else key)
        return out

    def rule(self, table: dict[Any, _Rule], key: Any) -> _Rule:
        r = table.get(key)
        if r is None:
            r = table[key] = _Rule()
        return r

    def widen(
        self,
        table: dict[Any, _Rule],
        key: Any,
        why: str,
        name: str | None,
        *evidence: Event,
        traced: bool = False,
    ) -> None:
        """The rule ``key``, widened for ``why`` (unless it already says how), citing
        each event of ``evidence``: ``traced`` when they are the trace's own events,
        each counted as often as it occurred, not evidence picked once."""
        r = self.rule(table, key)
        r.why = r.why or why
        for e in evidence:
            if traced:
                r.traced(e, name)
            else:
                r.cite(e, _summary(e), name)

    # ------------------------------------------------------------ one observation

    def add(self, src: Source) -> None:
        obs = src.obs
        name = src.name
        ctx = PathContext(obs, cwd=self.cwd)
        ctx.learn(e.path for e in obs.events if e.path and e.result == "ok")
        for e in obs.events:
            if e.op == "create" and e.result == "ok" and e.path and e.syscall.startswith("mkdir"):
                ctx.created_dirs.add(posixpath.normpath(e.path))
        cwd_var_ok = (
            obs.cwd is not None
            and not is_broad(ctx.to_policy(obs.cwd))
            and not (obs.home and posixpath.normpath(obs.cwd) == posixpath.normpath(obs.home))
        )
        if obs.cwd is not None and not cwd_var_ok and self.workspace and self.cwd:
            self.note(
                f"the working directory {obs.cwd} is a broad directory: its files are "
                "granted one by one instead of as a workspace"
            )
        cwd_var_ok = cwd_var_ok and self.workspace
        self.roots = () if self.cwd else _named_roots(obs, ctx)
        pids = {e.pid for e in obs.events if e.pid is not None}
        reads: dict[str, list[Event]] = {}
        for e in obs.events:
            decoy = _marked_never(e)
            if decoy is not None:
                self.note(f"not granted: {_summary(e)} [{e.id}]: {decoy}", times=_weight(e))
                continue
            if e.path is not None and e.op in (
                "read",
                "write",
                "create",
                "remove",
                "rename",
                "link",
                "execute",
            ):
                secret = self.secret_reason(e.path, obs.home) or (
                    self.secret_reason(e.path2, obs.home) if e.path2 else None
                )
                if secret is not None:
                    if e.result == "ok" or e.denied_while_learning:
                        self.note(
                            f"never granted: {_summary(e)} [{e.id}]: {secret}", times=_weight(e)
                        )
                    continue
            if e.op in _CHANGES and e.path is not None:
                protected = self.protected_reason(e.path, obs.home) or (
                    self.protected_reason(e.path2, obs.home) if e.path2 else None
                )
                if protected is not None:
                    if e.result == "ok" or e.denied_while_learning:
                        self.note(
                            f"never granted: {_summary(e)} [{e.id}]: {protected}",
                            times=_weight(e),
                        )
                    continue
            if e.denied_while_learning and not self.grant_denied:
                self.note(
                    f"not granted: {_summary(e)} [{e.id}]: denied while learning "
                    "(--grant-denied grants it)",
                    times=_weight(e),
                )
                continue
            self._event(e, ctx, name, pids, reads, cwd_var_ok)
        self._reads(reads, ctx, name, cwd_var_ok, obs.home)
        if cwd_var_ok:
            self._read_only_workspace(name)
        self._executables(obs, ctx, name, cwd_var_ok)
        for b in [*baselines(obs), *resolver(obs, self._grantable)]:
            self.rule(self.fs["read"], ctx.to_policy(ctx.resolve(b.path, follow=False))).cite(
                b.event, f"{b.why} ({_summary(b.event)})", name
            )
        for b in [*utilities(obs), *self._siblings(obs)]:
            summary = f"{b.why} ({_summary(b.event)})"
            self.rule(self.fs["execute"], ctx.to_policy(b.path)).cite(b.event, summary, name)
            if _is_script(b.path):
                self.rule(self.fs["read"], ctx.to_policy(b.path)).cite(b.event, summary, name)
        for sp in script_programs(obs):
            summary = (
                f"script baseline: {sp.script} names {sp.word} (line {sp.line}): another "
                f"input takes that branch ({_summary(sp.event)})"
            )
            self.rule(self.fs["execute"], ctx.to_policy(sp.path)).cite(sp.event, summary, name)
            if _is_script(sp.path):
                self.rule(self.fs["read"], ctx.to_policy(sp.path)).cite(sp.event, summary, name)
                # The program is itself a script: its interpreter runs too, with the
                # runtime it needs (Debian's yq is python).
                for path, why, fld in interpreter_of(sp.path, sp.path_dirs):
                    self.rule(self.fs[fld], ctx.to_policy(path)).cite(
                        sp.event, f"{why}; {summary}", name
                    )
        anchor = _first_exec(obs)
        if anchor is not None:
            # Discarding output is what every shell script does on some input
            # (`cmd >/dev/null 2>&1`), and writing the null device reaches nothing.
            for device in SINK_DEVICES:
                self.rule(self.fs["write"], device).cite(
                    anchor, f"baseline: any program may discard output ({_summary(anchor)})", name
                )
            for device in SOURCE_DEVICES:
                if os.path.exists(device):
                    why = (
                        f"baseline: any program may read random bytes or zeros ({_summary(anchor)})"
                    )
                    self.rule(self.fs["read"], device).cite(anchor, why, name)
        if cwd_var_ok:
            self._builds(obs, name)
        self._environment(obs, ctx, name)
        self._resources(obs, name)
        self._denies(obs, ctx, name)
        if self.syscall_mode == "allowlist":
            self._calls(obs, name)

    def _grantable(self, e: Event) -> bool:
        return _marked_never(e) is None and (self.grant_denied or not e.denied_while_learning)

    def _calls(self, obs: Observation, name: str | None) -> None:
        anchor = _first_exec(obs) or (obs.events[0] if obs.events else None)
        if anchor is None:
            self.note(f"{name or 'the observation'} has no events: no call can cite one")
            return
        if self.first is None:
            self.first = (anchor, name)
        for runtime, event in runtimes_of(obs).items():
            self.runtimes.setdefault(runtime, (event, name))
        if obs.syscalls is None:
            self.note(
                f"{name or 'the observation'} does not list the calls it made (imported, or "
                "made by an older cvg-observe): the allow list has only the runtime baselines"
            )
            return
        for call, count in obs.syscalls.items():
            times = "once" if count == 1 else f"{count} times"
            self.rule(self.calls, call).cite(anchor, f"{call}: called {times} in this run", name)

    def _event(
        self,
        e: Event,
        ctx: PathContext,
        name: str | None,
        pids: set[int],
        reads: dict[str, list[Event]],
        cwd_ok: bool,
    ) -> None:
        ok = e.result == "ok" or e.denied_while_learning
        op = e.op
        if op in ("connect", "send", "bind", "socket"):
            self._network(e, name)
            return
        if op == "signal":
            target = e.target_pid
            if ok and target is not None and target > 0 and target not in pids:
                self.rule(self.switches, "ipc.signal_outside").cite(
                    e, f"{_summary(e)}: pid {target} is not one of the tool's", name, _weight(e)
                )
            return
        if op == "other":
            if e.denied_while_learning and e.syscall in DEFAULT_DENY:
                self.rule(self.syscalls, e.syscall).traced(e, name)
            return
        if not ok or e.path is None or not e.path.startswith("/"):
            return
        if is_per_process(e.path) and op != "execute":
            self.note(
                f"not granted: {_summary(e)} [{e.id}]: /proc/<pid> is a new inode per "
                "process, so no rule made before the run can name the tool's own",
                times=_weight(e),
            )
            return
        if op == "read":
            # The name as opened (its directory resolved): a library's SONAME link
            # outlives the versioned file it points at today.
            concrete = ctx.resolve(e.path, follow=False)
            reads.setdefault(concrete, []).append(e)
        elif op == "write":
            self._write_file(e, ctx.resolve(e.path, follow=False), ctx, name, cwd_ok)
        elif op == "create":
            concrete = ctx.resolve(e.path, follow=False)
            if _existing_special(concrete):
                # `> /dev/null` opens with O_CREAT: the device exists, nothing is made.
                self._write_file(e, ctx.resolve(e.path, follow=False), ctx, name, cwd_ok)
            else:
                self._write_parent(e, concrete, ctx, name, cwd_ok)
        elif op in ("remove", "rename", "link"):
            for p in (e.path, e.path2):
                if p is not None and p.startswith("/"):
                    self._write_parent(e, ctx.resolve(p, follow=False), ctx, name, cwd_ok)
        # stat, chdir, execute (handled from the executables): no Landlock right needed

    def _workspace(self, concrete: str, ctx: PathContext, cwd_ok: bool) -> bool:
        return cwd_ok and within(ctx.to_policy(concrete), "${CWD}")

    def _write_file(
        self, e: Event, concrete: str, ctx: PathContext, name: str | None, cwd_ok: bool
    ) -> None:
        if self._workspace(concrete, ctx, cwd_ok):
            self._cwd_write(e, name)
            return
        target = ctx.to_policy(concrete)
        root = self._root_of(target)
        if root is not None:
            self._root_rule("write", root, e, name, "wrote")
            return
        if within(target, "${SCRATCH}"):
            target = "${SCRATCH}"
        if ctx.is_broad(target) or _is_home(concrete, ctx):
            self.note(
                f"not granted: {_summary(e)} [{e.id}]: write on {target} as a whole",
                times=_weight(e),
            )
            return
        self.rule(self.fs["write"], target).traced(e, name)

    def _write_parent(
        self, e: Event, concrete: str, ctx: PathContext, name: str | None, cwd_ok: bool
    ) -> None:
        if self._workspace(concrete, ctx, cwd_ok) and ctx.to_policy(concrete) != "${CWD}":
            self._cwd_write(e, name)
            return
        named = ctx.to_policy(concrete)
        root = self._root_of(named)
        if root is not None and root != named:
            self._root_rule("write", root, e, name, "wrote")
            return
        d = parent(concrete)
        while d in ctx.created_dirs and parent(d) != d:
            d = parent(d)
        target = ctx.to_policy(d)
        if within(target, "${SCRATCH}"):
            target = "${SCRATCH}"
        if ctx.is_broad(target) or _is_home(d, ctx):
            self.note(
                f"not granted: {_summary(e)} [{e.id}]: it needs write on {target} as a "
                "whole, which is never granted",
                times=_weight(e),
            )
            return
        self.rule(self.fs["write"], target).traced(e, name)

    def _root_of(self, target: str) -> str | None:
        return next((r for r in self.roots if within(target, r)), None)

    def _root_rule(self, field: str, root: str, e: Event, name: str | None, did: str) -> None:
        r = self.rule(self.fs[field], root)
        r.why = (
            f"a directory the command line names is the tool's workspace: everything it "
            f"{did} beneath it"
        )
        r.traced(e, name)

    def _builds(self, obs: Observation, name: str | None) -> None:
        """Execute on a writable ``${CWD}`` when the tool ran a compiler, assembler or
        linker: another input runs what it builds there (a test binary, a tool it
        made). The workspace is writable already, so this adds running what the tool
        could write there anyway, never anything beyond the workspace."""
        if "${CWD}" not in self.fs["write"] or "${CWD}" in self.fs["execute"]:
            return
        found = next(
            (e for exe, e in obs.executions()
             if e.result == "ok" and posixpath.basename(exe.path) in _BUILDERS),
            None,
        )  # fmt: skip
        if found is None:
            return
        why = (
            "the tool builds programs in its workspace (it ran a compiler or linker): "
            "another input runs what it builds there"
        )
        self.widen(self.fs["execute"], "${CWD}", why, name, found)

    def _read_only_workspace(self, name: str | None) -> None:
        """Write on ``${CWD}`` comes only from a write beneath it (:meth:`_cwd_write`):
        a tool that wrote only to its scratch or ``$TMPDIR`` keeps a read-only workspace."""
        rule = self.fs["write"].get("${CWD}")
        if rule is None or not any(r.observation == name for r in rule.reasons):
            self.note("the workspace stays read-only: the tool wrote nothing beneath it")

    def _cwd_write(self, e: Event, name: str | None) -> None:
        r = self.rule(self.fs["write"], "${CWD}")
        r.why = "the working directory is the tool's workspace: everything it wrote there"
        r.traced(e, name)

    def _reads(
        self,
        reads: dict[str, list[Event]],
        ctx: PathContext,
        name: str | None,
        cwd_ok: bool,
        obs_home: str | None,
    ) -> None:
        files: dict[str, list[str]] = {}
        for concrete, events in reads.items():
            target = ctx.to_policy(concrete)
            e = events[0]
            if cwd_ok and within(target, "${CWD}"):
                r = self.rule(self.fs["read"], "${CWD}")
                r.why = "the working directory is the tool's workspace: everything it read there"
                for ev in events:
                    r.traced(ev, name)
                continue
            root = self._root_of(target)
            if root is not None:
                for ev in events:
                    self._root_rule("read", root, ev, name, "read")
                continue
            if within(target, "${SCRATCH}"):
                r = self.rule(self.fs["write"], "${SCRATCH}")
                for ev in events:
                    r.traced(ev, name)
                continue
            listed = next((ev for ev in events if ev.directory), None)
            if listed is not None or ctx.is_dir(concrete):
                if ctx.is_broad(target):
                    self.note(
                        f"not granted: {_summary(e)} [{e.id}]: listing {target} would need "
                        "read on all of it"
                    )
                    continue
                r = self.rule(self.fs["read"], target)
                r.why = r.why or (
                    "a directory the tool listed or walked, read as a tree: another input "
                    "reads other entries of it"
                )
                for ev in events:
                    r.traced(ev, name)
                continue
            tree = installed_tree(concrete)
            if (
                tree is not None
                and not ctx.is_broad(ctx.to_policy(tree))
                and _clean(tree, obs_home)
            ):
                pkg = package_index().package_of(concrete)
                why = "an installed program's tree of data or modules: another input reads " + (
                    f"other files of it ({concrete} is of the package {pkg.name})"
                    if pkg is not None
                    else "other files of it"
                )
                self.widen(
                    self.fs["read"],
                    ctx.to_policy(tree),
                    why,
                    name,
                    *events,
                    traced=True,
                )
                continue
            files.setdefault(parent(concrete), []).append(concrete)
        for d, members in files.items():
            target_dir = ctx.to_policy(d)
            widen = len(members) >= SIBLINGS and not ctx.is_broad(target_dir)
            if widen:
                r = self.rule(self.fs["read"], target_dir)
                r.why = r.why or (
                    f"{len(members)} files read directly in this directory: one rule for "
                    "the directory instead of one per file"
                )
            for concrete in members:
                rule = r if widen else self.rule(self.fs["read"], ctx.to_policy(concrete))
                for ev in reads[concrete]:
                    rule.traced(ev, name)

    def _executables(
        self, obs: Observation, ctx: PathContext, name: str | None, cwd_ok: bool
    ) -> None:
        made = {
            posixpath.normpath(p)
            for e in obs.events
            if e.result == "ok" and e.op in ("create", "rename", "link", "write")
            for p in (e.path if e.op == "create" else e.path2 or e.path,)
            if p is not None
        }
        for exe, e in obs.executions():
            if e.denied_while_learning and not self.grant_denied:
                continue
            if secret_reason(exe.path, obs.home) or _marked_never(e):
                continue
            chain = [(exe.path, _summary(e))]
            for s in exe.shebang:
                chain.append((s, f"#! interpreter of {exe.path} ({_summary(e)})"))
            if exe.interpreter:
                chain.append((exe.interpreter, f"ELF interpreter of {exe.path} ({_summary(e)})"))
            for path, summary in chain:
                if not path.startswith("/"):
                    continue
                target = ctx.to_policy(ctx.resolve(path))
                if posixpath.normpath(path) in made:
                    # Built during the run: it does not exist when the next run's rules
                    # are made, so the grant goes on where it is built.
                    self._built(e, ctx.resolve(path, follow=False), ctx, name, cwd_ok)
                    continue
                self.rule(self.fs["execute"], target).cite(e, summary, name)
                if path == exe.path:
                    # The directory as the program was found (before symlinks: a venv's
                    # bin/python3 leads elsewhere), so the same name is found first again.
                    d = ctx.to_policy(parent(posixpath.normpath(path)))
                    is_bin = posixpath.basename(d) in ("bin", "sbin")
                    if is_bin and d not in self.path_dirs:
                        self.path_dirs.append(d)

    def _siblings(self, obs: Observation) -> list[Baseline]:
        """The other programs of each package an executed file came from (see
        :mod:`.packaged`); a package that is not widened is said once, in a note."""
        out: list[Baseline] = []
        for exe, e in obs.executions():
            if e.result != "ok" or secret_reason(exe.path, obs.home) or _marked_never(e):
                continue
            pkg = package_index().package_of(exe.path)
            if pkg is None:
                continue
            if pkg.refused is not None:
                self.note(f"not granted: the other programs of package {pkg.name}: {pkg.refused}")
                continue
            why = (
                f"package baseline: {exe.path} belongs to the package {pkg.name} "
                f"({pkg.listing}), and another input may run its other programs"
            )
            out.extend(Baseline(p, e, why) for p in pkg.programs)
        return out

    def _built(
        self, e: Event, concrete: str, ctx: PathContext, name: str | None, cwd_ok: bool
    ) -> None:
        if cwd_ok and within(ctx.to_policy(concrete), "${CWD}"):
            target = "${CWD}"
            why = "the tool ran a program it built in its workspace"
        else:
            d = parent(concrete)
            while d in ctx.created_dirs and parent(d) != d:
                d = parent(d)
            target = ctx.to_policy(d)
            why = "the tool ran a program it built here"
            if within(target, "${SCRATCH}"):
                target = "${SCRATCH}"
        if is_broad(target):
            self.note(f"not granted: {_summary(e)} [{e.id}]: execute on {target} as a whole")
            return
        r = self.rule(self.fs["execute"], target)
        r.why = why
        r.cite(e, _summary(e), name)

    def _network(self, e: Event, name: str | None) -> None:
        inet = e.family in ("inet", "inet6")
        dgram = e.sock_type == "dgram"
        if e.op == "socket":
            if e.result != "ok" and not e.denied_while_learning:
                return
            if inet and dgram:
                self.rule(self.switches, "network.udp").traced(e, name)
            elif e.family == "unix":
                self.rule(self.switches, "network.unix").traced(e, name)
            return
        if e.op == "send":
            if inet and (e.result == "ok" or e.denied_while_learning):
                self.rule(self.switches, "network.udp").traced(e, name)
            return
        if not inet or dgram or e.port is None or e.port == 0:
            if e.op == "bind" and inet and e.port == 0 and not dgram:
                self.note(
                    f"not granted: {_summary(e)} [{e.id}]: binding port 0 (any free port) "
                    "cannot be expressed: Landlock checks the port number asked for",
                    times=_weight(e),
                )
            if (
                e.op == "connect"
                and e.family == "unix"
                and (e.result == "ok" or e.denied_while_learning)
            ):
                self.rule(self.switches, "network.unix").traced(e, name)
            return
        outcomes = _CONNECT_OUTCOMES if e.op == "connect" else _BIND_OUTCOMES
        if e.result in outcomes or e.denied_while_learning:
            table = self.connect if e.op == "connect" else self.bind
            self.rule(table, e.port).traced(e, name)

    def _environment(self, obs: Observation, ctx: PathContext, name: str | None) -> None:
        first = _first_exec(obs)
        if first is None:
            return
        # Where the programs were found comes first: the caller's PATH found them there.
        path = ":".join(dict.fromkeys([*self.path_dirs, *_PATH_ENV]))
        prev = self.env_set.get("PATH")
        r = prev[1] if prev else _Rule()
        r.cite(
            first, f"the command and what it ran were found on this PATH ({_summary(first)})", name
        )
        self.env_set["PATH"] = (path, r)
        if obs.home:
            home_event = _first_under(obs, obs.home) or first
            r = self.env_set.get("HOME", ("", _Rule()))[1]
            r.cite(home_event, f"the tool ran with HOME set ({_summary(home_event)})", name)
            self.env_set["HOME"] = ("${HOME}", r)
        scratch_event = next(
            (x for s in obs.scratch if (x := _first_under(obs, s)) is not None), None
        )
        r = self.env_set.get("TMPDIR", ("", _Rule()))[1]
        r.cite(
            scratch_event or first,
            "temporary files go to the private ${SCRATCH}, as they did while learning ("
            + _summary(scratch_event or first)
            + ")",
            name,
        )
        self.env_set["TMPDIR"] = ("${SCRATCH}", r)
        for var in _PASS_ENV:
            self.rule(self.env_pass, var).cite(
                first, f"locale and terminal settings from the caller ({_summary(first)})", name
            )
        self._bytecode(obs, name)
        self._given(obs, ctx, first, name)

    def _bytecode(self, obs: Observation, name: str | None) -> None:
        """Python refused its bytecode cache while learning (a read-only site-packages,
        as uv and pip leave it uncompiled) would be refused again at every start, one
        denial per package, for nothing: the cache only saves the next start's compiling.
        The policy tells Python not to write it."""
        if self.grant_denied:
            return
        refused = next(
            (
                e
                for e in obs.events
                if e.denied_while_learning
                and e.op in ("create", "write")
                and e.path
                and "/__pycache__" in e.path
            ),
            None,
        )
        if refused is None:
            return
        r = self.env_set.get("PYTHONDONTWRITEBYTECODE", ("", _Rule()))[1]
        r.cite(
            refused,
            "Python's bytecode cache was refused while learning and is never granted: not "
            f"written, rather than refused at every start ({_summary(refused)})",
            name,
        )
        self.env_set["PYTHONDONTWRITEBYTECODE"] = ("1", r)

    def _given(self, obs: Observation, ctx: PathContext, first: Event, name: str | None) -> None:
        """The variables the tool was started with beyond its caller's session (an MCP
        client's settings and keys for its server): set to the value seen, or passed
        from the caller when the name looks like a secret (its value is never written)."""
        for var, value in (obs.environment or {}).items():
            if var in ("PATH", "HOME", "TMPDIR") or not _ENV_NAME.fullmatch(var):
                continue
            if value is not None and ("${" in value or "\x00" in value):
                self.note(
                    f"not set: {var}: its value holds ${{...}}, which a policy reads as a variable"
                )
                continue
            if value is None or secret_variable(var):
                self.rule(self.env_pass, var).cite(
                    first,
                    f"the tool was started with {var}, which its caller's session does not "
                    "have; it looks like a secret: passed from the caller, its value not "
                    f"written here ({_summary(first)})",
                    name,
                )
                continue
            shown = ctx.to_policy(value) if value.startswith("/") else value
            prev = self.env_set.get(var)
            r = prev[1] if prev else _Rule()
            r.cite(
                first,
                f"the tool was started with {var} set, which its caller's session does not "
                f"have: a setting its client gives it ({_summary(first)})",
                name,
            )
            self.env_set[var] = (shown, r)

    def _resources(self, obs: Observation, name: str | None) -> None:
        times = [e.time for e in obs.events if e.time is not None]
        first = _first_exec(obs) or (obs.events[0] if obs.events else None)
        if first is None:
            return
        last = max(
            (e for e in obs.events if e.time is not None), key=lambda e: e.time or 0, default=first
        )
        duration = (max(times) - min(times)) if times else 0.0
        pids = len({e.pid for e in obs.events if e.pid is not None}) or 1
        h = self.headroom
        seen = f"{duration:.2f} s from {first.id} to {last.id}"
        values: dict[str, tuple[int | None, str, Event]] = {
            "wall_clock_seconds": (
                max(30, math.ceil(duration * h)),
                f"ran {seen}; x{h:g} headroom, at least 30 s",
                last,
            ),
            "cpu_seconds": (
                max(30, math.ceil(duration * h)),
                f"cannot use more CPU than the {seen} it ran; x{h:g} headroom, at least 30 s",
                last,
            ),
            "processes": (
                max(16, math.ceil(pids * h)),
                f"{pids} processes and threads seen; x{h:g} headroom, at least 16",
                last,
            ),
            "memory_mb": _memory(obs, h, first, last),
            "open_files": (1024, "descriptors are not observed: the usual soft limit", last),
            "file_size_mb": (1024, "file sizes are not observed: 1 GiB", last),
        }
        wait = _serves(obs)
        if wait is not None:
            values["wall_clock_seconds"] = (
                None,
                f"no wall-clock limit: it serves a client ({_summary(wait)}), and a server "
                "lives as long as its client",
                wait,
            )
            values["cpu_seconds"] = (
                max(SERVER_CPU, math.ceil(duration * h)),
                f"a server ({_summary(wait)}) idles for hours using no CPU and works in "
                f"bursts: sized generously, {SERVER_CPU} s of CPU per process, not from the "
                f"{seen} it ran",
                wait,
            )
        for key, (value, why, event) in values.items():
            prev = self.resources.get(key)
            r = prev[1] if prev else _Rule()
            r.cite(event, why, name)
            if prev is None:
                merged = value
            elif value is None or prev[0] is None:
                merged = None  # unlimited in one observation: unlimited in the union
            else:
                merged = max(value, prev[0])
            self.resources[key] = (merged, r)

    def _denies(self, obs: Observation, ctx: PathContext, name: str | None) -> None:
        """Secrets beneath a granted directory stay unreachable: filesystem.deny."""
        found = secret_paths(obs.cwd, obs.home) if obs.cwd is not None else []
        for fld in ("write", "read"):
            # The workspace is searched for files named like secrets (a key or a token
            # in the project); the system and runtime trees are not (their secrets sit
            # in known places, which secret_paths found, and their many files named
            # after tokens and passwords are documentation and code).
            # So are the home's project trees (a directory listed there holds its `.env`
            # like the workspace does), but not its dot-directories: runtimes and caches
            # (~/.pyenv, ~/.cache) are like the system's.
            # And each directory the command line names (a workspace too).
            trees = [
                g for g in self.fs[fld]
                if within(g, "${CWD}") or _home_project(g) or any(within(g, r) for r in self.roots)
            ]  # fmt: skip
            for tree in trees:
                concrete = ctx.to_concrete(tree)
                if concrete is not None and ctx.is_dir(concrete):
                    secrets, complete = _secrets_beneath(concrete, obs.home)
                    found.extend(s for s in secrets if s not in found)
                    if not complete:
                        self.note(
                            f"{tree} holds more than {_SCAN_LIMIT} entries: it was not "
                            "fully searched for secrets to deny"
                        )
        for secret in found:
            target = ctx.to_policy(ctx.resolve(secret, follow=False))
            if target in self.deny:
                continue
            for fld in ("write", "read"):
                granted = next((g for g in self.fs[fld] if g != target and within(target, g)), None)
                if granted is None:
                    continue
                cited = next(
                    (r.event_id for r in self.fs[fld][granted].reasons if r.observation == name),
                    None,
                )
                event = _event_or(obs, cited)
                if event is not None:
                    self.rule(self.deny, target).cite(
                        event,
                        f"a secret beneath the grant on {granted}: kept out ({secret})",
                        name,
                    )
                break

    # ------------------------------------------------------------ the policy

    def build(self) -> Generated:
        self._collapse()
        fs: dict[str, list[str]] = {}
        reasons: dict[str, list[Reason]] = {}
        for fld in ("read", "write", "execute"):
            fs[fld] = sorted(self.fs[fld])
            for i, p in enumerate(fs[fld]):
                reasons[f"filesystem.{fld}[{i}]"] = self.fs[fld][p].final()
        fs["deny"] = sorted(self.deny)
        for i, p in enumerate(fs["deny"]):
            reasons[f"filesystem.deny[{i}]"] = self.deny[p].final()
        network: dict[str, Any] = {
            "tcp_connect": sorted(self.connect),
            "tcp_bind": sorted(self.bind),
            "udp": "network.udp" in self.switches,
            "unix": "network.unix" in self.switches,
        }
        for i, port in enumerate(network["tcp_connect"]):
            reasons[f"network.tcp_connect[{i}]"] = self.connect[port].final()
        for i, port in enumerate(network["tcp_bind"]):
            reasons[f"network.tcp_bind[{i}]"] = self.bind[port].final()
        for key, r in self.switches.items():
            reasons[key] = r.final()
        if "network.unix" in self.switches:
            self.note(
                "network.unix is granted: below Landlock ABI 9 that reaches every unix "
                "socket on the host, so cvg-run refuses the policy there unless run with "
                "--allow-degraded"
            )
        if self.syscall_mode == "allowlist":
            section = self._allowlist(reasons)
        else:
            syscalls = sorted(self.syscalls)
            for i, s in enumerate(syscalls):
                reasons[f"syscalls.allow[{i}]"] = self.syscalls[s].final()
            section = {"allow": syscalls}
        env_set = {k: v for k, (v, _) in sorted(self.env_set.items())}
        for k, (_, r) in self.env_set.items():
            reasons[f"environment.set.{k}"] = r.final()
        env_pass = list(self.env_pass)
        for i, k in enumerate(env_pass):
            reasons[f"environment.pass[{i}]"] = self.env_pass[k].final()
        resources = {k: v for k, (v, _) in self.resources.items()}
        for k, (_, r) in self.resources.items():
            reasons[f"resources.{k}"] = r.final()
        data = {
            "kind": "cvg.policy",
            "version": 1,
            "filesystem": fs,
            "network": network,
            "ipc": {"signal_outside": "ipc.signal_outside" in self.switches},
            "resources": resources,
            "environment": {"set": env_set, "pass": env_pass},
            "syscalls": section,
            "reasons": reasons,
        }
        return Generated(Policy.model_validate(data), self._note_lines())

    def _allowlist(self, reasons: dict[str, list[Reason]]) -> dict[str, Any]:
        """The allow list: every call observed, each observed runtime's baseline (the union
        over the C libraries measured), the calls always needed, and each of those under
        its other names (:data:`FAMILIES`); minus the default deny list (unless
        --grant-denied granted one) and names this architecture lacks."""
        from cvg_kernel.libc import machine
        from cvg_kernel.seccomp import table

        arch = {"arm64": "aarch64"}.get(machine(), machine())
        known = table(arch)
        rules = self.calls
        files = load_baselines()
        for runtime, (event, name) in sorted(self.runtimes.items()):
            measured = [b for b in files if b.runtime == runtime and b.arch == arch]
            if not measured:
                self.note(f"no {runtime} syscall baseline for {arch}: only what was observed")
                continue
            where = ", ".join(f"{b.libc} {b.libc_version} on {b.host}" for b in measured)
            for call in sorted(shipped(runtime, files, arch)):
                self.rule(rules, call).cite(
                    event, f"{runtime} baseline ({where}): its runtime may call it", name
                )
        if self.first is not None:
            event, name = self.first
            for call in ALWAYS:
                self.rule(rules, call).cite(
                    event, f"{call}: always allowed (exit, signal return, C library start-up)", name
                )
        for call, rule in self.syscalls.items():  # deny-list calls --grant-denied granted
            self.rule(rules, call).absorb(rule)
        # The same operation under another name: another C library or input picks it.
        named: set[str] = set()
        for call in sorted(rules):
            for other in family(call):
                if other not in rules and rules[call].reasons:
                    named.add(other)
                    first = rules[call].reasons[0]
                    rules[other] = _Rule()
                    rules[other].reasons.append(
                        Reason(
                            event_id=first.event_id,
                            summary=f"{other}: the operation of {call} under another name",
                            observation=first.observation,
                        )
                    )
        allow = []
        for call in sorted(rules):
            if call in DEFAULT_DENY and call not in self.syscalls:
                self.note(
                    f"not allowed: {call}: on the default deny list (it stays denied; "
                    "--grant-denied grants what the learning sandbox denied)"
                )
                continue
            if call not in known:
                if call not in named:  # open on aarch64, say: nothing to report
                    self.note(f"not allowed: {call}: no such system call on {arch}")
                continue
            allow.append(call)
        for i, call in enumerate(allow):
            reasons[f"syscalls.allow[{i}]"] = rules[call].final()
        return {"mode": "allowlist", "allow": allow}

    def _collapse(self) -> None:
        """Drop a grant another grant covers, keeping its reasons on the wider one."""
        write, read = self.fs["write"], self.fs["read"]
        for p in sorted(write, key=len, reverse=True):
            outer = next((q for q in write if q != p and within(p, q)), None)
            if outer is not None:
                write[outer].absorb(write.pop(p))
        for p in sorted(read, key=len, reverse=True):
            w = next((q for q in write if within(p, q)), None)
            if w is not None:
                write[w].absorb(read.pop(p))
                continue
            outer = next((q for q in read if q != p and within(p, q)), None)
            if outer is not None:
                read[outer].absorb(read.pop(p))


_SCAN_LIMIT: Final = 50_000


@functools.lru_cache(maxsize=256)
def _clean(tree: str, home: str | None) -> bool:
    """No file named like a secret beneath ``tree``, searched whole: only such a tree is
    granted as one (a system tree's deny rules would be another policy to review)."""
    secrets, complete = _secrets_beneath(tree, home)
    return complete and not secrets


def _secrets_beneath(directory: str, home: str | None) -> tuple[list[str], bool]:
    """Files beneath ``directory`` that are secrets by name (a ``*.pem`` in a granted
    tree); False when the walk stopped at the limit."""
    out: list[str] = []
    seen = 0
    for dirpath, dirnames, filenames in os.walk(directory):
        for n in dirnames + filenames:
            seen += 1
            if seen > _SCAN_LIMIT:
                return out, False
            p = os.path.join(dirpath, n)
            if secret_reason(p, home) is not None:
                out.append(p)
        # A secret directory is denied whole: nothing beneath it needs listing.
        dirnames[:] = [d for d in dirnames if os.path.join(dirpath, d) not in out]
    return out, True


def _home_project(policy_path: str) -> bool:
    """A tree in the home that is not in one of its dot-directories."""
    if not policy_path.startswith("${HOME}/"):
        return False
    return not policy_path[len("${HOME}/") :].startswith(".")


def _event_or(obs: Observation, event_id: str | None) -> Event | None:
    if event_id is not None:
        try:
            return obs.event(event_id)
        except KeyError:
            pass
    return obs.events[0] if obs.events else None


_SCRIPT_RUNNERS: Final = SHELLS | MAKES


def _is_home(concrete: str, ctx: PathContext) -> bool:
    """The home itself, also when it is the working directory (``${CWD}`` is then not
    broad by name): write on it reaches every startup file and secret."""
    return ctx.home is not None and posixpath.normpath(concrete) == posixpath.normpath(ctx.home)


def _existing_special(path: str) -> bool:
    import os
    import stat

    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode)


def _memory(obs: Observation, h: float, first: Event, last: Event) -> tuple[int, str, Event]:
    """memory_mb from the peak the observer measured, with headroom; 2048 when the
    observation has none (imported, or made before it was measured)."""
    seen_kb = max(obs.peak_rss_kb or 0, obs.tree_rss_kb or 0)
    if not seen_kb:
        return 2048, "memory was not measured: room for common compilers and runtimes", first
    mb = math.ceil(seen_kb / 1024)
    parts = []
    if obs.peak_rss_kb:
        parts.append(f"one process at most {math.ceil(obs.peak_rss_kb / 1024)} MiB resident")
    if obs.tree_rss_kb:
        parts.append(f"the tree at most {math.ceil(obs.tree_rss_kb / 1024)} MiB at once")
    value = max(MIN_MEMORY, math.ceil(mb * h))
    why = (
        f"{' and '.join(parts)} (measured while observing, to {last.id}); x{h:g} "
        f"headroom, at least {MIN_MEMORY} MiB"
    )
    return value, why, first


def _serves(obs: Observation) -> Event | None:
    """The first sign the tool serves a client: a ``wait`` event (it accepted on a
    listening socket, or read its stdin from a pipe, socket or terminal)."""
    return next((e for e in obs.events if e.op == "wait" and e.result == "ok"), None)


def _first_exec(obs: Observation) -> Event | None:
    return next((e for e in obs.events if e.op == "execute" and e.result == "ok"), None)


def _first_under(obs: Observation, root: str) -> Event | None:
    root = posixpath.normpath(root)
    return next(
        (
            e
            for e in obs.events
            if e.path and e.result == "ok" and within(posixpath.normpath(e.path), root)
        ),
        None,
    )


def generate(
    sources: Sequence[Source] | Iterable[Source],
    *,
    grant_denied: bool = False,
    headroom: float = DEFAULT_HEADROOM,
    workspace: bool = True,
    syscalls: str = "denylist",
    cwd: bool = True,
) -> Generated:
    """The smallest policy for these observations (their union), every rule with reasons.

    ``workspace`` false grants the working directory's paths one by one like any other
    (smaller; another input with other names there is then more likely refused).
    ``cwd`` false: the working directory means nothing to the tool (a server its client
    starts wherever the client happens to be), so no path is written as ``${CWD}``:
    each is absolute, or beneath ``${HOME}``; no workspace rule either.
    ``syscalls="allowlist"`` writes ``syscalls.mode: allowlist`` with the calls every
    observation made, each observed runtime's measured baseline and :data:`ALWAYS`."""
    b = _Builder(grant_denied, headroom, workspace, syscalls, cwd)
    for src in sources:
        b.add(src)
    return b.build()


def _named_roots(obs: Observation, ctx: PathContext) -> tuple[str, ...]:
    """The directories the command line names (``/srv/repo``, ``--repository=/srv/repo``),
    in policy form, when the working directory means nothing (``cwd`` false): a server
    told to serve a tree may use any name in it on another input, as a tool its working
    directory. None that is broad (``/``, ``${HOME}``...), scratch, a secret or protected
    path, nor one the command's own files lie in (its program or package). The files
    named like secrets beneath one are denied (``_denies`` searches it as it does the
    workspace), and the compiler keeps the known secrets and protected paths out. The
    home is never one: no search of a whole home is complete."""
    found: list[str] = []
    program = {
        posixpath.dirname(ctx.resolve(a, follow=True))
        for a in obs.argv[:2] if a.startswith("/")
    }  # fmt: skip
    for arg in obs.argv[1:]:
        value = arg.split("=", 1)[1] if arg.startswith("-") and "=" in arg else arg
        if not value.startswith("/") and not value.startswith("~/"):
            continue
        if value.startswith("~/") and obs.home:
            value = posixpath.join(obs.home, value[2:])
        concrete = ctx.resolve(posixpath.normpath(value), follow=True)
        if not os.path.isdir(concrete) or any(within(p, concrete) for p in program):
            continue
        policy = ctx.to_policy(concrete)
        if (
            ctx.is_broad(policy) or _is_home(concrete, ctx) or within(policy, "${SCRATCH}")
            or secret_reason(concrete, obs.home) or protected_reason(concrete, obs.home)
        ):  # fmt: skip
            continue
        if policy not in found:
            found.append(policy)
    return tuple(found)


def _is_script(path: str) -> bool:
    """True when ``path`` starts with ``#!`` (its interpreter reads it: it needs read)."""
    try:
        with open(path, "rb") as f:
            return f.read(2) == b"#!"
    except OSError:
        return False
