"""A bar chart, as SVG text, of cvg and its peers from a results file's ``"bench"`` key
(bench.py): one panel per workload, in each a bar per configuration at its median (p50)
with a whisker to its p95, labelled with the p50 and the median per-round ratio to bare.

render.py writes it beside the results file and links it from docs/results.md. Every number
in the output has a fixed precision and nothing in it comes from anywhere but the
results, so the same results give the same bytes on every machine.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any
from xml.sax.saxutils import escape

PAD = 16
FONT = 11
# No font metrics without a renderer: a label's width is estimated from its length, at
# a width per character no sans-serif glyph at 11 px exceeds on average.
CHAR_W = 6.6
PLOT_W = 440
ROW = 20
BAR = 13
COLOURS = {"bare": "#9a9a9a", "cvg": "#3b6fb6", "peer": "#d9822b"}
LEGEND = "Grey: bare, blue: cvg, orange: its peers"
# XML 1.0 has no way to write these, escaped or not.
_UNWRITABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def text(value: object) -> str:
    """``value`` as XML character data, also fit for a double-quoted attribute."""
    return escape(_UNWRITABLE.sub("\ufffd", str(value)), {'"': "&quot;"})


def num(value: float) -> str:
    return f"{value:.1f}"


def ordered(names: list[str], present: Mapping[str, Any]) -> list[str]:
    """``names`` that are in ``present``, then the rest of ``present`` sorted."""
    first = [n for n in names if n in present]
    return first + sorted(set(present) - set(first))


def colour(config: str) -> str:
    if config == "bare":
        return COLOURS["bare"]
    return COLOURS["cvg"] if config.startswith("cvg") else COLOURS["peer"]


def label(s: Mapping[str, Any]) -> str:
    return f"{s['p50_ms']:.1f} ms (x{s['ratio_to_bare_median']:.2f})"


class Scale:
    """A log scale from the decade below half the smallest p50, so that the smallest
    bar still has a length, to the first of 1, 2 or 5 times a power of ten at or above
    the largest p95 (a whole decade more would leave most of a panel empty)."""

    def __init__(self, stats: list[Mapping[str, Any]]) -> None:
        p50s = [s["p50_ms"] for s in stats if s["p50_ms"] > 0]
        top = max((max(s["p50_ms"], s["p95_ms"]) for s in stats), default=0.0)
        self.low = math.floor(math.log10(min(p50s) / 2)) if p50s else 0
        self.high = float(self.low + 1)
        if top > 10.0 ** (self.low + 1):
            power = math.floor(math.log10(top))
            step = next(m for m in (1, 2, 5, 10) if top <= m * 10.0**power)
            self.high = power + math.log10(step)

    def x(self, ms: float) -> float:
        """Distance from the panel's left edge, in pixels."""
        if ms <= 0:
            return 0.0
        share = (math.log10(ms) - self.low) / (self.high - self.low)
        return min(1.0, max(0.0, share)) * PLOT_W

    def ticks(self) -> list[tuple[float, str | None]]:
        """(position, label) of each gridline: a labelled one per decade, unlabelled ones
        at 2 and 5 times it."""
        out: list[tuple[float, str | None]] = []
        k = self.low
        while k <= self.high:
            decade = str(10**k) if k >= 0 else "0." + "0" * (-k - 1) + "1"
            out.append((self.x(10.0**k), f"{decade} ms"))
            out += [(self.x(m * 10.0**k), None) for m in (2, 5) if k + math.log10(m) <= self.high]
            k += 1
        return out


def _panel(
    workload: str, rows: list[tuple[str, Mapping[str, Any]]], x0: float, y: float
) -> tuple[list[str], float]:
    """The SVG lines of one workload's panel whose top is at ``y``, and its bottom."""
    scale = Scale([s for _, s in rows])
    out = [f'<g class="panel" data-workload="{text(workload)}">']
    y += 14
    out.append(f'<text x="{PAD}" y="{num(y)}" font-weight="bold">{text(workload)}</text>')
    y += 8
    bottom = y + ROW * len(rows)
    for at, tick in scale.ticks():
        grey = "#c8c8c8" if tick else "#ececec"
        out.append(
            f'<line x1="{num(x0 + at)}" y1="{num(y)}" x2="{num(x0 + at)}" '
            f'y2="{num(bottom)}" stroke="{grey}"/>'
        )
        if tick:
            out.append(
                f'<text x="{num(x0 + at)}" y="{num(bottom + 13)}" text-anchor="middle" '
                f'fill="#555">{tick}</text>'
            )
    for i, (config, s) in enumerate(rows):
        top = y + i * ROW
        mid = top + ROW / 2
        end50, end95 = x0 + scale.x(s["p50_ms"]), x0 + scale.x(max(s["p50_ms"], s["p95_ms"]))
        out += [
            f'<g class="row" data-workload="{text(workload)}" data-config="{text(config)}">',
            f'<text x="{num(x0 - 6)}" y="{num(mid + 4)}" text-anchor="end">{text(config)}</text>',
            f'<rect class="bar" x="{num(x0)}" y="{num(top + (ROW - BAR) / 2)}" '
            f'width="{num(end50 - x0)}" height="{BAR}" fill="{colour(config)}">'
            f"<title>{text(config)} on {text(workload)}: p50 {s['p50_ms']:.1f} ms, "
            f"p95 {s['p95_ms']:.1f} ms, x{s['ratio_to_bare_median']:.2f} bare</title></rect>",
            f'<line class="whisker" x1="{num(end50)}" y1="{num(mid)}" x2="{num(end95)}" '
            f'y2="{num(mid)}" stroke="#333"/>',
            f'<line x1="{num(end95)}" y1="{num(mid - 4)}" x2="{num(end95)}" '
            f'y2="{num(mid + 4)}" stroke="#333"/>',
            f'<text x="{num(end95 + 4)}" y="{num(mid + 4)}">{text(label(s))}</text>',
            "</g>",
        ]
    out.append("</g>")
    return out, bottom + 13


def chart(stem: str, bench: Mapping[str, Any], measured: str) -> str:
    """The SVG of ``bench`` (a results file's ``"bench"`` entry) for host ``stem``,
    measured at ``measured`` (as docs/results.md writes the time)."""
    results = bench["results"]
    panels = [
        (w, [(c, results[w][c]) for c in ordered(bench["config_order"], results[w])])
        for w in ordered(bench["workload_order"], results)
    ]
    heading = [
        f"{stem}: cvg and its peers, per workload",
        f"Linux {bench['kernel']} ({bench['arch']}), {bench['cpu']} x{bench['cpus']}; "
        f"measured {measured}, {bench['runs']} interleaved rounds",
        "Bars are medians (p50) with whiskers to p95, labelled with the p50 and the median "
        "per-round ratio to bare;",
        f"log scale, each workload its own. {LEGEND}.",
    ]
    title = (
        f"{heading[0]}. {heading[1]}. Bars are medians (p50) with whiskers to p95, on a log "
        "scale per workload."
    )
    missing = sorted(bench.get("unavailable", {}))
    footer = f"Not measured here: {', '.join(missing)}." if missing else ""
    names = [c for _, rows in panels for c, _ in rows]
    labels = [label(s) for _, rows in panels for _, s in rows]
    x0 = PAD + CHAR_W * max(map(len, names), default=0) + 10
    width = math.ceil(
        max(
            x0 + PLOT_W + CHAR_W * max(map(len, labels), default=0) + 12 + PAD,
            PAD * 2 + CHAR_W * max(len(line) for line in [*heading, footer]),
        )
    )
    body: list[str] = []
    y = PAD + 4.0
    for i, line in enumerate(heading):
        y += 18 if i == 0 else 15
        weight = ' font-weight="bold" font-size="14"' if i == 0 else ""
        body.append(f'<text x="{PAD}" y="{num(y)}"{weight}>{text(line)}</text>')
    y += 6
    for workload, rows in panels:
        lines, y = _panel(workload, rows, x0, y)
        body += lines
        y += 10
    if footer:
        y += 14
        body.append(f'<text x="{PAD}" y="{num(y)}" fill="#555">{text(footer)}</text>')
    height = math.ceil(y + PAD)
    desc = [
        "Per workload, each configuration's p50 and p95 in ms and its median per-round "
        "ratio to bare."
    ]
    for workload, rows in panels:
        cells = "; ".join(
            f"{c} {s['p50_ms']:.1f} / {s['p95_ms']:.1f} ms (x{s['ratio_to_bare_median']:.2f})"
            for c, s in rows
        )
        desc.append(f"{workload}: {cells}.")
    desc += [f"{name}: not measured here: {bench['unavailable'][name]}" for name in missing]
    return "\n".join(
        [
            '<?xml version="1.0" encoding="UTF-8"?>',
            "<!-- generated by `uv run python benchmarks/render.py` from benchmarks/results/; "
            "do not edit by hand -->",
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-labelledby="title desc" '
            f'font-family="sans-serif" font-size="{FONT}">',
            f'<title id="title">{text(title)}</title>',
            f'<desc id="desc">{text(" ".join(desc))}</desc>',
            f'<rect width="{width}" height="{height}" fill="#fff"/>',
            *body,
            "</svg>",
            "",
        ]
    )
