"""--baseline: the bare runtime's own needs are merged, and each event says where it came from."""

from __future__ import annotations

import json
from pathlib import Path

from importhelp import FIXTURES, obs, report, run_cli

from cvg_import.importer import Baseline, import_divergence
from cvg_policy.variables import system_python
from cvg_schema import Event, Executable, Observation, dumps, loads_as

SSH_EXFIL = FIXTURES / "mcp-mal-001-note-reader-ssh-exfil.json"


def _baseline() -> Observation:
    return Observation(
        argv=["/usr/bin/python3.11", "-c", "pass"],
        cwd="/work/here",
        home="/home/u",
        scratch=["/tmp/cvg-observe-scratch-abc"],
        events=[
            Event(id="e1", op="execute", syscall="execve", path="/usr/bin/python3.11", result="ok"),
            Event(
                id="e2", op="read", syscall="openat", path="/usr/lib/python3.11/os.py", result="ok"
            ),
            Event(id="e3", op="read", syscall="openat", path="/home/u/.local/lib", result="ENOENT"),
            Event(
                id="e4",
                op="write",
                syscall="openat",
                path="/tmp/cvg-observe-scratch-abc/x",
                result="ok",
            ),
            Event(id="e5", op="read", syscall="stat", path="/work/here", result="ok"),
            Event(
                id="e6",
                op="read",
                syscall="openat",
                path="/etc/shadow",
                result="EACCES",
                denied_while_learning=True,
                denied_by="landlock",
            ),
        ],
        executables=[
            Executable(
                path="/usr/bin/python3.11", interpreter="/lib64/ld-linux-x86-64.so.2", event_id="e1"
            )
        ],
    )


def test_merge_appends_renumbered_and_marked() -> None:
    base = _baseline()
    o = import_divergence(
        SSH_EXFIL.read_bytes(), baseline=Baseline(base, "runtime.json", "sha256:00")
    )
    assert loads_as(Observation, dumps(o)) == o
    ids = [e.id for e in o.events]
    assert ids == [f"e{i}" for i in range(1, 9)]
    report_events, base_events = o.events[:2], o.events[2:]
    assert all((e.source or {})["origin"] == "report" for e in report_events)
    assert [(e.source or {})["origin"] for e in base_events] == ["baseline"] * 6
    assert [(e.source or {})["baseline_id"] for e in base_events] == [e.id for e in base.events]
    # The report's overlay is the home; the baseline's home moves beneath it, its
    # scratch joins the list, and its cwd stands for the tool's (no artifact root).
    overlay = "/tmp/divergence-overlay-29895-1795956902153850204-0"
    assert o.home == f"{overlay}/home"
    assert o.scratch == [f"{overlay}/scratch", "/tmp/cvg-observe-scratch-abc"]
    assert o.cwd == "/work/here"
    assert [e.path for e in base_events] == [
        "/usr/bin/python3.11",
        "/usr/lib/python3.11/os.py",
        f"{overlay}/home/.local/lib",
        "/tmp/cvg-observe-scratch-abc/x",
        "/work/here",
        "/etc/shadow",
    ]
    # Failures and learning denials keep their marks.
    assert base_events[2].result == "ENOENT"
    assert base_events[5].denied_while_learning and base_events[5].denied_by == "landlock"
    # The executable follows its event's new id and keeps its loader.
    (exe,) = o.executables
    assert exe.event_id == "e3" and o.event("e3").path == "/usr/bin/python3.11"
    assert exe.interpreter == "/lib64/ld-linux-x86-64.so.2"
    assert not any(n.startswith("no baseline merged") for n in o.notes)
    assert any("e3..e8" in n and "baseline" in n for n in o.notes)
    assert o.source is not None
    assert o.source["baseline"]["argv"] == base.argv  # type: ignore[index]


def test_baseline_cwd_moves_to_the_artifact_root() -> None:
    base = _baseline()
    root = "/srv/tool"
    o = import_divergence(
        json.dumps(report(obs("fs_read", "/etc/hosts"))).encode(),
        root=root,
        baseline=Baseline(base, None, None),
    )
    assert o.cwd == root and o.home == "/home/u"
    paths = [e.path for e in o.events[1:]]
    assert paths[2] == "/home/u/.local/lib" and paths[4] == root


def test_without_baseline_the_gap_is_said() -> None:
    o = import_divergence(json.dumps(report(obs("fs_read", "/usr/bin/pip"))).encode())
    assert any(n.startswith("no baseline merged") for n in o.notes)
    assert any("runtime's own reads" in n for n in o.notes)
    assert o.partial


def test_cvg_observe_baseline_end_to_end(runtime: Path) -> None:
    """A real baseline, made the way the docs say, through the command line."""
    result = run_cli("divergence", str(SSH_EXFIL), "--baseline", str(runtime))
    assert result.returncode == 0, result.stderr
    o = loads_as(Observation, result.stdout)
    origins = [(e.source or {})["origin"] for e in o.events]
    assert origins[:2] == ["report", "report"] and set(origins[2:]) == {"baseline"}
    assert len(origins) > 20  # the interpreter, its libraries, its standard library
    paths = {e.path for e in o.events}
    python = system_python()
    assert python["PYTHON"] in paths
    assert any(p and p.startswith(python["PYTHON_STDLIB"] + "/") for p in paths)
    assert o.cwd == str(runtime.parent)  # no artifact root: the baseline's stands for it
    assert o.executables and o.executables[0].interpreter
