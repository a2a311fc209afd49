"""``cvg-run --trace``: run the tool under strace and name every refused call.

The layering: the supervisor forks strace, strace starts the launcher
(:mod:`.launch`), the launcher confines itself with the run's plan and execs the
tool. strace stays outside the sandbox; the tool is its traced grandchild::

    cvg-run (supervisor, subreaper)
      └─ strace -f ... -o /proc/self/fd/W      (unconfined)
           └─ python -I -S launch ... -- CMD   (confines itself, then execs CMD)

The trace goes through an anonymous pipe, never a name in the filesystem: the
only other way to its write end is ``/proc/<strace>/fd/W``, which Landlock keeps
from a sandboxed process (strace is outside its domain), and the launcher closes
its inherited copy before the tool runs. So the tool cannot write trace lines.
A thread of the supervisor reads the pipe as it fills and judges each failed call
(:mod:`.judge`), so strace never blocks on a full pipe and memory stays flat.

Three modes (``CVG_TRACE_MODE``), named in ``-v`` output:

- ``notify`` (the default): strace ``--seccomp-bpf`` stops the tool only on the
  narrow set of calls that can be refused (:data:`TRACED`); everything else runs at
  full speed. A call cvg's own seccomp filter refuses never reaches strace (an ERRNO
  or USER_NOTIF answer beats strace's TRACE), so the launcher installs the filter
  with its denials turned into user notifications and hands the listener to the
  supervisor, which answers each with the plain filter's errno and records it
  (:mod:`cvg_kernel.notify`). Fast and complete.
- ``ptrace``: strace stops the tool on every call and prints the same set plus the
  seccomp deny list and socket(), so seccomp denials are seen in the trace. Slower;
  complete; for kernels or setups where the notification channel is not available.
- ``bpf``: ``--seccomp-bpf`` without the channel. Seccomp denials are not seen.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Final

from ..strace.events import RawEvent, Tracker
from ..strace.parse import Record, TraceParser, parse_fd, string_arg
from ..strace.tool import StraceNotFound, find_strace
from .judge import Judge, Verdict
from .launch import BOOT

__all__ = ["MODES", "TRACED", "TraceUnavailable", "Tracer"]

MODES: Final = ("notify", "ptrace", "bpf")
DEFAULT_MODE: Final = "notify"

# The calls that can be refused by Landlock or an rlimit, and the ones the tracker
# needs to follow processes and working directories. Everything else (read, write,
# mmap, stat: Landlock does not check metadata) runs at full speed under --seccomp-bpf.
TRACED: Final = (
    # files: each Landlock filesystem right is checked by one of these
    "open", "openat", "openat2", "creat", "execve", "execveat",
    "mkdir", "mkdirat", "mknod", "mknodat", "unlink", "unlinkat", "rmdir",
    "rename", "renameat", "renameat2", "link", "linkat", "symlink", "symlinkat",
    "truncate", "ftruncate",
    # TCP ports and abstract UNIX sockets; signals (the scope)
    "connect", "bind", "kill", "tkill", "tgkill", "rt_sigqueueinfo", "pidfd_send_signal",
    # working directories, and EAGAIN from RLIMIT_NPROC
    "chdir", "fchdir", "clone", "fork", "vfork",
)  # fmt: skip
# Seen only when every call stops (ptrace mode): seccomp refuses these before strace.
_PTRACE_EXTRA: Final = ("socket", "memfd_create")

MAX_DENIALS: Final = 10_000
MAX_LINES: Final = 50
_IGNORED: Final = frozenset(
    {"EINPROGRESS", "ERESTARTSYS", "ERESTARTNOINTR", "ERESTARTNOHAND", "ERESTART_RESTARTBLOCK"}
)
_FORKS: Final = frozenset({"clone", "fork", "vfork", "clone3"})
_HOW_FLAGS: Final = re.compile(r"flags=([A-Z0-9_|]+)")
_OPEN_FLAG_ARG: Final = {"open": 1, "openat": 2, "creat": -1}
_FAMILY_NAMES: Final = {1: "unix", 2: "inet", 10: "inet6", 16: "netlink", 17: "packet"}
_TYPE_NAMES: Final = {1: "stream", 2: "dgram", 3: "raw", 5: "seqpacket"}


class TraceUnavailable(Exception):
    """--trace cannot run here (no strace): one line saying how to get it."""


def _launcher_python() -> str:
    """An interpreter that can run the launcher as the current user. This one, or
    the system's when this one is out of reach (a python under a 0700 home)."""
    chosen = os.environ.get("CVG_TRACE_PYTHON")
    minor = f"python3.{sys.version_info.minor}"
    for candidate in (chosen, sys.executable, f"/usr/bin/{minor}", "/usr/bin/python3"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return sys.executable


def _import_roots() -> list[str]:
    import cvg_kernel
    import cvg_run

    roots: list[str] = []
    for mod in (cvg_run, cvg_kernel):
        root = os.path.dirname(os.path.dirname(os.path.abspath(str(mod.__file__))))
        if root not in roots:
            roots.append(root)
    return roots


def trace_mode() -> str:
    mode = os.environ.get("CVG_TRACE_MODE") or DEFAULT_MODE
    if mode not in MODES:
        raise TraceUnavailable(f"CVG_TRACE_MODE={mode!r}: expected one of {', '.join(MODES)}")
    return mode


class Tracer:
    """One traced run: the strace command line, the reader, the denials."""

    def __init__(
        self,
        plan: dict[str, Any],
        variables: dict[str, str],
        *,
        say: Callable[[str], None],
        mode: str | None = None,
        strace: str | None = None,
        program: Sequence[Any] = (),
        arch: str | None = None,
    ) -> None:
        try:
            self.strace = find_strace(strace)
        except StraceNotFound as e:
            raise TraceUnavailable(str(e)) from None
        self.mode = mode or trace_mode()
        self.plan = plan
        self.variables = variables
        self.say = say
        self.judge = Judge(plan, variables)
        self.parser = TraceParser()
        self.tracker = Tracker(variables.get("CWD"), skip_execs=1)
        self.tracker.parser = self.parser
        self.denials: list[dict[str, Any]] = []
        self.verdicts: list[Verdict] = []
        self._seen: dict[tuple[Any, ...], int] = {}
        self._counts: list[int] = []
        self.dropped = 0
        self.root_status: tuple[str, int] | None = None  # ("exited", N) / ("signaled", SIG)
        self.wake_r, self.wake_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        self._thread: threading.Thread | None = None
        self._private: str | None = None
        self.plan_path: str | None = None
        self.strace_pid: int | None = None
        self._lock = threading.Lock()
        # The seccomp notification channel (notify mode): our end, the launcher's.
        self.program = tuple(program)
        self.arch = arch
        self._ours = self._theirs = -1
        self._notify_thread: threading.Thread | None = None
        self._stop_r = self._stop_w = -1
        self.notify_error: str | None = None
        self.notified = 0
        if self.mode == "notify":
            import socket

            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            self._ours, self._theirs = ours.detach(), theirs.detach()
            self._stop_r, self._stop_w = os.pipe2(os.O_CLOEXEC)

    @property
    def child_fds(self) -> list[int]:
        """Descriptors strace and the launcher inherit, besides the two pipes."""
        return [self._theirs] if self._theirs >= 0 else []

    # ---------------------------------------------------------------- starting

    def prepare_files(self) -> None:
        """Write the plan where the launcher reads it: a private directory."""
        import json
        import tempfile

        base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
        self._private = tempfile.mkdtemp(prefix="cvg-trace-", dir=base)
        self.plan_path = os.path.join(self._private, "plan.json")
        with open(self.plan_path, "w") as f:
            json.dump(self.plan, f)

    def argv(self, command: Sequence[str], *, err_fd: int, trace_fd: int) -> list[str]:
        """strace's command line: it writes to descriptor ``trace_fd`` and starts the
        launcher, which reports a failure on ``err_fd``."""
        assert self.plan_path is not None
        calls = list(TRACED)
        if self.mode == "ptrace":
            from cvg_kernel.seccomp import DEFAULT_DENY

            deny = self.plan.get("seccomp", {}).get("deny", DEFAULT_DENY)
            calls += [*_PTRACE_EXTRA, *(f"?{name}" for name in deny if name not in calls)]
        argv = [
            self.strace, "-f", "-q", "-ttt", "-yy", "-s", "4096", "-e", "signal=none",
            "-e", "trace=" + ",".join(dict.fromkeys(calls)),
        ]  # fmt: skip
        if self.mode != "ptrace":
            argv.append("--seccomp-bpf")
        argv += ["-o", f"/proc/self/fd/{trace_fd}", "--"]
        argv += [_launcher_python(), "-I", "-S", "-c", BOOT, "\n".join(_import_roots())]
        argv += ["--err-fd", str(err_fd), "--close-fd", str(trace_fd), "--plan", self.plan_path]
        if self._theirs >= 0:
            argv += ["--notify-fd", str(self._theirs)]
        for name, value in self.variables.items():
            argv += ["--var", f"{name}={value}"]
        return [*argv, "--", *command]

    def start(self, trace_r: int) -> None:
        """In the supervisor, after the fork: read the trace, and serve the seccomp
        notifications once the launcher has sent the listener."""
        self._thread = threading.Thread(target=self._read, args=(trace_r,), daemon=True)
        self._thread.start()
        if self._theirs >= 0:
            os.close(self._theirs)
            self._theirs = -1
            self._notify_thread = threading.Thread(target=self._serve, daemon=True)
            self._notify_thread.start()

    def _serve(self) -> None:
        from cvg_kernel.notify import NotifyError, receive_listener, serve

        try:
            # Ends with NotifyError when the launcher failed before confining (strace
            # and the launcher, the other holders of its end, are gone then).
            listener = receive_listener(self._ours)
        except (NotifyError, OSError):
            return  # nothing confined ran, so nothing was refused
        finally:
            os.close(self._ours)
            self._ours = -1
        try:
            serve(listener, self.program, self.arch or "", self._notified, stop_fd=self._stop_r)
        except Exception as e:
            self.notify_error = f"{type(e).__name__}: {e}"

    def _notified(self, call: Any) -> None:
        """One call cvg's seccomp filter refused, reported by the notification loop."""
        self.notified += 1
        name = str(call.name)
        args = tuple(call.args)
        event = RawEvent(call.pid, "other", name, str(call.errno), time.time())
        if name == "socket" and len(args) >= 2:
            event.op = "socket"
            family = args[0] & 0xFFFFFFFF
            event.family = _FAMILY_NAMES.get(family, family)
            event.sock_type = _TYPE_NAMES.get(args[1] & 0xF)
        verdict = self.judge(event, from_seccomp=True)
        registers = ", ".join(hex(a) for a in args)
        self._add(event, verdict, None, f"{name}({registers}) = -1 {call.errno}")

    def root_pid(self) -> int | None:
        return self.tracker.root

    def in_tree(self, pid: int) -> bool:
        """Whether ``pid`` is one of the tool's own processes (traced)."""
        return pid in self.tracker.procs

    # ---------------------------------------------------------------- reading

    def _read(self, fd: int) -> None:
        rest = b""
        try:
            while True:
                try:
                    chunk = os.read(fd, 1 << 16)
                except InterruptedError:
                    continue
                if not chunk:
                    break
                lines = (rest + chunk).split(b"\n")
                rest = lines.pop()
                for line in lines:
                    self._line(line.decode("utf-8", "surrogateescape"))
            if rest:
                self._line(rest.decode("utf-8", "surrogateescape"))
        finally:
            os.close(fd)
            self._wake()

    def _wake(self) -> None:
        try:
            os.write(self.wake_w, b"x")
        except OSError:
            pass

    def _line(self, line: str) -> None:
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
                self._wake()
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
            if tracker.root_execs >= 1 and rec.args:
                return RawEvent(rec.pid, "execute", name, rec.errno or "", rec.time,
                                path=string_arg(rec.args[0]))  # fmt: skip
            return None
        proc = tracker.procs.get(rec.pid)
        if proc is None or not proc.recording:
            return None
        if name == "ftruncate" and rec.args:
            fd = parse_fd(rec.args[0])
            path = fd.path if fd is not None else None
            return RawEvent(rec.pid, "write", name, rec.errno or "", rec.time, path=path)
        if name in _FORKS and rec.errno == "EAGAIN":
            return RawEvent(rec.pid, "other", name, rec.errno, rec.time)
        return None

    def _judge(self, event: RawEvent, rec: Record | None) -> None:
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
            self._add_locked(event, verdict, rec, detail)

    def _add_locked(
        self, event: RawEvent, verdict: Verdict, rec: Record | None, detail: str | None
    ) -> None:
        # Distinct: the same kind of call on the same target, refused the same way.
        key = (verdict.what, event.syscall if not verdict.what else "", verdict.mechanism,
               verdict.right, event.result)  # fmt: skip
        index = self._seen.get(key)
        if index is not None:
            self._counts[index] += 1
            return
        if len(self.denials) >= MAX_DENIALS:
            self.dropped += 1
            return
        d: dict[str, Any] = {"id": f"d{len(self.denials) + 1}", "syscall": event.syscall}
        if event.pid:
            d["pid"] = event.pid
        if event.op:
            d["op"] = event.op
        if event.path is not None:
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
        if detail is None and rec is not None:
            detail = f"{rec.name}({', '.join(rec.args)}) = {rec.ret} {rec.errno or ''}".rstrip()
        if verdict.reason:
            detail = f"{verdict.reason}: {detail}" if detail else verdict.reason
        if detail:
            d["detail"] = detail[:3900]
        self._seen[key] = len(self.denials)
        self.denials.append(d)
        self.verdicts.append(verdict)
        self._counts.append(1)

    # ---------------------------------------------------------------- ending

    def wait(self, timeout: float = 10.0) -> bool:
        """Wait for the reader to reach the end of the trace; False on timeout."""
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def stop_notify(self) -> None:
        """End the notification loop (the tool's processes are all gone by now)."""
        if self._notify_thread is None:
            return
        try:
            os.write(self._stop_w, b"x")
        except OSError:
            pass
        self._notify_thread.join(5.0)
        self._notify_thread = None

    def finish(self, meaning: str, detail: str | None) -> list[dict[str, Any]]:
        """The run's denials for the record, after the lines on stderr."""
        self.stop_notify()
        ended = Judge.ended(meaning, detail)
        if ended is not None:
            event = RawEvent(None, "other", "exit", "", None)
            self._add(event, ended, None, None)
        printed = 0
        for d, verdict, count in zip(self.denials, self.verdicts, self._counts, strict=True):
            if count > 1:
                d["detail"] = f"{count} times; " + d.get("detail", "")
                d["detail"] = d["detail"][:4096]
            if not verdict.blames_cvg:
                continue
            printed += 1
            if printed <= MAX_LINES:
                self.say(f"denied: {verdict.what} ({verdict.reason})")
        if printed > MAX_LINES:
            self.say(f"denied: {printed - MAX_LINES} more; see the run record")
        if self.dropped:
            self.say(f"trace: {self.dropped} further failed calls were not recorded")
        if self.notify_error:
            self.say(f"trace: seccomp denials may be missing: {self.notify_error}")
        return self.denials

    def close(self) -> None:
        self.stop_notify()
        for fd in (self.wake_r, self.wake_w, self._stop_r, self._stop_w, self._theirs):
            if fd < 0:
                continue
            try:
                os.close(fd)
            except OSError:
                pass
        if self._private is not None:
            import shutil

            shutil.rmtree(self._private, ignore_errors=True)
            self._private = None


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
