"""The generated Markdown must match escape/results/results.json: neither
escape/results/README.md nor the Results section of docs/results.md may drift."""

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import report  # noqa: E402

DATA = json.loads((HERE / "results" / "results.json").read_text())


def test_results_readme_matches_json():
    assert (HERE / "results" / "README.md").read_text() == report.results_readme(DATA), (
        "escape/results/README.md drifted: run `uv run python escape/run.py --report-only`"
    )


def test_results_page_section_matches_json():
    text = report.PAGE.read_text()
    assert text.count(report.BEGIN) == 1 and text.count(report.END) == 1
    start = text.index(report.BEGIN)
    end = text.index(report.END) + len(report.END)
    assert text[start:end] == report.top_section(DATA), (
        "docs/results.md's Results section drifted: run `uv run python escape/run.py --report-only`"
    )
    assert text.index(report.END) < text.index("## What it costs")


def test_every_attack_has_every_cell_and_a_doc():
    cells = set(DATA["cells"])
    assert len(DATA["attacks"]) >= 70
    for name, a in DATA["attacks"].items():
        assert set(a["cells"]) == cells, name
        assert a["doc"], name
        assert set(a["baseline"]) == {"root", "unpriv"}, name
