"""The peers chart (peers_svg.py) is well-formed SVG that draws what the results say.

uv run pytest benchmarks/test_peers_svg.py
"""

from __future__ import annotations

import json
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import peers_svg  # noqa: E402  (benchmarks/ is not a package)

SVG = "{http://www.w3.org/2000/svg}"
GEOMETRY = ("x", "y", "width", "height", "x1", "y1", "x2", "y2")


def bench(times: dict[str, dict[str, tuple[float, float]]], **extra: Any) -> dict[str, Any]:
    """A ``"bench"`` entry with ``times[workload][config] = (p50, p95)``; the ratio to
    bare is p50 over bare's p50, as a results file would roughly have it."""
    results = {
        w: {
            c: {"p50_ms": p50, "p95_ms": p95, "ratio_to_bare_median": p50 / by_config["bare"][0]}
            for c, (p50, p95) in by_config.items()
        }
        for w, by_config in times.items()
    }
    configs = list(dict.fromkeys(c for by_config in times.values() for c in by_config))
    return {
        "kernel": "6.1.0-test",
        "arch": "x86_64",
        "cpu": "Test CPU",
        "cpus": 2,
        "measured_at": "2025-01-02T03:04:05+00:00",
        "runs": 17,
        "workload_order": list(times),
        "config_order": configs,
        "results": results,
        "unavailable": {},
        **extra,
    }


SAMPLE = bench(
    {
        "true": {
            "bare": (0.9, 1.6),
            "cvg-warm": (4.1, 9.0),
            "bwrap": (5.3, 6.8),
            "cvg-observe": (640.0, 820.0),
        },
        "wc -w 10MiB": {"bare": (57.0, 66.0), "cvg-warm": (61.0, 73.0), "bwrap": (59.0, 72.0)},
    },
    unavailable={"sandlock-cli": "no CLI"},
)


def committed() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in sorted((HERE / "results").glob("*.json")):
        data = json.loads(path.read_text())
        if isinstance(data, dict) and "bench" in data:
            found.append((path.stem, data["bench"]))
    return found


CASES = [("sample", SAMPLE), *committed()]


def draw(stem: str, entry: dict[str, Any]) -> ET.Element:
    return ET.fromstring(peers_svg.chart(stem, entry, "then").encode())


def rows(root: ET.Element) -> dict[tuple[str, str], float]:
    """(workload, configuration) -> the width of its bar, for every bar drawn."""
    found: dict[tuple[str, str], float] = {}
    for row in root.iter(f"{SVG}g"):
        if row.get("class") != "row":
            continue
        bars = [r for r in row.iter(f"{SVG}rect") if r.get("class") == "bar"]
        assert len(bars) == 1, ET.tostring(row)
        key = (row.attrib["data-workload"], row.attrib["data-config"])
        assert key not in found, key
        found[key] = float(bars[0].attrib["width"])
    return found


@pytest.mark.parametrize(("stem", "entry"), CASES, ids=[s for s, _ in CASES])
def test_one_bar_per_workload_and_configuration(stem: str, entry: dict[str, Any]) -> None:
    root = draw(stem, entry)
    assert root.tag == f"{SVG}svg"
    assert root.find(f"{SVG}title") is not None and root.find(f"{SVG}desc") is not None
    present = {(w, c) for w, by_config in entry["results"].items() for c in by_config}
    assert set(rows(root)) == present
    assert not {name for _, name in present} & set(entry["unavailable"])


@pytest.mark.parametrize(("stem", "entry"), CASES, ids=[s for s, _ in CASES])
def test_bars_grow_with_p50_and_the_shortest_stays_readable(
    stem: str, entry: dict[str, Any]
) -> None:
    """Within a panel a slower configuration has a longer bar; and the scale is such
    that `true` bare, hundreds of times faster than the slowest, is still a bar (on a
    linear scale it would be a sliver)."""
    widths = rows(draw(stem, entry))
    for workload, by_config in entry["results"].items():
        ranked = sorted(by_config, key=lambda c: by_config[c]["p50_ms"])
        drawn = [widths[(workload, c)] for c in ranked]
        assert drawn == sorted(drawn), (workload, ranked, drawn)
        assert drawn[0] >= drawn[-1] / 10, (workload, drawn)


def test_a_slower_p50_is_a_longer_bar() -> None:
    entry = bench({"w": {"bare": (10.0, 12.0), "a": (20.0, 21.0), "b": (40.0, 44.0)}})
    widths = rows(draw("h", entry))
    assert widths["w", "bare"] < widths["w", "a"] < widths["w", "b"]


def test_whiskers_reach_from_the_bar_to_p95() -> None:
    root = draw("sample", SAMPLE)
    for row in (g for g in root.iter(f"{SVG}g") if g.get("class") == "row"):
        bar = next(r for r in row.iter(f"{SVG}rect") if r.get("class") == "bar")
        whisker = next(x for x in row.iter(f"{SVG}line") if x.get("class") == "whisker")
        end = float(bar.attrib["x"]) + float(bar.attrib["width"])
        assert float(whisker.attrib["x1"]) == pytest.approx(end, abs=0.11)
        assert float(whisker.attrib["x2"]) > float(whisker.attrib["x1"])


def test_labels_say_p50_and_ratio_to_bare() -> None:
    texts = [t.text for t in draw("sample", SAMPLE).iter(f"{SVG}text")]
    assert "640.0 ms (x711.11)" in texts and "0.9 ms (x1.00)" in texts


def test_title_says_host_kernel_time_rounds_and_what_bars_are() -> None:
    root = draw("myhost", SAMPLE)
    title = root.findtext(f"{SVG}title") or ""
    for part in ("myhost", "6.1.0-test", "then", "17 interleaved rounds", "p50", "p95"):
        assert part in title, part
    heading = " ".join(t.text or "" for t in root.iter(f"{SVG}text"))
    assert "medians (p50) with whiskers to p95" in heading
    assert "Not measured here: sandlock-cli." in heading


def test_text_is_escaped() -> None:
    odd_config, odd_workload = "<b>&\"x'", "a&b <c>"
    entry = bench({odd_workload: {"bare": (1.0, 2.0), odd_config: (3.0, 4.0)}})
    svg = peers_svg.chart("h<&>", entry, "t")
    assert "<b>" not in svg and "a&b" not in svg and "h<&>" not in svg
    root = ET.fromstring(svg.encode())
    assert set(rows(root)) == {(odd_workload, "bare"), (odd_workload, odd_config)}
    texts = {t.text for t in root.iter(f"{SVG}text")}
    assert odd_config in texts and odd_workload in texts
    assert "h<&>" in (root.findtext(f"{SVG}title") or "")


def test_control_characters_still_make_xml() -> None:
    entry = bench({"w\x01": {"bare": (1.0, 2.0)}})
    ET.fromstring(peers_svg.chart("h", entry, "t").encode())


def test_same_results_same_bytes() -> None:
    """Output depends on nothing but its input, and every coordinate is written with
    one decimal (a full-precision float would print the last bits of a log10)."""
    first = peers_svg.chart("h", SAMPLE, "t")
    assert peers_svg.chart("h", json.loads(json.dumps(SAMPLE)), "t") == first
    for element in ET.fromstring(first.encode()).iter():
        for name in GEOMETRY:
            if name in element.attrib:
                assert re.fullmatch(r"\d+(\.\d)?", element.attrib[name]), (name, element.attrib)
