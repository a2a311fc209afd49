"""Render the "What it costs" tables of docs/results.md from the benchmark results files.

    uv run python benchmarks/render.py [--host NAME]... [--check]

Reads ``benchmarks/results/<host>.json`` (every host there, or only those named with
``--host``) and rewrites the part of ``docs/results.md`` between ``<!-- costs:begin -->``
and ``<!-- costs:end -->``: per host, p50 and p95 of each workload in each configuration
(key ``"run"``, from bench_run.py), the ratios and whether each target was met, the
probe timings (key ``"probe"``, from bench_probe.py), and cvg against its peers (key
``"bench"``, from bench.py) when present; and the part between
``<!-- falsedenial:begin -->`` and ``<!-- falsedenial:end -->`` from the false-denial
suite's keys (``"falsedenial"``, ``"falsedenial-<mode>"``). For each host with a
``"bench"`` key it also writes ``benchmarks/results/<host>-peers.svg`` beside the results
file (peers_svg.py: a bar chart of the peers per workload), which that page and the
README show, and removes a ``*-peers.svg`` there whose host has none (unless hosts are
named). The output depends only on those files, with fixed float formatting, so it is
the same on every machine.

With ``--check`` nothing is written: exit 1, showing the difference, if the page or a
chart is not what would be rendered.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import peers_svg  # noqa: E402  (benchmarks/ is not a package)

PAGE = HERE.parent / "docs" / "results.md"
RESULTS = HERE / "results"
BEGIN = "<!-- costs:begin -->"
END = "<!-- costs:end -->"
CHART = "-peers.svg"
FD_BEGIN = "<!-- falsedenial:begin -->"
FD_END = "<!-- falsedenial:end -->"
FD_NOTE = (
    "Benign real programs and MCP servers (benchmarks/workloads/), each with a "
    "hand-written least-privilege policy and inputs A and B (some also C and D) that "
    "differ as real use does. A run is a false denial when its exit status or output "
    'differs from the same input run bare. "generated" is `cvg-observe` on A, then '
    "`cvg-generate | cvg-validate`, run in a fresh copy of the workload. An MCP server "
    "is driven by the MCP SDK's client over stdio, and its session on B idles in the "
    "middle (the gap below), as a user who comes back later."
)
CLASS_NAMES = {
    "exec": "exec of a program A never ran",
    "output-dir": "writing where A did not (a new output dir)",
    "input-dir": "reading where A did not (an unlisted input dir)",
    "wall-clock": "wall clock, or death in the idle gap",
    "memory": "memory limit",
    "proc-self": "/proc/self",
    "resolver": "name resolution",
    "env": "an environment variable the host sets",
    "other": "other",
}
CONFIGS = ("bare", "warm", "cold")
NOTE = (
    "Measured by `benchmarks/bench_run.py`, `benchmarks/bench_probe.py` and "
    "`benchmarks/bench.py` (cvg against sandlock, bubblewrap and firejail) on a "
    "shared, noisy machine: the ratios, taken within interleaved rounds, mean more "
    "than the absolute times. How to run them: [benchmarks/README.md](../benchmarks/README.md)."
)


class RenderError(Exception):
    """The page or a results file is not as expected. One line for the user."""


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
        if any(k in data for k in ("run", "probe", "bench", "falsedenial", "generate")) or any(
            key in data for key, *_ in TARGETS
        ):
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
    cold_t = targets["cold_true_at_most_2x_python"]
    ratio = run["ratios"]["warm_over_bare_true"]
    extra = run["ratios"]["warm_minus_bare_true_ms"]
    cold = run["ratios"]["cold_true_over_bare_python"]

    def met(t: dict[str, Any]) -> str:
        return "**yes**" if meets(t["value"], t["limit"]) else "**no**"

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


def render_bench(bench: dict[str, Any], chart: str | None = None) -> list[str]:
    """The peers' section; ``chart`` is the link to its SVG, relative to the page."""
    load = bench["loadavg_start"][0], bench["loadavg_end"][0]
    workloads = bench["workload_order"]
    lines = [
        f"Linux {bench['kernel']} ({bench['arch']}), {bench['cpu']} x{bench['cpus']}, as "
        f"{'root' if bench['euid'] == 0 else 'uid ' + str(bench['euid'])}; measured "
        f"{when(bench['measured_at'])}, {bench['runs']} interleaved rounds, 1-minute load "
        f"average {load[0]:.2f} at start, {load[1]:.2f} at end. Each cell: p50 / p95, and "
        "in brackets the median per-round ratio to bare.",
        "",
        "| configuration | " + " | ".join(f"`{w}`" for w in workloads) + " | peak RSS |",
        "|---|" + "---:|" * len(workloads) + "---:|",
    ]
    helper = bench.get("helper_peak_rss_mb", {})
    for name in bench["config_order"]:
        cells = []
        peak = 0.0
        for w in workloads:
            s = bench["results"][w][name]
            cells.append(
                f"{s['p50_ms']:.1f} / {s['p95_ms']:.1f} ms (x{s['ratio_to_bare_median']:.2f})"
            )
            peak = max(peak, s.get("peak_rss_mb", 0.0))
        if name in helper:
            rss = f"{helper[name]:.1f} MiB (helper)"
        else:
            rss = f"{peak:.1f} MiB" if peak else "?"
        version = bench["versions"].get(name, "")
        label = f"{name} ({version})" if version and not name.startswith("cvg") else name
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {rss} |")
    if chart:
        lines += [
            "",
            f"![Per workload, each configuration's p50 as a bar with a whisker to its p95, "
            f"on a log scale]({chart})",
        ]
    lines += ["", "What each configuration runs:", ""]
    for name in bench["config_order"]:
        lines.append(f"- {name}: `{bench['configs'][name]}`")
    for name, why in sorted(bench["unavailable"].items()):
        lines.append(f"- {name}: **n/a** here: {why}")
    lines += [
        "",
        "Peak RSS is that of the largest process of one run (GNU time's %M, so for cvg-run "
        "it is the supervisor's own Python when the tool is smaller, and for bwrap only "
        "what its own process reaped), or, for a warm configuration, the resident peak of "
        "its long-lived helper or server (the tool's own is as bare).",
    ]
    extra = []
    gen = bench.get("generate")
    if gen:
        if "error" in gen:
            extra.append(f"| cvg-generate, {gen['events']:,} events | failed: {gen['error']} |")
        else:
            extra.append(
                f"| cvg-generate on a synthetic {gen['events']:,}-event observation "
                f"({gen['observation_mb']:.0f} MB) | {gen['seconds']:.1f} s, peak RSS "
                f"{gen['peak_rss_mb']:.0f} MiB |"
            )
    probe = bench.get("probe")
    if probe and "error" not in probe:
        extra.append(
            f"| `cvg-probe --no-cache`, {probe['runs']} runs | p50 {ms(probe['p50_ms'])}, "
            f"p95 {ms(probe['p95_ms'])} |"
        )
    comp = bench.get("compile")
    if comp and "error" not in comp:
        inproc, sub = comp["in_process"], comp["cvg_validate_compile_subprocess"]
        extra += [
            f"| compiling {comp['policy']} in process, {inproc['runs']} runs | "
            f"p50 {ms(inproc['p50_ms'])}, p95 {ms(inproc['p95_ms'])} |",
            f"| `cvg-validate --compile` (a subprocess, facts given), {sub['runs']} runs | "
            f"p50 {ms(sub['p50_ms'])}, p95 {ms(sub['p95_ms'])} |",
        ]
    if extra:
        lines += ["", "| also measured | |", "|---|---:|", *extra]
    return lines


LABELS = {
    "hand-B": ("hand-written", "B"),
    "gen-A": ("generated from A", "A"),
    "gen-B": ("generated from A", "B"),
}


def pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def meets(value: float, limit: float, *, at_least: bool = False) -> bool:
    """Whether a measured value meets its limit, decided here from the two numbers: a
    "met" flag in the results is not trusted (a hand edit or an old benchmark could
    leave it wrong)."""
    return value >= limit if at_least else value <= limit


def render_falsedenial(stem: str, fd: dict[str, Any]) -> list[str]:
    lines = [
        f"Linux {fd['kernel']} ({fd['arch']}), as "
        f"{'root' if fd['euid'] == 0 else 'uid ' + str(fd['euid'])}, syscalls mode: "
        f"{fd['syscalls_mode']}; measured {when(fd['measured_at'])} by "
        "`benchmarks/workloads/suite.py`.",
        "",
        "| policy | input | false denials | rate | Wilson 95% | target | met |",
        "|---|---|---:|---:|---|---|---|",
    ]
    for label, (policy, on) in LABELS.items():
        r = fd["rates"][label]
        limit = fd["targets"][label]["limit"]
        met = "**yes**" if meets(r["rate"], limit) else "**no**"
        target = "0" if limit == 0 else f"<= {pct(limit)}"
        low, high = r["wilson95"]
        lines.append(
            f"| {policy} | {on} | {r['false_denials']}/{r['runs']} | {pct(r['rate'])} | "
            f"{pct(low)} to {pct(high)} | {target} | {met} |"
        )
    lines += render_classes(fd) + render_curve(fd)
    lines += [
        "",
        f"Overgrants in the generated policies (write on a whole system tree or `$HOME`, "
        f"TCP ports the hand-written policy does not need): {fd['overgrants']}.",
    ]
    for name, why in sorted(fd.get("invalid_workloads", {}).items()):
        lines.append(f"Not counted: {name}: {why}.")
    lines += [
        "",
        "| workload | hand A | hand B | generated A | generated B | why a run differed |",
        "|---|---|---|---|---|---|",
    ]
    for name in fd["workloads"]:
        entry = fd["per_workload"][name]
        verdicts = entry.get("verdicts", {})
        cells = []
        why = []
        for label in ("hand-A", "hand-B", "gen-A", "gen-B"):
            v = verdicts.get(label, {"denied": True})
            cells.append("**denied**" if v["denied"] else "ok")
            if v["denied"]:
                reason = v.get("cause") or v.get("why") or "?"
                kind = f" [{v['class']}]" if "class" in v else ""
                why.append(f"{label}{kind}: {reason}".replace("|", "\\|"))
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {'; '.join(why)} |")
    return lines


def render_classes(fd: dict[str, Any]) -> list[str]:
    """The generated policies' false denials by class (results from before the classes
    were recorded have none)."""
    classes = fd.get("classes")
    if not classes:
        return []
    lines = [
        "",
        f"Why the generated policies denied (the MCP sessions on B idled {fd['gap_s']:g} s):",
        "",
        "| class | generated, A | generated, B |",
        "|---|---:|---:|",
    ]
    for key, name in CLASS_NAMES.items():
        a, b = classes["gen-A"].get(key, 0), classes["gen-B"].get(key, 0)
        lines.append(f"| {name} | {a} | {b} |")
    return lines


def render_curve(fd: dict[str, Any]) -> list[str]:
    """The learning curve: false denials on the held-out input D after learning from
    one, two and three inputs."""
    curve = fd.get("curve")
    if not curve or not curve["workloads"]:
        return []
    lines = [
        "",
        f"Learning curve, {len(curve['workloads'])} workloads with inputs A to D: the "
        f"policy generated from the first k inputs (`cvg-generate` given k observations), "
        f"run on the held-out D.",
        "",
        "| learned from | false denials on D | rate | Wilson 95% | by class |",
        "|---|---:|---:|---|---|",
    ]
    for k, r in curve["rates"].items():
        low, high = r["wilson95"]
        inputs = "A, B, C"[: 1 + 3 * (int(k) - 1)]
        kinds = ", ".join(f"{c} {n}" for c, n in curve["classes"][k].items() if n) or "none"
        lines.append(
            f"| {inputs} | {r['false_denials']}/{r['runs']} | {pct(r['rate'])} | "
            f"{pct(low)} to {pct(high)} | {kinds} |"
        )
    return lines


def _head(note: str) -> list[str]:
    """The first lines of a generated section: where it comes from, then ``note``."""
    return [
        "<!-- generated by `uv run python benchmarks/render.py` from benchmarks/results/; "
        "do not edit by hand -->",
        "",
        note,
    ]


def render_falsedenials(hosts: list[tuple[str, dict[str, Any]]]) -> str:
    """The text between the false-denial markers (without them), ending in a newline."""
    lines = _head(FD_NOTE)
    found = False
    for stem, data in hosts:
        for key in sorted(k for k in data if k.startswith("falsedenial")):
            found = True
            try:
                title = f"### {stem}: false denials" + (
                    f" ({key.split('-', 1)[1]} mode)" if "-" in key else ""
                )
                lines += ["", title, "", *render_falsedenial(stem, data[key])]
            except (KeyError, TypeError, IndexError) as e:
                raise RenderError(f"results {key!r} for {stem!r} lack a field ({e!r})")
    if not found:
        lines += ["", "No results yet."]
    return "\n".join(lines) + "\n\n"


TARGETS: tuple[tuple[str, str, str, str], ...] = (
    ("run", "cold_true_at_most_2x_python", "cold `cvg-run -- true` / bare `python3 -c pass`", "x"),
    ("run", "warm_true_within_1ms_of_bare", 'warm `Sandbox.run(["true"])` minus bare', "+ms"),
    ("mcp", "mcp_true_at_most_3ms", 'MCP `run_sandboxed(["true"])`, p50', "ms"),
    ("mcp", "calls_per_second_at_least_200", "MCP calls per second, best way", "/s"),
    (
        "observe_fixed_cost",
        "observe_true_at_most_150ms",
        "`cvg-observe -o F -- true`, median",
        "ms",
    ),
    ("trace", "notify", "`cvg-run --trace` (default mode) / `cvg-run`, worst workload", "x"),
    (
        "paths",
        "served_open_at_most_100us",
        "one open the supervisor performs (a deny inside a grant), p50",
        "us",
    ),
)
"""The performance targets: (results key, target name, what, unit). Each is read from
the ``targets`` of its key as the benchmark recorded it; the generate targets come from
the ``generate`` key's sizes."""


def _value(value: float, unit: str) -> str:
    if unit == "x":
        return f"{value:.2f}x"
    if unit == "+ms":
        return f"{value:+.2f} ms"
    if unit == "/s":
        return f"{value:.1f}/s"
    return f"{value:.2f} {unit}"


def render_targets(data: dict[str, Any]) -> list[str]:
    """One row per target: what was measured, the limit, whether it was met, and when;
    a target whose benchmark has not recorded it says so."""
    lines = [
        "| target | measured | limit | met | measured |",
        "|---|---:|---:|---|---|",
    ]

    def row(what: str, value: str, limit: str, met: bool | None, at: str) -> None:
        shown = "not recorded" if met is None else ("**yes**" if met else "**no**")
        lines.append(f"| {what} | {value} | {limit} | {shown} | {at} |")

    for key, name, what, unit in TARGETS:
        entry = data.get(key, {})
        target = entry.get("targets", {}).get(name)
        if target is None:
            row(what, "", "", None, "")
            continue
        at_least = unit == "/s"
        if "values" in target:  # one value per workload: the worst counts
            values = target["values"].values()
            value = min(values) if at_least else max(values)
        else:
            value = target["value"]
        met = meets(value, target["limit"], at_least=at_least)
        bound = ">=" if at_least else "<="
        row(what, _value(value, unit), f"{bound} {_value(target['limit'], unit)}", met,
            when(entry["measured_at"]))  # fmt: skip
    gen = data.get("generate")
    size = None if gen is None else next(
        (s for s in gen["sizes"] if s["events"] == gen["target"]["events"]), None
    )  # fmt: skip
    label = "`cvg-generate`, a synthetic 1,000,000-event observation"
    if gen is None or size is None:
        row(f"{label}: time", "", "", None, "")
        row(f"{label}: peak RSS", "", "", None, "")
    else:
        at = when(gen["measured_at"])
        limit_s, limit_mb = gen["target"]["max_s"], gen["target"]["max_rss_mb"]
        row(f"{label}: median time", f"{size['median_s']:.2f} s", f"<= {limit_s:.2f} s",
            size["median_s"] <= limit_s, at)  # fmt: skip
        row(f"{label}: peak RSS", f"{size['peak_rss_mb']:.1f} MB", f"<= {limit_mb:.1f} MB",
            size["peak_rss_mb"] <= limit_mb, at)  # fmt: skip
    walk = None if gen is None else gen.get("walk")
    if walk is not None:
        at = when(gen["measured_at"])
        label = (
            f"`cvg-generate`, a {walk['events']:,}-event tree walk ({walk['unique_paths']:,} paths)"
        )
        ratio = walk["targets"]["at_most_4x_json_load"]
        rss = walk["targets"]["at_most_200mb"]
        limit = f"<= {_value(ratio['limit'], 'x')}"
        row(f"{label} / `json.load` of it, per-round median", _value(ratio["value"], "x"),
            limit, meets(ratio["value"], ratio["limit"]), at)  # fmt: skip
        row(f"{label}: peak RSS", f"{rss['value']:.1f} MB", f"<= {rss['limit']:.1f} MB",
            meets(rss["value"], rss["limit"]), at)  # fmt: skip
    return lines


def render(hosts: list[tuple[str, dict[str, Any]]], charts: dict[str, str] | None = None) -> str:
    """The text between the markers (without them), ending in a newline; ``charts`` maps
    a host to the link to its peers chart."""
    lines = _head(NOTE)
    if not hosts:
        lines += ["", "No results yet."]
    for stem, data in hosts:
        try:
            if any(key in data for key, *_ in TARGETS) or "generate" in data:
                lines += ["", f"### {stem}: performance targets", "", *render_targets(data)]
            if "run" in data:
                lines += ["", f"### {stem}: running a command", "", *render_run(data["run"])]
            if "probe" in data:
                lines += ["", f"### {stem}: probing the kernel", "", *render_probe(data["probe"])]
            if "bench" in data:
                chart = (charts or {}).get(stem)
                lines += ["", f"### {stem}: cvg and its peers", ""]
                lines += render_bench(data["bench"], chart)
        except (KeyError, TypeError, IndexError) as e:
            raise RenderError(f"results for {stem!r} lack an expected field ({e!r})")
    # The blank line ends the last table before the closing marker.
    return "\n".join(lines) + "\n\n"


def splice(page: str, body: str, markers: tuple[str, str] = (BEGIN, END)) -> str:
    """``page`` with everything between the marker lines replaced by ``body``."""
    first, last = markers
    begin = page.find(first + "\n")
    end = page.find("\n" + last)
    if begin < 0 or end < 0 or end < begin or page.count(first) != 1 or page.count(last) != 1:
        raise RenderError(f"needs one {first} line and one {last} line after it")
    return page[: begin + len(first) + 1] + body + page[end + 1 :]


def chart_path(results: Path, stem: str) -> Path:
    return results / f"{stem}{CHART}"


def read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def expected(
    page: Path = PAGE, results: Path = RESULTS, hosts: list[str] | None = None
) -> dict[Path, str | None]:
    """Every file render writes, with what it would hold, in the order to write them:
    the charts, then the page, which links them, then (as None) the charts of hosts with
    no peers' results, to be removed once the page no longer links them."""
    current = read(page)
    if current is None:
        raise RenderError(f"no {page}")
    loaded = load_hosts(results, hosts)
    charts: dict[Path, str] = {}
    links = {}
    for stem, data in loaded:
        if "bench" not in data:
            continue
        bench = data["bench"]
        path = chart_path(results, stem)
        try:
            charts[path] = peers_svg.chart(stem, bench, when(bench["measured_at"]))
        except (KeyError, TypeError, IndexError, AttributeError, ValueError) as e:
            raise RenderError(f"results 'bench' for {stem!r} cannot be charted ({e!r})")
        # Relative to the page, as a reader of the page on disk or on a forge follows it.
        link = os.path.relpath(path.resolve(), page.resolve().parent)
        links[stem] = Path(link).as_posix()
    try:
        wanted = splice(current, render(loaded, links))
        wanted = splice(wanted, render_falsedenials(loaded), (FD_BEGIN, FD_END))
    except RenderError as e:
        raise RenderError(f"{page}: {e}") from None
    files: dict[Path, str | None] = {**charts, page: wanted}
    if hosts is None:
        files.update((p, None) for p in sorted(results.glob(f"*{CHART}")) if p not in charts)
    return files


def check(page: Path = PAGE, results: Path = RESULTS, hosts: list[str] | None = None) -> list[str]:
    """The unified diff from each file render writes to its rendering; empty when all
    are up to date."""
    diff: list[str] = []
    for path, wanted in expected(page, results, hosts).items():
        current = read(path)
        if current == wanted:
            continue
        diff += difflib.unified_diff(
            (current or "").splitlines(keepends=True),
            (wanted or "").splitlines(keepends=True),
            fromfile=f"{path} (as it is)" if current is not None else f"{path} (missing)",
            tofile=f"{path} (as rendered)" if wanted is not None else f"{path} (removed)",
        )
    return diff


def replace(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a file beside it, so that a reader sees the
    old file or the new one, never a part."""
    tmp = path.with_name(f".{path.name}.render.tmp")
    try:
        tmp.write_bytes(text.encode())
        if path.exists():
            tmp.chmod(path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--host", action="append", help="render only this host's results (repeatable)"
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit 1 if docs/results.md or a chart differs; write nothing",
    )
    parser.add_argument("--page", type=Path, default=PAGE, help=argparse.SUPPRESS)
    parser.add_argument("--results", type=Path, default=RESULTS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        if args.check:
            diff = check(args.page, args.results, args.host)
            if diff:
                sys.stderr.writelines(diff)
                print(
                    "render: docs/results.md or a chart is out of date; "
                    "run `uv run python benchmarks/render.py`",
                    file=sys.stderr,
                )
                return 1
            return 0
        files = expected(args.page, args.results, args.host)
    except RenderError as e:
        print(f"render: {e}", file=sys.stderr)
        return 2
    for path, wanted in files.items():
        if wanted is None:
            path.unlink()
            print(f"render: removed {path} (its host has no peers' results)")
        elif read(path) != wanted:
            replace(path, wanted)
            print(f"render: updated {path}")
        else:
            print(f"render: {path} already up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
