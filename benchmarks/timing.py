"""The interleaved timing loop every round-based benchmark shares.

Each round runs every workload once in every configuration, the configuration order
rotating from one round to the next, so load that comes and goes on a shared machine
hits all of them alike. The garbage collector is off while a round runs; the first
``warmup`` rounds are run but not kept.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Samples = dict[str, dict[str, list[int]]]


def rounds_parser(doc: str, *, runs: int, warmup: int, **kw: Any) -> argparse.ArgumentParser:
    """A round-based benchmark's options: --runs, --warmup and --output (its
    docstring's first paragraph as the description); add its own, then check_rounds."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0], **kw)
    parser.add_argument("--runs", type=int, default=runs, help=f"measured rounds ({runs})")
    parser.add_argument(
        "--warmup", type=int, default=warmup, help=f"unmeasured rounds first ({warmup})"
    )
    parser.add_argument("--output", type=Path, help="results file (default: per hostname)")
    return parser


def runs_args(doc: str, *, runs: int, what: str) -> argparse.Namespace:
    """The options of a benchmark that times ``--runs`` of each thing (``what`` they
    are) and writes ``--output``: parsed, the count checked."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=runs, help=f"{what} (default {runs})")
    parser.add_argument("--output", type=Path, help="results file (default: per hostname)")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    return args


def check_rounds(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.runs < 1 or args.warmup < 0:
        parser.error("--runs must be at least 1 and --warmup not negative")


@dataclass(frozen=True)
class Slot:
    """One run to time: its round, workload (name and argv) and configuration."""

    round: int
    measured: bool
    workload: str
    argv: list[str]
    config: str


def rotated(configs: Sequence[str], r: int) -> list[str]:
    """The configuration order of round ``r``."""
    shift = r % len(configs)
    return [*configs[shift:], *configs[:shift]]


def slots(
    workloads: Mapping[str, list[str]],
    configs: Sequence[str],
    warmup: int,
    runs: int,
    *,
    progress: str = "",
) -> Iterator[Slot]:
    """Every run of every round, in order. With ``progress``, a line on stderr every
    20 rounds, led by it."""
    total = warmup + runs
    for r in range(total):
        gc.collect()
        gc.disable()
        try:
            for name, argv in workloads.items():
                for config in rotated(configs, r):
                    yield Slot(r, r >= warmup, name, argv, config)
        finally:
            gc.enable()
        if progress and r % 20 == 19:
            print(f"{progress}: round {r + 1}/{total}", file=sys.stderr)


def empty(workloads: Mapping[str, object], configs: Sequence[str]) -> Samples:
    return {w: {c: [] for c in configs} for w in workloads}


class Stopwatch:
    """``with Stopwatch() as sw: ...``; then ``sw.ns`` is how long it took."""

    ns = 0

    def __enter__(self) -> Stopwatch:
        self._t0 = time.perf_counter_ns()
        return self

    def __exit__(self, *exc: object) -> None:
        self.ns = time.perf_counter_ns() - self._t0


def keep(samples: Samples, slot: Slot, elapsed_ns: int) -> None:
    """Keep one timing, unless its round is a warm-up."""
    if slot.measured:
        samples[slot.workload][slot.config].append(elapsed_ns)


def measure(
    workloads: Mapping[str, list[str]],
    configs: Sequence[str],
    warmup: int,
    runs: int,
    run: Callable[[str, list[str]], int],
    who: str,
) -> Samples:
    """Time ``run(config, argv)`` (an exit status) in every slot; a non-zero status
    ends the benchmark."""
    samples = empty(workloads, configs)
    for slot in slots(workloads, configs, warmup, runs):
        with Stopwatch() as sw:
            status = run(slot.config, slot.argv)
        if status != 0:
            raise SystemExit(
                f"{who}: {slot.config} {slot.workload!r} exited {status} in round {slot.round}"
            )
        keep(samples, slot, sw.ns)
    return samples
