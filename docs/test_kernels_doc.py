"""docs/kernels.md and the real-kernel escape results (escape/results/linux-X.Y/) say the
same thing: each results file's summary is what its attacks' cells count, its README's
per-cell table is that summary, and the page's kernel table and escape table are those
results. A rerun of `nox -s kernels` that changes an outcome fails here until the page
says so too."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "kernels.md"
RESULTS = ROOT / "escape" / "results"
OUTCOMES = ("contained", "documented-limit", "escaped", "not-proven")


def _kernels() -> dict[str, int]:
    """noxfile.py's KERNELS (series: the Landlock ABI it must report), read, not run."""
    tree = ast.parse((ROOT / "noxfile.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "KERNELS" for t in node.targets
        ):
            value: dict[str, int] = ast.literal_eval(node.value)
            return value
    raise AssertionError("noxfile.py has no KERNELS")


KERNELS = _kernels()


def _results(series: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((RESULTS / f"linux-{series}" / "results.json").read_text())
    return data


def _escaped(data: dict[str, Any], cell: str) -> list[str]:
    attacks = data["attacks"]
    return sorted(n for n, a in attacks.items() if a["cells"][cell]["outcome"] == "escaped")


def _rows(text: str, first: str) -> list[list[str]]:
    """The cells of each table row whose first cell matches ``first`` (a regex)."""
    rows = []
    for line in text.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if re.fullmatch(first, cells[0]):
                rows.append(cells)
    return rows


@pytest.mark.parametrize("series", sorted(KERNELS))
def test_results_count_their_cells(series: str) -> None:
    data = _results(series)
    cells = [f"{who}/linux-{series}" for who in ("root", "unpriv")]
    assert data["cells"] == cells
    assert data["host"]["native_abi"] == KERNELS[series]
    assert isinstance(data["elapsed_seconds"], int | float) and data["elapsed_seconds"] > 0
    for cell in cells:
        counted = dict.fromkeys(OUTCOMES, 0)
        for a in data["attacks"].values():
            counted[a["cells"][cell]["outcome"]] += 1
        summary = data["summary"][cell]
        assert {o: summary[o] for o in OUTCOMES} == counted, cell
        assert summary["proven"] == len(data["attacks"]) - counted["not-proven"], cell


@pytest.mark.parametrize("series", sorted(KERNELS))
def test_results_readme_shows_the_summary(series: str) -> None:
    data = _results(series)
    readme = (RESULTS / f"linux-{series}" / "README.md").read_text()
    shown = {r[0].strip("`"): r[1:7] for r in _rows(readme, rf"`\w+/linux-{re.escape(series)}`")}
    assert set(shown) == set(data["cells"])
    for cell, numbers in shown.items():
        s = data["summary"][cell]
        want = [len(data["attacks"]), s["proven"], s["contained"], s["documented-limit"],
                s["escaped"], s["not-proven"]]  # fmt: skip
        assert [int(n) for n in numbers] == want, cell
    assert f"Linux {data['host']['kernel']} " in readme
    assert f"native Landlock ABI {KERNELS[series]};" in readme


def test_the_page_names_the_measured_kernels() -> None:
    page = PAGE.read_text()
    for series, abi in KERNELS.items():
        kernel = _results(series)["host"]["kernel"]
        rows = _rows(page, re.escape(series))
        assert rows, f"docs/kernels.md has no row for {series}"
        assert f"`linux-image-{kernel}`" in rows[0][2], (series, rows[0])
        assert rows[0][3] == str(abi), (series, rows[0])


def test_the_page_escape_table_is_the_results() -> None:
    page = PAGE.read_text()
    rows = {r[0].strip("`"): r[1:] for r in _rows(page, r"`\w+/linux-[\d.]+`")}
    want = {c for s in KERNELS for c in _results(s)["cells"]}
    assert set(rows) == want
    for series in KERNELS:
        data = _results(series)
        for cell in data["cells"]:
            proven, contained, escaped = rows[cell][:3]
            s = data["summary"][cell]
            assert (int(proven), int(contained)) == (s["proven"], s["contained"]), cell
            assert int(escaped.split(":")[0]) == s["escaped"], cell
            named = re.findall(r"`(\w+)`", escaped)
            if named:  # the first row names them; the next may say "the same"
                assert sorted(named) == _escaped(data, cell), cell
            elif s["escaped"]:
                assert "the same" in escaped, cell
