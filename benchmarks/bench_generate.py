"""Benchmark cvg-generate on big observations: a synthetic observation of 100k and of
1M events (benchmarks/synth_observation.py: a Python tool's reads, writes, probes,
secrets and broad trees over ~30k unique paths), made into a policy in a subprocess;
and a tree walk (``tree_walk``: 300k events naming ~270k paths), side by side with a
plain ``json.load`` of the same file.

    uv run python benchmarks/bench_generate.py [--events 100000 1000000] [--runs R]
        [--walk 300000] [--walk-rounds R]

Each run is ``cvg_generate.cli.main([OBS, -q, -o OUT])`` in a fresh subprocess
(``python -c``), which reports its wall time and peak RSS
(``resource.getrusage(RUSAGE_SELF).ru_maxrss``), its CPU time (user and system: less
swayed by other load than wall time) and the SHA-256 of the policy it
wrote; every run of one size must write the same policy. The targets: 1M events in at
most 10 s and 200 MB (``met`` says whether the median time and the largest peak kept
to them).

The tree walk runs in rounds, each a ``json.load`` of the observation in a fresh
subprocess (timed around the load alone) and cvg-generate as above, their order
alternating from round to round; the ratio is taken within each round and summarised by
its median. Its targets: cvg-generate at most 4x ``json.load`` and 200 MB peak RSS.

Every package's source is compiled to bytecode first, and one unmeasured run writes
that of what it imports, as an installed cvg has it.

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
from bench_run import compile_sources

from cvg_generate import __version__

KEY = "generate"
TARGET_EVENTS = 1_000_000
TARGET_S = 10.0
TARGET_MB = 200.0
WALK_EVENTS = 300_000
WALK_RATIO = 4.0
WALK_MB = 200.0

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


JSON_LOAD = r"""
import json, resource, sys, time
with open(sys.argv[1], "rb") as f:
    start = time.perf_counter()
    json.load(f)
    seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds,
                  "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


SYNTH = r"""
import sys, orjson
sys.path.insert(0, sys.argv[3])
import synth_observation
data = getattr(synth_observation, sys.argv[4])(int(sys.argv[1]))
with open(sys.argv[2], "wb") as f:
    f.write(orjson.dumps(data))
print(len({e["path"] for e in data["events"] if "path" in e}))
"""


def synthesise(events: int, obs: Path, kind: str = "observation") -> int:
    """Write the observation (``synth_observation.<kind>``) from a subprocess, and say
    how many unique paths it names. Not here: Linux keeps a process's peak RSS across
    fork and exec, so every child measured after the benchmark itself had held a
    million events would report it."""
    here = str(Path(__file__).resolve().parent)
    code = [sys.executable, "-c", SYNTH, str(events), str(obs), here, kind]
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


def json_load(obs: Path) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", JSON_LOAD, str(obs)], capture_output=True, text=True, check=True
    )
    sample: dict[str, Any] = json.loads(proc.stdout)
    return sample


def walk(events: int, rounds: int, tmp: Path) -> dict[str, Any]:
    """The tree walk: cvg-generate and json.load of the same file, in alternating rounds."""
    obs = tmp / f"walk-{events}.json"
    paths = synthesise(events, obs, "tree_walk")
    out = tmp / "walk-policy.json"
    loads: list[dict[str, Any]] = []
    gens: list[dict[str, Any]] = []
    for i in range(rounds):
        if i % 2:
            gens.append(measure(obs, out))
            loads.append(json_load(obs))
        else:
            loads.append(json_load(obs))
            gens.append(measure(obs, out))
    gen = summary(events, paths, obs.stat().st_size, gens)
    obs.unlink()
    load_s = [s["seconds"] for s in loads]
    ratios = [g["seconds"] / j["seconds"] for g, j in zip(gens, loads, strict=True)]
    ratio = round(results_file.percentile(ratios, 50), 2)
    return {
        **gen,
        "json_load_median_s": round(results_file.percentile(load_s, 50), 2),
        "json_load_p95_s": round(results_file.percentile(load_s, 95), 2),
        "json_load_peak_rss_mb": round(max(s["maxrss_kb"] for s in loads) / 1024, 1),
        "ratio_median": ratio,
        "ratio_p95": round(results_file.percentile(ratios, 95), 2),
        "targets": {
            "at_most_4x_json_load": results_file.bound(
                "median of the per-round ratio cvg-generate / json.load", ratio, WALK_RATIO
            ),
            "at_most_200mb": results_file.bound(
                "peak RSS of cvg-generate, MB", gen["peak_rss_mb"], WALK_MB
            ),
        },
    }


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
    parser.add_argument(
        "--walk", type=int, default=WALK_EVENTS, help="tree walk events (300000; 0: none)"
    )
    parser.add_argument("--walk-rounds", type=int, default=5, help="tree walk rounds (5)")
    parser.add_argument("--output", type=Path, help="results file (default: per hostname)")
    args = parser.parse_args()
    if args.runs < 1 or min(args.events) < 1 or args.walk_rounds < 1 or args.walk < 0:
        parser.error("--events, --runs and --walk-rounds must be at least 1, --walk at least 0")

    compile_sources()
    load_before = os.getloadavg()
    sizes: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-generate-") as tmp:
        # Unmeasured: the first run writes the bytecode of what cvg imports.
        warm = Path(tmp) / "warm.json"
        synthesise(1000, warm)
        measure(warm, Path(tmp) / "policy.json")
        for events in args.events:
            obs = Path(tmp) / f"obs-{events}.json"
            paths = synthesise(events, obs)
            out = Path(tmp) / "policy.json"
            samples = [measure(obs, out) for _ in range(args.runs)]
            sizes.append(summary(events, paths, obs.stat().st_size, samples))
            obs.unlink()
        tree = walk(args.walk, args.walk_rounds, Path(tmp)) if args.walk else None
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
        "walk": tree,
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
    if tree is not None:
        print(
            f"{tree['events']:>9} events, tree walk, {tree['unique_paths']} paths: median "
            f"{tree['median_s']} s (p95 {tree['p95_s']}), json.load {tree['json_load_median_s']} s "
            f"(p95 {tree['json_load_p95_s']}), ratio {tree['ratio_median']}x (p95 "
            f"{tree['ratio_p95']}x), peak RSS {tree['peak_rss_mb']} MB"
        )
    print(
        f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after; met: {entry['met']}"
    )
    print(f"written to {path} under {KEY!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
