"""The warm Python API: ``Sandbox(policy).run(argv)``.

    from cvg_run import Sandbox

    with Sandbox("p.yaml") as box:
        result = box.run(["python3", "tool.py"], input=b"...", timeout=30)
        print(result.status, result.stdout)

The policy is compiled once, in this process. A helper process (see
helper.py) keeps runners prepared ahead of time and hands them to this
process, so a run is two messages: its argv and pipes straight to a tool that
is already confined and waiting, which execs at once, and the run's details to
the runner that supervises it. ``run`` is safe to call from several threads
at once: each call has its own pipes, its own reply socket, its own runner and
its own ``${SCRATCH}``.
"""

from __future__ import annotations

import array
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import planning, planted, record
from .supervisor import resolve_command, which

_MAX_REPLY = 1 << 20
MAX_REQUEST = 128 * 1024
"""The largest request one run may send its runner (argv, cwd and the rest, as JSON):
it travels in one datagram of the helper's socket, which the socket's send buffer
bounds (about 208 KiB by default): past that the kernel says only "Message too long"."""


class SandboxError(RuntimeError):
    """The sandbox could not be set up, or its helper went away."""


@dataclass
class Result:
    """One run: cvg-run's exit status for it, the tool's output, and the record."""

    status: int
    stdout: bytes
    stderr: bytes
    record: dict[str, Any] = field(repr=False)

    @property
    def returncode(self) -> int:
        return self.status

    @property
    def meaning(self) -> str:
        return str(self.record["exit"]["meaning"])

    @property
    def run_id(self) -> str:
        return str(self.record["run_id"])


def _exec_tool(
    tool: socket.socket, details: dict[str, Any], path_env: str | None, stdio: list[int]
) -> tuple[int, str] | None:
    """Tell the waiting tool to exec, unless the command is already known not to
    run: then (status, message) for its runner's record, and the tool is not told."""
    argv, cwd = details["argv"], details["cwd"]
    problem = resolve_command(argv[0], path_env, cwd)
    if problem is not None:
        return problem
    # Resolved here, so the waiting tool execs at once (a PATH search there costs
    # a failed execve per directory).
    path = argv[0] if "/" in argv[0] else which(argv[0], path_env or os.defpath)
    start = {"argv": argv, "cwd": cwd, "path": path}
    try:
        socket.send_fds(tool, [json.dumps(start).encode()], stdio)
    except OSError:
        pass  # it failed to confine itself and is gone: its runner's record says why
    return None


def _recv_fds(sock: socket.socket, flags: int) -> tuple[bytes, list[int]]:
    """One short message and the descriptors it carries (socket.recv_fds before
    Python 3.12 ignores ``flags``)."""
    fds = array.array("i")
    data, ancdata, _, _ = sock.recvmsg(64, socket.CMSG_LEN(fds.itemsize), flags)
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    return data, list(fds)


class _Runner:
    """A prepared runner handed over by the helper: its socket, and once it is
    ready, the PATH its tool searches, the waiting tool's socket and its pidfd."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def ready(self) -> tuple[dict[str, Any], int, socket.socket | None] | None:
        """Wait for the runner's ready message: (what it says, pidfd, tool socket),
        or None if the runner is gone."""
        try:
            data, fds, _, _ = socket.recv_fds(self.sock, 4096, 2)
        except OSError:
            return None
        if not data or not fds:
            for fd in fds:
                os.close(fd)
            return None
        tool = socket.socket(fileno=fds[1]) if len(fds) > 1 else None
        return json.loads(data), fds[0], tool


def _close_helper(ctl: socket.socket, proc: subprocess.Popen[bytes], idle: list[_Runner]) -> None:
    try:
        for runner in idle:
            runner.sock.close()  # a waiting runner ends when its socket closes
        idle.clear()
        ctl.close()
    finally:
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _without_signal_supervision(planned: planning.Planned) -> planning.Planned:
    import copy

    plan = copy.deepcopy(planned.plan)
    plan["seccomp"].pop("supervise", None)
    plan.setdefault("degraded", []).append(
        {
            "item": "landlock.scoped: signal",
            "reason": "signal scoping needs Landlock ABI 6 or cvg-run's supervisor; the warm "
            "Sandbox has neither: the tool can signal processes of the same user outside",
            "rule": "ipc.signal_outside",
            "abi": 6,
        }
    )
    return _replanned(planned, plan)


def _without_path_serving(planned: planning.Planned) -> planning.Planned:
    import copy

    plan = copy.deepcopy(planned.plan)
    left = [g for g in plan["seccomp"].get("supervise") or () if g != "paths"]
    if left:
        plan["seccomp"]["supervise"] = left
    else:
        plan["seccomp"].pop("supervise", None)
    return _replanned(planned, plan)


def _replanned(planned: planning.Planned, plan: dict[str, Any]) -> planning.Planned:
    return planning.Planned(
        plan,
        planning.plan_digest(plan),
        planned.policy_digest,
        planned.policy_path,
        planned.cached,
        planned.hosts,
    )


class Sandbox:
    """A policy compiled once and a warm helper that runs commands under it.

    ``policy`` is a policy file path, or None for cvg-run's embedded default.
    A policy the kernel cannot fully enforce is refused unless
    ``allow_degraded``. Close it (or use ``with``) to stop the helper; the
    helper also stops by itself when this process exits. ``python`` is the
    interpreter that runs the helper (default: this one); it needs only
    cvg-run and cvg-kernel importable, not their third-party dependencies.
    """

    def __init__(
        self,
        policy: str | os.PathLike[str] | None = None,
        *,
        cwd: str | None = None,
        allow_degraded: bool = False,
        keep_scratch: bool = False,
        python: str | None = None,
    ) -> None:
        self.cwd = os.path.abspath(cwd) if cwd else os.getcwd()
        try:
            planned = planning.plan_for(
                None if policy is None else os.fspath(policy),
                cwd=self.cwd,
                home=os.path.expanduser("~"),
            )
        except planning.PolicyRefused as e:
            raise SandboxError(str(e)) from None
        if planned.hosts:
            # The proxy that enforces network.hosts lives in cvg-run's supervisor; the
            # warm helper starts none, and the tool would silently have no network.
            raise SandboxError(
                "network.hosts needs the per-run proxy of cvg-run; the warm Sandbox "
                "starts none (run this policy with cvg-run)"
            )
        seccomp_spec = planned.plan.get("seccomp") or {}
        supervised = list(seccomp_spec.get("supervise") or ())
        if "paths" in supervised:
            # The warm helper serves no held directory: Landlock alone then keeps the
            # denied entries out, and the directories holding them lose their own rights
            # (no listing or creating directly in them). Stricter, never wider.
            planned = _without_path_serving(planned)
            seccomp_spec = planned.plan["seccomp"]
            supervised = list(seccomp_spec.get("supervise") or ())
        if supervised == ["signal"] and (allow_degraded or policy is None):
            # Below Landlock ABI 6 cvg-run's supervisor scopes signals; the warm helper
            # cannot, so the plan runs as it did before that: signals unscoped, degraded.
            planned = _without_signal_supervision(planned)
            seccomp_spec = planned.plan["seccomp"]
        if seccomp_spec.get("supervise"):
            # The warm helper serves no seccomp listener, and without one the supervised
            # calls could only fail: say so now rather than at the tool's first listen().
            why = {
                "listen": "listen: a policy granting tcp_bind",
                "signal": "signal: signal scoping below Landlock ABI 6",
                "paths": "paths: a filesystem.deny inside a grant, whose directories the "
                "supervisor serves",
                "unix": "unix: network.unix below Landlock ABI 9, whose connects and "
                "sends the supervisor performs",
            }
            raise SandboxError(
                "this policy has calls cvg-run's supervisor decides ("
                + "; ".join(why.get(s, s) for s in seccomp_spec["supervise"])
                + "); the warm Sandbox serves none (run this policy with cvg-run)"
            )
        degraded = planned.plan.get("degraded") or []
        # As with cvg-run: the embedded default is the best this kernel offers.
        allow_degraded = allow_degraded or (policy is None and bool(degraded))
        if degraded and not allow_degraded:
            items = "; ".join(f"{d['item']}: {d['reason']}" for d in degraded)
            raise SandboxError(f"this kernel cannot enforce the policy fully: {items}")
        self.plan: Mapping[str, Any] = planned.plan
        self._planned = planned
        self._allow_degraded = allow_degraded
        self._lock = threading.Lock()
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._proc = subprocess.Popen(
                [python or sys.executable, "-m", "cvg_run.helper", str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                cwd=self.cwd,
            )
        finally:
            theirs.close()
        self._ctl = mine
        self._idle: list[_Runner] = []
        hello = {
            "plan": planned.plan,
            "plan_digest": planned.plan_digest,
            "keep_scratch": keep_scratch,
        }
        self._ctl.sendall(json.dumps(hello).encode())
        # The helper must never outlive us: closing the socket stops it, and
        # the finalizer runs even if the Sandbox is garbage-collected unclosed.
        self._finalizer = weakref.finalize(self, _close_helper, self._ctl, self._proc, self._idle)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._finalizer()

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    def start(
        self,
        argv: Sequence[str],
        *,
        timeout: float | None = None,
        cwd: str | None = None,
        nonblocking: bool = False,
    ) -> Started:
        """Hand ``argv`` to a prepared runner and return at once with its pipes.

        The caller feeds :attr:`Started.stdin`, drains :attr:`Started.stdout` and
        :attr:`Started.stderr` (``nonblocking`` makes this side's ends non-blocking, for
        an event loop; the tool's ends block as pipes normally do), then reads the record
        from :attr:`Started.reply` and passes it to :meth:`Started.result`. ``cancel()``
        ends the run early. :meth:`run` is this plus a loop that keeps everything.
        """
        if isinstance(argv, str | bytes) or not argv:
            raise ValueError("argv must be a non-empty list of strings")
        if not all(isinstance(a, str) for a in argv) or not argv[0]:
            raise ValueError("argv must be a non-empty list of strings")
        if timeout is not None and not timeout > 0:
            raise ValueError("timeout must be positive")
        if self.closed:
            raise SandboxError("the sandbox is closed")
        run_id = record.new_run_id()
        details: dict[str, Any] = {
            "argv": list(argv),
            "cwd": os.path.abspath(cwd) if cwd else self.cwd,
            "timeout": timeout,
            "run_id": run_id,
            "policy_digest": self._planned.policy_digest,
            "policy_path": self._planned.policy_path,
            "allow_degraded": self._allow_degraded,
        }
        request = json.dumps(details).encode()
        if len(request) > MAX_REQUEST:
            raise SandboxError(
                f"the request is {len(request)} bytes (argv and cwd), more than the "
                f"{MAX_REQUEST} a run may take"
            )
        # Before the tool gets its argv: the protected paths its write grants could create.
        watch = planted.watch(self.plan, details["cwd"], os.path.expanduser("~"), os.environ)
        try:
            runner, ready, pidfd, tool = self._take()
        except BaseException:
            if watch is not None:
                watch.close()
            raise
        mine: list[int] = []
        theirs: list[int] = []
        reply, their_reply = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            for _ in range(3):
                r, w = os.pipe2(os.O_CLOEXEC)
                mine.append(r)
                theirs.append(w)
            # stdin: this side writes (mine[0] is its read end, swapped below).
            in_r, in_w = mine[0], theirs[0]
            mine[0], theirs[0] = in_w, in_r
            if nonblocking:
                for fd in mine:
                    os.set_blocking(fd, False)
            if ready["error"] is None and tool is not None:
                problem = _exec_tool(tool, details, ready["path"], theirs)
                if problem is not None:
                    request = json.dumps({**details, "problem": problem}).encode()
            try:
                socket.send_fds(runner.sock, [request], [their_reply.fileno()])
            except OSError as e:
                raise SandboxError(f"the sandbox helper is gone: {e}") from None
            try:
                self._ctl.send(b"took")  # the helper makes the replacement
            except OSError:
                pass  # gone: the next run says so
        except BaseException:
            for fd in mine:
                os.close(fd)
            reply.close()
            os.close(pidfd)
            if watch is not None:
                watch.close()
            raise
        finally:
            for fd in theirs:
                os.close(fd)
            their_reply.close()
            runner.sock.close()
            if tool is not None:
                tool.close()
        return Started(self, run_id, mine[0], mine[1], mine[2], reply, pidfd, watch)

    def _take(self) -> tuple[_Runner, dict[str, Any], int, socket.socket | None]:
        """A ready runner: (it, its ready message, its pidfd, its tool's socket)."""
        for _ in range(3):  # a runner that died before it was ready is passed over
            runner = self._next_runner()
            got = runner.ready()
            if got is not None:
                return (runner, *got)
            runner.sock.close()
        raise SandboxError("the sandbox helper's runners end before they are ready")

    def _next_runner(self) -> _Runner:
        with self._lock:
            self._collect(wait=False)
            if not self._idle:
                try:
                    self._ctl.send(b"need")
                except OSError as e:
                    raise SandboxError(f"the sandbox helper is gone: {e}") from None
                while not self._idle:
                    self._collect(wait=True)
            return self._idle.pop(0)

    def _collect(self, wait: bool) -> None:
        """Take the runners the helper has sent; with ``wait``, at least one message."""
        flags = 0 if wait else socket.MSG_DONTWAIT
        while True:
            try:
                data, fds = _recv_fds(self._ctl, flags)
            except BlockingIOError:
                return
            except OSError as e:
                raise SandboxError(f"the sandbox helper is gone: {e}") from None
            if not data:
                for fd in fds:
                    os.close(fd)
                raise SandboxError("the sandbox helper is gone")
            self._idle.extend(_Runner(socket.socket(fileno=fd)) for fd in fds)
            flags = socket.MSG_DONTWAIT

    def run(
        self,
        argv: Sequence[str],
        input: bytes | None = None,
        timeout: float | None = None,
        cwd: str | None = None,
    ) -> Result:
        """Run ``argv`` (a list of strings, never a shell string) confined.

        ``timeout`` lowers the policy's wall clock for this run (status 124
        when it runs out). Returns the status, the captured stdout and
        stderr, and the run's cvg.run record.
        """
        started = self.start(argv, timeout=timeout, cwd=cwd)
        try:
            stdout, stderr = _communicate(started.stdin, started.stdout, started.stderr, input)
            data = started.reply.recv(_MAX_REPLY)
        finally:
            started.reply.close()
        rec = started.result(data)
        return Result(int(rec["exit"]["status"]), stdout, stderr, rec)


class Started:
    """A run handed to a runner: this side's pipe ends, and the socket its record
    comes back on (see :meth:`Sandbox.start`)."""

    def __init__(
        self,
        box: Sandbox,
        run_id: str,
        stdin: int,
        stdout: int,
        stderr: int,
        reply: socket.socket,
        runner: int,
        watch: planted.Watch | None = None,
    ) -> None:
        self.box = box
        self.run_id = run_id
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        self.reply = reply
        # Closed only with this object: a cancel from another thread must never
        # find the number reused by another descriptor.
        self._runner = runner
        weakref.finalize(self, os.close, runner)
        self._watch = watch
        if watch is not None:
            weakref.finalize(self, watch.close)

    def result(self, data: bytes) -> dict[str, Any]:
        """The run's cvg.run record from the runner's reply; SandboxError if none."""
        if not data:
            raise SandboxError("the sandbox helper ended the run without a result")
        answer = json.loads(data)
        if "record" not in answer:
            raise SandboxError(str(answer.get("error", "no record")))
        rec: dict[str, Any] = answer["record"]
        # The runner leaves out the plan, which this side has: it is most of the
        # record, and coding it twice per run cost more than the rest of the reply.
        rec["plan"] = dict(self.box.plan)
        watch, self._watch = self._watch, None
        if watch is not None:
            try:
                created = watch.sweep(self.run_id)  # the runner ended the tree before replying
            finally:
                watch.close()
            if created:
                ended = rec["exit"]
                rec["protected_created"] = created
                rec["exit"] = {"status": planted.EXIT_PROTECTED_CREATED,
                               "meaning": "protected_created",
                               "detail": planted.detail(created, ended["status"],
                                                        ended["meaning"])}  # fmt: skip
        return rec

    def cancel(self) -> None:
        """End the run early: SIGTERM to its runner, through a pidfd (never another
        process), which is what the runner already obeys when its helper dies: it
        forwards the signal to the tool and ends the tool's tree. Safe from any
        thread, and after the run ended."""
        try:
            signal.pidfd_send_signal(self._runner, signal.SIGTERM)
        except OSError:
            pass  # the run has ended already


def _communicate(in_w: int, out_r: int, err_r: int, data: bytes | None) -> tuple[bytes, bytes]:
    """Feed stdin and collect stdout and stderr whole. Closes all three descriptors."""
    out: list[bytes] = []
    err: list[bytes] = []
    pump(in_w, out_r, err_r, data, out.append, err.append)
    return b"".join(out), b"".join(err)


def pump(
    in_w: int,
    out_r: int,
    err_r: int,
    data: bytes | None,
    on_out: Callable[[bytes], object],
    on_err: Callable[[bytes], object],
) -> None:
    """Feed stdin and drain stdout and stderr together, so no pipe fills up, handing
    each chunk read to ``on_out`` / ``on_err`` (a caller may cap what it keeps).
    Closes all three descriptors."""
    view = memoryview(data or b"")
    with selectors.DefaultSelector() as sel:
        sel.register(out_r, selectors.EVENT_READ, on_out)
        sel.register(err_r, selectors.EVENT_READ, on_err)
        if view:
            os.set_blocking(in_w, False)
            sel.register(in_w, selectors.EVENT_WRITE, None)
        else:
            os.close(in_w)
        while sel.get_map():
            for key, _ in sel.select():
                fd = key.fd
                if key.data is None:
                    try:
                        view = view[os.write(fd, view[:65536]) :]
                    except BrokenPipeError:
                        view = view[:0]
                    if not view:
                        sel.unregister(fd)
                        os.close(fd)
                    continue
                chunk = os.read(fd, 65536)
                if chunk:
                    key.data(chunk)
                else:
                    sel.unregister(fd)
                    os.close(fd)
