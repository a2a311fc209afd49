"""One confined run through a warm ``Sandbox``, with its output capped and a way to
end it early.

``Sandbox.run`` blocks a thread and keeps everything the tool writes in memory, so
a tool that prints without end would grow this server until the wall clock stops
it. Here the same helper protocol is driven from the event loop (no thread
hand-off per call), and each stream keeps its first ``cap`` bytes and counts (and
drops) the rest: the tool is never blocked or signalled for writing too much, and
the server's memory stays bounded.

Ending a run early (the client cancelled the call or went away) means asking its
runner to stop: the runner is the helper's child that holds this run's pipes, and
SIGTERM is what it already obeys when its helper dies. It forwards the signal to
the tool and kills the tool's whole tree.

:class:`Child` is the same for the pieces run as commands (cvg-run --trace,
cvg-observe, cvg-generate).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from cvg_run import record as run_record
from cvg_run.api import Sandbox, SandboxError, pump

_MAX_REPLY = 1 << 20
_CHUNK = 65536
_END_SEARCH = 2.0


@dataclass
class Stream:
    """What the tool wrote on one stream: the first bytes, and how many there were."""

    data: bytearray = field(default_factory=bytearray)
    total: int = 0

    def take(self, chunk: bytes, cap: int) -> None:
        room = cap - len(self.data)
        if room > 0:
            self.data += chunk[:room]
        self.total += len(chunk)

    @property
    def truncated(self) -> bool:
        return self.total > len(self.data)


@dataclass
class Outcome:
    record: dict[str, Any]
    stdout: Stream
    stderr: Stream
    cancelled: bool = False

    @property
    def status(self) -> int:
        return int(self.record["exit"]["status"])


class Run:
    """One run through a warm sandbox, driven from the event loop: its pipes and its
    reply socket are waited on there, so a call costs no thread hand-off."""

    def __init__(
        self,
        box: Sandbox,
        argv: Sequence[str],
        *,
        stdin: bytes | None,
        timeout: float | None,
        cwd: str | None,
        cap: int,
    ) -> None:
        if isinstance(argv, str | bytes) or not argv:
            raise ValueError("argv must be a non-empty list of strings")
        if not all(isinstance(a, str) for a in argv) or not argv[0]:
            raise ValueError("argv must be a non-empty list of strings")
        self.box = box
        self.argv = list(argv)
        self.stdin = stdin
        self.timeout = timeout
        self.cwd = cwd
        self.cap = cap
        self.run_id = run_record.new_run_id()
        self.pipe_inode: int | None = None

    async def go(self) -> Outcome:
        """Start the run and wait for its end. If the awaiting task is cancelled, the
        run is ended too (see :meth:`end`)."""
        box = self.box
        if box.closed:
            raise SandboxError("the sandbox is closed")
        planned = box._planned  # the helper protocol needs what Sandbox.run sends
        request = {
            "argv": self.argv,
            "cwd": os.path.abspath(self.cwd) if self.cwd else box.cwd,
            "timeout": self.timeout,
            "run_id": self.run_id,
            "policy_digest": planned.policy_digest,
            "policy_path": planned.policy_path,
            "allow_degraded": box._allow_degraded,
        }
        fds: list[int] = []
        reply, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            in_r, in_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
            fds += (in_r, in_w)
            out_r, out_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
            fds += (out_r, out_w)
            err_r, err_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
            fds += (err_r, err_w)
            self.pipe_inode = os.fstat(out_r).st_ino
            # The tool's ends must block as pipes normally do.
            for fd in (in_r, out_w, err_w):
                os.set_blocking(fd, True)
            try:
                with box._lock:
                    socket.send_fds(
                        box._ctl,
                        [json.dumps(request).encode()],
                        [in_r, out_w, err_w, theirs.fileno()],
                    )
            except OSError as e:
                raise SandboxError(f"the sandbox helper is gone: {e}") from None
            finally:
                for fd in (in_r, out_w, err_w):
                    os.close(fd)
                    fds.remove(fd)
                theirs.close()
            out, err = Stream(), Stream()
            reply.setblocking(False)
            fds.remove(in_w)  # _exchange closes it, whatever happens
            try:
                data = await _exchange(in_w, self.stdin, {out_r: out, err_r: err}, reply, self.cap)
            except anyio.get_cancelled_exc_class():
                self.end()
                raise
        finally:
            for fd in fds:
                try:
                    os.close(fd)
                except OSError:
                    pass
            reply.close()
        if not data:
            raise SandboxError("the sandbox helper ended the run without a result")
        answer = json.loads(data)
        if "record" not in answer:
            raise SandboxError(str(answer.get("error", "no record")))
        return Outcome(answer["record"], out, err)

    def end(self) -> None:
        """End the run early, from a thread of its own: the request may still be on
        its way to a runner, so the runner is looked for until found (or 2 s)."""
        threading.Thread(target=self._end, daemon=True).start()

    def _end(self) -> None:
        deadline = time.monotonic() + _END_SEARCH
        while self._tell_runner() == 0 and time.monotonic() < deadline:
            time.sleep(0.02)

    def _tell_runner(self) -> int:
        """SIGTERM the helper's child that holds this run's pipe; return how many."""
        inode = self.pipe_inode
        if inode is None:
            return 0
        told = 0
        for pid in _children_of(self.box._proc.pid):
            if _holds_pipe(pid, inode):
                try:
                    os.kill(pid, signal.SIGTERM)
                    told += 1
                except ProcessLookupError:
                    pass
        return told


async def _exchange(
    in_w: int,
    data: bytes | None,
    streams: dict[int, Stream],
    reply: socket.socket,
    cap: int,
) -> bytes:
    """Feed stdin, drain every stream to its end, then take the runner's reply, all
    in one waiter on the event loop (one wake-up per burst, not one task per pipe).
    Closes ``in_w``."""
    loop = asyncio.get_running_loop()
    ready = asyncio.Event()
    view = memoryview(data or b"")
    readers = dict(streams)
    watched: list[int] = []
    writing = bool(view)
    if not writing:
        os.close(in_w)
    try:
        for fd in readers:
            loop.add_reader(fd, ready.set)
            watched.append(fd)
        if writing:
            loop.add_writer(in_w, ready.set)
        while True:
            ready.clear()
            if writing:
                try:
                    view = view[os.write(in_w, view[:_CHUNK]) :]
                except BlockingIOError:
                    pass
                except BrokenPipeError:
                    view = view[:0]
                if not view:
                    loop.remove_writer(in_w)
                    os.close(in_w)
                    writing = False
            for fd, stream in list(readers.items()):
                while True:
                    try:
                        chunk = os.read(fd, _CHUNK)
                    except BlockingIOError:
                        break
                    if not chunk:
                        loop.remove_reader(fd)
                        watched.remove(fd)
                        del readers[fd]
                        break
                    stream.take(chunk, cap)
            if not readers:
                # The runner replies once the tool's tree is gone and the pipes with it.
                try:
                    return reply.recv(_MAX_REPLY)
                except BlockingIOError:
                    if reply.fileno() not in watched:
                        loop.add_reader(reply.fileno(), ready.set)
                        watched.append(reply.fileno())
            await ready.wait()
    finally:
        for fd in watched:
            loop.remove_reader(fd)
        if writing:
            loop.remove_writer(in_w)
            os.close(in_w)


def _children_of(ppid: int) -> list[int]:
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: fields start after the last ')'.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1 and int(fields[1]) == ppid:
            out.append(int(name))
    return out


def _holds_pipe(pid: int, inode: int) -> bool:
    target = f"pipe:[{inode}]"
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                return True
        except OSError:
            continue
    return False


def _drain(
    in_w: int,
    out_r: int,
    err_r: int,
    data: bytes | None,
    out: Stream,
    err: Stream,
    cap: int,
) -> None:
    """Feed stdin and drain stdout and stderr together, so no pipe fills up; keep at
    most ``cap`` bytes of each. Closes all three descriptors."""
    pump(in_w, out_r, err_r, data, lambda c: out.take(c, cap), lambda c: err.take(c, cap))


class Child:
    """A helper command (cvg-run --trace, cvg-observe, cvg-generate) run as a plain
    subprocess, with the same capped drain and an early end: SIGTERM, which each of
    them passes on to the tool it supervises, then SIGKILL after ``grace``."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        stdin: bytes | None,
        cwd: str,
        cap: int,
        env: dict[str, str] | None = None,
        grace: float = 5.0,
    ) -> None:
        self.argv = list(argv)
        self.stdin = stdin
        self.cwd = cwd
        self.cap = cap
        self.env = env
        self.grace = grace
        self._proc: subprocess.Popen[bytes] | None = None
        self._signalled = False
        self._cancelled = threading.Event()
        self._lock = threading.Lock()

    def go(self) -> tuple[int, Stream, Stream]:
        in_r, in_w = os.pipe2(os.O_CLOEXEC)
        out_r, out_w = os.pipe2(os.O_CLOEXEC)
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        out, err = Stream(), Stream()
        try:
            with self._lock:
                self._proc = subprocess.Popen(
                    self.argv, stdin=in_r, stdout=out_w, stderr=err_w, cwd=self.cwd, env=self.env
                )
        except OSError:
            for fd in (in_r, in_w, out_r, out_w, err_r, err_w):
                os.close(fd)
            raise
        for fd in (in_r, out_w, err_w):
            os.close(fd)
        if self._cancelled.is_set():
            self.cancel()
        _drain(in_w, out_r, err_r, self.stdin, out, err, self.cap)
        return self._proc.wait(), out, err

    def cancel(self) -> None:
        """Tell the command to stop (once; asking again changes nothing)."""
        self._cancelled.set()
        with self._lock:
            proc = self._proc
            if proc is None or proc.poll() is not None or self._signalled:
                return
            self._signalled = True
        proc.send_signal(signal.SIGTERM)
        threading.Thread(target=self._reap_or_kill, args=(proc,), daemon=True).start()

    def _reap_or_kill(self, proc: subprocess.Popen[bytes]) -> None:
        try:
            proc.wait(self.grace)
        except subprocess.TimeoutExpired:
            proc.kill()
