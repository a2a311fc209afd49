"""The supervisor: start the confined tool, watch it, and end everything it started.

The supervisor is a child subreaper, so a daemon that double-forks and calls
setsid re-parents to it rather than to init; at the end it scans its own
descendants, kills each through a pidfd (re-checking the parent so a reused
PID is never hit), reaps, and repeats until a scan comes back empty.

It is single-threaded and uses signals only from the main thread: waiting is
one poll() on the tool's pidfd and a self-pipe that signal handlers write to.
"""

from __future__ import annotations

# The C module the signal module wraps: its enums bring in enum, functools and
# collections, milliseconds of every cold start.
import _signal as signal
import errno
import os
import resource
import select
import sys
import time

# collections.abc is this module, behind the collections package: its imports cost
# every cold start milliseconds.
from _collections_abc import Mapping, Sequence

from cvg_kernel import cgroup, process
from cvg_kernel.plan import (
    EXIT_NOT_EXECUTABLE,
    EXIT_NOT_FOUND,
    EXIT_NOT_STARTED,
    Prepared,
    child_exec,
    child_exit,
)
from cvg_kernel.record import Record

from . import tree
from .held import Held
from .tree import Reserve

TYPE_CHECKING = False  # not typing's: importing typing costs every cold start
if TYPE_CHECKING:
    from typing import Any

    from .guarding import Guarding
    from .tracing.tracer import Tracer

EXIT_WALL_CLOCK = 124
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# After forwarding a signal, how long the tool gets to exit on its own.
FORWARD_GRACE = 2.0
# How often the tree is scanned (tasks, CPU time, resident memory). Root is not
# bound by RLIMIT_NPROC, so for it the count is the only limit, and it is
# checked more often.
SCAN_INTERVAL_ROOT = 0.01
SCAN_INTERVAL_USER = 0.05
# Without a memory cgroup, once the tree holds half its memory_mb the scans come
# this often: socket buffers fill at hundreds of MiB a second.
SCAN_INTERVAL_NEAR = 0.005
KILL_DEADLINE = 10.0

_subreaper_set = False


class Outcome(Record, frozen=False):
    """How a run ended, in the terms of the exit statuses of docs/design.md."""

    status: int
    meaning: str  # exited, signaled, wall_clock, not_started, not_executable, not_found, limit
    signal: int | None = None
    detail: str | None = None
    pid: int | None = None
    wall_seconds: float = 0.0
    cpu_seconds: float = 0.0
    peak_rss_kb: int = 0
    started: float = 0.0
    ended: float = 0.0
    leftovers: int = 0  # processes still alive after the tool ended, that were killed
    limits_by: str | None = None  # cgroup2, cgroup1 or sampled: what enforced the tree limits


def not_started(detail: str) -> Outcome:
    now = time.time()
    return Outcome(EXIT_NOT_STARTED, "not_started", detail=detail, started=now, ended=now)


def resolve_command(
    command: str, path: str | None, cwd: str | None = None
) -> tuple[int, str] | None:
    """Report 127 or 126 before forking when the answer is already knowable.

    Returns (status, message) or None when the command looks runnable. The
    final word is still the kernel's: a missing execute grant shows at exec.
    A relative ``command`` is looked up in ``cwd``, where the tool will run.
    """
    if "/" in command:
        target = os.path.join(cwd, command) if cwd is not None else command
        if not os.path.exists(target):
            return EXIT_NOT_FOUND, f"{command}: not found"
        if os.path.isdir(target) or not os.access(target, os.X_OK):
            return EXIT_NOT_EXECUTABLE, f"{command}: not executable"
        return None
    found = which(command, path if path is not None else os.defpath)
    if found is None:
        where = path if path is not None else os.defpath
        return EXIT_NOT_FOUND, f"{command}: not found in PATH={where}"
    return None


def which(command: str, path: str) -> str | None:
    """The first executable file named ``command`` along ``path`` (shutil.which,
    without importing shutil on the cold path)."""
    for directory in path.split(os.pathsep):
        candidate = os.path.join(directory or ".", command)
        if os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            return candidate
    return None


def _ensure_subreaper() -> None:
    global _subreaper_set
    if not _subreaper_set:
        process.set_child_subreaper()
        _subreaper_set = True


class SignalCatcher:
    """Catch the signals to forward, and wake poll() on them and on SIGCHLD."""

    def __init__(self) -> None:
        self.received: list[int] = []
        # Only the main thread may set handlers. Without the threading module loaded
        # (cvg-run's cold start does not import it) no other thread was started by it.
        threading = sys.modules.get("threading")
        self.active = threading is None or threading.current_thread() is threading.main_thread()
        self.read_fd, self.write_fd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._old: dict[int, object] = {}
        self._old_wakeup = -1

    def __enter__(self) -> SignalCatcher:
        if self.active:
            for sig in (*FORWARDED, signal.SIGCHLD):
                self._old[sig] = signal.signal(sig, self._handle)
            self._old_wakeup = signal.set_wakeup_fd(self.write_fd, warn_on_full_buffer=False)
        return self

    def _handle(self, signum: int, frame: object) -> None:
        if signum != signal.SIGCHLD:
            self.received.append(signum)

    def drain(self) -> None:
        try:
            while os.read(self.read_fd, 512):
                pass
        except BlockingIOError:
            pass

    def __exit__(self, *exc: object) -> None:
        if self.active:
            signal.set_wakeup_fd(self._old_wakeup)
            for sig, old in self._old.items():
                signal.signal(sig, old)
        os.close(self.read_fd)
        os.close(self.write_fd)


def _child(
    prepared: Prepared,
    argv: Sequence[str],
    cwd: str | None,
    err_w: int,
    group: cgroup.RunCgroup | None,
) -> None:
    """Between fork and exec. Never returns; failures go up the error pipe as
    ``STATUS message`` so the supervisor can name them."""
    try:
        if group is not None:
            group.enter()
        for sig in (*FORWARDED, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        if cwd is not None:
            os.chdir(cwd)
        prepared.apply()
    except BaseException as e:  # noqa: BLE001 - a forked child never returns into the caller's code
        child_exit(err_w, EXIT_NOT_STARTED, f"confinement failed: {e}")
    child_exec(prepared, argv, None, err_w)


def supervise(
    prepared: Prepared,
    argv: Sequence[str],
    *,
    cwd: str | None = None,
    wall_clock: float | None = None,
    processes: int | None = None,
    totals: TreeLimits | None = None,
    tracer: Tracer | None = None,
    guard: Guarding | None = None,
) -> Outcome:
    """Run ``argv`` confined by ``prepared`` and supervise it to the end.

    The tool inherits this process's stdin, stdout and stderr. Returns once
    the tool's first process has exited (or the wall clock ran out, or a
    forwarded signal ended it, or it passed ``processes``) and every process it
    started is gone.

    With ``tracer``, strace sits between this process and the tool: the child
    forked here execs strace, which starts the launcher that confines itself
    (see cvg_run.tracing). The tool's first process is then strace's child, and
    the trace says when and how it ended.

    With ``guard`` (a plan with ``seccomp.supervise``, untraced), a thread of this
    process serves the calls the filter hands over (cvg_run.guarding) until the
    tool's tree is gone.
    """
    _ensure_subreaper()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.time()
    t0 = time.monotonic()
    # Before the fork: once the tool runs it may lower this process's limits.
    reserve = Reserve()
    group = run_cgroup(processes, totals, traced=tracer is not None)
    err_r, err_w = os.pipe2(os.O_CLOEXEC)
    trace_r = trace_w = -1
    strace_argv: list[str] = []
    if tracer is not None:
        trace_r, trace_w = os.pipe2(os.O_CLOEXEC)
        strace_argv = tracer.argv(argv, err_fd=err_w, trace_fd=trace_w)
    try:
        with SignalCatcher() as sigs:
            try:
                pid = os.fork()
            except OSError as e:
                for fd in (err_r, err_w, trace_r, trace_w):
                    if fd >= 0:
                        os.close(fd)
                return not_started(f"fork failed: {e.strerror}")
            if pid == 0:
                os.close(err_r)
                if tracer is None:
                    _child(prepared, argv, cwd, err_w, group)
                else:
                    os.close(trace_r)
                    keep = [err_w, trace_w, *tracer.child_fds]
                    _strace_child(strace_argv, cwd, err_w, keep, group)
            os.close(err_w)
            if guard is not None:
                guard.start()
            limits = (wall_clock, processes, totals)
            outcome = _watched(
                pid, (err_r, trace_r, trace_w), sigs, t0, limits, tracer, reserve, group
            )
    finally:
        reserve.close()
        if group is not None:
            group.close()
        if guard is not None:
            guard.stop()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    outcome.pid = pid if tracer is None else (tracer.root_pid() or pid)
    outcome.started = started
    outcome.ended = time.time()
    outcome.wall_seconds = time.monotonic() - t0
    outcome.cpu_seconds = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    # ru_maxrss of reaped children is a high-water mark over every child this
    # process ever reaped: exact for one run per process, an upper bound otherwise.
    outcome.peak_rss_kb = after.ru_maxrss
    outcome.limits_by = limits_by(group, processes, totals)
    return outcome


def run_cgroup(
    processes: int | None, totals: TreeLimits | None, *, traced: bool = False
) -> cgroup.RunCgroup | None:
    """The run's cgroup for ``processes`` and memory_mb, when one can be made.
    Under --trace strace is in it too, and is one more process."""
    pids = None if processes is None else processes + (1 if traced else 0)
    memory = None if totals is None else totals.memory_bytes
    return cgroup.make(memory, pids)


def limits_by(
    group: cgroup.RunCgroup | None, processes: int | None, totals: TreeLimits | None
) -> str | None:
    """What enforced the tree's process and memory limits: the cgroup's
    version, ``sampled`` (the supervisor's scans alone), or None without either."""
    if group is not None:
        return group.version
    if processes is None and (totals is None or totals.memory_bytes is None):
        return None
    return "sampled"


def _watched(
    pid: int,
    pipes: tuple[int, int, int],
    sigs: SignalCatcher,
    t0: float,
    limits: tuple[float | None, int | None, TreeLimits | None],
    tracer: Tracer | None,
    reserve: Reserve,
    group: cgroup.RunCgroup | None = None,
) -> Outcome:
    """Watch the forked child to the end, then end its whole tree whatever
    happened while watching: this is the only way out of a started run.

    ``pipes`` are the error pipe's read end and the trace pipe's two ends (-1
    untraced); ``limits`` are the wall clock, ``processes`` and the totals.
    """
    err_r, trace_r, trace_w = pipes
    wall_clock, processes, totals = limits
    failure = b""
    strace_left = 0
    outcome: Outcome
    try:
        if tracer is None:
            failure = read_all(err_r)
            os.close(err_r)
            err_r = -1
            outcome = watch(pid, sigs, t0, wall_clock, processes, totals, reserve=reserve,
                            group=group)  # fmt: skip
        else:
            os.close(trace_w)
            tracer.strace_pid = pid
            tracer.start(trace_r)
            outcome = watch(pid, sigs, t0, wall_clock, processes, totals, tracer, reserve, group)
            strace_left = _running(pid)
    except Exception as e:  # noqa: BLE001 - whatever failed, the tree still ends and the run has a record
        outcome = failed(f"{type(e).__name__}: {e}")
    finally:
        killed = kill_tree(reserve=reserve)
    outcome = memory_killed(outcome, group, totals)
    if tracer is None:
        if failure:
            outcome = start_failure(failure)
        outcome.leftovers = killed
    else:
        # strace itself is not one of the tool's leftovers.
        outcome.leftovers = max(killed - strace_left, 0)
        tracer.wait()
        # Every holder of the error pipe is gone now (strace, the launcher; the
        # tool never had it past exec), so this read ends.
        failure = read_all(err_r)
        os.close(err_r)
        if failure:
            outcome = start_failure(failure)
    return outcome


def failed(why: str) -> Outcome:
    """Fail closed: the run ends (its tree killed) when the supervisor cannot watch it."""
    return Outcome(128 + signal.SIGKILL, "limit", signal=signal.SIGKILL,
                   detail=f"the supervisor could not watch the tool's processes ({why}); "
                   "ended the run rather than lose track of them")  # fmt: skip


def _blind(e: OSError) -> str:
    """Why a scan of /proc failed, with the descriptor limit when that explains it."""
    if e.errno in (errno.EMFILE, errno.ENFILE):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        return f"{os.strerror(e.errno)}; its RLIMIT_NOFILE is now {soft}/{hard}"
    return e.strerror or str(e)


def _running(pid: int) -> int:
    """1 when ``pid`` is alive and not a zombie, else 0."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return 0
    return 0 if stat[stat.rindex(b")") + 2 :][:1] in (b"Z", b"X") else 1


def _strace_child(
    strace_argv: list[str],
    cwd: str | None,
    err_w: int,
    keep: list[int],
    group: cgroup.RunCgroup | None,
) -> None:
    """Between fork and the exec of strace (which starts the launcher). Never
    returns; a failure goes up the error pipe like the untraced child's."""
    message = "exec returned"
    try:
        if group is not None:
            group.enter()
        for sig in (*FORWARDED, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        if cwd is not None:
            os.chdir(cwd)
        # strace writes the trace pipe; the launcher reports on the error pipe and
        # sends the seccomp listener down the notify socket.
        for fd in keep:
            os.set_inheritable(fd, True)
        os.execv(strace_argv[0], strace_argv)
    except BaseException as e:  # noqa: BLE001 - a forked child never returns into the caller's code
        message = f"cannot start strace: {e}"
    try:
        os.write(err_w, f"{EXIT_NOT_STARTED} {message}".encode()[:4000])
    finally:
        os._exit(EXIT_NOT_STARTED)


def start_failure(failure: bytes) -> Outcome:
    """The outcome a child reported up its error pipe as ``STATUS message``."""
    code, _, message = failure.decode(errors="replace").partition(" ")
    status = int(code) if code.isdigit() else EXIT_NOT_STARTED
    meaning = {
        EXIT_NOT_FOUND: "not_found",
        EXIT_NOT_EXECUTABLE: "not_executable",
    }.get(status, "not_started")
    return Outcome(status, meaning, detail=message)


def read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    while True:
        try:
            chunk = os.read(fd, 4096)
        except InterruptedError:
            continue
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


class TreeLimits(Record):
    """Limits on the whole tree of the tool's processes, not on each one.

    RLIMIT_CPU and RLIMIT_DATA bind each process alone: four processes under a
    512 MB limit can hold 2 GB between them. The supervisor sums CPU time and
    resident memory over every process in the tree at each scan and ends the
    run when a sum passes the policy's number.
    """

    cpu_seconds: float | None = None
    memory_bytes: int | None = None
    # Where files the tool writes count against memory_bytes when it is on tmpfs.
    scratch: str | None = None


def tree_limits(plan: Mapping[str, Any], scratch: str | None = None) -> TreeLimits:
    """cpu_seconds and memory_mb of the policy, as the plan's rlimits carry them."""

    def soft(value: object) -> int | None:
        if isinstance(value, list):
            value = value[0]
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    rlimits = plan.get("rlimits") or {}
    cpu = soft(rlimits.get("cpu"))
    # memory_mb is RLIMIT_DATA in plans compiled now, RLIMIT_AS in older ones.
    memory = soft(rlimits.get("data"))
    if memory is None:
        memory = soft(rlimits.get("as"))
    return TreeLimits(None if cpu is None else float(cpu), memory, scratch)


def watch(
    pid: int,
    sigs: SignalCatcher,
    t0: float,
    wall_clock: float | None,
    processes: int | None,
    totals: TreeLimits | None = None,
    tracer: Tracer | None = None,
    reserve: Reserve | None = None,
    group: cgroup.RunCgroup | None = None,
) -> Outcome:
    """Wait for the tool's first process to end, or for a limit. ``pid`` is the
    child this process forked: the tool, or strace under ``tracer``.

    ``reserve`` should be made before that fork (see tree.Reserve); without
    one, it is made here. ``group`` is the run's cgroup, which the tool joined.
    """
    own = reserve is None
    if reserve is None:
        reserve = Reserve()
    try:
        return _watch(pid, sigs, t0, wall_clock, processes, totals, tracer, reserve, group)
    finally:
        if own:
            reserve.close()


def _watch(
    pid: int,
    sigs: SignalCatcher,
    t0: float,
    wall_clock: float | None,
    processes: int | None,
    totals: TreeLimits | None,
    tracer: Tracer | None,
    reserve: Reserve,
    group: cgroup.RunCgroup | None,
) -> Outcome:
    deadline = None if wall_clock is None else t0 + wall_clock
    if totals is not None and totals.cpu_seconds is None and totals.memory_bytes is None:
        totals = None
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    reaped_before = reaped.ru_utime + reaped.ru_stime
    interval = SCAN_INTERVAL_ROOT if os.geteuid() == 0 else SCAN_INTERVAL_USER
    scanning = processes is not None or totals is not None
    try:
        pidfd = process.pidfd_open(pid)
    except OSError:
        pidfd = -1  # reaped already, or no descriptor to spare: waitpid at each tick
    forwarded_at: float | None = None
    limit = None if totals is None else totals.memory_bytes
    held = Held(limit, None if totals is None else totals.scratch, group is None, reserve, t0)
    resident = 0
    # epoll, not poll: poll() fails with EINVAL once RLIMIT_NOFILE is below the
    # number of descriptors it is given, and the tool can lower ours.
    poller = reserve.poller
    watched = [fd for fd in (pidfd, sigs.read_fd) if fd >= 0]
    if tracer is not None:
        watched.append(tracer.wake_r)
    for fd in watched:
        poller.register(fd, select.EPOLLIN)
    try:
        while True:
            status = _reap(pid)
            if tracer is not None:
                if tracer.root_status is None and status is not None:
                    tracer.wait()  # strace is gone: read the rest of the trace
                if tracer.root_status is not None:
                    return _traced_exit(*tracer.root_status)
                if status is not None:
                    return _exited(status)
            elif status is not None:
                return _exited(status)
            now = time.monotonic()
            if sigs.received and forwarded_at is None:
                forwarded_at = now
                target = (tracer.root_pid() if tracer is not None else None) or pid
                for sig in sigs.received:
                    _signal(target, sig)
            if forwarded_at is not None and now - forwarded_at >= FORWARD_GRACE:
                sig = sigs.received[0]
                return Outcome(128 + sig, "signaled", signal=sig,
                               detail=f"cvg-run received {process.signal_name(sig)}")  # fmt: skip
            if deadline is not None and now >= deadline:
                return Outcome(EXIT_WALL_CLOCK, "wall_clock",
                               detail=f"wall clock of {wall_clock:g} s ran out")  # fmt: skip
            if scanning:
                try:
                    # Our own descendants, not the tool's: orphans (double-forked
                    # daemons) re-parent to this subreaper and still count.
                    members = process.descendants(os.getpid())
                    if tracer is not None:
                        members = [m for m in members if m != pid]
                    used = tree.usage(members, () if tracer is None else (pid,))
                    resident = used.resident
                    extra = held.scan(members, resident, now)
                except OSError as e:
                    return failed(_blind(e))
                detail = _over(used, extra, processes, totals, reaped_before, group)
                if detail is not None:
                    return Outcome(128 + signal.SIGKILL, "limit", signal=signal.SIGKILL,
                                   detail=detail)  # fmt: skip
            timeout = interval if scanning or pidfd < 0 else 1.0
            if held.near(resident):
                timeout = min(timeout, SCAN_INTERVAL_NEAR)
            if deadline is not None:
                timeout = min(timeout, max(deadline - now, 0.0))
            if forwarded_at is not None:
                timeout = min(timeout, max(forwarded_at + FORWARD_GRACE - now, 0.0))
            try:
                poller.poll(timeout)
            except InterruptedError:
                pass
            sigs.drain()
            if tracer is not None:
                _drain(tracer.wake_r)
    finally:
        for fd in watched:
            poller.unregister(fd)
        if pidfd >= 0:
            os.close(pidfd)


def _over(
    used: tree.Usage,
    held: int,
    processes: int | None,
    totals: TreeLimits | None,
    reaped_before: float,
    group: cgroup.RunCgroup | None = None,
) -> str | None:
    """Which limit the tree is past, in words, or None."""
    if group is not None and group.oom_kills():
        return cgroup_memory_detail(totals)
    if processes is not None and used.tasks > processes:
        return (f"more than processes={processes} tasks running at once "
                f"({used.tasks}; each thread counts)")  # fmt: skip
    if totals is None:
        return None
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = used.seconds + usage.ru_utime + usage.ru_stime - reaped_before
    if totals.cpu_seconds is not None and cpu > totals.cpu_seconds:
        return (f"the tool's processes used {cpu:.2f} CPU seconds in all, "
                f"more than cpu_seconds={totals.cpu_seconds:g}")  # fmt: skip
    memory = used.resident + held
    if totals.memory_bytes is not None and memory > totals.memory_bytes:
        limit_mb = totals.memory_bytes >> 20
        extra = (f" and {held >> 20} MiB in memfds or unlinked in-memory files, socket "
                 "buffers or scratch files on tmpfs" if held else "")  # fmt: skip
        return (f"the tool's processes held {used.resident >> 20} MiB resident{extra} "
                f"at once, more than memory_mb={limit_mb}")  # fmt: skip
    return None


def cgroup_memory_detail(totals: TreeLimits | None) -> str:
    limit_mb = 0 if totals is None or totals.memory_bytes is None else totals.memory_bytes >> 20
    return (f"the tool's processes held more than memory_mb={limit_mb} at once, counting "
            "the memfds, in-memory files and socket and pipe buffers the kernel holds for "
            "them (their memory cgroup killed one)")  # fmt: skip


def memory_killed(
    outcome: Outcome, group: cgroup.RunCgroup | None, totals: TreeLimits | None
) -> Outcome:
    """The memory limit's outcome when the run's cgroup killed any of its
    processes, whatever the first process's own status was."""
    if group is None or outcome.meaning == "limit" or not group.oom_kills():
        return outcome
    return Outcome(128 + signal.SIGKILL, "limit", signal=signal.SIGKILL,
                   detail=cgroup_memory_detail(totals))  # fmt: skip


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 512):
            pass
    except BlockingIOError:
        pass


def _traced_exit(how: str, value: int) -> Outcome:
    """The outcome of a traced run from strace's ``+++`` line for the first process."""
    if how == "signaled":
        name = process.signal_name(value)
        return Outcome(128 + value, "signaled", signal=value, detail=f"killed by {name}")
    return Outcome(value, "exited")


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _reap(tool: int) -> int | None:
    """Reap every exited child (orphans re-parent to us); return the tool's
    wait status once it has exited."""
    found = None
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return found
        except InterruptedError:
            continue
        if pid == 0:
            return found
        if pid == tool:
            found = status


def _exited(status: int) -> Outcome:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return Outcome(128 + sig, "signaled", signal=sig,
                       detail=f"killed by {process.signal_name(sig)}")  # fmt: skip
    return Outcome(os.waitstatus_to_exitcode(status), "exited")


def kill_tree(deadline: float = KILL_DEADLINE, reserve: Reserve | None = None) -> int:
    """Kill every descendant of this process; return how many were signalled.

    Loops until a scan finds nothing, because a process can fork between the
    scan and the kill. Each kill goes through a pidfd opened after checking
    the parent, so a PID reused by an unrelated process is never signalled:
    our own children and orphans cannot be reused until we reap them, and a
    grandchild's PID is re-checked against its parent after the pidfd pins it.

    When /proc cannot be read or no pidfd opened (the tool lowered our
    RLIMIT_NOFILE), ``reserve`` gives the limit back if it may, then spare
    descriptors, then the descriptor-free way: kill our direct children only,
    level by level (see _kill_children). Without ``reserve`` that error is raised.
    """
    me = os.getpid()
    killed: set[int] = set()
    end = time.monotonic() + deadline
    while True:
        _reap(-1)
        try:
            tree_now = process.descendants(me)
            if not tree_now:
                return len(killed)
            _kill_each(me, tree_now, killed)
        except OSError:
            if reserve is None:
                raise
            if reserve.relieve():
                continue
            return len(killed | _kill_children(reserve.children, end))
        if time.monotonic() > end:
            return len(killed)
        time.sleep(0.001)


def _kill_each(me: int, tree_now: list[int], killed: set[int]) -> None:
    members = {me, *tree_now}
    for pid in tree_now:
        try:
            fd = process.pidfd_open(pid)
        except OSError as e:
            if process.gone(e):
                continue
            raise
        try:
            if process.parent_of(pid) in members:
                process.pidfd_send_signal(fd, signal.SIGKILL)
                killed.add(pid)
        except OSError as e:
            if e.errno != errno.ESRCH:
                raise
        finally:
            os.close(fd)


def _kill_children(children: process.OwnChildren, end: float) -> set[int]:
    """Kill the tree with no new descriptor: SIGKILL our direct children, reap,
    and repeat; as a subreaper we inherit each dead child's children.

    A plain kill() is exact here: a child's PID cannot be reused until we reap
    it, and nothing reaps between the read and the kill.
    """
    killed: set[int] = set()
    while True:
        _reap(-1)
        kids = children.read()
        if not kids:
            return killed
        for pid in kids:
            _signal(pid, signal.SIGKILL)
            killed.add(pid)
        if time.monotonic() > end:
            return killed
        time.sleep(0.001)
