"""Benchmark cvg-probe: the uncached probe in-process, and the command end to end.

    uv run python benchmarks/bench_probe.py [--runs N]

Runs ``cvg_probe.run_probes()`` N times in this process and ``cvg-probe --no-cache``
N times as a subprocess (each after one unmeasured warm-up), and records median and
p95 wall time under the key ``"probe"`` of ``benchmarks/results/<hostname>.json``,
with the host, kernel, CPU model and Python version. The file is shared with other
benchmarks: it is read, updated and replaced atomically under a lock, and only the
``"probe"`` key is touched.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import results_file
import timing  # benchmarks/ is on sys.path when run as a script

from cvg_probe import __version__, run_probes

KEY = "probe"


def summary(samples: list[float]) -> dict[str, Any]:
    return results_file.summary_seconds(samples, 2)


def measure(fn: Callable[[], object], runs: int) -> list[float]:
    fn()  # warm-up, not measured
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return samples


def cli_command() -> list[str]:
    beside = Path(sys.executable).parent / "cvg-probe"
    found = str(beside) if beside.exists() else shutil.which("cvg-probe")
    return [found] if found else [sys.executable, "-m", "cvg_probe"]


def run_cli(argv: list[str]) -> None:
    subprocess.run(
        [*argv, "--no-cache"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, check=True
    )


def record(path: Path, entry: dict[str, Any]) -> None:
    results_file.record(path, KEY, entry, who="bench_probe")


def main() -> int:
    args = timing.runs_args(__doc__, runs=30, what="measured runs of each")

    os.environ.pop("CVG_LANDLOCK_ABI_MAX", None)
    # As installed packages are: bytecode compiled (see benchmarks/README.md).
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    src = sorted(str(p) for p in Path(__file__).resolve().parent.parent.glob("packages/*/src"))
    subprocess.run([sys.executable, "-m", "compileall", "-q", *src], check=True)
    facts = run_probes()
    in_process = measure(run_probes, args.runs)
    argv = cli_command()
    cli = measure(lambda: run_cli(argv), args.runs)

    entry = {
        **results_file.machine(),
        "cvg_probe": __version__,
        "euid": os.geteuid(),
        "landlock_abi": facts.landlock_abi,
        "proven": f"{sum(f.proven for f in facts.features)}/{len(facts.features)}",
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "run_probes_in_process": summary(in_process),
        "cli_no_cache_subprocess": summary(cli),
        "cli_command": " ".join([*argv, "--no-cache"]),
    }
    path = args.output or results_file.default_path()
    record(path, entry)
    for name in ("run_probes_in_process", "cli_no_cache_subprocess"):
        s = entry[name]
        print(results_file.summary_line(name, s, 26, "8.2f"))
    print(f"written to {path} under {KEY!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
