"""Merging a baseline: an observation of the bare runtime, for what Divergence leaves out.

Divergence does not report the language runtime's own reads (the interpreter, its
standard library, ``/etc/ld.so.cache``), so a policy generated from a report alone
cannot even start the tool. A baseline, for example ``cvg-observe -- python3 -c pass``,
supplies them. Its events are appended after the report's, renumbered, and marked
``source.origin = "baseline"`` with their id in the baseline (``source.baseline_id``),
so the output says which event came from where.

One observation has one home and one working directory, so the baseline's are mapped
onto the report's: a path beneath the baseline's ``home`` moves beneath the imported
``home`` (Divergence's overlay HOME) and one beneath its ``cwd`` beneath the artifact
root, when the report has them; otherwise the merged observation takes the baseline's
own. The baseline's scratch directories join the list of scratch directories. The
longest match wins, and at equal length scratch before home before cwd; a directory of
``/`` is never mapped, it would swallow every path.
"""

from __future__ import annotations

from pydantic import JsonValue

from cvg_schema import Executable, Observation

__all__ = ["merge_baseline"]


def merge_baseline(
    imported: Observation, baseline: Observation, *, name: str | None, digest: str | None
) -> Observation:
    """``imported`` with the events and executables of ``baseline`` appended."""
    home = imported.home or _usable(baseline.home)
    cwd = imported.cwd or _usable(baseline.cwd)
    moves = _moves(baseline, home, cwd)
    renamed: dict[str, str] = {}
    events = list(imported.events)
    for event in baseline.events:
        new_id = f"e{len(events) + 1}"
        renamed[event.id] = new_id
        source: dict[str, JsonValue] = dict(event.source or {})
        source.setdefault("tool", "cvg-observe")
        source.update(origin="baseline", baseline_id=event.id)
        events.append(
            event.model_copy(
                update={
                    "id": new_id,
                    "path": _move(event.path, moves),
                    "path2": _move(event.path2, moves),
                    "source": source,
                }
            )
        )
    executables = list(imported.executables)
    for exe in baseline.executables:
        executables.append(
            Executable(
                path=_move(exe.path, moves) or exe.path,
                interpreter=exe.interpreter,
                shebang=list(exe.shebang),
                event_id=renamed.get(exe.event_id) if exe.event_id else None,
            )
        )
    first, last = len(imported.events) + 1, len(events)
    span = f"e{first}..e{last}" if baseline.events else "none"
    notes = [n for n in imported.notes if not n.startswith("no baseline merged")]
    shown = name if name is None or len(name) <= 200 else "..." + name[-197:]
    notes.append(
        f"baseline merged from {shown or 'a cvg.observation'}: events {span} "
        f"(source.origin baseline) are the runtime's own needs, observed by "
        f"{_tool_of(baseline)} running {_argv(baseline)}"
    )
    if baseline.partial:
        notes.append("the baseline is itself partial")
    merged: dict[str, JsonValue] = dict(imported.source or {})
    merged["baseline"] = {
        "report": name,
        "digest": digest,
        "argv": list(baseline.argv),
        "events": span,
        "cwd": baseline.cwd,
        "home": baseline.home,
        "scratch": list(baseline.scratch),
    }
    scratch = list(dict.fromkeys([*imported.scratch, *baseline.scratch]))
    return imported.model_copy(
        update={
            "events": events,
            "executables": executables,
            "notes": notes,
            "source": merged,
            "cwd": cwd,
            "home": home,
            "scratch": scratch,
            "strace_version": baseline.strace_version,
        }
    )


def _usable(directory: str | None) -> str | None:
    if directory and directory.startswith("/") and directory.rstrip("/"):
        return directory.rstrip("/")
    return None


def _moves(baseline: Observation, home: str | None, cwd: str | None) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for directory, to in (
        *((s, s) for s in baseline.scratch),
        (baseline.home, home),
        (baseline.cwd, cwd),
    ):
        d = _usable(directory)
        if d is not None and to is not None:
            found.append((d, to))
    return sorted(found, key=lambda p: -len(p[0]))


def _move(path: str | None, moves: list[tuple[str, str]]) -> str | None:
    if path is None or not path.startswith("/"):
        return path
    for directory, to in moves:
        if path == directory:
            return to
        if path.startswith(directory + "/"):
            return to + path[len(directory) :]
    return path


def _tool_of(obs: Observation) -> str:
    tool = (obs.source or {}).get("tool")
    return tool if isinstance(tool, str) else "cvg-observe"


def _argv(obs: Observation) -> str:
    text = " ".join(obs.argv) or "an unknown command"
    return text if len(text) <= 200 else text[:197] + "..."
