"""The false-denial suite, run whole: the hand-written policies hold, and the generated
ones are no worse than the committed results say.

    uv run pytest benchmarks/test_workloads.py     (about ten minutes on 2 cores)

Needs the workloads' programs (noxfile.py's WORKLOAD_PROGRAMS; `nox -s falsedenial`
installs them) and npm and uv for the MCP servers (the suite installs those into
a .servers folder beside the workloads). The MCP sessions idle GAP seconds on B: more than 30,
so a server the generated policy gives a short wall clock is seen dying in the gap;
the recorded run idles 300.
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
GAP = 35.0


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


suite = _load("cvg_bench_suite", HERE / "workloads" / "suite.py")


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


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("falsedenial")
    return dict(suite.run_suite(suite.workloads(None), None, root, gap=GAP, jobs=2))


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
            assert entry["gap_s"] == GAP > 30
            assert entry["bare"]["B"]["seconds"] > GAP, name


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
    measured: dict[str, Any], label: str, tmp_path: Path
) -> None:
    """A workload denied now that the committed results pass is run again, alone: on two
    busy cores a generated policy sized from a quick observation can run out of wall
    clock. It counts if it is denied alone too."""
    then = committed()
    now_denied = sorted(
        n for n, e in measured["per_workload"].items() if e["verdicts"][label]["denied"]
    )
    limit = then["rates"][label]["false_denials"]
    passed_then = {n for n, e in then["per_workload"].items() if not e["verdicts"][label]["denied"]}
    alone_ok = []
    if len(now_denied) > limit:
        for name in sorted(set(now_denied) & passed_then):
            root = tmp_path / name
            root.mkdir()
            again = suite.run_suite(suite.workloads([name]), None, root, gap=GAP, jobs=1)
            if not again["per_workload"][name]["verdicts"][label]["denied"]:
                alone_ok.append(name)
    still = [n for n in now_denied if n not in alone_ok]
    assert len(still) <= limit, (
        f"{label}: {len(still)} false denials ({', '.join(still)}), "
        f"{limit} committed; regenerate the results only if this is understood"
        + (f" (passed when run alone: {', '.join(alone_ok)})" if alone_ok else "")
    )


@pytest.mark.parametrize("k", ["1", "2", "3"])
def test_learning_curve_no_worse_than_committed(measured: dict[str, Any], k: str) -> None:
    then = committed()["curve"]["rates"][k]["false_denials"]
    now = sorted(
        n
        for n in measured["curve"]["workloads"]
        if measured["per_workload"][n]["curve"][f"curve-{k}"]["denied"]
    )
    assert len(now) <= then, f"learned from {k}: {len(now)} false denials ({', '.join(now)})"


def test_overgrants_no_more_than_committed(measured: dict[str, Any]) -> None:
    found = {n: e["overgrants"] for n, e in measured["per_workload"].items() if e.get("overgrants")}
    assert sum(map(len, found.values())) <= committed()["overgrants"], found


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
