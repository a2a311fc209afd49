"""Benchmark cvg-run --trace: what naming every denial costs over an untraced run.

    uv run python benchmarks/bench_trace.py [--runs N] [--warmup N] [--output PATH]

Four workloads, each run as a fresh cvg-run process in these configurations:

  bare      subprocess.run(argv), no confinement (for scale);
  untraced  cvg-run -- argv;
  notify    cvg-run --trace -- argv (the default mode: strace --seccomp-bpf on the
            calls that can be refused, seccomp denials from the notification channel);
  ptrace    CVG_TRACE_MODE=ptrace cvg-run --trace -- argv (strace stops on every call);
  bpf       CVG_TRACE_MODE=bpf cvg-run --trace -- argv (no seccomp denials).

The workloads are bench_run's (/usr/bin/true, python3 -c pass, wc -w over 1 MiB) plus
a Python import workload, python3 -c 'import json,email,http.client'. Every run uses
the embedded default policy; the plan cache is warmed before timing.

Rounds are interleaved (each round runs every workload once in every configuration,
the order rotating per round), ratios are taken within a round and summarised by
their median. The target is a traced run at most 1.5x the untraced one. Results go
under the key ``"trace"`` of ``benchmarks/results/<hostname>.json`` (only that key
is touched).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import results_file  # benchmarks/ is on sys.path when run as a script
import timing
from bench_run import (
    PYTHON,
    base_workloads,
    loadavg,
    prepare_tmp,
    ready_to_time,
    recorded_workloads,
    results_ms,
    summary_values,
    timing_fields,
)
from tabulate import tabulate

KEY = "trace"
CONFIGS = ("bare", "untraced", "notify", "ptrace", "bpf")
TRACED = ("notify", "ptrace", "bpf")
LIMIT_RATIO = 1.5
IMPORTS = "import json,email,http.client"


def strace_version() -> str:
    try:
        out = subprocess.run(["strace", "-V"], capture_output=True, text=True).stdout
    except OSError:
        return "not installed"
    return out.splitlines()[0] if out else "unknown"


def main() -> int:
    parser = timing.rounds_parser(__doc__, runs=40, warmup=3)
    args = parser.parse_args()
    timing.check_rounds(parser, args)
    os.environ.pop("CVG_TRACE_MODE", None)
    cvg_run, load_start, started = ready_to_time()

    with tempfile.TemporaryDirectory(prefix="cvg-bench-trace-") as tmp:
        work, words_path, word_count = prepare_tmp(tmp)
        workloads = {**base_workloads(words_path), "python3 imports": [PYTHON, "-c", IMPORTS]}
        record = Path(tmp, "run.json")

        def command(config: str, argv: list[str]) -> tuple[list[str], dict[str, str]]:
            env = dict(os.environ)
            if config == "bare":
                return argv, env
            if config == "untraced":
                return [cvg_run, "--record", str(record), "--", *argv], env
            env["CVG_TRACE_MODE"] = config
            return [cvg_run, "--trace", "--record", str(record), "--", *argv], env

        def run(config: str, argv: list[str]) -> tuple[int, bytes, bytes]:
            cmd, env = command(config, argv)
            p = subprocess.run(cmd, capture_output=True, cwd=work, env=env)
            return p.returncode, p.stdout, p.stderr

        expected_wc = f"{word_count} {words_path}\n".encode()
        denials: dict[str, dict[str, int]] = {w: {} for w in workloads}
        for name, argv in workloads.items():
            outputs = set()
            for config in CONFIGS:
                status, out, _ = run(config, argv)
                if status != 0 or (name.startswith("wc") and out != expected_wc):
                    raise SystemExit(f"bench_trace: {config} {name!r}: status {status}, {out!r}")
                outputs.add(out)
                if config in TRACED:
                    import json

                    denials[name][config] = len(json.loads(record.read_text())["denials"])
            if len(outputs) != 1:
                raise SystemExit(f"bench_trace: {name!r} printed different output when traced")

        # Each command made before timing: only the run itself is timed.
        prepared = {(c, tuple(a)): command(c, a) for c in CONFIGS for a in workloads.values()}

        def status(config: str, argv: list[str]) -> int:
            cmd, env = prepared[config, tuple(argv)]
            return subprocess.run(cmd, capture_output=True, cwd=work, env=env).returncode

        samples = timing.measure(workloads, CONFIGS, args.warmup, args.runs, status, "bench_trace")

    load_end = loadavg()
    rounds = args.runs
    ratios: dict[str, dict[str, Any]] = {}
    for name in workloads:
        s = samples[name]
        ratios[name] = {
            mode: summary_values([s[mode][i] / s["untraced"][i] for i in range(rounds)])
            for mode in TRACED
        }
    targets = {
        mode: {
            "description": f"cvg-run --trace ({mode} mode) at most {LIMIT_RATIO}x cvg-run",
            "measure": "median over rounds of traced / untraced, per workload",
            "values": {name: ratios[name][mode]["median"] for name in workloads},
            "limit": LIMIT_RATIO,
            "met": {name: ratios[name][mode]["median"] <= LIMIT_RATIO for name in workloads},
        }
        for mode in TRACED
    }
    entry: dict[str, Any] = {
        **results_file.machine(),
        "strace": strace_version(),
        **timing_fields(started, rounds, args.warmup, load_start, load_end),
        "configs": {
            "bare": "subprocess.run(argv), no confinement",
            "untraced": "cvg-run -- argv (default policy, plan cache warm)",
            "notify": "cvg-run --trace: strace --seccomp-bpf, narrow set; seccomp denials "
            "from the user-notification channel",
            "ptrace": "CVG_TRACE_MODE=ptrace cvg-run --trace: strace stops on every call",
            "bpf": "CVG_TRACE_MODE=bpf cvg-run --trace: --seccomp-bpf, seccomp denials unseen",
        },
        "workloads": recorded_workloads(workloads, words_path),
        "workload_order": list(workloads),
        "denials_recorded": denials,
        "results": results_ms(samples, CONFIGS),
        "ratios_over_untraced": ratios,
        "targets": targets,
    }
    path = args.output or results_file.default_path()
    results_file.record(path, KEY, entry, who="bench_trace")

    rows = []
    for name in workloads:
        for config in CONFIGS:
            s = entry["results"][name][config]
            ratio = ratios[name][config]["median"] if config in TRACED else ""
            rows.append([name, config, s["p50_ms"], s["p95_ms"], ratio])
    print(tabulate(rows, headers=["workload", "config", "p50 ms", "p95 ms", "x untraced"]))
    print()
    for mode, t in targets.items():
        print(f"target {mode}: {t['values']} (limit {t['limit']}) met={t['met']}")
    print(f"load average start {load_start}, end {load_end}; {rounds} rounds")
    print(f"written to {path} under {KEY!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
