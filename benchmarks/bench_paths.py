"""Benchmark the cost of one open under a deny inside a grant, against bare.

    uv run python benchmarks/bench_paths.py [--runs N] [--output PATH]

A tool (the system python3) times N open+close pairs of each of two files, in the
process, with ``time.perf_counter_ns``: ``proj/a.txt``, directly in a held directory
(the supervisor performs the open and places the descriptor, cvg_kernel.paths_guard),
and ``proj/sub/f``, beneath a sibling that keeps its Landlock rule (one round trip to
the supervisor, then the tool's own call). It runs bare and under ``cvg-run`` with
``write: [${CWD}/proj]`` and ``deny: [${CWD}/proj/.env]``. Median and p95 per open, in
microseconds, go under the key ``"paths"`` of ``benchmarks/results/<hostname>.json``,
with the target: a served open at most 100 us (p50).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import results_file
import timing  # benchmarks/ is on sys.path when run as a script

KEY = "paths"
PY = "/usr/bin/python3"
TARGET_US = 100.0

TOOL = r"""
import json, os, sys, time
runs, paths = int(sys.argv[1]), sys.argv[2:]
out = {}
for path in paths:
    samples = []
    for i in range(runs + 50):
        t = time.perf_counter_ns()
        os.close(os.open(path, os.O_RDONLY))
        if i >= 50:
            samples.append(time.perf_counter_ns() - t)
    out[path] = samples
print(json.dumps(out))
"""

POLICY = {
    "version": 1,
    "filesystem": {
        "read": ["/usr", "/etc", "/lib", "/lib64", "/bin"],
        "execute": ["/usr", "/lib", "/lib64", "/bin"],
        "write": ["${CWD}/proj", "/dev/null"],
        "deny": ["${CWD}/proj/.env"],
    },
}


def summary(ns: list[int]) -> dict[str, Any]:
    us = [x / 1000 for x in ns]
    return {
        "runs": len(us),
        "median_us": round(results_file.percentile(us, 50), 2),
        "p95_us": round(results_file.percentile(us, 95), 2),
    }


def main() -> int:
    args = timing.runs_args(__doc__, runs=2000, what="opens of each file")
    os.environ.pop("CVG_LANDLOCK_ABI_MAX", None)
    cvg_run = str(Path(sys.executable).parent / "cvg-run")
    with tempfile.TemporaryDirectory(prefix="cvg-bench-paths-") as work:
        root = Path(work)
        proj = root / "proj"
        (proj / "sub").mkdir(parents=True)
        (proj / "a.txt").write_text("a")
        (proj / "sub" / "f").write_text("f")
        (proj / ".env").write_text("SECRET")
        (root / "policy.json").write_text(json.dumps(POLICY))
        held, ruled = str(proj / "a.txt"), str(proj / "sub" / "f")
        argv = [PY, "-c", TOOL, str(args.runs), held, ruled]
        env = {**os.environ, "XDG_CACHE_HOME": str(root / "cache"),
               "XDG_STATE_HOME": str(root / "state")}  # fmt: skip
        bare = json.loads(subprocess.run(argv, capture_output=True, check=True, cwd=root).stdout)
        confined_argv = [cvg_run, "-p", str(root / "policy.json"), "--", *argv]
        done = subprocess.run(confined_argv, capture_output=True, check=True, cwd=root, env=env)
        confined = json.loads(done.stdout)
    served = summary(confined[held])
    entry = {
        **results_file.machine(),
        "euid": os.geteuid(),
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "bare_open": summary(bare[held]),
        "served_open": served,
        "ruled_open": summary(confined[ruled]),
        "targets": {
            "served_open_at_most_100us": results_file.bound(
                "served_open.median_us",
                served["median_us"],
                TARGET_US,
                "one open performed by the supervisor, p50",
            )
        },
    }
    path = args.output or results_file.default_path()
    results_file.record(path, KEY, entry, who="bench_paths")
    for name in ("bare_open", "served_open", "ruled_open"):
        s = entry[name]
        print(f"{name:12} median {s['median_us']:8.1f} us   p95 {s['p95_us']:8.1f} us")
    print(f"written to {path} under {KEY!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
