"""Benchmark what an observation costs on its own: ``cvg-observe -o F -- true``.

    uv run python benchmarks/bench_observe_fixed_cost.py [--runs N] [--warmup N] [--output PATH]

Three configurations, each a fresh process timed from the caller:

  observe  cvg-observe -o F -- true (the console script next to sys.executable): the
           learning sandbox, strace on every call, the observation written to F;
  strace   strace -f -o /dev/null -- true: the floor of tracing anything;
  python   python3 -c pass (bench_run's system interpreter): the floor of any Python
           program, which cvg-observe is.

The rounds are interleaved (each runs every configuration once, the order rotating
from round to round), so load that comes and goes on a shared machine hits them alike.
Every run has the same working directory, a fresh temporary directory, and a private
XDG_CACHE_HOME under /var/tmp (the learning plan's cache, warmed by the unmeasured
rounds, is never used beneath /tmp, where the learning sandbox writes).
The sources are compiled to bytecode first, as an installed package's are.

The target, from the issue: the observe median at most 150 ms. Results go under the key
``"observe_fixed_cost"`` of ``benchmarks/results/<hostname>.json`` (only that key is
touched), with the load average when the runs started and ended.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import results_file  # benchmarks/ is on sys.path when run as a script
import timing
from bench_run import PYTHON, compile_sources, loadavg, results_ms, timing_fields
from executables import beside_python

KEY = "observe_fixed_cost"
CONFIGS = ("observe", "strace", "python")
DISTRIBUTIONS = ("cvg-observe", "cvg-trace", "cvg-kernel", "cvg-policy", "cvg-schema")
TARGET_MS = 150.0


def commands(strace: str, observe: str, out: Path) -> dict[str, list[str]]:
    return {
        "observe": [observe, "-o", str(out), "--", "true"],
        "strace": [strace, "-f", "-o", "/dev/null", "--", "true"],
        "python": [PYTHON, "-c", "pass"],
    }


def strace_version(strace: str) -> str:
    out = subprocess.run([strace, "-V"], capture_output=True, text=True, check=False).stdout
    return out.splitlines()[0] if out else "unknown"


def main() -> int:
    parser = timing.rounds_parser(__doc__, runs=60, warmup=3)
    args = parser.parse_args()
    timing.check_rounds(parser, args)
    strace = shutil.which("strace")
    observe = beside_python("cvg-observe")
    if strace is None or observe is None or not os.access(PYTHON, os.X_OK):
        raise SystemExit(f"bench_observe_fixed_cost: needs strace, cvg-observe and {PYTHON}")
    os.environ.pop("CVG_LANDLOCK_ABI_MAX", None)
    os.environ.pop("CVG_STRACE", None)
    compile_sources()
    load_start = loadavg()
    started = datetime.now(UTC)

    # The plan cache is never used beneath a learning write root, and /tmp is one.
    cache = tempfile.mkdtemp(prefix="cvg-bench-observe-cache-", dir="/var/tmp")
    os.environ["XDG_CACHE_HOME"] = cache
    with tempfile.TemporaryDirectory(prefix="cvg-bench-observe-") as tmp:
        work = Path(tmp, "cwd")
        work.mkdir()
        out = Path(tmp, "obs.json")
        argvs = commands(strace, observe, out)

        def run(config: str, _argv: list[str]) -> int:
            return subprocess.run(
                argvs[config], cwd=work, stdin=subprocess.DEVNULL, capture_output=True
            ).returncode

        samples = timing.measure(
            {"true": ["true"]}, CONFIGS, args.warmup, args.runs, run, "bench_observe_fixed_cost"
        )["true"]
        events = len(json.loads(out.read_bytes())["events"])
    shutil.rmtree(cache)

    load_end = loadavg()
    results = results_ms({"true": samples}, CONFIGS)["true"]
    extra = [(o - s) / 1e6 for o, s in zip(samples["observe"], samples["strace"], strict=True)]
    median = results["observe"]["p50_ms"]
    entry: dict[str, Any] = {
        **results_file.machine(),
        "strace": strace_version(strace),
        **timing_fields(started, args.runs, args.warmup, load_start, load_end),
        "cvg_versions": results_file.versions(DISTRIBUTIONS),
        "configs": commands("strace", "cvg-observe", Path("F")),
        "events_in_observation": events,
        "results": results,
        "observe_minus_strace_ms": {
            "median": round(statistics.median(extra), 3),
            "p95": round(results_file.percentile(extra, 95), 3),
        },
        "targets": {
            "observe_true_at_most_150ms": results_file.bound(
                "median over rounds of cvg-observe -o F -- true, ms", median, TARGET_MS
            )
        },
    }
    path = args.output or results_file.default_path()
    results_file.record(path, KEY, entry, who="bench_observe_fixed_cost")
    for name in CONFIGS:
        summary = results_file.summary_seconds([ns / 1e9 for ns in samples[name]], 1)
        print(results_file.summary_line(name, summary, 8, "7.1f"))
    t = entry["targets"]["observe_true_at_most_150ms"]
    print(
        f"observe - strace: median {entry['observe_minus_strace_ms']['median']:.1f} ms; "
        f"target: median <= {TARGET_MS:g} ms, met: {t['met']}"
    )
    print(f"load average start {load_start}, end {load_end}; written to {path} under {KEY!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
