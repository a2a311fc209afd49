"""The strace probe: strace traces ``true`` while the probe children run."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field

from cvg_schema import Feature, StraceInfo

from ._group import Spec

STRACE = Spec(
    "strace",
    "strace -f -qq -e trace=openat -o FILE true: exited 0 and FILE holds an openat() line",
)


@dataclass
class StraceRun:
    path: str | None
    trace_file: str = ""
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    error: str | None = None

    @classmethod
    def start(cls, base: str) -> StraceRun:
        path = shutil.which("strace")
        run = cls(path)
        if path is None:
            run.error = "strace is not installed (not found on PATH)"
            return run
        true = next((p for p in ("/usr/bin/true", "/bin/true") if os.access(p, os.X_OK)), None)
        true = true or shutil.which("true")
        if true is None:
            run.error = "no `true` executable to trace"
            return run
        run.trace_file = os.path.join(base, "strace.out")
        try:
            run.procs["version"] = subprocess.Popen(
                [path, "-V"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
            run.procs["trace"] = subprocess.Popen(
                [path, "-f", "-qq", "-e", "trace=openat", "-o", run.trace_file, true],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
        except OSError as e:
            run.error = f"cannot run {path}: {e.strerror or e}"
        return run

    def abort(self) -> None:
        """Kill and reap whatever is still running (when the run failed midway)."""
        for proc in self.procs.values():
            if proc.returncode is None:
                with contextlib.suppress(OSError):
                    proc.kill()
                proc.communicate()

    def finish(self, deadline: float) -> tuple[Feature, StraceInfo | None]:
        version: str | None = None
        results: dict[str, tuple[int | None, bytes]] = {}
        for name, proc in self.procs.items():
            try:
                out, err = proc.communicate(timeout=max(0.0, deadline - time.monotonic()))
                results[name] = (proc.returncode, out if name == "version" else err)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
                results[name] = (None, b"")
        if "version" in results:
            m = re.search(rb"version\s+(\S+)", results["version"][1])
            version = m.group(1).decode(errors="replace")[:100] if m else None
        info = StraceInfo(path=self.path, version=version) if self.path else None
        if self.error is not None:
            return STRACE.failed(self.error), info
        code, err = results["trace"]
        if code is None:
            return STRACE.failed("timed out"), info
        if code != 0:
            first = err.decode(errors="replace").strip().splitlines()
            why = first[0] if first else "no message"
            return STRACE.failed(f"strace exited {code}: {why}"[:500]), info
        try:
            with open(self.trace_file, "rb") as f:
                traced = f.read()
        except OSError as e:
            return STRACE.failed(f"no trace written: {e.strerror}"), info
        if b"openat(" not in traced:
            return STRACE.failed("the trace holds no openat() line"), info
        how = f"{self.path} -f -qq -e trace=openat -o FILE true: exited 0, FILE holds openat()"
        return STRACE.proven(how), info
