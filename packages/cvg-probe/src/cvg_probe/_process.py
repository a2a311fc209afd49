"""The process-control probes: no_new_privs, capability dropping and close_range
in one child; the subreaper and pidfds in another."""

from __future__ import annotations

import errno
import os
import signal
from collections.abc import Mapping
from typing import Any

from cvg_kernel import caps as kcaps
from cvg_kernel.process import (
    PR_GET_NO_NEW_PRIVS,
    PR_SET_CHILD_SUBREAPER,
    PR_SET_NO_NEW_PRIVS,
    parent_of,
    pidfd_open,
    pidfd_send_signal,
)
from cvg_schema import Feature

from . import _fork
from ._fork import Outcome, Send
from ._group import Group, Spec, check, outcome_of
from ._libc import get_subreaper, prctl, syscall

CLOSE_RANGE_CLOEXEC = 1 << 2


NNP = Spec(
    "no_new_privs",
    "prctl(PR_SET_NO_NEW_PRIVS) in a child: reads back 1 from prctl and /proc/self/status, "
    "and clearing it is refused (EINVAL)",
)
CAPS = Spec(
    "caps.drop",
    "CapabilityDrop().apply() in a child: CapEff, CapPrm, CapInh and CapAmb read 0 in "
    "/proc/self/status",
)
CLOSE_RANGE = Spec(
    "close_range",
    "close_range(CLOSE_RANGE_CLOEXEC) marked three descriptors close-on-exec, then "
    "close_range() closed them (EBADF)",
)


class ProcessGroup(Group):
    name = "process"
    specs = (NNP, CAPS, CLOSE_RANGE)

    def __init__(self, nr: Mapping[str, int]) -> None:
        self.nr = nr
        self.drop = kcaps.CapabilityDrop()
        kcaps.current()  # warm up what reading /proc/self/status needs, before fork
        self.cap_setgid = kcaps.BY_NAME["CAP_SETGID"]
        self.cap_setpcap = kcaps.CAP_SETPCAP

    def _caps(self) -> dict[str, Any]:
        before = kcaps.current()
        out: dict[str, Any] = {"before": before}
        root_like = bool(before.get("CapEff", 0) >> self.cap_setgid & 1)
        if root_like:
            groups = os.getgroups()
            out["setgroups, before"] = outcome_of(lambda: os.setgroups(groups))
        try:
            self.drop.apply()
        except OSError as e:
            out["apply"] = f"{type(e).__name__}: {e}"
            return out
        out["apply"] = "OK"
        out["after"] = kcaps.current()
        if root_like:
            out["setgroups"] = outcome_of(lambda: os.setgroups(groups))
        return out

    def _nnp(self) -> dict[str, Any]:
        out: dict[str, Any] = {"before": prctl(PR_GET_NO_NEW_PRIVS)}
        prctl(PR_SET_NO_NEW_PRIVS, 1)
        out["prctl"] = prctl(PR_GET_NO_NEW_PRIVS)
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"NoNewPrivs:"):
                    out["status"] = int(line.split()[1])
        out["clear"] = outcome_of(lambda: prctl(PR_SET_NO_NEW_PRIVS, 0))
        return out

    def _close_range(self, fd: int) -> dict[str, Any]:
        nr = self.nr["close_range"]
        top = max(int(n) for n in os.listdir("/proc/self/fd"))
        fds = [top + 1, top + 2, top + 3]
        for n in fds:
            os.dup2(fd, n, inheritable=True)
        out: dict[str, Any] = {}
        out["cloexec"] = outcome_of(lambda: syscall(nr, fds[0], fds[-1], CLOSE_RANGE_CLOEXEC))
        out["marked"] = all(not os.get_inheritable(n) for n in fds)
        out["close"] = outcome_of(lambda: syscall(nr, fds[0], fds[-1], 0))
        out["closed"] = [outcome_of(lambda n=n: os.fstat(n)) for n in fds]  # type: ignore[misc]
        return out

    def body(self, send: Send) -> Mapping[str, Any]:
        _, w = os.pipe()
        return {
            "caps": self._caps(),
            "nnp": self._nnp(),
            "close_range": self._close_range(w),
        }

    def interpret(self, outcome: Outcome) -> list[Feature]:
        got = outcome.report
        return [self._nnp_feature(got["nnp"]), self._caps_feature(got["caps"]),
                self._close_range_feature(got["close_range"])]  # fmt: skip

    @staticmethod
    def _nnp_feature(got: Mapping[str, Any]) -> Feature:
        if got.get("prctl") != 1 or got.get("status") != 1:
            return NNP.failed(
                f"after PR_SET_NO_NEW_PRIVS: prctl reads {got.get('prctl')}, "
                f"/proc/self/status reads {got.get('status')}"
            )
        if got.get("clear") != "EINVAL":
            return NNP.failed(f"clearing no_new_privs gave {got.get('clear')}, not EINVAL")
        return NNP.proven()

    def _caps_feature(self, got: Mapping[str, Any]) -> Feature:
        if got.get("apply") != "OK":
            return CAPS.failed(f"CapabilityDrop.apply: {got.get('apply')}")
        before, after = got["before"], got["after"]
        left = {
            k: v for k, v in after.items() if k in ("CapEff", "CapPrm", "CapInh", "CapAmb") and v
        }
        if left:
            return CAPS.failed(
                "still held after the drop: " + ", ".join(f"{k}={v:#x}" for k, v in left.items())
            )
        how = CAPS.how
        if before.get("CapEff"):
            if after.get("CapBnd"):
                return CAPS.failed(f"bounding set not emptied: CapBnd={after['CapBnd']:#x}")
            if got.get("setgroups, before") != "OK" or got.get("setgroups") != "EPERM":
                return CAPS.failed(
                    f"setgroups() gave {got.get('setgroups, before')} before the drop and "
                    f"{got.get('setgroups')} after, expected OK then EPERM"
                )
            how = (
                f"CapabilityDrop().apply() in a child holding CapEff={before['CapEff']:#x}: "
                "CapEff, CapPrm, CapInh, CapAmb and CapBnd read 0, and setgroups() went from "
                "OK to EPERM"
            )
        else:
            how += " (this user held no capabilities to begin with)"
        return CAPS.proven(how)

    @staticmethod
    def _close_range_feature(got: Mapping[str, Any]) -> Feature:
        if got.get("cloexec") != "OK" or not got.get("marked"):
            return CLOSE_RANGE.failed(
                f"close_range(CLOSE_RANGE_CLOEXEC) gave {got.get('cloexec')}, "
                f"descriptors marked: {got.get('marked')}"
            )
        if got.get("close") != "OK" or got.get("closed") != ["EBADF"] * 3:
            return CLOSE_RANGE.failed(
                f"close_range() gave {got.get('close')}; fstat afterwards: {got.get('closed')}"
            )
        return CLOSE_RANGE.proven()


SUBREAPER = Spec(
    "subreaper",
    "a child set PR_SET_CHILD_SUBREAPER, double-forked a setsid() daemon and saw it "
    "re-parented to itself",
)
PIDFD = Spec(
    "pidfd",
    "pidfd_open() on that daemon, pidfd_send_signal(SIGKILL): it was reaped killed by SIGKILL",
)


class ReaperGroup(Group):
    name = "reaper"
    specs = (SUBREAPER, PIDFD)

    def body(self, send: Send) -> Mapping[str, Any]:
        out: dict[str, Any] = {}
        prctl(PR_SET_CHILD_SUBREAPER, 1)
        out["subreaper"] = get_subreaper()
        ready_r, ready_w = os.pipe()
        # The daemon waits on this pipe: if this child dies first, EOF frees it.
        hold_r, hold_w = os.pipe()
        middle = os.fork()
        if middle == 0:  # pragma: no cover - runs in the middle process
            try:
                if os.fork() == 0:
                    try:
                        os.setsid()
                        os.close(hold_w)
                        os.write(ready_w, str(os.getpid()).encode())
                        os.close(ready_w)
                        os.read(hold_r, 1)
                    finally:
                        os._exit(0)
            finally:
                os._exit(0)
        os.close(ready_w)
        os.close(hold_r)
        try:
            os.waitpid(middle, 0)
            daemon = int(os.read(ready_r, 32) or b"0")
            os.close(ready_r)
            if not daemon:
                out["daemon"] = "never reported its pid"
                return out
            out["daemon sid"] = "own session" if os.getsid(daemon) == daemon else "same session"
            out["daemon parent"] = (
                "this child" if parent_of(daemon) == os.getpid() else (f"pid {parent_of(daemon)}")
            )
            try:
                fd = pidfd_open(daemon)
            except OSError as e:
                out["pidfd_open"] = errno.errorcode.get(e.errno or 0, str(e))
                return out
            out["pidfd_open"] = "OK"
            try:
                out["pidfd_send_signal"] = outcome_of(lambda: pidfd_send_signal(fd, signal.SIGKILL))
            finally:
                os.close(fd)
            if out["daemon parent"] == "this child":
                _, status = os.waitpid(daemon, 0)
                out["daemon ended"] = (
                    _fork.signal_name(os.WTERMSIG(status))
                    if os.WIFSIGNALED(status)
                    else f"exit {os.WEXITSTATUS(status)}"
                )
        finally:
            os.close(hold_w)
        return out

    def interpret(self, outcome: Outcome) -> list[Feature]:
        got = outcome.report
        sub = check(SUBREAPER, got, {
            "daemon sid": "own session", "daemon parent": "this child",
        })  # fmt: skip
        if got.get("subreaper") != 1:
            sub = SUBREAPER.failed(f"PR_GET_CHILD_SUBREAPER reads {got.get('subreaper')}")
        pid = check(PIDFD, got, {
            "pidfd_open": "OK", "pidfd_send_signal": "OK", "daemon ended": "SIGKILL",
        })  # fmt: skip
        return [sub, pid]
