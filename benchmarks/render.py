"""Render the README's "What it costs" tables from the benchmark results files.

    uv run python benchmarks/render.py [--host NAME]... [--check]

Reads ``benchmarks/results/<host>.json`` (every host there, or only those named with
``--host``) and rewrites the part of ``README.md`` between ``<!-- costs:begin -->`` and
``<!-- costs:end -->``: per host, p50 and p95 of each workload in each configuration
(key ``"run"``, from bench_run.py), the ratios and whether each target was met, and the
probe timings (key ``"probe"``, from bench_probe.py) when present. The output depends
only on those files, with fixed float formatting, so it is the same on every machine.

With ``--check`` nothing is written: exit 1, showing the difference, if README.md is not
what would be rendered.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
README = HERE.parent / "README.md"
RESULTS = HERE / "results"
BEGIN = "<!-- costs:begin -->"
END = "<!-- costs:end -->"
CONFIGS = ("bare", "warm", "cold")
NOTE = (
    "Measured by `benchmarks/bench_run.py` (and `benchmarks/bench_probe.py`) on a "
    "shared, noisy machine: the ratios, taken within interleaved rounds, mean more "
    "than the absolute times. How to run them: [benchmarks/README.md](benchmarks/README.md)."
)


class RenderError(Exception):
    """The README or a results file is not as expected. One line for the user."""


def ms(value: float) -> str:
    return f"{value:.2f} ms"


def when(iso: str) -> str:
    return iso.replace("T", " ").replace("+00:00", " UTC")


def load_hosts(results: Path, hosts: list[str] | None) -> list[tuple[str, dict[str, Any]]]:
    if hosts:
        paths = [results / f"{h}.json" for h in hosts]
        missing = [str(p) for p in paths if not p.exists()]
        if missing:
            raise RenderError(f"no results file {', '.join(missing)}")
    else:
        paths = sorted(results.glob("*.json"))
    loaded = []
    for path in paths:
        try:
            data = json.loads(path.read_text())
        except ValueError as e:
            raise RenderError(f"{path}: not JSON ({e})")
        if not isinstance(data, dict):
            raise RenderError(f"{path}: not a JSON object")
        if "run" in data or "probe" in data:
            loaded.append((path.stem, data))
    return loaded


def workload_label(name: str, argv: list[str], words_bytes: int | None) -> str:
    if not argv:
        return f"`{name}`"
    shown = " ".join([argv[0].rsplit("/", 1)[-1], *argv[1:]])
    if words_bytes and any(a.endswith(".txt") for a in argv[1:]):
        return f"`{shown}` ({words_bytes / (1 << 20):g} MiB)"
    return f"`{shown}`"


def render_run(run: dict[str, Any]) -> list[str]:
    versions = run.get("cvg_versions", {})
    load = run.get("loadavg_start", [None])[0], run.get("loadavg_end", [None])[0]
    lines = [
        f"Linux {run['kernel']} ({run['arch']}), {run['cpu']} x{run['cpus']}, "
        f"Python {run['python']}, cvg-run {versions.get('cvg-run', '?')}; "
        f"measured {when(run['measured_at'])}, {run['runs']} interleaved rounds, "
        f"1-minute load average {load[0]:.2f} at start, {load[1]:.2f} at end.",
        "",
        "| workload | bare p50 | bare p95 | warm p50 | warm p95 | cold p50 | cold p95 |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    results = run["results"]
    order = [n for n in run.get("workload_order", []) if n in results]
    for name in order + sorted(set(results) - set(order)):
        by_config = results[name]
        label = workload_label(name, run["workloads"].get(name, []), run.get("words_file_bytes"))
        cells = []
        for config in CONFIGS:
            s = by_config[config]
            cells += [ms(s["p50_ms"]), ms(s["p95_ms"])]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")

    targets = run["targets"]
    warm_t = targets["warm_true_within_1ms_of_bare"]
    cold_t = targets["cold_true_at_most_4x_python"]
    ratio = run["ratios"]["warm_over_bare_true"]
    extra = run["ratios"]["warm_minus_bare_true_ms"]
    cold = run["ratios"]["cold_true_over_bare_python"]

    def met(t: dict[str, Any]) -> str:
        return "**yes**" if t["met"] else "**no**"

    lines += [
        "",
        "| per round, median (p25-p75) | measured | target | met |",
        "|---|---:|---:|---|",
        f'| warm `Sandbox.run(["true"])` minus bare `subprocess.run` | '
        f"{extra['median']:+.2f} ms ({extra['p25']:+.2f} to {extra['p75']:+.2f}) | "
        f"{warm_t['limit']:+.2f} ms | {met(warm_t)} |",
        f"| cold `cvg-run -- true` / bare `python3 -c pass` | "
        f"{cold['median']:.2f}x ({cold['p25']:.2f} to {cold['p75']:.2f}) | "
        f"{cold_t['limit']:.2f}x | {met(cold_t)} |",
        f"| warm / bare on `true` | "
        f"{ratio['median']:.2f}x ({ratio['p25']:.2f} to {ratio['p75']:.2f}) | | |",
        "",
        "bare is `subprocess.run(argv)`; warm is `Sandbox().run(argv)` on one Sandbox made "
        'up front; cold is `subprocess.run(["cvg-run", "--", *argv])`, a fresh process '
        "per call with the plan cache already warm (a cold process, not a cold policy "
        "compile).",
    ]
    return lines


def render_probe(probe: dict[str, Any]) -> list[str]:
    inproc = probe["run_probes_in_process"]
    cli = probe["cli_no_cache_subprocess"]
    return [
        f"cvg-probe {probe.get('cvg_probe', '?')} on Linux {probe['kernel']}, Landlock ABI "
        f"{probe['landlock_abi']}, {probe['proven']} features proven; measured "
        f"{when(probe['measured_at'])}, {inproc['runs']} runs each.",
        "",
        "| probe | median | p95 |",
        "|---|---:|---:|",
        f"| `run_probes()` in process | {ms(inproc['median_ms'])} | {ms(inproc['p95_ms'])} |",
        f"| `cvg-probe --no-cache` (a subprocess) | {ms(cli['median_ms'])} | {ms(cli['p95_ms'])} |",
    ]


def render(hosts: list[tuple[str, dict[str, Any]]]) -> str:
    """The text between the markers (without them), ending in a newline."""
    lines = [
        "<!-- generated by `uv run python benchmarks/render.py` from benchmarks/results/; "
        "do not edit by hand -->",
        "",
        NOTE,
    ]
    if not hosts:
        lines += ["", "No results yet."]
    for stem, data in hosts:
        try:
            if "run" in data:
                lines += ["", f"### {stem}: running a command", "", *render_run(data["run"])]
            if "probe" in data:
                lines += ["", f"### {stem}: probing the kernel", "", *render_probe(data["probe"])]
        except (KeyError, TypeError, IndexError) as e:
            raise RenderError(f"results for {stem!r} lack an expected field ({e!r})")
    # The blank line ends the last table before the closing marker.
    return "\n".join(lines) + "\n\n"


def splice(readme: str, body: str) -> str:
    """``readme`` with everything between the marker lines replaced by ``body``."""
    begin = readme.find(BEGIN + "\n")
    end = readme.find("\n" + END)
    if begin < 0 or end < 0 or end < begin or readme.count(BEGIN) != 1 or readme.count(END) != 1:
        raise RenderError(f"README.md needs one {BEGIN} line and one {END} line after it")
    return readme[: begin + len(BEGIN) + 1] + body + readme[end + 1 :]


def expected(
    readme: Path = README, results: Path = RESULTS, hosts: list[str] | None = None
) -> tuple[str, str]:
    """(README.md as it is, README.md as it would be rendered)."""
    current = readme.read_text()
    return current, splice(current, render(load_hosts(results, hosts)))


def check(
    readme: Path = README, results: Path = RESULTS, hosts: list[str] | None = None
) -> list[str]:
    """The unified diff from README.md to its rendering; empty when up to date."""
    current, wanted = expected(readme, results, hosts)
    return list(
        difflib.unified_diff(
            current.splitlines(keepends=True),
            wanted.splitlines(keepends=True),
            fromfile=f"{readme} (as it is)",
            tofile=f"{readme} (as rendered)",
        )
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--host", action="append", help="render only this host's results (repeatable)"
    )
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if README.md differs; write nothing"
    )
    parser.add_argument("--readme", type=Path, default=README, help=argparse.SUPPRESS)
    parser.add_argument("--results", type=Path, default=RESULTS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        if args.check:
            diff = check(args.readme, args.results, args.host)
            if diff:
                sys.stderr.writelines(diff)
                print(
                    "render: README.md is out of date; run `uv run python benchmarks/render.py`",
                    file=sys.stderr,
                )
                return 1
            return 0
        current, wanted = expected(args.readme, args.results, args.host)
    except RenderError as e:
        print(f"render: {e}", file=sys.stderr)
        return 2
    if wanted != current:
        # Replace, never rewrite in place: a reader sees the old file or the new one.
        tmp = args.readme.with_name(f".{args.readme.name}.render.tmp")
        tmp.write_text(wanted)
        tmp.chmod(args.readme.stat().st_mode & 0o7777)
        tmp.replace(args.readme)
        print(f"render: updated {args.readme}")
    else:
        print(f"render: {args.readme} already up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
