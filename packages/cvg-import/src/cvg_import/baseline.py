"""Merging a baseline: an observation of the bare runtime, for what Divergence leaves out.

Divergence does not report the language runtime's own reads (the interpreter, its
standard library, ``/etc/ld.so.cache``), so a policy generated from a report alone
cannot even start the tool. A baseline, for example ``cvg-observe -- python3 -c pass``,
supplies them. Its events are appended after the report's, renumbered, and marked
``source.origin = "baseline"`` with their id in the baseline (``source.baseline_id``),
so the output says which event came from where.

The baseline ran in its own directories, so its paths are rewritten the way cvg-generate
would have rewritten them: beneath its scratch directories to ``${SCRATCH}``, beneath
its ``home`` to ``${HOME}``, beneath its ``cwd`` to ``${CWD}`` (the longest match wins; a
working directory of ``/`` is not rewritten, it would swallow every path).
"""

from __future__ import annotations

from pydantic import JsonValue

from cvg_schema import Executable, Observation

__all__ = ["merge_baseline"]


def merge_baseline(
    imported: Observation, baseline: Observation, *, name: str | None, digest: str | None
) -> Observation:
    """``imported`` with the events and executables of ``baseline`` appended."""
    prefixes = _prefixes(baseline)
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
                    "path": _rewrite(event.path, prefixes),
                    "path2": _rewrite(event.path2, prefixes),
                    "source": source,
                }
            )
        )
    executables = list(imported.executables)
    for exe in baseline.executables:
        executables.append(
            Executable(
                path=_rewrite(exe.path, prefixes) or exe.path,
                interpreter=exe.interpreter,
                shebang=list(exe.shebang),
                event_id=renamed.get(exe.event_id) if exe.event_id else None,
            )
        )
    first, last = len(imported.events) + 1, len(events)
    span = f"e{first}..e{last}" if baseline.events else "none"
    notes = [n for n in imported.notes if not n.startswith("no baseline merged")]
    notes.append(
        f"baseline merged from {name or 'a cvg.observation'}: events {span} "
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
    return imported.model_copy(
        update={
            "events": events,
            "executables": executables,
            "notes": notes,
            "source": merged,
            "strace_version": baseline.strace_version,
        }
    )


def _prefixes(baseline: Observation) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    # Listed so that, at equal length, scratch wins over home and home over cwd.
    for directory, variable in (
        *((s, "${SCRATCH}") for s in baseline.scratch),
        (baseline.home, "${HOME}"),
        (baseline.cwd, "${CWD}"),
    ):
        if directory and directory.startswith("/") and directory.rstrip("/"):
            found.append((directory.rstrip("/"), variable))
    return sorted(found, key=lambda p: -len(p[0]))


def _rewrite(path: str | None, prefixes: list[tuple[str, str]]) -> str | None:
    if path is None or not path.startswith("/"):
        return path
    for directory, variable in prefixes:
        if path == directory:
            return variable
        if path.startswith(directory + "/"):
            return variable + path[len(directory) :]
    return path


def _tool_of(obs: Observation) -> str:
    tool = (obs.source or {}).get("tool")
    return tool if isinstance(tool, str) else "cvg-observe"


def _argv(obs: Observation) -> str:
    text = " ".join(obs.argv) or "an unknown command"
    return text if len(text) <= 200 else text[:197] + "..."
