"""Benchmark cvg-observe's trace parsing: a synthetic strace file of N lines (1 million
by default), parsed into a full cvg.observation in a subprocess.

    uv run python benchmarks/bench_observe.py [--lines N] [--runs R]

The trace mixes what real tools do (execve, openat with ``-yy`` descriptors, stat calls,
threads whose calls are split into ``<unfinished ...>``/``resumed`` halves, forks,
chdir, connect, exits) across many pids and paths. Each run parses it in a fresh
subprocess (``python -c``), writes the observation to a temporary file, and reports its
wall time and peak RSS (``resource.getrusage(RUSAGE_SELF).ru_maxrss`` of that
subprocess); the trace must parse in under 500 MB. A second measurement parses only
(records and events, no JSON), to show where the time goes.

Results go under the key ``"observe"`` of ``benchmarks/results/<hostname>.json``, read,
updated and replaced atomically under a lock, as bench_probe.py does.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import results_file  # benchmarks/ is on sys.path when run as a script

from cvg_observe import __version__

KEY = "observe"
LIMIT_MB = 500


def generate(path: Path, lines: int) -> int:
    """Write a synthetic ``strace -f -ttt -yy`` trace of exactly ``lines`` lines."""
    t = 1_700_000_000.0
    written = 0
    pids = [1000 + i for i in range(16)]
    with path.open("w") as f:

        def put(text: str) -> None:
            nonlocal written, t
            if written < lines:
                t += 0.000013
                f.write(text.replace("@T", f"{t:.6f}"))
                written += 1

        put(
            '1000 @T execve("/usr/bin/python3", ["python3", "tool.py"], 0x7ffd /* 30 vars */) = 0\n'
        )
        for child in pids[1:]:  # threads and children, each started by a clone
            flags = "CLONE_VM|CLONE_FS|CLONE_THREAD" if child % 2 else "SIGCHLD"
            put(f"1000 @T clone(child_stack=NULL, flags={flags}, child_tidptr=0x7f) = {child}\n")
        i = 0
        while written < lines:
            pid = pids[i % len(pids)]
            other = pids[(i + 5) % len(pids)]
            n = i % 5000
            kind = i % 20
            if kind < 8:
                put(
                    f'{pid} @T openat(AT_FDCWD</home/u/project>, "/usr/lib/python3/dist-packages/'
                    f'pkg{n % 97}/mod{n}.py", O_RDONLY|O_CLOEXEC) = 3</usr/lib/python3/'
                    f"dist-packages/pkg{n % 97}/mod{n}.py>\n"
                )
            elif kind < 13:
                put(
                    f'{pid} @T newfstatat(AT_FDCWD</home/u/project>, "src/file{n}.txt", '
                    "{st_mode=S_IFREG|0644, st_size=1234, ...}, 0) = -1 ENOENT "
                    "(No such file or directory)\n"
                )
            elif kind < 15:
                put(
                    f'{pid} @T openat(3</home/u/project/data>, "out{n}.json", '
                    "O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0644 <unfinished ...>\n"
                )
                put(f'{other} @T readlink("/proc/self/exe", "/usr/bin/python3.12", 4096) = 19\n')
                put(f"{pid} @T <... openat resumed>) = 4</home/u/project/data/out{n}.json>\n")
            elif kind == 15:
                put(
                    f"{pid} @T connect(5<TCP:[{n}]>, {{sa_family=AF_INET, sin_port=htons(443), "
                    f'sin_addr=inet_addr("10.0.{n % 256}.1")}}, 16) = -1 EINPROGRESS '
                    "(Operation now in progress)\n"
                )
            elif kind == 16:
                put(f'{pid} @T chdir("/home/u/project/sub{n % 10}") = 0\n')
            elif kind == 17:
                put(
                    f'{pid} @T access("../lib{n}.so", R_OK) = -1 ENOENT '
                    "(No such file or directory)\n"
                )
            elif kind == 18:
                put(f"{pid} @T kill({other}, SIGTERM) = -1 ESRCH (No such process)\n")
            else:
                put(f"{pid} @T wait4(-1, [{{WIFEXITED(s) && WEXITSTATUS(s) == 0}}], 0, NULL) = 7\n")
            i += 1
    return written


CHILD = r"""
import json, os, resource, sys, time
mode, trace, out = sys.argv[1], sys.argv[2], sys.argv[3]
start = time.perf_counter()
if mode == "observation":
    from cvg_observe.observe import write_observation
    with open(trace, encoding="utf-8", errors="surrogateescape") as f, open(out, "wb") as o:
        r = write_observation(o, f, argv=["python3", "tool.py"], cwd="/home/u/project",
                              home="/home/u", scratch=[], strace_version="6.1")
    events = r.events
else:
    from cvg_trace.events import events_from_lines
    with open(trace, encoding="utf-8", errors="surrogateescape") as f:
        it, tracker = events_from_lines(f, "/home/u/project")
        events = sum(1 for _ in it)
seconds = time.perf_counter() - start
rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
size = os.path.getsize(out) if mode == "observation" else 0
print(json.dumps({"seconds": seconds, "maxrss_kb": rss_kb, "events": events, "bytes": size}))
"""


def measure(mode: str, trace: Path, out: Path) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(trace), str(out)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def baseline_rss_kb() -> int:
    """Peak RSS of a subprocess that only imports cvg_observe (the fixed cost)."""
    code = (
        "import resource, cvg_observe.observe, cvg_trace.events;"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(out.stdout)


def record(path: Path, entry: dict[str, Any]) -> None:
    results_file.record(path, KEY, entry, who="bench_observe")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=1_000_000, help="trace lines (1000000)")
    parser.add_argument("--runs", type=int, default=1, help="measured runs of each (1)")
    parser.add_argument("--output", type=Path, help="results file (default: per hostname)")
    args = parser.parse_args()
    if args.lines < 1 or args.runs < 1:
        parser.error("--lines and --runs must be at least 1")

    with tempfile.TemporaryDirectory(prefix="bench-observe-") as tmp:
        trace = Path(tmp) / "trace.txt"
        lines = generate(trace, args.lines)
        trace_mb = trace.stat().st_size / 2**20
        out = Path(tmp) / "obs.json"
        results: dict[str, list[dict[str, Any]]] = {"observation": [], "parse_only": []}
        for _ in range(args.runs):
            results["observation"].append(measure("observation", trace, out))
            results["parse_only"].append(measure("parse", trace, out))
        base_kb = baseline_rss_kb()

    def summary(samples: list[dict[str, Any]]) -> dict[str, Any]:
        secs = [s["seconds"] for s in samples]
        rss = [s["maxrss_kb"] / 1024 for s in samples]
        return {
            "runs": len(samples),
            "median_s": round(statistics.median(secs), 2),
            "min_s": round(min(secs), 2),
            "max_s": round(max(secs), 2),
            "lines_per_s": round(lines / statistics.median(secs)),
            "peak_rss_mb": round(max(rss), 1),
            "events": samples[0]["events"],
            "output_mb": round(samples[0]["bytes"] / 2**20, 1),
        }

    entry = {
        **results_file.machine(),
        "cvg_observe": __version__,
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "trace_lines": lines,
        "trace_mb": round(trace_mb, 1),
        "import_only_rss_mb": round(base_kb / 1024, 1),
        "limit_rss_mb": LIMIT_MB,
        "observation": summary(results["observation"]),
        "parse_only": summary(results["parse_only"]),
    }
    path = args.output or results_file.default_path()
    record(path, entry)
    print(f"trace: {lines} lines, {entry['trace_mb']} MB")
    for name in ("observation", "parse_only"):
        s = entry[name]
        print(
            f"{name:12} median {s['median_s']:7.2f} s  ({s['lines_per_s']} lines/s)  "
            f"peak RSS {s['peak_rss_mb']:6.1f} MB  events {s['events']}"
            + (f"  output {s['output_mb']} MB" if name == "observation" else "")
        )
    print(f"import only: {entry['import_only_rss_mb']} MB; written to {path} under {KEY!r}")
    peak = max(entry["observation"]["peak_rss_mb"], entry["parse_only"]["peak_rss_mb"])
    if peak >= LIMIT_MB:
        print(f"bench_observe: peak RSS {peak} MB is over the {LIMIT_MB} MB limit", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
