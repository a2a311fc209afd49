"""The false-denial suite, run whole: the hand-written policies hold, and the generated
ones are no worse than the committed results say.

    uv run pytest benchmarks/test_workloads.py     (about ten minutes on 2 cores)

Needs the workloads' programs (noxfile.py's WORKLOAD_PROGRAMS; `nox -s falsedenial`
installs them) and npm and uv for the MCP servers (the suite installs those into
a .servers folder beside the workloads). The MCP sessions idle on B as long as the
committed run did (its ``gap_s``, 300 s): a server the generated policy gives a short
wall clock is seen dying in the gap, and the gate checks what the results claim.

The generated policies are compared by workload, not by count: a workload denied now
that the committed results pass is run again alone, and the full run and the rerun
are recorded with their outcomes (denial_history.py). A denial seen twice in the last
recordings fails.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


suite = _load("cvg_bench_suite", HERE / "workloads" / "suite.py")
history = _load("cvg_bench_denial_history", HERE / "denial_history.py")


def committed() -> dict[str, Any]:
    """The committed default-mode results with the most workloads (any host)."""
    found: list[dict[str, Any]] = []
    for path in sorted((HERE / "results").glob("*.json")):
        entry = json.loads(path.read_text()).get("falsedenial")
        if entry:
            found.append(entry)
    if not found:
        pytest.fail("no committed falsedenial results; run benchmarks/workloads/suite.py")
    return max(found, key=lambda e: len(e["workloads"]))


def gap() -> float:
    """The idle gap of the committed run, which this one repeats."""
    return float(committed()["gap_s"])


def denied_by(entry: dict[str, Any], label: str) -> set[str]:
    return {n for n, e in entry["per_workload"].items() if e["verdicts"][label]["denied"]}


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("falsedenial")
    return dict(suite.run_suite(suite.workloads(None), None, root, gap=gap(), jobs=2))


@pytest.fixture(scope="module")
def recordings(
    measured: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> list[dict[str, Any]]:
    """Each generated policy's new denials (workloads the committed results pass) run
    again alone, and this run recorded with the reruns' outcomes: on two busy cores a
    generated policy sized from a quick observation can run out of wall clock once."""
    then = committed()
    denied, reruns = {}, []
    for label in ("gen-A", "gen-B"):
        denied[label] = sorted(denied_by(measured, label))
        for name in sorted(denied_by(measured, label) - denied_by(then, label)):
            root = tmp_path_factory.mktemp(f"again-{label}-{name}")
            again = suite.run_suite(suite.workloads([name]), None, root, gap=gap(), jobs=1)
            outcome = (
                "denied" if again["per_workload"][name]["verdicts"][label]["denied"] else "passed"
            )
            reruns.append({"label": label, "workload": name, "outcome": outcome})
    return list(history.append(history.recording(gap(), denied, reruns)))


def test_every_workload_runs_bare(measured: dict[str, Any]) -> None:
    assert len(measured["workloads"]) >= 40
    assert measured["invalid_workloads"] == {}, "a workload's program is missing or broken"
    servers = [n for n, e in measured["per_workload"].items() if "gap_s" in e]
    assert len(servers) >= 9  # mcp-stdio's own server and the eight third-party ones
    assert len(measured["curve"]["workloads"]) >= 10


def test_the_sessions_idled(measured: dict[str, Any]) -> None:
    """The gap happened: every server's bare session on B lasted longer than it."""
    for name, entry in measured["per_workload"].items():
        if "gap_s" in entry:
            assert entry["gap_s"] == gap() > 30
            assert entry["bare"]["B"]["seconds"] > gap(), name


def test_hand_written_policies_deny_nothing(measured: dict[str, Any]) -> None:
    """On every input, A to D."""
    assert measured["hand_denials"] == []
    denied = {
        f"{name} {label}": v.get("cause")
        for name, entry in measured["per_workload"].items()
        for label, v in entry["verdicts"].items()
        if label.startswith("hand-") and v["denied"]
    }
    assert denied == {}


@pytest.mark.parametrize("label", ["gen-A", "gen-B"])
def test_generated_policies_no_worse_than_committed(
    measured: dict[str, Any], recordings: list[dict[str, Any]], label: str
) -> None:
    """By workload: a denial the committed results do not have counts when it was seen
    twice in the recent recordings (this run and its rerun alone included)."""
    new = sorted(denied_by(measured, label) - denied_by(committed(), label))
    seen = {n: history.sightings(recordings, label, n) for n in new}
    failing = [f"{n} (seen {k} times)" for n, k in seen.items() if k >= 2]
    assert not failing, (
        f"{label}: denied now, passed in the committed results: {', '.join(failing)}; "
        f"see {history.PATH.name}; regenerate the results only if this is understood"
    )


@pytest.mark.parametrize("k", ["1", "2", "3"])
def test_learning_curve_no_worse_than_committed(measured: dict[str, Any], k: str) -> None:
    """By workload: none denied now that the committed curve passes."""

    def denied(entry: dict[str, Any]) -> set[str]:
        return {
            n for n in entry["curve"]["workloads"]
            if entry["per_workload"][n]["curve"][f"curve-{k}"]["denied"]
        }  # fmt: skip

    new = sorted(denied(measured) - denied(committed()))
    assert not new, f"learned from {k}: newly denied {', '.join(new)}"


def test_overgrants_no_more_than_committed(measured: dict[str, Any]) -> None:
    """By workload: no overgrant the committed results do not list for it."""
    then = committed()["per_workload"]
    new = {
        n: sorted(
            set(map(str, e["overgrants"])) - set(map(str, then.get(n, {}).get("overgrants", [])))
        )
        for n, e in measured["per_workload"].items()
        if e.get("overgrants")
    }
    assert not {n: o for n, o in new.items() if o}, new


def test_a_denial_seen_twice_is_counted(tmp_path: Path) -> None:
    """The recordings are not forgiving: one sighting passes, a second in the window
    fails, and a sighting older than the window is forgotten."""
    path = tmp_path / "recordings.json"
    passed = history.recording(
        300.0, {"gen-B": ["x"]}, [{"label": "gen-B", "workload": "x", "outcome": "passed"}]
    )
    kept = history.append(passed, path)
    assert history.sightings(kept, "gen-B", "x") == 1 and history.sightings(kept, "gen-A", "x") == 0
    denied = history.recording(
        300.0, {"gen-B": ["x"]}, [{"label": "gen-B", "workload": "x", "outcome": "denied"}]
    )
    assert history.sightings([denied], "gen-B", "x") == 2
    kept = history.append(history.recording(300.0, {"gen-B": ["x"]}, []), path)
    assert history.sightings(kept, "gen-B", "x") == 2
    for _ in range(history.WINDOW - 1):
        kept = history.append(history.recording(300.0, {}, []), path)
    assert len(kept) == history.WINDOW and history.sightings(kept, "gen-B", "x") == 1
    assert history.load(path) == kept


def test_a_denial_is_noticed(tmp_path: Path) -> None:
    """The judge is not vacuous: a hand policy without the workload's program is a false
    denial on both inputs."""
    work = tmp_path / "jq"
    shutil.copytree(HERE / "workloads" / "jq", work)
    policy = (work / "policy.yaml").read_text()
    assert "    - /usr/bin/jq\n" in policy
    (work / "policy.yaml").write_text(policy.replace("    - /usr/bin/jq\n", ""))
    root = tmp_path / "runs"
    root.mkdir()
    entry = suite.run_suite([work], None, root)["per_workload"]["jq"]
    assert entry["verdicts"]["hand-A"]["denied"]
    assert entry["verdicts"]["hand-B"]["denied"]
    assert not entry["verdicts"]["gen-A"]["denied"]


def test_wilson_interval() -> None:
    # 0 of n: the upper bound is z^2 / (n + z^2); 8 of 16 is symmetric about a half.
    low, high = suite.wilson(0, 16)
    assert low == 0.0 and high == pytest.approx(1.959964**2 / (16 + 1.959964**2))
    low, high = suite.wilson(8, 16)
    assert low == pytest.approx(0.2800, abs=1e-4) and high == pytest.approx(1 - low)


classify = _load("cvg_bench_classify", HERE / "workloads" / "classify.py")


@pytest.mark.parametrize(
    ("denial", "expected"),
    [
        ({"op": "execute", "path": "/usr/bin/wc"}, "exec"),
        ({"op": "create", "path": "/w/out"}, "output-dir"),
        ({"op": "read", "path": "/w/conf/x.json"}, "input-dir"),
        ({"op": "read", "path": "/proc/self/maps"}, "proc-self"),
        ({"op": "read", "path": "/proc/4242/status"}, "proc-self"),
        ({"op": "read", "path": "/etc/hosts"}, "resolver"),
        ({"op": "connect", "port": 53}, "resolver"),
        ({"op": "mmap", "rule": "resources.memory_mb", "right": "RLIMIT_AS"}, "memory"),
        ({"op": "ioctl", "path": "/dev/tty"}, "other"),
    ],
)
def test_a_denial_is_classed(denial: dict[str, Any], expected: str) -> None:
    assert classify.of_denial(denial) == expected


def test_the_denial_the_tool_reported_decides() -> None:
    """A runtime's refused look at /proc at start is not why a run failed: the path the
    tool's own error names is."""
    record = {
        "cwd": "/w",
        "exit": {"meaning": "exited"},
        "denials": [
            {"op": "read", "path": "/proc/self/cgroup", "mechanism": "landlock_fs"},
            {"op": "read", "path": "/dev/urandom", "mechanism": "none"},
            {"op": "create", "path": "/w/out", "mechanism": "landlock_fs"},
        ],
    }
    said = "mkdir 'out': Permission denied"
    assert classify.classify(record, 1, said, env=[], passes_without_gap=False) == "output-dir"
    assert classify.classify(record, 1, "", env=[], passes_without_gap=False) == "output-dir"
    assert classify.classify(record, 1, "", env=["X"], passes_without_gap=False) == "env"
    assert classify.classify(record, 1, "", env=[], passes_without_gap=True) == "wall-clock"
    oom = "RangeError: WebAssembly.instantiate(): Out of memory"
    assert classify.classify(record, 1, oom, env=[], passes_without_gap=False) == "memory"
    assert classify.classify(None, 124, "", env=[], passes_without_gap=None) == "wall-clock"
    assert classify.classify(None, 1, "", env=[], passes_without_gap=None) == "other"


def test_env_missing_is_what_the_host_sets_and_only_the_hand_policy_passes() -> None:
    hand = {"environment": {"set": {"PATH": "/usr/bin"}, "pass": ["LANG", "MEMORY_FILE_PATH"]}}
    gen = {"environment": {"set": {"PATH": "/usr/bin"}, "pass": ["LANG"]}}
    assert classify.env_missing(hand, gen, {"MEMORY_FILE_PATH"}) == ["MEMORY_FILE_PATH"]
    assert classify.env_missing(hand, gen, set()) == []
    assert classify.env_missing(hand, hand, {"MEMORY_FILE_PATH"}) == []
