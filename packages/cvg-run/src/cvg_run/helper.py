"""The warm helper behind ``Sandbox``: a small process that keeps runners ready.

The owner (the program using ``Sandbox``) may be large and multi-threaded, so
it never forks for a run. It starts this helper once, as a fresh interpreter,
and sends it the compiled plan. The helper assembles the plan's seccomp filter
once and keeps runners pre-forked: a *runner* has made its ``${SCRATCH}``,
prepared the plan, become a child subreaper and forked the tool-to-be, which
is already confined and waits for its argv. Each new runner's socket goes
straight to the owner, and the runner puts two things in it: the PATH its tool
will search, and (as descriptors) the waiting tool's socket and a pidfd of
itself.

A run is then two messages from the owner, and no other process is woken
before the exec: argv and stdio to the waiting tool, which execs at once, and
the run's details and reply socket to its runner, which supervises the run,
ends the tree, and sends the record back. The owner tells the helper it took
a runner; the helper forks the replacement when a run ends, so preparing it
does not compete with the tool just started (or at once, when the owner has
none left).

Each runner supervises exactly one run, so "everything the tool started" is
simply "every descendant of that runner", whatever several concurrent runs
do. Messages are one datagram each on SOCK_SEQPACKET sockets, JSON where they
carry data.

The helper exits when its owner goes away (its control socket closes, or its
parent changes); running runners are told by PR_SET_PDEATHSIG, which makes
their supervisor forward SIGTERM to the tool and end the tree, and waiting
ones end when the owner's end of their socket closes.
"""

from __future__ import annotations

import json
import os
import resource
import select
import shutil
import signal
import socket
import sys
import tempfile
import time
from typing import Any

from cvg_kernel import cgroup, process
from cvg_kernel.libc import prctl
from cvg_kernel.plan import (
    EXIT_NOT_STARTED,
    PlanError,
    Prepared,
    child_exec,
    child_exit,
    compile_filter,
    prepare,
)
from cvg_kernel.seccomp import Filter

from . import record
from .supervisor import (
    Outcome,
    SignalCatcher,
    failed,
    kill_tree,
    limits_by,
    memory_killed,
    not_started,
    read_all,
    run_cgroup,
    start_failure,
    tree_limits,
    watch,
)
from .tree import Reserve

PR_SET_PDEATHSIG = 1
MAX_MESSAGE = 1 << 20
OWNER_CHECK_SECONDS = 1.0
# Runners kept prepared: two back-to-back runs both find one ready.
POOL_SIZE = 2


def _confined_child(prepared: Prepared, sock: socket.socket, err_w: int) -> None:
    """The tool-to-be: confined ahead of time, it waits for its argv and stdio.

    Everything slow (fork, Landlock, seccomp, rlimits, capabilities) happens
    before the run is asked for; when it is, the only work left is the exec.
    """
    try:
        # If the runner dies, so does the tool: nothing confined outlives it.
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        prepared.apply()
        data, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, 3)
        if not data or len(fds) != 3:
            os._exit(0)  # the runner was told to stop before any run
        request = json.loads(data)
        for fd, target in zip(fds, (0, 1, 2), strict=True):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
    except BaseException as e:  # noqa: BLE001 - a forked child never returns into the caller's code
        child_exit(err_w, EXIT_NOT_STARTED, f"confinement failed: {e}")
    child_exec(prepared, request["argv"], request["path"], err_w)


def _runner(
    plan: dict[str, Any],
    sock: socket.socket,
    keep_scratch: bool,
    plan_digest: str,
    compiled: Filter | None,
) -> None:
    """A pre-forked runner: prepare, pre-confine the tool, tell the owner, wait for
    one run, supervise it, reply, exit."""
    prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    scratch = tempfile.mkdtemp(prefix="cvg-warm-")
    prepared = None
    reserve = None
    group: cgroup.RunCgroup | None = None
    status = 0
    try:
        try:
            prepared = prepare(plan, {"SCRATCH": scratch, "CWD": os.getcwd()}, compiled=compiled)
            prep_error = None
        except (PlanError, OSError) as e:
            prep_error = str(e)
        process.set_child_subreaper()
        # Before the tool exists: it may lower this runner's RLIMIT_NOFILE.
        reserve = Reserve()
        tool = err_r = -1
        handed = [os.pidfd_open(os.getpid())]
        if prepared is not None:
            tool_sock, child_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            err_r, err_w = os.pipe2(os.O_CLOEXEC)
            tool = os.fork()
            if tool == 0:
                tool_sock.close()
                os.close(err_r)
                _confined_child(prepared, child_sock, err_w)
            child_sock.close()
            os.close(err_w)
            handed.append(tool_sock.detach())
            # The tool waits for its argv, so it has started nothing yet.
            group = _joined(tool, plan)
        ready = {"path": None if prepared is None else prepared.env.get("PATH"),
                 "error": prep_error}  # fmt: skip
        # Caught before the owner can know this runner: a cancel may come as soon as
        # the owner has it, before the run's details do.
        with SignalCatcher() as sigs:
            try:
                socket.send_fds(sock, [json.dumps(ready).encode()], handed)
            except OSError:
                return  # the owner closed the Sandbox before this runner was ready
            finally:
                for fd in handed:
                    os.close(fd)  # the owner holds them now
            _serve_one(sock, plan, plan_digest, prepared, prep_error, (tool, err_r), sigs,
                       scratch, keep_scratch, reserve, group)  # fmt: skip
    except BaseException as e:  # noqa: BLE001 - a forked child never returns into the caller's code
        status = 1
        try:
            os.write(2, f"cvg-run helper: runner failed: {e}\n".encode())
        except OSError:
            pass
    finally:
        kill_tree(reserve=reserve)
        if group is not None:
            group.close()
        if reserve is not None:
            reserve.close()
        if prepared is not None:
            prepared.close()
        if not keep_scratch:
            shutil.rmtree(scratch, ignore_errors=True)
        os._exit(status)


def _serve_one(
    sock: socket.socket,
    plan: dict[str, Any],
    plan_digest: str,
    prepared: Prepared | None,
    prep_error: str | None,
    tool: tuple[int, int],
    sigs: SignalCatcher,
    scratch: str,
    keep_scratch: bool,
    reserve: Reserve,
    group: cgroup.RunCgroup | None,
) -> None:
    """Wait for the run's details (the owner has told the tool already), watch
    the run, end its tree and send the record."""
    try:
        data, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, 1)
    except OSError:
        data, fds = b"", []
    if not data or len(fds) != 1:
        return  # the owner closed the Sandbox; the waiting child dies with us
    t0 = time.monotonic()
    started = time.time()
    request = json.loads(data)
    reply = socket.socket(fileno=fds[0])
    argv = request["argv"]
    cwd = request["cwd"]
    outcome: Outcome
    problem = request.get("problem")
    if prepared is None:
        outcome = not_started(prep_error or "plan not prepared")
    elif problem is not None:
        code, message = problem
        outcome = Outcome(code, "not_found" if code == 127 else "not_executable",
                          detail=message, started=started, ended=time.time())  # fmt: skip
    else:
        outcome = _supervise_started(*tool, plan, request.get("timeout"), t0, reserve, sigs,
                                     group)  # fmt: skip
        outcome.started = started
        outcome.ended = time.time()
    outcome.leftovers = kill_tree(reserve=reserve)
    rec = record.build(
        run_id=request["run_id"],
        plan=plan,
        plan_digest=plan_digest,
        policy_digest=request["policy_digest"],
        policy_path=request.get("policy_path"),
        argv=argv,
        cwd=cwd,
        outcome=outcome,
        allow_degraded=bool(request.get("allow_degraded")),
        scratch=scratch,
        scratch_kept=keep_scratch,
    )
    del rec["plan"]  # the owner has it (Started.result puts it back)
    payload = json.dumps({"record": rec}).encode()
    if len(payload) >= MAX_MESSAGE:
        payload = json.dumps({"error": "record too large"}).encode()
    try:
        reply.send(payload)
    except OSError:
        pass
    finally:
        reply.close()


def _supervise_started(
    tool: int,
    err_r: int,
    plan: dict[str, Any],
    timeout: float | None,
    t0: float,
    reserve: Reserve,
    sigs: SignalCatcher,
    group: cgroup.RunCgroup | None = None,
) -> Outcome:
    """Watch a pre-confined tool that has just been told to exec. Whatever goes
    wrong while watching ends the run (fail closed), never the runner: the
    caller still ends the tree and replies with a record."""
    # EOF once the tool exec'd (the pipe is close-on-exec), or why it did not.
    failure = read_all(err_r)
    os.close(err_r)
    wall = plan.get("wall_clock_seconds")
    if timeout is not None:
        wall = timeout if wall is None else min(wall, timeout)
    try:
        totals = tree_limits(plan)
        outcome = watch(tool, sigs, t0, wall, plan.get("processes"), totals, reserve=reserve,
                        group=group)  # fmt: skip
        outcome = memory_killed(outcome, group, totals)
    except Exception as e:  # noqa: BLE001 - whatever failed, the tree still ends and the run has a record
        outcome = failed(f"{type(e).__name__}: {e}")
    outcome.limits_by = limits_by(group, plan.get("processes"), tree_limits(plan))
    if failure:
        outcome = start_failure(failure)
    outcome.pid = tool
    outcome.wall_seconds = time.monotonic() - t0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    outcome.cpu_seconds = usage.ru_utime + usage.ru_stime
    outcome.peak_rss_kb = usage.ru_maxrss
    return outcome


def _joined(tool: int, plan: dict[str, Any]) -> cgroup.RunCgroup | None:
    """The run's cgroup with ``tool`` in it, or None (the limits are sampled)."""
    group = run_cgroup(plan.get("processes"), tree_limits(plan))
    if group is None:
        return None
    try:
        group.add(tool)
    except OSError:
        group.close()
        return None
    return group


class _Helper:
    def __init__(self, ctl: socket.socket) -> None:
        self.ctl = ctl
        self.owner = os.getppid()
        hello = json.loads(ctl.recv(MAX_MESSAGE))
        self.plan: dict[str, Any] = hello["plan"]
        self.plan_digest: str = hello["plan_digest"]
        self.keep_scratch = bool(hello.get("keep_scratch"))
        try:
            self.compiled: Filter | None = compile_filter(self.plan)
        except PlanError:
            self.compiled = None  # each runner prepares alone and reports the error
        # Runners the owner took whose replacement is made when a run ends.
        self.owed = 0

    def spawn_runner(self) -> None:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            mine.close()
            self.ctl.close()
            _runner(self.plan, theirs, self.keep_scratch, self.plan_digest, self.compiled)
        theirs.close()
        try:
            socket.send_fds(self.ctl, [b"runner"], [mine.fileno()])
        finally:
            mine.close()

    def serve(self) -> None:
        wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        for _ in range(POOL_SIZE):
            self.spawn_runner()
        poller = select.poll()
        poller.register(self.ctl, select.POLLIN)
        poller.register(wake_r, select.POLLIN)
        while True:
            events = dict(poller.poll(OWNER_CHECK_SECONDS * 1000))
            if wake_r in events:
                try:
                    while os.read(wake_r, 512):
                        pass
                except BlockingIOError:
                    pass
            ended = min(self.reap(), max(self.owed, 0))
            self.owed -= ended
            for _ in range(ended):
                self.spawn_runner()
            if os.getppid() != self.owner:
                return
            if self.ctl.fileno() not in events:
                continue
            data = self.ctl.recv(64)
            if not data:
                return  # the owner closed the Sandbox, or died
            if data == b"took":
                self.owed += 1
            elif data == b"need":
                self.owed -= 1  # made now, not when a run ends
                self.spawn_runner()

    def reap(self) -> int:
        """Reap finished runners; return how many there were."""
        count = 0
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return count
            if pid == 0:
                return count
            count += 1


def main(argv: list[str]) -> int:
    ctl = socket.socket(fileno=int(argv[0]))
    try:
        _Helper(ctl).serve()
    except (OSError, ValueError, KeyError):
        return 1
    finally:
        ctl.close()
    # Runners in flight hold PR_SET_PDEATHSIG: leaving ends their runs.
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
