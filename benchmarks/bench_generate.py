"""Benchmark cvg-generate on big observations: a synthetic observation of 100k and of
1M events (benchmarks/synth_observation.py: a Python tool's reads, writes, probes,
secrets and broad trees over ~30k unique paths), made into a policy in a subprocess.

    uv run python benchmarks/bench_generate.py [--events 100000 1000000] [--runs R]

Each run is ``cvg_generate.cli.main([OBS, -q, -o OUT])`` in a fresh subprocess
(``python -c``), which reports its wall time and peak RSS
(``resource.getrusage(RUSAGE_SELF).ru_maxrss``), its CPU time (user and system: less
swayed by other load than wall time) and the SHA-256 of the policy it
wrote; every run of one size must write the same policy. The targets: 1M events in at
most 10 s and 200 MB (``met`` says whether the median time and the largest peak kept
to them).

Results go under the key ``"generate"`` of ``benchmarks/results/<hostname>.json``,
read, updated and replaced atomically under a lock, with the load average when the
runs started and ended (the machine may be shared).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import results_file  # benchmarks/ is on sys.path when run as a script

from cvg_generate import __version__

KEY = "generate"
TARGET_EVENTS = 1_000_000
TARGET_S = 10.0
TARGET_MB = 200.0

CHILD = r"""
import hashlib, json, resource, sys, time
start = time.perf_counter()
from cvg_generate.cli import main
status = main([sys.argv[1], "-q", "-o", sys.argv[2]])
seconds = time.perf_counter() - start
with open(sys.argv[2], "rb") as f:
    digest = hashlib.sha256(f.read()).hexdigest()
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"status": status, "seconds": seconds, "maxrss_kb": usage.ru_maxrss,
                  "cpu_s": usage.ru_utime + usage.ru_stime, "sha256": digest}))
"""


SYNTH = r"""
import sys, orjson
sys.path.insert(0, sys.argv[3])
from synth_observation import observation
data = observation(int(sys.argv[1]))
with open(sys.argv[2], "wb") as f:
    f.write(orjson.dumps(data))
print(len({e["path"] for e in data["events"] if "path" in e}))
"""


def synthesise(events: int, obs: Path) -> int:
    """Write the observation from a subprocess, and say how many unique paths it names.
    Not here: Linux keeps a process's peak RSS across fork and exec, so every child
    measured after the benchmark itself had held a million events would report it."""
    here = str(Path(__file__).resolve().parent)
    code = [sys.executable, "-c", SYNTH, str(events), str(obs), here]
    return int(subprocess.run(code, capture_output=True, text=True, check=True).stdout)


def measure(obs: Path, out: Path) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(obs), str(out)],
        capture_output=True,
        text=True,
        check=True,
    )
    sample: dict[str, Any] = json.loads(proc.stdout)
    if sample["status"] != 0:
        raise SystemExit(f"bench_generate: cvg-generate exited {sample['status']}: {proc.stderr}")
    return sample


def baseline_rss_kb() -> int:
    """Peak RSS of a subprocess that only imports cvg-generate (the fixed cost)."""
    code = (
        "import resource, cvg_generate.cli;"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(out.stdout)


def summary(events: int, paths: int, size: int, samples: list[dict[str, Any]]) -> dict[str, Any]:
    digests = {s["sha256"] for s in samples}
    if len(digests) != 1:
        raise SystemExit(f"bench_generate: {events} events gave {len(digests)} different policies")
    secs = [s["seconds"] for s in samples]
    rss = [s["maxrss_kb"] / 1024 for s in samples]
    cpu = [s["cpu_s"] for s in samples]
    return {
        "events": events,
        "unique_paths": paths,
        "observation_mb": round(size / 2**20, 1),
        "runs": len(samples),
        "median_s": round(results_file.percentile(secs, 50), 2),
        "p95_s": round(results_file.percentile(secs, 95), 2),
        "median_cpu_s": round(results_file.percentile(cpu, 50), 2),
        "median_rss_mb": round(results_file.percentile(rss, 50), 1),
        "p95_rss_mb": round(results_file.percentile(rss, 95), 1),
        "peak_rss_mb": round(max(rss), 1),
        "policy_sha256": digests.pop(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--events", type=int, nargs="+", default=[100_000, TARGET_EVENTS],
        help="observation sizes (100000 1000000)",
    )  # fmt: skip
    parser.add_argument("--runs", type=int, default=3, help="measured runs of each size (3)")
    parser.add_argument("--output", type=Path, help="results file (default: per hostname)")
    args = parser.parse_args()
    if args.runs < 1 or min(args.events) < 1:
        parser.error("--events and --runs must be at least 1")

    load_before = os.getloadavg()
    sizes: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-generate-") as tmp:
        for events in args.events:
            obs = Path(tmp) / f"obs-{events}.json"
            paths = synthesise(events, obs)
            out = Path(tmp) / "policy.json"
            samples = [measure(obs, out) for _ in range(args.runs)]
            sizes.append(summary(events, paths, obs.stat().st_size, samples))
            obs.unlink()
    load_after = os.getloadavg()

    target = next((s for s in sizes if s["events"] == TARGET_EVENTS), None)
    entry: dict[str, Any] = {
        **results_file.machine(),
        "cvg_generate": __version__,
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in load_after],
        "import_only_rss_mb": round(baseline_rss_kb() / 1024, 1),
        "target": {"events": TARGET_EVENTS, "max_s": TARGET_S, "max_rss_mb": TARGET_MB},
        "sizes": sizes,
        "met": None
        if target is None
        else target["median_s"] <= TARGET_S and target["peak_rss_mb"] <= TARGET_MB,
    }
    path = args.output or results_file.default_path()
    results_file.record(path, KEY, entry, who="bench_generate")
    for s in sizes:
        print(
            f"{s['events']:>9} events ({s['observation_mb']} MB): median {s['median_s']} s, "
            f"p95 {s['p95_s']} s, CPU {s['median_cpu_s']} s, peak RSS {s['peak_rss_mb']} MB, "
            f"policy {s['policy_sha256'][:12]}"
        )
    print(
        f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after; met: {entry['met']}"
    )
    print(f"written to {path} under {KEY!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
