"""The per-machine results file every benchmark writes one key of, the machine and
versions each entry names, and the percentile every summary uses."""

from __future__ import annotations

import fcntl
import json
import math
import os
import platform
import socket
import statistics
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

from cvg_schema import write_atomic

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.split(":", 1)[0].strip() in ("model name", "Hardware", "cpu model"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def percentile(samples: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def machine() -> dict[str, Any]:
    """What every entry says about where it was measured."""
    return {
        "host": socket.gethostname(),
        "kernel": platform.release(),
        "arch": platform.machine(),
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }


def versions(dists: Iterable[str]) -> dict[str, str]:
    """The installed version of each distribution, or "not installed"."""
    found = {}
    for dist in dists:
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            found[dist] = "not installed"
    return found


def default_path() -> Path:
    return RESULTS_DIR / f"{socket.gethostname()}.json"


def record(path: Path, key: str, entry: dict[str, Any], *, who: str) -> None:
    """Set ``entry`` under ``key`` in ``path``, keeping every other key as it is."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # Lock the directory itself: it serialises the benchmarks' read-modify-write
    # without leaving a lock file behind.
    lock = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            data = json.loads(path.read_text())
            if not isinstance(data, dict):
                raise ValueError("not an object")
        except FileNotFoundError:
            data = {}
        except ValueError as e:
            raise SystemExit(f"{who}: {path} is not a JSON object ({e}); not overwriting it")
        data[key] = entry
        write_atomic(path, (json.dumps(data, indent=2, sort_keys=True) + "\n").encode())
    finally:
        os.close(lock)  # releases the lock


def summary_line(name: str, s: dict[str, Any], name_width: int, number: str) -> str:
    """One measurement's median, p95, count, min and max as the benchmarks print them;
    ``number`` is the format of the median and p95 (e.g. "8.2f")."""
    short = number[number.index(".") :]
    return (
        f"{name:{name_width}} median {s['median_ms']:{number}} ms   "
        f"p95 {s['p95_ms']:{number}} ms   (n={s['runs']}, "
        f"min {s['min_ms']:{short}}, max {s['max_ms']:{short}})"
    )


def summary_seconds(samples: list[float], digits: int) -> dict[str, Any]:
    """Count, median, p95, min and max of ``samples`` (seconds), in milliseconds."""
    ms = [x * 1000 for x in samples]
    return {
        "runs": len(ms),
        "median_ms": round(statistics.median(ms), digits),
        "p95_ms": round(percentile(ms, 95), digits),
        "min_ms": round(min(ms), digits),
        "max_ms": round(max(ms), digits),
    }


def bound(
    measure: str, value: float, limit: float, description: str | None = None
) -> dict[str, Any]:
    """A target that ``value`` (what ``measure`` says) is at most ``limit``, and whether
    it was met: the shape every entry's ``targets`` share."""
    target: dict[str, Any] = {} if description is None else {"description": description}
    target.update({"measure": measure, "value": value, "limit": limit, "met": value <= limit})
    return target
