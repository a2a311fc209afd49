"""Run probe bodies in throwaway forked children and collect what they report.

Every probe confines or damages the process it runs in (a Landlock domain, a
seccomp filter, a dropped capability, a lowered rlimit can never be undone), so
each runs in a child of its own. All children are started at once and read in
parallel, so the probe costs about as much as its slowest child.

The protocol is one JSON object per line on a pipe. A child may send several
(a later key wins), which lets a child report and *then* do something that
kills it, like the foreign-architecture trap. Each line also carries the
modules imported since the fork (``_imported``), which must stay empty: a child
that imports may read files its own Landlock domain denies, or allocate after a
seccomp filter is in place. A child that does not finish within the deadline is
killed, with everything it started, and reported as timed out.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cvg_kernel.process import descendants, pidfd_open, pidfd_send_signal

Send = Callable[[Mapping[str, Any]], None]
"""Handed to a child body: sends one report line to the prober right away."""

Body = Callable[[Send], Mapping[str, Any]]
"""A probe body: runs in the child, returns its final report (JSON-able)."""

EXIT_BODY_FAILED = 70


@dataclass
class Outcome:
    """How one child ended and what it said."""

    report: dict[str, Any] = field(default_factory=dict)
    status: int | None = None  # waitpid status; None if it had to be killed
    timed_out: bool = False

    @property
    def error(self) -> str | None:
        """The exception that ended the child's body, if any."""
        err = self.report.get("_error")
        return str(err) if err is not None else None

    @property
    def imported(self) -> list[str]:
        """Modules the child imported after fork (must be empty)."""
        return list(self.report.get("_imported", []))

    @property
    def signal(self) -> int | None:
        if self.status is not None and os.WIFSIGNALED(self.status):
            return os.WTERMSIG(self.status)
        return None

    @property
    def exitcode(self) -> int | None:
        if self.status is not None and os.WIFEXITED(self.status):
            return os.WEXITSTATUS(self.status)
        return None

    def ending(self) -> str:
        """How the child ended, in words: "exited 0", "killed by SIGSYS"."""
        if self.timed_out:
            return "timed out"
        sig = self.signal
        if sig is not None:
            return f"killed by {signal_name(sig)}"
        return f"exited {self.exitcode}"

    def failure(self) -> str | None:
        """Why nothing in the report can be trusted, or None when it can."""
        if self.timed_out:
            return "timed out"
        if self.error is not None:
            return f"the probe child failed: {self.error}"
        if not self.report or set(self.report) <= {"_imported"}:
            return f"the probe child sent no report ({self.ending()})"
        if self.imported:
            return (
                "the probe child imported after fork, so its result is not trusted: "
                + ", ".join(self.imported)
            )
        return None


def signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data) :]


def _child_main(body: Body, wfd: int, before: frozenset[str]) -> None:
    """The child's whole life: run ``body``, report, and leave by ``os._exit``."""
    code = 0

    def send(payload: Mapping[str, Any]) -> None:
        line = dict(payload)
        line["_imported"] = [m for m in sys.modules if m not in before]
        _write_all(wfd, json.dumps(line).encode() + b"\n")

    try:
        send(body(send))
    except BaseException as e:  # noqa: BLE001 - a child never returns into the caller's code
        code = EXIT_BODY_FAILED
        try:
            send({"_error": f"{type(e).__name__}: {e}"})
        except BaseException:  # noqa: BLE001 - a forked child never returns into the caller's code
            pass
    finally:
        os._exit(code)


def _parse(data: bytes) -> dict[str, Any]:
    report: dict[str, Any] = {}
    for line in data.splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            report.setdefault("_error", "the probe child sent a malformed report")
            continue
        if isinstance(item, dict):
            report.update(item)
    return report


def kill_tree(pid: int) -> None:
    """SIGKILL ``pid`` and every process below it (descendants first, via pidfds)."""
    for victim in [*reversed(descendants(pid)), pid]:
        try:
            fd = pidfd_open(victim)
        except OSError:
            continue  # already gone
        try:
            pidfd_send_signal(fd, signal.SIGKILL)
        except OSError:
            pass
        finally:
            os.close(fd)


@dataclass
class _Running:
    name: str
    pid: int
    rfd: int | None
    data: bytearray = field(default_factory=bytearray)
    status: int | None = None


def run(jobs: Sequence[tuple[str, Body]], timeout: float) -> dict[str, Outcome]:
    """Fork one child per job, all at once; collect each child's outcome.

    Never leaves a child behind: one that outlives ``timeout`` seconds is
    killed with its descendants and reaped, and so is every child already
    started if forking a later one fails.
    """
    before = frozenset(sys.modules)
    running: list[_Running] = []
    try:
        for name, body in jobs:
            rfd, wfd = os.pipe()
            try:
                pid = os.fork()
            except BaseException:
                os.close(rfd)
                os.close(wfd)
                raise
            if pid == 0:  # pragma: no cover - the child never comes back
                os.close(rfd)
                _child_main(body, wfd, before)
            os.close(wfd)
            running.append(_Running(name, pid, rfd))
        _collect(running, time.monotonic() + timeout)
    finally:
        timed_out = _reap(running)
    return {r.name: Outcome(_parse(bytes(r.data)), r.status, r.name in timed_out) for r in running}


def _collect(running: list[_Running], deadline: float) -> None:
    poller = select.poll()
    by_fd: dict[int, _Running] = {}
    for r in running:
        assert r.rfd is not None
        poller.register(r.rfd, select.POLLIN)
        by_fd[r.rfd] = r
    while by_fd:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        for fd, _ in poller.poll(max(1, int(left * 1000))):
            chunk = os.read(fd, 65536)
            if chunk:
                by_fd[fd].data += chunk
                continue
            poller.unregister(fd)
            os.close(fd)
            by_fd.pop(fd).rfd = None


def _reap(running: list[_Running]) -> set[str]:
    """Wait for the children that finished; kill and wait for the rest."""
    timed_out: set[str] = set()
    for r in running:
        if r.rfd is None:
            # EOF: the child (and anything that held its pipe) has gone. It exits right
            # after its last write, so this wait is short; a child that somehow lingers
            # is given a moment and then killed like one that timed out.
            r.status = _wait(r.pid, 1.0)
            if r.status is not None:
                continue
        else:
            os.close(r.rfd)
            r.rfd = None
            pid, status = os.waitpid(r.pid, os.WNOHANG)
            if pid:
                r.status = status
                continue
        timed_out.add(r.name)
        kill_tree(r.pid)
        os.waitpid(r.pid, 0)
    return timed_out


def _wait(pid: int, grace: float) -> int | None:
    end = time.monotonic() + grace
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if time.monotonic() >= end:
            return None
        time.sleep(0.001)
