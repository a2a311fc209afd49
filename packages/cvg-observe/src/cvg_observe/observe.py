"""Run a command under strace and write what it did as a ``cvg.observation``.

The layering (strace must stay outside the sandbox: cvg's seccomp filter denies
ptrace inside it)::

    cvg-observe ── fork ── CMD's first process: confined, held   (confined)
         └──── strace -f ... -p PID -o /proc/OBSERVER/fd/W
    strace -f ... --seccomp-bpf -o /proc/OBSERVER/fd/W -- CMD...    (unconfined)

Confined, the command's first process is forked here and confines itself with the
learning plan; strace attaches to it and only then is it let go to exec the command
(:mod:`.attach`), so nothing before that exec is traced, and what the process does
between being let go and the exec (a PATH search) is dropped.

Why no ``--seccomp-bpf`` when confined: with it, strace installs a seccomp filter that
answers TRACE for the traced calls, and cvg's filter answers ERRNO for denied ones;
the stricter ERRNO wins, the tracer is never told, and the denied call vanishes from
the trace. Measured on Linux 6.18 with strace 6.1: ``unshare(CLONE_NEWNS)`` and
``personality(0xffffffff)`` (EPERM from cvg's filter) appear without
``--seccomp-bpf`` and are missing with it; an ``openat`` Landlock refuses (EACCES)
appears either way, since Landlock answers after seccomp has let the call in. So a
confined observation traces every call (slower, complete); ``--unconfined`` uses
``--seccomp-bpf`` (nothing is denied there; and strace can install its filter only
in a process it starts, not in one it attaches to).

The trace goes through an anonymous pipe. strace opens its write end through this
process's /proc entry, so no process inherits it, and a sandboxed process cannot reach
another's descriptors that way (Landlock keeps it out of processes outside its
domain): the confined tool cannot forge trace lines. The trace is parsed as it arrives
and the events are written to a spool file, so memory stays flat however long the tool
runs.

The tool's processes live no longer than the observation (:mod:`.lifetime`): they are
ended when its first process exits or a limit is reached, and strace, which they can
neither signal nor trace, then ends on its own. A strace that ends while the command
still runs (killed from outside) ends the tree too, and the observation fails.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any, BinaryIO, Final

import orjson

from cvg_kernel.plan import EXIT_NOT_STARTED, PlanError, Prepared, prepare
from cvg_trace import tool as _tool
from cvg_trace.events import OTHER_SYSCALLS, RawEvent, Tracker, shapes_policy
from cvg_trace.parse import TraceParser
from cvg_trace.tool import start_version, strace_version, version_of

from .attach import Held
from .elf import executable_chain
from .environment import given, parent_environment, without_cvg
from .lifetime import DEFAULT_IDLE, DEFAULT_TIMEOUT, Lifetime
from .memory import TreeSampler, peak_rss_kb
from .schema_fit import event_fits, observation_head
from .serving import InputWaits, stdin_kind

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .signal_guard import SignalGuard

__all__ = [
    "EXIT_NOT_OBSERVED",
    "EXIT_WALL_CLOCK",
    "ObserveError",
    "Result",
    "observe",
    "strace_command",
    "strace_version",
    "write_observation",
]

EXIT_NOT_OBSERVED: Final = 125
EXIT_WALL_CLOCK: Final = 124
STRACE_GRACE: Final = 10.0
STRACE_BASE: Final = ("-f", "-ttt", "-yy", "-s", "4096", "-qq", "-e", "signal=none")
TRACE_CLASSES: Final = "%file,%network,%process,fchdir"
# Every call is traced, so the observation can list the whole set a run made (what an
# allow list needs; `-e trace=` of a few classes misses the rest, and `strace -c` drops
# exit_group, which never returns). The calls no event is made of are printed raw (hex
# numbers, no string dumps), which keeps a read-heavy tool's trace small.
_SYSCALL_NAME: Final = re.compile(r"[a-z_][a-z0-9_]{0,63}")


class ObserveError(Exception):
    """The observation could not be made (exit 125): one line saying why."""


@dataclass
class Result:
    """What :func:`observe` did: the tool's exit status and the observation's shape."""

    exit_status: int
    events: int = 0
    denied: int = 0
    executables: int = 0
    notes: list[str] = field(default_factory=list)


def find_strace(name: str | None = None) -> str:
    """The strace to use: ``name``, $CVG_STRACE, or ``strace`` on PATH."""
    try:
        return _tool.find_strace(name)
    except _tool.StraceNotFound as e:
        raise ObserveError(str(e)) from None


LOUD_NOTE: Final = "the policy may lack"
"""Notes holding this are printed on stderr; the rest stay in the observation."""


def skipped_note(parser: TraceParser) -> str:
    """What the strace lines that were not understood were of, and whether any was of a
    call a policy is learned from (then the policy may lack a rule for it)."""
    by_call = sorted(parser.skipped_by_call.items(), key=lambda kv: (-kv[1], kv[0]))
    calls = ", ".join(f"{k} {name or 'unnamed'}" for name, k in by_call)
    head = f"{parser.skipped} strace lines were not understood and skipped ({calls})"
    shaping = [name for name, _ in by_call if name and shapes_policy(name)]
    if not shaping and parser.skipped_by_call.get("", 0) == 0:
        return f"{head}; none was of a call a policy is learned from"
    first = parser.skipped_lines[0] if parser.skipped_lines else ""
    return f"{head}; {LOUD_NOTE} a rule for them; the first: {first}"


def strace_command(strace: str, output: str, target: list[str] | int) -> list[str]:
    """The full strace command line (see the module docstring for the layering):
    ``target`` is the command strace starts (unconfined), or the pid of the held
    process it attaches to (confined)."""
    extra = ",".join(f"?{name}" for name in sorted(OTHER_SYSCALLS))
    argv = [strace, *STRACE_BASE, "-e", "trace=all", "-e", f"raw=!{TRACE_CLASSES},{extra}"]
    argv += ["-o", output]
    if isinstance(target, int):
        # -I3 is what strace gives `-o FILE CMD` on its own: fatal signals blocked, so a
        # client that ends the tool's whole process group does not end the trace too.
        return [*argv, "-I3", "-p", str(target)]
    return [*argv, "--seccomp-bpf", "--", *target]


# ---------------------------------------------------------------- writing


def _event_dict(raw: RawEvent, event_id: str, by: str | None) -> dict[str, Any]:
    d: dict[str, Any] = {"id": event_id, "op": raw.op, "syscall": raw.syscall}
    if raw.pid is not None:
        d["pid"] = raw.pid
    for key in ("path", "path2", "port", "address", "family", "sock_type", "target_pid"):
        value = getattr(raw, key)
        if value is not None:
            d[key] = value
    d["result"] = raw.result
    if raw.time is not None:
        d["time"] = raw.time
    if raw.directory:
        d["directory"] = True
    if by is not None:
        d["denied_while_learning"] = True
        d["denied_by"] = by
    return d


@dataclass
class _Written:
    events: int = 0
    denied: int = 0
    dropped: int = 0
    executables: list[tuple[str, str]] = field(default_factory=list)  # (path, event id)
    seen: set[str] = field(default_factory=set)


def _write_events(
    spool: BinaryIO,
    events: Iterable[RawEvent],
    judge: Callable[[RawEvent], str | None] | None,
    w: _Written,
) -> None:
    """Each event as JSON, comma-separated, validated one at a time."""
    seen = w.seen
    dumps = orjson.dumps
    for raw in events:
        by = judge(raw) if judge is not None and raw.result != "ok" else None
        event_id = f"e{w.events + 1}"
        d = _event_dict(raw, event_id, by)
        if not event_fits(d) and not _model_takes(d):
            w.dropped += 1
            continue
        if w.events:
            spool.write(b",")
        spool.write(dumps(d))
        w.events += 1
        if by is not None:
            w.denied += 1
        if raw.op == "execute" and raw.result == "ok" and raw.path and raw.path not in seen:
            seen.add(raw.path)
            w.executables.append((raw.path, event_id))


def _model_takes(d: dict[str, Any]) -> bool:
    """The schema's own verdict on an event :func:`event_fits` could not vouch for."""
    from pydantic import ValidationError

    from cvg_schema import Event

    try:
        Event.model_validate(d)
    except ValidationError:
        return False
    return True


def _model_head(fields: dict[str, Any], executables: list[dict[str, Any]]) -> dict[str, Any]:
    """The observation without its events, made by the schema's models (which raise
    what they refuse)."""
    from cvg_schema import Executable, Observation

    head = Observation(**fields).model_dump(mode="json", by_alias=True)
    head.pop("events")
    head["executables"] = [Executable(**e).model_dump(mode="json") for e in executables]
    return head


class ObservationWriter:
    """Parse a trace into a spool of events, then write the observation.

    ``consume`` takes strace lines (it may be called as they arrive); ``write`` puts the
    whole observation, one JSON line, on ``out``. Memory does not grow with the trace:
    events are validated and written one at a time to a temporary spool file, which is
    copied after the header.
    """

    def __init__(
        self,
        *,
        argv: list[str],
        cwd: str,
        home: str | None,
        scratch: list[str],
        strace_version: str | None,
        skip_execs: int = 0,
        attached: bool = False,
        judge: Callable[[RawEvent], str | None] | None = None,
        notes: Iterable[str] = (),
        stdin: str | None = None,
        environment: dict[str, str | None] | None = None,
    ) -> None:
        self.argv = argv
        self.cwd = cwd
        self.home = home
        self.scratch = scratch
        self.strace_version = strace_version
        self.judge = judge
        self.notes = list(notes)
        self.parser = TraceParser()
        self.tracker = Tracker(cwd, skip_execs=skip_execs, attached=attached)
        self.tracker.parser = self.parser
        self.waits = InputWaits(stdin)
        self.environment = environment
        self.spool: BinaryIO = tempfile.TemporaryFile()  # noqa: SIM115
        self.written = _Written()
        # Every call the command made from its exec on (the launcher's own are not its).
        self.syscalls: dict[str, int] = {}
        self.peak_rss_kb: int | None = None
        self.tree_rss_kb: int | None = None

    def memory(self, peak_kb: int, tree_kb: int) -> None:
        """Record what the run used (see :mod:`.memory`); 0 is "not measured"."""
        self.peak_rss_kb = peak_kb or None
        self.tree_rss_kb = tree_kb or None

    def __enter__(self) -> ObservationWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.spool.close()

    def _events(self, lines: Iterable[str]) -> Iterator[RawEvent]:
        feed = self.parser.feed
        track = self.tracker.feed
        tracker = self.tracker
        counts = self.syscalls
        waits = self.waits
        for line in lines:
            rec = feed(line)
            if rec is not None:
                yield from track(rec)
                proc = tracker.procs.get(rec.pid)
                if proc is not None and proc.recording:
                    wait = waits.see(rec)
                    if wait is not None:
                        yield wait
            if tracker.started:
                # Counted where each call starts, so a call that never returns
                # (exit_group, or one its process was killed in) counts once too.
                name = _call_name(line)
                if name is not None:
                    counts[name] = counts.get(name, 0) + 1

    def consume(self, lines: Iterable[str]) -> None:
        """Parse ``lines`` and spool their events."""
        _write_events(self.spool, self._events(lines), self.judge, self.written)

    @property
    def started(self) -> bool:
        """True once the command itself was exec'd (not only its launcher)."""
        return self.tracker.started

    @property
    def exit_status(self) -> int | None:
        """How the first process ended, when the trace said so."""
        return self.tracker.exit_status

    def write(self, out: BinaryIO, exit_status: int | None = None) -> Result:
        """Write the observation to ``out``. ``exit_status`` is used when the trace
        does not say how the first process ended."""
        _write_events(self.spool, self.tracker.finish(), self.judge, self.written)
        written = self.written
        status = self.tracker.exit_status if self.tracker.exit_status is not None else exit_status
        notes = list(self.notes)
        if self.parser.skipped:
            notes.append(skipped_note(self.parser))
        if self.parser.unmatched:
            notes.append(f"{self.parser.unmatched} resumed calls had no first half")
        if self.tracker.orphaned:
            notes.append(
                f"{self.tracker.orphaned} processes appeared before their parent's fork "
                "returned: their relative paths may be unresolved"
            )
        if written.dropped:
            notes.append(f"{written.dropped} events did not fit the schema and were left out")
        executables = []
        for path, event_id in written.executables:
            chain, interp = executable_chain(path, self.cwd)
            executables.append(
                {"path": path, "interpreter": interp, "shebang": chain, "event_id": event_id}
            )
        fields = {
            "argv": self.argv,
            "cwd": self.cwd,
            "home": self.home,
            "scratch": self.scratch,
            "strace_version": self.strace_version,
            "exit_status": status if status is not None and 0 <= status <= 255 else None,
            "syscalls": dict(sorted(self.syscalls.items())),
            "peak_rss_kb": self.peak_rss_kb,
            "tree_rss_kb": self.tree_rss_kb,
            "environment": self.environment,
            "notes": notes,
        }
        head = observation_head(fields, executables) or _model_head(fields, executables)
        # {"kind":...,...,"executables":[...],"events":[<the spool>]}
        out.write(orjson.dumps(head)[:-1] + b',"events":[')
        self.spool.flush()
        self.spool.seek(0)
        shutil.copyfileobj(self.spool, out, 1 << 20)
        out.write(b"]}\n")
        out.flush()
        return Result(
            exit_status=status if status is not None else EXIT_NOT_OBSERVED,
            events=written.events,
            denied=written.denied,
            executables=len(executables),
            notes=notes,
        )


def _call_name(line: str) -> str | None:
    """The call a trace line starts (``PID TIME name(...``), or None: a resumed half,
    a signal or exit line, or a number strace has no name for (``syscall_0x1c8``)."""
    parts = line.split(None, 2)
    if len(parts) < 3:
        return None
    rest = parts[2]
    paren = rest.find("(")
    if paren <= 0:
        return None
    name = rest[:paren]
    if not _SYSCALL_NAME.fullmatch(name) or name.startswith("syscall_"):
        return None
    return name


def write_observation(out: BinaryIO, lines: Iterable[str], **kwargs: Any) -> Result:
    """Parse strace ``lines`` and write one observation to ``out`` (see
    :class:`ObservationWriter` for the keyword arguments)."""
    exit_status = kwargs.pop("exit_status", None)
    with ObservationWriter(**kwargs) as writer:
        writer.consume(lines)
        return writer.write(out, exit_status)


# ---------------------------------------------------------------- running


class _Counted:
    """The lines of an iterator, counted as they pass."""

    def __init__(self, lines: Iterable[str]) -> None:
        self.lines = lines
        self.count = 0

    def __iter__(self) -> Iterator[str]:
        for line in self.lines:
            self.count += 1
            yield line


def _lines_from(
    fd: int, proc: subprocess.Popen[bytes], tick: Callable[[], int] = lambda: 100
) -> Iterator[str]:
    """Lines from the non-blocking pipe ``fd`` (whose write end this process holds too,
    so it is never at EOF) until ``proc`` has exited and everything it wrote has been
    read. ``tick`` is called between reads and says how many ms to wait at most for
    the next."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    # strace's exit wakes the poll at once (its pidfd becomes readable), rather than
    # at the next 100 ms tick: every observation used to end 0-100 ms late.
    try:
        pidfd = os.pidfd_open(proc.pid)
    except OSError:
        pidfd = -1
    else:
        poller.register(pidfd, select.POLLIN)
    try:
        yield from _drain_until_exit(fd, proc, poller, tick)
    finally:
        if pidfd >= 0:
            os.close(pidfd)


def _drain_until_exit(
    fd: int, proc: subprocess.Popen[bytes], poller: select.poll, tick: Callable[[], int]
) -> Iterator[str]:
    rest = b""
    wait = tick()
    while True:
        poller.poll(wait)
        # Once strace has exited nothing more is written: what is read now is all.
        finished = proc.poll() is not None
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                break
            if not chunk:
                break
            parts = (rest + chunk).split(b"\n")
            rest = parts.pop()
            for part in parts:
                yield part.decode("utf-8", "surrogateescape")
        wait = tick()
        if finished:
            break
    if rest:
        yield rest.decode("utf-8", "surrogateescape")


class _Forwarder:
    """While the tool runs: Ctrl-C and Ctrl-\\ reach it through the terminal (the
    observer ignores them and keeps collecting); SIGTERM and SIGHUP sent to the
    observer are passed on to the tool's first process, once the trace has named it."""

    def __init__(self, root: Callable[[], int | None]) -> None:
        self.root = root
        self.pending: list[int] = []
        self.saved: dict[int, Any] = {}

    def __enter__(self) -> _Forwarder:
        handlers: dict[int, Callable[[int, Any], None]] = {
            signal.SIGINT: self._ignore,
            signal.SIGQUIT: self._ignore,
            signal.SIGTERM: self._forward,
            signal.SIGHUP: self._forward,
        }
        try:
            for sig, handler in handlers.items():
                self.saved[sig] = signal.signal(sig, handler)
        except ValueError:  # not the main thread: leave signals alone
            pass
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, old in self.saved.items():
            signal.signal(sig, old)

    def _ignore(self, signum: int, frame: object) -> None:
        pass

    def _forward(self, signum: int, frame: object) -> None:
        self.pending.append(signum)
        self.flush()

    def flush(self) -> None:
        """Deliver what arrived before the tool's pid was known."""
        pid = self.root()
        if pid is None:
            return
        while self.pending:
            sig = self.pending.pop(0)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)


class StraceLost(ObserveError):
    """strace ended while the command ran (it was killed): the tool's processes were
    ended, and the observation is not written (exit 125)."""


class NotStarted(ObserveError):
    """The command never started (not found, not executable, or not confined)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def observe(
    command: list[str],
    out: BinaryIO | Callable[[], BinaryIO],
    *,
    confined: bool = True,
    tool_stdout: int | IO[Any] | None = None,
    strace: str | None = None,
    notes: Iterable[str] = (),
    timeout: float | None = DEFAULT_TIMEOUT,
    idle: float | None = DEFAULT_IDLE,
) -> Result:
    """Run ``command`` under strace (in the learning sandbox unless ``confined`` is
    false) and write the observation to ``out`` (or to what ``out()`` returns, called
    only once there is an observation to write).

    The tool's stdin and stderr are inherited; its stdout goes to ``tool_stdout``
    (None: inherited too). Its tree lives no longer than the observation, which ends
    after ``timeout`` seconds, or ``idle`` seconds without a call once the client has
    closed the tool's stdin (None: no such limit; see :mod:`.lifetime`). Returns the
    tool's exit status in the Result (124 when the wall clock ran out). Raises
    NotStarted when the command never ran (its status: 125, 126 or 127) and
    ObserveError when the observation cannot be made (strace ending before the command
    did, too: the tool's processes are ended first).
    """
    if not command:
        raise ObserveError("no command given")
    strace_path = find_strace(strace)
    if not confined and shutil.which(command[0]) is None:
        what = (
            "not found"
            if "/" not in command[0] or not os.path.exists(command[0])
            else ("not executable")
        )
        raise NotStarted(f"{command[0]}: command {what}", 127 if what == "not found" else 126)
    cwd = os.getcwd()
    home = os.environ.get("HOME") or None
    all_notes = list(notes)
    # From here on SIGTERM/SIGHUP are caught (and passed on to the tool once it runs),
    # so the scratch directory is always removed.
    writers: list[ObservationWriter] = []
    with _Forwarder(lambda: writers[0].tracker.root if writers else None) as forwarder:
        scratch = tempfile.mkdtemp(prefix="cvg-observe-scratch-")
        try:
            env = dict(os.environ)
            taken = without_cvg(env)
            if taken:
                all_notes.append(
                    "cvg's own virtualenv is not the tool's: taken out of its environment: "
                    + ", ".join(taken)
                )
            parent = parent_environment()
            if parent is None:
                all_notes.append(
                    "the parent's environment could not be read: no variable is recorded "
                    "as given to the tool"
                )
            env_given = None if parent is None else given(env, parent)
            env["TMPDIR"] = scratch
            probe = start_version(strace_path)  # answered while the sandbox is prepared
            guard = None
            try:
                if confined:
                    prepared, judge, guard = _prepare_learning(cwd, home, scratch, env, all_notes)
                else:
                    prepared, judge = None, None
                    all_notes.append(
                        "observed without a sandbox (--unconfined): nothing was denied"
                    )
            finally:
                version = version_of(probe)
            with ObservationWriter(
                argv=list(command),
                cwd=cwd,
                home=home,
                scratch=[scratch],
                strace_version=version,
                attached=confined,
                judge=judge,
                notes=all_notes,
                stdin=stdin_kind(0),
                environment=env_given,
            ) as writer:
                writers.append(writer)
                lifetime = Lifetime(timeout, idle, stdin_kind(0))
                try:
                    run = _Traced(strace_path, command, prepared, tool_stdout, env, guard)
                    try:
                        return run.observe(writer, forwarder, out, lifetime)
                    finally:
                        run.close()
                finally:
                    if guard is not None:
                        guard.stop()
                        if guard.error:
                            print(f"cvg-observe: the signal guard stopped: {guard.error}",
                                  file=sys.stderr)  # fmt: skip
        finally:
            _remove_scratch(scratch)


class _Traced:
    """One run under strace: started (the held process let go once strace is attached,
    or the command started by strace), its trace consumed, its ending told."""

    def __init__(
        self,
        strace: str,
        command: list[str],
        prepared: Prepared | None,
        tool_stdout: int | IO[Any] | None,
        env: dict[str, str],
        guard: SignalGuard | None = None,
    ) -> None:
        self.strace = strace
        self.command = command
        stdout = (
            tool_stdout
            if tool_stdout is None or isinstance(tool_stdout, int)
            else tool_stdout.fileno()
        )
        self.held = None
        if prepared is not None:
            try:
                self.held = Held(prepared, command, stdout)
            finally:
                prepared.close()  # the held process has its own copy of the ruleset
            if guard is not None:
                # Before waiting for the held process's word: it names its listener and
                # waits for the guard to take it, so it says it is confined only after.
                guard.start(prepared.filter.errno_program, prepared.filter.arch)
            confined = self.held.confined()
            if not confined:
                self.held.wait()
                failure = self.held.failure()
                self.held.close()
                status, message = failure or (EXIT_NOT_STARTED, "confinement failed")
                raise NotStarted(message, status)
        # The trace's pipe (see the module docstring): strace opens the write end through
        # this process's /proc entry, so no process inherits it.
        self.read_fd, self.write_fd = os.pipe2(os.O_CLOEXEC)
        os.set_blocking(self.read_fd, False)
        target: list[str] | int = command if self.held is None else self.held.pid
        argv = strace_command(strace, f"/proc/{os.getpid()}/fd/{self.write_fd}", target)
        try:
            self.proc = subprocess.Popen(argv, stdout=stdout, env=env)
        except OSError as e:
            self.close()
            raise ObserveError(f"cannot start strace: {e.strerror or e}") from None
        if guard is not None:
            guard.spare(self.proc.pid)
        self.ended = False
        self.ending: str | None = None  # why, when a limit ended it
        self.ended_at = 0.0
        if self.held is not None and not self.held.attached_by(self.proc):
            self.held.abandon()
            failure = self.held.failure()
            if self.proc.poll() is None:
                self.proc.kill()
            code = self.proc.wait()
            self.close()
            if failure is not None:
                raise NotStarted(failure[1], failure[0])
            if code == 0:
                raise ObserveError(f"strace {strace} did not attach to the command")
            raise ObserveError(f"strace {strace} {_ended(code)} before the command started")

    def observe(
        self,
        writer: ObservationWriter,
        forwarder: _Forwarder,
        out: BinaryIO | Callable[[], BinaryIO],
        lifetime: Lifetime,
    ) -> Result:
        held = self.held
        sampler = TreeSampler(self.proc.pid) if held is None else TreeSampler(held.pid, True)
        strace_pid = self.proc.pid
        spared = {strace_pid} if held is None else {strace_pid, held.pid}

        def tick() -> int:
            forwarder.flush()
            sampler.sample()
            if held is not None and held.holding:
                held.probe()
                return 2  # ms to the next tick while it waits to be let go
            self._watch(writer, lifetime, seen.count)
            lifetime.reap_orphans(spared)
            return max(1, min(100, int(lifetime.next_check() * 1000)))

        lines = _lines_from(self.read_fd, self.proc, tick)
        seen = _Counted(lines if held is None else held.release_on_trace(lines))
        try:
            writer.consume(seen)
        finally:
            code = self.proc.wait()
            # strace is gone, by its own end or not: nothing of the tree may outlive it.
            alive = held is not None and held.poll() is None
            lifetime.end_tree(strace_pid)
            if held is not None:
                held.wait()
            lifetime.reap_orphans(set() if held is None else {held.pid})
        if held is not None:
            if held.holding:  # strace ended before it showed one call of the held process
                held.abandon()
                how = _ended(code)
                raise ObserveError(f"strace {self.strace} {how} before the command started")
            if alive:
                raise StraceLost(
                    f"strace {self.strace} {_ended(code)} while the command ran: its "
                    "processes were ended and no observation was written"
                )
            code = held.wait()  # the command's own status: strace -p ends with 0
            failure = held.failure()
            if failure is not None:
                raise NotStarted(failure[1], failure[0])
        writer.memory(peak_rss_kb(), sampler.peak_kb)
        if held is None and not writer.started and seen.count == 0 and code != 0:
            # Not one trace line: strace itself failed (a bad --strace, a refused
            # ptrace), so the command was never its to start.
            raise ObserveError(f"strace {self.strace} {_ended(code)} before the command started")
        if not writer.started:
            status = writer.exit_status
            if status is None:
                status = code if code > 0 else EXIT_NOT_OBSERVED
            raise NotStarted(f"{self.command[0]}: the command did not start", status)
        fallback = 128 - code if code < 0 else code
        if self.ending is not None:
            print(f"cvg-observe: ended the observation: {self.ending}", file=sys.stderr)
            writer.notes.append(f"the observation was ended: {self.ending}")
        result = writer.write(out() if callable(out) else out, fallback)
        if self.ending is not None and self.ending.startswith("the wall clock"):
            result.exit_status = EXIT_WALL_CLOCK
        return result

    def _watch(self, writer: ObservationWriter, lifetime: Lifetime, calls: int) -> None:
        """End the tree once the command's first process has exited or a limit is
        reached; end strace too when it outlives the tree by STRACE_GRACE."""
        if not self.ended:
            why = lifetime.over(calls)
            first_gone = (
                self.held.poll() is not None if self.held is not None
                else writer.exit_status is not None
            )  # fmt: skip
            if why is None and not first_gone:
                return
            self.ending, self.ended = why, True
            self.ended_at = time.monotonic()
            lifetime.end_tree(self.proc.pid)
        elif time.monotonic() - self.ended_at > STRACE_GRACE and self.proc.poll() is None:
            self.proc.kill()

    def close(self) -> None:
        if self.read_fd >= 0:
            os.close(self.read_fd)
            os.close(self.write_fd)
            self.read_fd = self.write_fd = -1
        if self.held is not None:
            self.held.close()


def _ended(code: int) -> str:
    return f"was killed by signal {-code}" if code < 0 else f"exited {code}"


def _prepare_learning(
    cwd: str,
    home: str | None,
    scratch: str,
    env: dict[str, str],
    notes: list[str],
) -> tuple[Prepared, Callable[[RawEvent], str | None], SignalGuard | None]:
    """The learning plan, prepared for this run (built here, applied by the held
    process), the judge of what it refuses, and below Landlock ABI 6 the guard that
    serves its signal calls."""
    from cvg_policy.errors import PolicyError

    from .learning import Judge, learning_plan

    guard = None
    try:
        lp = learning_plan(cwd, home, scratch, env)
        calls = tuple(lp.plan["seccomp"].get("supervise") or ())
        if calls:
            from .signal_guard import SignalGuard

            guard = SignalGuard(calls)
        prepared = prepare(
            lp.plan, {"CWD": cwd, "SCRATCH": scratch}, environ=env,
            notify_sock=None if guard is None else guard.theirs,
        )  # fmt: skip
    except (PolicyError, PlanError) as e:
        if guard is not None:
            guard.stop()
        raise ObserveError(f"cannot build the learning sandbox: {e}") from None
    for note in prepared.notes:
        if not note.skipped:  # what cvg-exec says too: a right this kernel cannot enforce
            print(f"cvg-observe: note: {note}", file=sys.stderr)
    if lp.denied:
        notes.append("learning sandbox: these stayed unreadable: " + ", ".join(lp.denied))
    notes.append(
        "learning sandbox: writes allowed only under the working directory, the scratch "
        "directory and /tmp; UNIX sockets refused; TCP and UDP open on every port; "
        "signals only within the tool's own processes; cvg-run's default rlimits"
    )
    notes.extend(lp.notes)
    return prepared, Judge(lp), guard


def _remove_scratch(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)
    if os.path.lexists(path):  # the tool left directories it cannot list: open them up
        for dirpath, dirnames, _ in os.walk(path):
            for d in dirnames:
                with contextlib.suppress(OSError):
                    os.chmod(os.path.join(dirpath, d), 0o700)
        shutil.rmtree(path, ignore_errors=True)
