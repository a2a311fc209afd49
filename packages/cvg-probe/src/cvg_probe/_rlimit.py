"""The rlimit probes: each limit cvg sets is set in a child and, where that is cheap
and safe, driven to make the call that crosses it fail."""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import resource
import signal
from collections.abc import Mapping
from typing import Any

from cvg_schema import Feature

from ._fork import Outcome, Send
from ._group import Group, Spec, check, outcome_of

NPROC_PROBE_UID = 65534  # root is exempt from RLIMIT_NPROC; the probe child becomes nobody


RLIMIT_SPECS = {
    "cpu": Spec(
        "rlimit.cpu",
        "RLIMIT_CPU set in a child and read back with getrlimit; not driven to SIGXCPU, "
        "which would burn a CPU second",
    ),
    "as": Spec(
        "rlimit.as",
        "RLIMIT_AS set 16 MiB above the child's size: a 64 MiB mmap that worked before "
        "then failed ENOMEM",
    ),
    "data": Spec(
        "rlimit.data",
        "RLIMIT_DATA set 16 MiB above the child's private writable memory: a 64 MiB "
        "private writable mmap that worked before then failed ENOMEM",
    ),
    "fsize": Spec(
        "rlimit.fsize",
        "RLIMIT_FSIZE 4096 with SIGXFSZ ignored: an 8192-byte write stopped at 4096, "
        "the next write got EFBIG",
    ),
    "nofile": Spec(
        "rlimit.nofile",
        "RLIMIT_NOFILE set just above the highest open descriptor: dup() then failed EMFILE "
        "at the limit",
    ),
    "nproc": Spec(
        "rlimit.nproc",
        "RLIMIT_NPROC 0 in a child of a non-root user: fork() failed EAGAIN",
    ),
    "core": Spec(
        "rlimit.core",
        "RLIMIT_CORE 0 set in a child and read back with getrlimit (no crash is provoked to "
        "watch for a core file)",
    ),
}
_AS_HEADROOM = 16 << 20
_AS_PROBE = 64 << 20
_FSIZE = 4096


class RlimitGroup(Group):
    name = "rlimit"
    specs = tuple(RLIMIT_SPECS.values())

    def __init__(self, base: str) -> None:
        self.fsize_fd = os.open(
            os.path.join(base, "fsize"), os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600
        )

    @staticmethod
    def _soft(res: int, value: int) -> int:
        """Set the soft limit (never above the hard one); return the old soft limit."""
        soft, hard = resource.getrlimit(res)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(res, (value, hard))
        return soft

    def _readback(self, res: int, value: int) -> dict[str, Any]:
        old = self._soft(res, value)
        want = resource.getrlimit(res)
        got = {"set": want[0], "read": resource.getrlimit(res)[0], "wanted": value}
        resource.setrlimit(res, (old, want[1]))
        return got

    def _memory(self, res: int, field: bytes) -> dict[str, Any]:
        """Set ``res`` 16 MiB above the /proc/self/status ``field`` it counts, then map."""
        size = 0
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(field):
                    size = int(line.split()[1]) * 1024

        def private() -> None:  # private and writable: counted by both limits
            mmap.mmap(-1, _AS_PROBE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS).close()

        out: dict[str, Any] = {"before": outcome_of(private)}
        old = self._soft(res, size + _AS_HEADROOM)
        try:
            out["after"] = outcome_of(private)
        finally:
            resource.setrlimit(res, (old, resource.getrlimit(res)[1]))
        return out

    def _fsize(self) -> dict[str, Any]:
        with contextlib.suppress(ValueError, OSError):
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        old = self._soft(resource.RLIMIT_FSIZE, _FSIZE)
        try:
            first = os.pwrite(self.fsize_fd, b"x" * (2 * _FSIZE), 0)
            more = outcome_of(lambda: os.pwrite(self.fsize_fd, b"x", _FSIZE))
        finally:
            resource.setrlimit(
                resource.RLIMIT_FSIZE, (old, resource.getrlimit(resource.RLIMIT_FSIZE)[1])
            )
        return {"first": first, "next": more}

    def _nofile(self) -> dict[str, Any]:
        top = max(int(n) for n in os.listdir("/proc/self/fd"))
        limit = top + 4
        old = self._soft(resource.RLIMIT_NOFILE, limit)
        opened: list[int] = []
        result = "OK"
        try:
            for _ in range(limit + 1):
                try:
                    opened.append(os.dup(self.fsize_fd))
                except OSError as e:
                    result = errno.errorcode.get(e.errno or 0, str(e.errno))
                    break
        finally:
            for n in opened:
                os.close(n)
            resource.setrlimit(
                resource.RLIMIT_NOFILE, (old, resource.getrlimit(resource.RLIMIT_NOFILE)[1])
            )
        return {"limit": limit, "result": result, "highest": max(opened, default=-1)}

    def _nproc(self) -> dict[str, Any]:
        out: dict[str, Any] = {"uid": os.getuid()}
        if os.getuid() == 0 or os.geteuid() == 0:
            # uid 0 is never held to RLIMIT_NPROC (kernel/fork.c exempts INIT_USER).
            dropped = outcome_of(
                lambda: os.setresuid(NPROC_PROBE_UID, NPROC_PROBE_UID, NPROC_PROBE_UID)
            )
            out["setuid"] = dropped
            if dropped != "OK":
                out["read"] = self._readback(resource.RLIMIT_NPROC, 0)
                return out
        self._soft(resource.RLIMIT_NPROC, 0)
        try:
            pid = os.fork()
        except OSError as e:
            out["fork"] = errno.errorcode.get(e.errno or 0, str(e.errno))
            return out
        if pid == 0:  # pragma: no cover - the limit did not bite; leave at once
            os._exit(0)
        os.waitpid(pid, 0)
        out["fork"] = "OK"
        return out

    def body(self, send: Send) -> Mapping[str, Any]:
        return {
            "cpu": self._readback(resource.RLIMIT_CPU, 30),
            "core": self._readback(resource.RLIMIT_CORE, 0),
            "as": self._memory(resource.RLIMIT_AS, b"VmSize:"),
            "data": self._memory(resource.RLIMIT_DATA, b"VmData:"),
            "fsize": self._fsize(),
            "nofile": self._nofile(),
            "nproc": self._nproc(),  # last: it may give up root for good
        }

    def interpret(self, outcome: Outcome) -> list[Feature]:
        got = outcome.report
        out = []
        for key in ("cpu", "core"):
            spec, r = RLIMIT_SPECS[key], got[key]
            if r["set"] == r["read"] == r["wanted"]:
                out.append(spec.proven(f"{spec.how}: set {r['set']}, read {r['read']}"))
            else:
                out.append(spec.failed(f"set {r['wanted']}, read back {r['read']}"))
        for key in ("as", "data"):
            out.append(check(RLIMIT_SPECS[key], got[key], {"before": "OK", "after": "ENOMEM"}))
        fs = got["fsize"]
        spec = RLIMIT_SPECS["fsize"]
        if fs["first"] == _FSIZE and fs["next"] == "EFBIG":
            out.append(spec.proven())
        else:
            out.append(spec.failed(f"first write {fs['first']} bytes, next write {fs['next']}"))
        nf = got["nofile"]
        spec = RLIMIT_SPECS["nofile"]
        if nf["result"] == "EMFILE" and nf["highest"] < nf["limit"]:
            out.append(spec.proven(f"{spec.how} {nf['limit']}"))
        else:
            out.append(
                spec.failed(
                    f"limit {nf['limit']}: dup() ended with {nf['result']}, highest fd "
                    f"{nf['highest']}"
                )
            )
        npr = got["nproc"]
        spec = RLIMIT_SPECS["nproc"]
        if "read" in npr:
            r = npr["read"]
            how = (
                f"RLIMIT_NPROC set and read back only: uid 0 is exempt from it and the child "
                f"could not become uid {NPROC_PROBE_UID} ({npr['setuid']})"
            )
            if r["set"] == r["read"] == r["wanted"]:
                out.append(spec.proven(how))
            else:
                out.append(spec.failed(f"set {r['wanted']}, read back {r['read']}", how))
        elif npr.get("fork") == "EAGAIN":
            how = spec.how
            if "setuid" in npr:
                how = (
                    f"RLIMIT_NPROC 0 in a child that left uid 0 (exempt) for uid "
                    f"{NPROC_PROBE_UID}: fork() failed EAGAIN"
                )
            out.append(spec.proven(how))
        else:
            out.append(spec.failed(f"fork() under RLIMIT_NPROC 0 gave {npr.get('fork')}"))
        return out

    def close(self) -> None:
        os.close(self.fsize_fd)
