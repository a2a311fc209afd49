"""The false-denial gate's recordings (benchmarks/results/falsedenial-recordings.json).

Each run of benchmarks/test_workloads.py appends one recording: when and where it ran,
the idle gap, which workloads each generated policy denied, and each rerun alone with
its outcome. A denial seen twice in the last WINDOW recordings (in the full run or a
rerun) fails the gate: a denial that comes back now and then is not forgiven each time
a rerun happens to pass. Only the last WINDOW recordings are kept.
"""

from __future__ import annotations

import json
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cvg_schema import write_atomic

PATH = Path(__file__).resolve().parent / "results" / "falsedenial-recordings.json"
WINDOW = 10


def load(path: Path = PATH) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return []
    recordings: list[dict[str, Any]] = data["recordings"]
    return recordings


def recording(
    gap_s: float, denied: dict[str, list[str]], reruns: list[dict[str, str]]
) -> dict[str, Any]:
    """One gate run: ``denied`` by label (gen-A, gen-B), ``reruns`` as
    ``{"label", "workload", "outcome": "denied" | "passed"}``."""
    return {
        "at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": socket.gethostname(),
        "gap_s": gap_s,
        "denied": {label: sorted(names) for label, names in sorted(denied.items())},
        "reruns": reruns,
    }


def append(entry: dict[str, Any], path: Path = PATH) -> list[dict[str, Any]]:
    """The recordings with ``entry`` last, the last WINDOW of them written back."""
    kept = [*load(path), entry][-WINDOW:]
    text = json.dumps({"window": WINDOW, "recordings": kept}, indent=2, sort_keys=True)
    write_atomic(str(path), (text + "\n").encode())
    return kept


def sightings(recordings: list[dict[str, Any]], label: str, workload: str) -> int:
    """How often ``label``'s policy for ``workload`` was seen denying, in the full runs
    and the reruns alone, over the last WINDOW recordings."""
    seen = 0
    for r in recordings[-WINDOW:]:
        seen += workload in r["denied"].get(label, [])
        seen += sum(
            1
            for again in r["reruns"]
            if (again["label"], again["workload"], again["outcome"]) == (label, workload, "denied")
        )
    return seen
