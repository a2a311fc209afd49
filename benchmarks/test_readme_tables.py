"""The "What it costs" tables of docs/results.md, and the charts beside the results
files, match benchmarks/results/*.json.

    uv run pytest benchmarks/test_readme_tables.py

Fails when a benchmark result changed and docs/results.md was not re-rendered (run
``uv run python benchmarks/render.py``), or when someone edited the generated part by hand.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

HERE = Path(__file__).resolve().parent


def _load_render() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cvg_bench_render", HERE / "render.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


render = _load_render()


def test_readme_tables_match_results() -> None:
    diff = render.check()
    assert not diff, (
        "docs/results.md's 'What it costs' section drifted from benchmarks/results/; "
        "run `uv run python benchmarks/render.py`:\n" + "".join(diff)
    )


def _copies(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the page and of the results directory (with the charts) under
    ``tmp_path``, as they lie in the tree, so the page's links to the charts hold."""
    root = render.HERE.parent
    results = tmp_path / render.RESULTS.relative_to(root)
    results.mkdir(parents=True)
    for path in sorted(render.RESULTS.iterdir()):
        if path.suffix in (".json", ".svg"):
            (results / path.name).write_bytes(path.read_bytes())
    page = tmp_path / render.PAGE.relative_to(root)
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(render.PAGE.read_text())
    return page, results


def test_check_notices_drift(tmp_path: Path) -> None:
    """The check is not vacuous: a changed number makes it fail, re-rendering fixes it."""
    page, results = _copies(tmp_path)
    assert render.check(page, results) == []

    hosts = render.load_hosts(results, None)
    if not hosts:
        pytest.skip("no results files to alter")
    stem, data = hosts[0]
    section = data.get("run") or data["probe"]
    section["measured_at"] = "1999-01-01T00:00:00+00:00"
    (results / f"{stem}.json").write_text(json.dumps(data))
    assert render.check(page, results) != []
    assert render.main(["--page", str(page), "--results", str(results)]) == 0
    assert render.check(page, results) == []
    assert render.main(["--check", "--page", str(page), "--results", str(results)]) == 0


@pytest.mark.parametrize(
    "key",
    ["run", "probe", "bench", "falsedenial", "trace", "generate", "mcp", "observe_fixed_cost"],
)
def test_each_rendered_key_is_checked(tmp_path: Path, key: str) -> None:
    """A change under any rendered key (bench.py's peers, the false-denial suite, ...)
    makes the check fail until the page is rendered again."""
    page, results = _copies(tmp_path)
    with_key = [(stem, data) for stem, data in render.load_hosts(results, None) if key in data]
    if not with_key:
        pytest.skip(f"no results file has {key!r}")
    stem, data = with_key[0]
    data[key]["measured_at"] = "1999-01-01T00:00:00+00:00"
    (results / f"{stem}.json").write_text(json.dumps(data))
    assert render.check(page, results) != []
    assert render.main(["--page", str(page), "--results", str(results)]) == 0
    assert render.check(page, results) == []
    assert "1999-01-01 00:00:00 UTC" in page.read_text()


def test_falsedenial_markers_are_required(tmp_path: Path) -> None:
    page = tmp_path / "results.md"
    page.write_text("# cvg\n\n<!-- costs:begin -->\n<!-- costs:end -->\n")
    with pytest.raises(render.RenderError, match="falsedenial"):
        render.check(page, render.RESULTS)


def test_markers_are_required(tmp_path: Path) -> None:
    page = tmp_path / "results.md"
    page.write_text("# cvg\n\nno markers here\n")
    with pytest.raises(render.RenderError):
        render.check(page, render.RESULTS)


def _with_peers(tmp_path: Path) -> tuple[Path, Path, str]:
    """The copies of ``_copies`` and the name of a host with peers' results."""
    page, results = _copies(tmp_path)
    stems = [stem for stem, data in render.load_hosts(results, None) if "bench" in data]
    if not stems:
        pytest.skip("no results file has 'bench'")
    return page, results, stems[0]


def test_render_writes_the_chart_the_readme_shows(tmp_path: Path) -> None:
    """Without its chart the check fails; rendering writes it, as peers_svg draws it,
    where the page's image link points."""
    page, results, stem = _with_peers(tmp_path)
    chart = render.chart_path(results, stem)
    chart.unlink(missing_ok=True)
    assert render.check(page, results) != []
    assert render.main(["--page", str(page), "--results", str(results)]) == 0
    bench = json.loads((results / f"{stem}.json").read_text())["bench"]
    drawn = render.peers_svg.chart(stem, bench, render.when(bench["measured_at"]))
    assert chart.read_text(encoding="utf-8") == drawn
    section = page.read_text().split(render.BEGIN)[1].split(render.END)[0]
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", section)
    assert chart.resolve() in [(page.parent / link).resolve() for link in links]
    assert render.check(page, results) == []


def test_check_notices_a_changed_chart(tmp_path: Path) -> None:
    page, results, stem = _with_peers(tmp_path)
    chart = render.chart_path(results, stem)
    chart.write_text(chart.read_text().replace("</svg>", "<!-- edited --></svg>"))
    assert render.main(["--check", "--page", str(page), "--results", str(results)]) == 1
    assert "edited" in chart.read_text()  # --check writes nothing
    assert render.main(["--page", str(page), "--results", str(results)]) == 0
    assert "edited" not in chart.read_text()
    assert not [p.name for p in results.iterdir() if p.name.startswith(".")]


def test_a_chart_without_results_is_removed(tmp_path: Path) -> None:
    page, results = _copies(tmp_path)
    ghost = render.chart_path(results, "gone")
    ghost.write_text("<svg/>")
    assert render.check(page, results) != []
    assert render.main(["--page", str(page), "--results", str(results)]) == 0
    assert not ghost.exists()
    assert render.check(page, results) == []


def test_targets_say_met_unmet_worst_and_not_recorded() -> None:
    at = "2026-01-02T03:04:05+00:00"
    data = {
        "run": {
            "measured_at": at,
            "targets": {
                "cold_true_at_most_2x_python": {"value": 1.5, "limit": 2.0, "met": True},
                "warm_true_within_1ms_of_bare": {"value": 2.5, "limit": 1.0, "met": False},
            },
        },
        "trace": {
            "measured_at": at,
            "targets": {
                "notify": {
                    "limit": 1.5,
                    "values": {"a": 1.2, "b": 1.7},
                    "met": {"a": True, "b": False},
                }
            },
        },
        "generate": {
            "measured_at": at,
            "target": {"events": 10, "max_s": 10.0, "max_rss_mb": 200.0},
            "sizes": [{"events": 10, "median_s": 7.5, "peak_rss_mb": 250.0}],
            "walk": {
                "events": 30,
                "unique_paths": 25,
                "targets": {
                    "at_most_4x_json_load": {"value": 9.5, "limit": 4.0, "met": True},
                    "at_most_200mb": {"value": 150.0, "limit": 200.0, "met": False},
                },
            },
        },
    }
    rows = {line.split(" | ")[0].lstrip("| "): line for line in render.render_targets(data)}
    assert (
        "1.50x | <= 2.00x | **yes** | 2026-01-02 03:04:05 UTC"
        in rows["cold `cvg-run -- true` / bare `python3 -c pass`"]
    )
    assert "+2.50 ms | <= +1.00 ms | **no**" in rows['warm `Sandbox.run(["true"])` minus bare']
    # The worst workload decides, and one unmet is unmet.
    assert (
        "1.70x | <= 1.50x | **no**"
        in rows["`cvg-run --trace` (default mode) / `cvg-run`, worst workload"]
    )
    assert "not recorded" in rows['MCP `run_sandboxed(["true"])`, p50']
    gen = [line for line in rows.values() if "cvg-generate" in line]
    assert "7.50 s | <= 10.00 s | **yes**" in gen[0]
    assert "250.0 MB | <= 200.0 MB | **no**" in gen[1]
    # The tree walk's rows, judged from value and limit, not the recorded flag.
    assert "30-event tree walk (25 paths)" in gen[2]
    assert "9.50x | <= 4.00x | **no**" in gen[2]
    assert "150.0 MB | <= 200.0 MB | **yes**" in gen[3]


def test_met_is_decided_from_value_and_limit(tmp_path: Path) -> None:
    """A recorded "met" flag is not what the page shows: flipping every flag renders
    the same page, and a value moved past its limit turns "yes" into "no"."""
    page, results = _copies(tmp_path)
    hosts = render.load_hosts(results, None)
    with_run = [(stem, data) for stem, data in hosts if "targets" in data.get("run", {})]
    if not with_run:
        pytest.skip("no results file has run targets")
    stem, data = with_run[0]
    for entry in data.values():
        for target in entry.get("targets", {}).values() if isinstance(entry, dict) else []:
            if isinstance(target.get("met"), bool):
                target["met"] = not target["met"]
    (results / f"{stem}.json").write_text(json.dumps(data))
    assert render.check(page, results) == []

    cold = data["run"]["targets"]["cold_true_at_most_2x_python"]
    cold["value"] = cold["limit"] / 2
    assert render.meets(cold["value"], cold["limit"])
    rows = [line for line in render.render_targets(data) if line.startswith("| cold")]
    assert rows and "**yes**" in rows[0]
    cold["value"] = cold["limit"] * 2
    rows = [line for line in render.render_targets(data) if line.startswith("| cold")]
    assert "**no**" in rows[0]
    assert not render.meets(1.0, 2.0, at_least=True) and render.meets(2.0, 2.0, at_least=True)


def test_the_false_denial_target_is_the_recorded_limit() -> None:
    with_fd = [data for _, data in render.load_hosts(render.RESULTS, None) if "falsedenial" in data]
    if not with_fd:
        pytest.skip("no results file has falsedenial")
    fd = with_fd[0]["falsedenial"]
    for r in fd["rates"].values():
        r.update(false_denials=1, runs=10, rate=0.1)
    fd["targets"] = {"hand-B": {"limit": 0.0}, "gen-A": {"limit": 0.25}, "gen-B": {"limit": 0.05}}
    table = [line for line in render.render_falsedenial("h", fd) if "| 1/10 |" in line]
    assert [line.rsplit(" | ", 2)[1:] for line in table] == [
        ["0", "**no** |"],  # hand-B: 10% against 0
        ["<= 25%", "**yes** |"],  # gen-A
        ["<= 5%", "**no** |"],  # gen-B
    ]
