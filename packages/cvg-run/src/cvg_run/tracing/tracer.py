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
  (:mod:`cvg_kernel.notify`). Complete, and the cheapest on tools that make many
  calls.
- ``ptrace``: strace stops the tool on every call and prints the same set plus the
  seccomp deny list and socket(), so seccomp denials are seen in the trace. Slower;
  complete; for kernels or setups where the notification channel is not available.
- ``bpf``: ``--seccomp-bpf`` without the channel. Seccomp denials are not seen.

A plan with held directories (seccomp ``paths``: a deny inside a grant) sends every
call that names a path to the supervisor, and a user notification wins over strace's
``--seccomp-bpf`` stop: the calls the supervisor lets go on, which Landlock may then
refuse, would never reach the trace. Such a plan is traced in ``ptrace`` mode instead
of the default. The refusals the supervisor makes itself come with the notification,
which names the path and the plan entry behind them (:mod:`.supervised`).

Every mode pays a fixed cost on top of the untraced run: strace's start and the
launcher's (a Python interpreter importing cvg_kernel, every one of its opens
traced; the plan itself is prepared by cvg-run, outside strace, and the launcher
only applies it); see bench_trace.py.
"""

from __future__ import annotations

import os
import resource
import sys
import threading

from cvg_trace.tool import StraceNotFound, find_strace

from .launch import BOOT

# typing and collections.abc only for the type checker: they cost every traced start.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any, Final

    from cvg_kernel.plan import Prepared

    from .denials import DenialLog

__all__ = ["MODES", "TRACED", "TraceUnavailable", "Tracer"]

MODES: Final = ("notify", "ptrace", "bpf")
DEFAULT_MODE: Final = "notify"

# The calls that can be refused by Landlock or an rlimit, and the ones the tracker
# needs to follow processes and working directories. Everything else (read, write,
# stat: Landlock does not check metadata) runs at full speed under --seccomp-bpf.
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
    # ENOMEM at RLIMIT_DATA (resources.memory_mb). Not free: each stops the tool once, but
    # a program maps memory far less often than it reads or writes (a Python start-up
    # makes ~100 of them), and without them a tool killed by its memory limit is silent.
    "mmap", "mremap", "brk",
)  # fmt: skip
# Seen only when every call stops (ptrace mode): seccomp refuses these before strace.
_PTRACE_EXTRA: Final = ("socket", "memfd_create")


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
        guards: Mapping[str, Any] | None = None,
    ) -> None:
        try:
            self.strace = find_strace(strace)
        except StraceNotFound as e:
            raise TraceUnavailable(str(e)) from None
        self.mode = mode or trace_mode()
        self.plan = plan
        self.variables = variables
        self.say = say
        # Made by the reader thread (see start): it imports the strace reader.
        self.log: DenialLog | None = None
        self._ready = threading.Event()
        self.wake_r, self.wake_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        self._thread: threading.Thread | None = None
        self.plan_fd = -1
        self._inherited: list[int] = []
        self.strace_pid: int | None = None
        # The seccomp notification channel (notify mode): our end, the launcher's.
        self.program = tuple(program)
        self.arch = arch
        self._ours = self._theirs = -1
        self._notify_thread: threading.Thread | None = None
        self._serving = False
        self._stop_r = self._stop_w = -1
        self.notify_error: str | None = None
        # Calls the supervisor performs itself (cvg_kernel.guard) need the channel in
        # every mode: without a listener the filter would answer them ENOSYS.
        spec = plan.get("seccomp")
        self.supervised = tuple(spec.get("supervise") or ()) if isinstance(spec, dict) else ()
        chosen = mode or os.environ.get("CVG_TRACE_MODE")
        if self.mode == "notify" and "paths" in self.supervised and not chosen:
            # Every call naming a path goes to the supervisor, whose notification beats
            # strace's --seccomp-bpf stop: the calls it lets go on, and Landlock then
            # refuses, would be seen by nobody. Stopping on every call sees them.
            self.mode = "ptrace"
        self._paths: Any = None
        if "paths" in self.supervised:
            from ..guarding import paths_guards

            self._paths = paths_guards(plan)
        # The guards made from the plan (cvg_run.guarding.plan_guards), by call name.
        self.guards = dict(guards or {})
        if self.mode == "notify" or self.supervised:
            # _socket, not socket: the module costs ten milliseconds to import, on the
            # path to starting the tool (cvg_kernel.notify imports it later, in a thread).
            import _socket

            ours, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
            self._ours, self._theirs = ours.detach(), theirs.detach()
            self._stop_r, self._stop_w = os.pipe2(os.O_CLOEXEC)

    @property
    def child_fds(self) -> list[int]:
        """Descriptors strace and the launcher inherit, besides the two pipes."""
        return [fd for fd in (self.plan_fd, self._theirs, *self._inherited) if fd >= 0]

    # ---------------------------------------------------------------- starting

    def prepare_files(self, prepared: Prepared) -> None:
        """Put the plan, prepared here (its rules opened, its filter assembled), where
        the launcher reads it: a memfd it inherits, so no file in the filesystem holds
        it, in marshal form, which it reads without json. The launcher only applies
        it, so none of the plan's opens and allocations stop it under strace."""
        import marshal

        handoff = prepared.handoff()
        # The backstop RLIMIT_NPROC was counted before strace and this supervisor's
        # reader and notification threads existed (the kernel counts threads): without
        # room for them they would use up the tool's share.
        extra = len(self._threads_planned()) + 1
        handoff["rlimits"] = [
            (r, soft + extra, hard + extra)
            if r == resource.RLIMIT_NPROC and soft >= 0
            else (r, soft, hard)
            for r, soft, hard in handoff["rlimits"]
        ]
        self._inherited = prepared.inherited_fds
        fd = os.memfd_create("cvg-plan", os.MFD_CLOEXEC)
        data = marshal.dumps(handoff)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.lseek(fd, 0, os.SEEK_SET)
        self.plan_fd = fd

    def _threads_planned(self) -> list[str]:
        return ["reader", "notify"] if self.mode == "notify" else ["reader"]

    def argv(self, command: Sequence[str], *, err_fd: int, trace_fd: int) -> list[str]:
        """strace's command line: it writes to descriptor ``trace_fd`` and starts the
        launcher, which reports a failure on ``err_fd``."""
        assert self.plan_fd >= 0, "prepare_files() first"
        calls = list(TRACED)
        if self.mode == "ptrace":
            from cvg_kernel.seccomp import DEFAULT_DENY

            deny = self.plan.get("seccomp", {}).get("deny", DEFAULT_DENY)
            calls += [*_PTRACE_EXTRA, *(f"?{name}" for name in deny if name not in calls)]
            listed = self.plan.get("seccomp", {}).get("allow")
            if listed is not None:
                # An allow list refuses every call not on it: trace those too.
                from cvg_kernel.libc import machine
                from cvg_kernel.seccomp import table

                arch = self.plan.get("arch") or machine()
                calls += [f"?{n}" for n in sorted(table(arch)) if n not in listed]
        argv = [
            self.strace, "-f", "-q", "-ttt", "-yy", "-s", "4096", "-e", "signal=none",
            "-e", "trace=" + ",".join(dict.fromkeys(calls)),
        ]  # fmt: skip
        if self.mode != "ptrace" and "paths" not in self.supervised:
            # With held directories every path call is a user notification first,
            # which beats strace's own filter: a call the supervisor lets go on, and
            # Landlock then refuses, would never stop in strace. So strace stops on
            # every call there, as in ptrace mode (slower).
            argv.append("--seccomp-bpf")
        argv += ["-o", f"/proc/self/fd/{trace_fd}", "--"]
        argv += [_launcher_python(), "-I", "-S", "-c", BOOT, "\n".join(_import_roots())]
        argv += ["--err-fd", str(err_fd), "--close-fd", str(trace_fd)]
        argv += ["--plan-fd", str(self.plan_fd)]
        if self._theirs >= 0:
            argv += ["--notify-fd", str(self._theirs)]
        return [*argv, "--", *command]

    def start(self, trace_r: int) -> None:
        """In the supervisor, after the fork: read the trace, and serve the seccomp
        notifications once the launcher has sent the listener."""
        self._thread = threading.Thread(target=self._read, args=(trace_r,), daemon=True)
        self._thread.start()
        if self.plan_fd >= 0:
            os.close(self.plan_fd)  # strace and the launcher have theirs
            self.plan_fd = -1
        self._inherited = []  # the ruleset is the caller's to close
        if self._theirs >= 0:
            os.close(self._theirs)
            self._theirs = -1
            self._serving = True
            self._notify_thread = threading.Thread(target=self._serve, daemon=True)
            self._notify_thread.start()

    def _serve(self) -> None:
        from cvg_kernel.notify import serve_handover

        # No listener comes when the launcher failed before confining (strace and the
        # launcher, the other holders of its end, are gone then): nothing was refused.
        ours, self._ours = self._ours, -1
        try:
            serve_handover(
                ours,
                self.program,
                self.arch or "",
                self._notified,
                stop_fd=self._stop_r,
                supervised=self.supervised,
                guards={**(self._paths.guards if self._paths is not None else {}), **self.guards},
            )
        except Exception as e:  # noqa: BLE001 - the notification loop's failure is reported, not raised in a thread
            self.notify_error = f"{type(e).__name__}: {e}"

    @property
    def root_status(self) -> tuple[str, int] | None:
        """How the tool's first process ended, once the trace has said so."""
        return self.log.root_status if self.log is not None else None

    def root_pid(self) -> int | None:
        return self.log.tracker.root if self.log is not None else None

    def _new_log(self) -> DenialLog:
        from .denials import DenialLog

        self.log = DenialLog(self.plan, self.variables, self._wake, self.say)
        self._ready.set()
        return self.log

    def _notified(self, call: Any) -> None:
        self._ready.wait(30)
        if self.log is not None:
            self.log.notified_call(call)

    # ---------------------------------------------------------------- reading

    def _read(self, fd: int) -> None:
        rest = b""
        try:
            line = self._new_log().line
            while True:
                try:
                    chunk = os.read(fd, 1 << 16)
                except InterruptedError:
                    continue
                if not chunk:
                    break
                lines = (rest + chunk).split(b"\n")
                rest = lines.pop()
                for text in lines:
                    line(text.decode("utf-8", "surrogateescape"))
            if rest:
                line(rest.decode("utf-8", "surrogateescape"))
        finally:
            os.close(fd)
            self._wake()

    def _wake(self) -> None:
        try:
            os.write(self.wake_w, b"x")
        except OSError:
            pass

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
        log = self.log if self.log is not None else self._new_log()
        denials = log.finish(meaning, detail, self.say)
        if self.notify_error:
            self.say(f"trace: seccomp denials may be missing: {self.notify_error}")
        return denials

    def close(self) -> None:
        self.stop_notify()
        fds = [self.wake_r, self.wake_w, self._stop_r, self._stop_w, self._theirs, self.plan_fd]
        if not self._serving:
            fds.append(self._ours)  # the notification thread closes it once it has run
        for fd in fds:
            if fd < 0:
                continue
            try:
                os.close(fd)
            except OSError:
                pass
        self.plan_fd = self._theirs = self._ours = -1
        if self._paths is not None:
            self._paths.close()
            self._paths = None
