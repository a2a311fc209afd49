"""The warm helper behind ``Sandbox``: a small process that keeps a runner ready.

The owner (the program using ``Sandbox``) may be large and multi-threaded, so
it never forks for a run. It starts this helper once, as a fresh interpreter,
and sends it the compiled plan. The helper keeps one *runner* pre-forked: a
process that has already made its ``${SCRATCH}``, prepared the plan (Landlock
ruleset built, seccomp program assembled) and become a child subreaper. A run
request goes straight to the ready runner, so a run costs one fork, the
confinement and the exec; the helper then forks the next runner while the
tool runs.

Each runner supervises exactly one run, so "everything the tool started" is
simply "every descendant of that runner", whatever several concurrent runs
do. The protocol is one JSON datagram per message on SOCK_SEQPACKET sockets,
with the run's stdin, stdout, stderr and reply socket passed as descriptors.

The helper exits when its owner goes away (its control socket closes, or its
parent changes); runners are told by PR_SET_PDEATHSIG, which makes their
supervisor forward SIGTERM to the tool and end the tree.
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

from cvg_kernel import process
from cvg_kernel.libc import prctl
from cvg_kernel.plan import (
    EXIT_NOT_STARTED,
    PlanError,
    Prepared,
    exec_failure,
    exec_status,
    prepare,
)

from . import record
from .supervisor import (
    Outcome,
    SignalCatcher,
    failed,
    kill_tree,
    not_started,
    read_all,
    resolve_command,
    start_failure,
    tree_limits,
    watch,
    which,
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
    status = EXIT_NOT_STARTED
    message = "exec returned"
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
        try:
            prepared.execve(request["argv"], request["path"])
        except OSError as e:
            status = exec_status(e)
            message = exec_failure(request["argv"][0], e)
    except BaseException as e:  # noqa: BLE001 - a forked child never returns into the caller's code
        message = f"confinement failed: {e}"
    try:
        os.write(err_w, f"{status} {message}".encode()[:4000])
    finally:
        os._exit(status)


def _runner(
    plan: dict[str, Any], sock: socket.socket, keep_scratch: bool, plan_digest: str
) -> None:
    """A pre-forked runner: prepare, pre-confine the tool, wait for one request,
    supervise that run, reply, exit."""
    prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    scratch = tempfile.mkdtemp(prefix="cvg-warm-")
    prepared = None
    reserve = None
    status = 0
    try:
        try:
            prepared = prepare(plan, {"SCRATCH": scratch, "CWD": os.getcwd()})
            prep_error = None
        except (PlanError, OSError) as e:
            prep_error = str(e)
        process.set_child_subreaper()
        # Before the tool exists: it may lower this runner's RLIMIT_NOFILE.
        reserve = Reserve()
        tool = -1
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
        try:
            data, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, 4)
        except OSError:
            data, fds = b"", []
        if not data or len(fds) != 4:
            return  # the helper is going away; the waiting child dies with us
        t0 = time.monotonic()
        started = time.time()
        request = json.loads(data)
        *stdio, reply_fd = fds
        reply = socket.socket(fileno=reply_fd)
        argv = request["argv"]
        cwd = request.get("cwd") or os.getcwd()
        outcome: Outcome
        if prepared is None:
            outcome = not_started(prep_error or "plan not prepared")
        elif (problem := resolve_command(argv[0], prepared.env.get("PATH"))) is not None:
            code, message = problem
            outcome = Outcome(code, "not_found" if code == 127 else "not_executable",
                              detail=message, started=started, ended=time.time())  # fmt: skip
        else:
            # Resolved here, so the waiting child execs at once (a PATH search
            # in the child costs a failed execve per directory).
            path = (
                argv[0] if "/" in argv[0] else which(argv[0], prepared.env.get("PATH", os.defpath))
            )
            start = {"argv": argv, "cwd": cwd, "path": path}
            socket.send_fds(tool_sock, [json.dumps(start).encode()], stdio)
            outcome = _supervise_started(tool, err_r, plan, request.get("timeout"), t0, reserve)
            outcome.started = started
            outcome.ended = time.time()
        for fd in stdio:
            os.close(fd)  # only the tool holds the owner's pipes: EOF means it is done
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
        payload = json.dumps({"record": rec}).encode()
        if len(payload) >= MAX_MESSAGE:
            payload = json.dumps({"error": "record too large"}).encode()
        try:
            reply.send(payload)
        except OSError:
            pass
    except BaseException as e:  # noqa: BLE001 - a forked child never returns into the caller's code
        status = 1
        try:
            os.write(2, f"cvg-run helper: runner failed: {e}\n".encode())
        except OSError:
            pass
    finally:
        kill_tree(reserve=reserve)
        if reserve is not None:
            reserve.close()
        if prepared is not None:
            prepared.close()
        if not keep_scratch:
            shutil.rmtree(scratch, ignore_errors=True)
        os._exit(status)


def _supervise_started(
    tool: int,
    err_r: int,
    plan: dict[str, Any],
    timeout: float | None,
    t0: float,
    reserve: Reserve,
) -> Outcome:
    """Watch a pre-confined tool that has just been told to exec. Whatever goes
    wrong while watching ends the run (fail closed), never the runner: the
    caller still ends the tree and replies with a record."""
    failure = read_all(err_r)
    os.close(err_r)
    wall = plan.get("wall_clock_seconds")
    if timeout is not None:
        wall = timeout if wall is None else min(wall, timeout)
    with SignalCatcher() as sigs:
        try:
            outcome = watch(tool, sigs, t0, wall, plan.get("processes"), tree_limits(plan),
                            reserve=reserve)  # fmt: skip
        except Exception as e:  # noqa: BLE001 - whatever failed, the tree still ends and the run has a record
            outcome = failed(f"{type(e).__name__}: {e}")
    if failure:
        outcome = start_failure(failure)
    outcome.pid = tool
    outcome.wall_seconds = time.monotonic() - t0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    outcome.cpu_seconds = usage.ru_utime + usage.ru_stime
    outcome.peak_rss_kb = usage.ru_maxrss
    return outcome


class _Helper:
    def __init__(self, ctl: socket.socket) -> None:
        self.ctl = ctl
        self.owner = os.getppid()
        hello = json.loads(ctl.recv(MAX_MESSAGE))
        self.plan: dict[str, Any] = hello["plan"]
        self.plan_digest: str = hello["plan_digest"]
        self.keep_scratch = bool(hello.get("keep_scratch"))
        self.ready: list[socket.socket] = []

    def spawn_runner(self) -> socket.socket:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            mine.close()
            self.ctl.close()
            for other in self.ready:
                other.close()
            _runner(self.plan, theirs, self.keep_scratch, self.plan_digest)
        theirs.close()
        return mine

    def fill(self) -> None:
        while len(self.ready) < POOL_SIZE:
            self.ready.append(self.spawn_runner())

    def serve(self) -> None:
        # Runners are refilled when a run ends, not when it starts: preparing
        # the next one costs a few milliseconds of CPU that would otherwise
        # compete with the tool that was just started.
        wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        self.fill()
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
            if self.reap():
                self.fill()
            if os.getppid() != self.owner:
                return
            if self.ctl.fileno() not in events:
                continue
            try:
                data, fds, _, _ = socket.recv_fds(self.ctl, MAX_MESSAGE, 4)
            except OSError:
                return
            if not data:
                return  # the owner closed the Sandbox, or died
            runner = self.ready.pop(0) if self.ready else self.spawn_runner()
            try:
                socket.send_fds(runner, [data], fds)
            finally:
                for fd in fds:
                    os.close(fd)
                runner.close()

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
