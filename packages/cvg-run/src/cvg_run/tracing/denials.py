"""The denials of one traced run: each failed call parsed, judged and kept once.

Kept apart from :mod:`.tracer` so that cvg-run does not import the strace reader
and the judge before it starts the tool: the reader thread imports them while
the launcher starts on the other side of the fork.
"""

from __future__ import annotations

import posixpath
import re
import threading
import time

from cvg_trace.events import RawEvent, Tracker
from cvg_trace.parse import Record, TraceParser, parse_fd, string_arg

from .judge import Judge, Verdict
from .supervised import Served, call_op

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Final

__all__ = ["MAX_DENIALS", "MAX_LINES", "DenialLog"]

MAX_DENIALS: Final = 10_000
MAX_LINES: Final = 50
_IGNORED: Final = frozenset(
    {"EINPROGRESS", "ERESTARTSYS", "ERESTARTNOINTR", "ERESTARTNOHAND", "ERESTART_RESTARTBLOCK"}
)
_FORKS: Final = frozenset({"clone", "fork", "vfork", "clone3"})
_ALLOCATORS: Final = frozenset({"mmap", "mremap", "brk"})
_HOW_FLAGS: Final = re.compile(r"flags=([A-Z0-9_|]+)")
_OPEN_FLAG_ARG: Final = {"open": 1, "openat": 2, "creat": -1}
_FAMILY_NAMES: Final = {1: "unix", 2: "inet", 10: "inet6", 16: "netlink", 17: "packet"}
_TYPE_NAMES: Final = {1: "stream", 2: "dgram", 3: "raw", 5: "seqpacket"}


class DenialLog:
    """Failed calls from the trace and the notification loop, judged and deduplicated.

    The record keeps each distinct denial once (the same kind of call on the same
    target, refused by the same mechanism with the same error): its first occurrence,
    with ``N times;`` at the start of its detail when it happened more than once.

    With ``say``, each distinct denial the sandbox caused is said as soon as it is
    judged, not when the run ends: a server may run for hours, and whoever watches
    its stderr should see a refusal when it happens.
    """

    def __init__(
        self,
        plan: dict[str, Any],
        variables: dict[str, str],
        wake: Callable[[], None],
        say: Callable[[str], None] | None = None,
    ) -> None:
        self.judge = Judge(plan, variables)
        self.served = Served(plan)
        self.parser = TraceParser()
        self.tracker = Tracker(variables.get("CWD"), skip_execs=1)
        self.tracker.parser = self.parser
        self.wake = wake
        self.denials: list[dict[str, Any]] = []
        self.verdicts: list[Verdict] = []
        self._seen: dict[tuple[Any, ...], int] = {}
        self._counts: list[int] = []
        self._lock = threading.Lock()
        self.say = say
        self.printed = 0  # lines said for distinct denials, as they came
        self.dropped = 0
        self.notified = 0
        self.root_status: tuple[str, int] | None = None  # ("exited", N) / ("signaled", SIG)

    def in_tree(self, pid: int) -> bool:
        """Whether ``pid`` is one of the tool's own processes (traced)."""
        return pid in self.tracker.procs

    def notified_call(self, call: Any) -> None:
        """One call cvg's seccomp filter refused, reported by the notification loop."""
        self.notified += 1
        name = str(call.name)
        args = tuple(call.args)
        registers = ", ".join(hex(a) for a in args)
        detail = f"{name}({registers}) = -1 {call.errno}"
        if getattr(call, "refused", None) is not None and call.path:
            # A guard refused it and said what it checked: a path it resolved.
            op, what = call_op(name, args)
            event = RawEvent(call.pid, op, name, str(call.errno), time.time(), path=call.path)
            if call.refused == "unix":
                event.family, event.address = "unix", call.path
            self._add(event, self.served.verdict(call, what.format(path=call.path)), None,
                      detail)  # fmt: skip
            return
        event = RawEvent(call.pid, "other", name, str(call.errno), time.time())
        if name == "socket" and len(args) >= 2:
            event.op = "socket"
            family = args[0] & 0xFFFFFFFF
            event.family = _FAMILY_NAMES.get(family, family)
            event.sock_type = _TYPE_NAMES.get(args[1] & 0xF)
        verdict = self.judge(event, from_seccomp=True)
        self._add(event, verdict, None, detail)

    def line(self, line: str) -> None:
        """One line of the trace."""
        rec = self.parser.feed(line)
        if rec is None:
            return
        tracker = self.tracker
        if rec.kind in ("exit", "killed"):
            if rec.pid == tracker.root and self.root_status is None:
                if rec.kind == "exit" and rec.status is not None:
                    self.root_status = ("exited", rec.status)
                elif rec.status is not None:
                    self.root_status = ("signaled", rec.status)
                self.wake()
            if rec.kind == "killed" and tracker.started:
                verdict = Judge.killed(rec.name)
                if verdict is not None:
                    event = RawEvent(rec.pid, "other", "kill", "", rec.time)
                    self._add(event, verdict, None, f"killed by {rec.name}")
            for _ in tracker.feed(rec):
                pass
            return
        if rec.kind != "syscall":
            return
        if rec.errno is not None and rec.errno not in _IGNORED:
            special = self._special(rec)
            if special is not None:
                self._judge(special, rec)
        for event in tracker.feed(rec):
            if event.result == "ok" or event.result in _IGNORED:
                continue
            same = event.pid == rec.pid and event.time == rec.time and event.syscall == rec.name
            self._judge(event, rec if same else None)

    def _special(self, rec: Record) -> RawEvent | None:
        """Failed calls the tracker does not make events of."""
        tracker = self.tracker
        name = rec.name
        if name == "execve" and rec.pid == tracker.root and not tracker.started:
            # The launcher's exec of the tool, after confinement: a missing
            # execute grant on the tool itself shows here.
            path = string_arg(rec.args[0]) if rec.args else None
            if tracker.root_execs < 1 or path is None:
                return None
            root = tracker.procs.get(rec.pid)
            if not path.startswith("/") and root is not None and root.cwd[0] is not None:
                path = posixpath.normpath(posixpath.join(root.cwd[0], path))
            return RawEvent(rec.pid, "execute", name, rec.errno or "", rec.time, path=path)
        proc = tracker.procs.get(rec.pid)
        if proc is None or not proc.recording:
            return None
        if name == "ftruncate" and rec.args:
            fd = parse_fd(rec.args[0])
            path = fd.path if fd is not None else None
            return RawEvent(rec.pid, "write", name, rec.errno or "", rec.time, path=path)
        if name in _FORKS and rec.errno == "EAGAIN":
            return RawEvent(rec.pid, "other", name, rec.errno, rec.time)
        if name in _ALLOCATORS and rec.errno == "ENOMEM":
            return RawEvent(rec.pid, "other", name, rec.errno, rec.time)
        return None

    def _judge(self, event: RawEvent, rec: Record | None) -> None:
        if event.result in ("EACCES", "EPERM") and self.served.decided(
            event.op, event.path or event.address, event.family
        ):
            return  # the supervisor refused it: its notification says why
        flags = mode = ""
        if rec is not None:
            flags, mode = _flags(rec)
        in_tree = True
        if event.op == "signal" and event.target_pid is not None:
            in_tree = self.in_tree(event.target_pid)
        verdict = self.judge(event, flags=flags, mode=mode, in_tree=in_tree)
        self._add(event, verdict, rec, None)

    def _add(
        self, event: RawEvent, verdict: Verdict, rec: Record | None, detail: str | None
    ) -> None:
        with self._lock:
            added = self._add_locked(event, verdict, rec, detail)
            line = self._line(verdict) if added and self.say is not None else None
        if line is not None and self.say is not None:
            # Outside the lock: stderr may be a pipe nobody is reading just now, and the
            # notification loop must not wait for it.
            self.say(line)

    def _line(self, verdict: Verdict) -> str | None:
        """The stderr line for a new distinct denial, or None (not the sandbox's doing,
        expected of every policy, or past the line limit); counts it. Called under the
        lock."""
        if not verdict.blames_cvg or self.denials[-1].get("expected"):
            return None
        self.printed += 1
        if self.printed > MAX_LINES:
            return None
        return f"denied: {verdict.what} ({verdict.reason})"

    def _add_locked(
        self, event: RawEvent, verdict: Verdict, rec: Record | None, detail: str | None
    ) -> bool:
        # Distinct: the same kind of call on the same target, refused the same way.
        key = (verdict.what, event.syscall if not verdict.what else "", verdict.mechanism,
               verdict.right, event.result)  # fmt: skip
        index = self._seen.get(key)
        if index is not None:
            self._counts[index] += 1
            return False
        if len(self.denials) >= MAX_DENIALS:
            self.dropped += 1
            return False
        d: dict[str, Any] = {"id": f"d{len(self.denials) + 1}", "syscall": event.syscall}
        if event.pid:
            d["pid"] = event.pid
        if event.op:
            d["op"] = event.op
        if verdict.resolved is not None:
            d["path"] = verdict.resolved[:4096]
        elif event.path is not None:
            d["path"] = event.path[:4096]
        if event.port is not None:
            d["port"] = event.port
        if event.result.startswith("E"):
            d["errno"] = event.result
        d["mechanism"] = verdict.mechanism
        if verdict.right is not None:
            d["right"] = verdict.right
        if verdict.rule is not None:
            d["rule"] = verdict.rule
        if event.time is not None:
            d["time"] = event.time
        if verdict.blames_cvg and _own_proc_entry(d.get("path"), event.op, self.in_tree):
            d["expected"] = True
        if detail is None and rec is not None:
            detail = f"{rec.name}({', '.join(rec.args)}) = {rec.ret} {rec.errno or ''}".rstrip()
        if verdict.reason:
            detail = f"{verdict.reason}: {detail}" if detail else verdict.reason
        if verdict.resolved is not None:
            detail = f"named {event.path}; {detail}"
        if detail:
            d["detail"] = detail[:3900]
        self._seen[key] = len(self.denials)
        self.denials.append(d)
        self.verdicts.append(verdict)
        self._counts.append(1)
        return True

    def finish(
        self, meaning: str, detail: str | None, say: Callable[[str], None]
    ) -> list[dict[str, Any]]:
        """The run's denials for the record. Each distinct denial the sandbox caused
        has had its line on stderr as it came (the run's own end, a limit or a
        signal, now); then how many were past the line limit."""
        if self.say is None:
            self.say = say
        ended = Judge.ended(meaning, detail)
        if ended is not None:
            event = RawEvent(None, "other", "exit", "", None)
            self._add(event, ended, None, None)
        for d, count in zip(self.denials, self._counts, strict=True):
            if count > 1:
                d["detail"] = f"{count} times; " + d.get("detail", "")
                d["detail"] = d["detail"][:4096]
        if self.printed > MAX_LINES:
            say(f"denied: {self.printed - MAX_LINES} more; see the run record")
        if self.dropped:
            say(f"trace: {self.dropped} further failed calls were not recorded")
        return self.denials


_PROC_ENTRY = re.compile(r"/proc/(\d+|self|thread-self)(?:/task/\d+)?/[^/]+(?:/.*)?")


def _own_proc_entry(path: object, op: str | None, in_tree: Callable[[int], bool]) -> bool:
    """A read of one of the tool's own /proc/<pid> entries: Landlock attaches rules to
    inodes, and these are made anew per process, so no policy can grant them. Runtimes
    probe them (node reads /proc/self/cgroup for its memory limit) and go on without."""
    if not isinstance(path, str) or op not in (None, "read", "stat"):
        return False
    m = _PROC_ENTRY.fullmatch(path)
    if m is None:
        return False
    who = m.group(1)  # "self" as the tool named it is the tool's own, whoever asks
    return who in ("self", "thread-self") or in_tree(int(who))


def _flags(rec: Record) -> tuple[str, str]:
    """(open flags or unlinkat flags, mknod mode) as strace printed them."""
    name, args = rec.name, rec.args
    if name == "openat2" and len(args) > 2:
        m = _HOW_FLAGS.search(args[2])
        return (m.group(1) if m else ""), ""
    index = _OPEN_FLAG_ARG.get(name)
    if index is not None:
        return (args[index] if 0 <= index < len(args) else ""), ""
    if name == "unlinkat" and len(args) > 2:
        return args[2], ""
    if name == "mknod" and len(args) > 1:
        return "", args[1]
    if name == "mknodat" and len(args) > 2:
        return "", args[2]
    return "", ""
