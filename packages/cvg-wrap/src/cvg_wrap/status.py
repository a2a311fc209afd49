"""Where each server of a config stands: learning, enforced or untouched, how much was
observed, how many rules its policy has, and what cvg-run refused since it was enforced
(from cvg-run's run records, which name the policy file they ran under)."""

from __future__ import annotations

import json
import os
from datetime import datetime
from typing import Any

from cvg_run.record import state_dir as runs_dir

from . import state as st
from .config import ClientConfig, argv_of, is_process

UNTOUCHED = "untouched"
CHANGED = "changed"  # rewritten by cvg-wrap, edited since
REMOTE = "remote"  # a url/http server: nothing to confine


def _when(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (TypeError, ValueError):
        return None


def runs_since(policy: str, since: str) -> tuple[int, int, int]:
    """cvg-run's records of runs under ``policy`` that started at ``since`` or later: how
    many, the sandbox denials they list (only traced runs list any), and of those the
    ones every policy gives and nothing needs (``expected``: a tool's own /proc
    entries), which are not counted as denials."""
    start = _when(since)
    runs = denials = expected = 0
    try:
        names = [n for n in os.listdir(runs_dir()) if n.endswith(".json") and n[0] != "."]
    except OSError:
        return 0, 0, 0
    for name in names:
        try:
            with open(os.path.join(runs_dir(), name), encoding="utf-8") as f:
                rec: dict[str, Any] = json.load(f)
        except (OSError, ValueError):
            continue  # a record being written, or not one of cvg-run's
        started = _when(rec.get("started", ""))
        if rec.get("policy_path") != policy or start is None or started is None:
            continue
        if started < start:
            continue
        runs += 1
        found = [d for d in rec.get("denials") or [] if d.get("mechanism") not in (None, "none")]
        quiet = sum(1 for d in found if d.get("expected") is True)
        denials += len(found) - quiet
        expected += quiet
    return runs, denials, expected


def server_rows(config: ClientConfig, state: st.State) -> list[dict[str, Any]]:
    rows = []
    for name, entry in config.servers.items():
        record = state.servers.get(name)
        if not is_process(entry):
            mode = REMOTE
        elif record is not None and argv_of(entry) == record.wrapped:
            mode = record.mode
        elif record is not None and argv_of(entry) != record.original:
            mode = CHANGED
        else:
            mode = UNTOUCHED
        row: dict[str, Any] = {
            "server": name,
            "state": mode,
            "since": record.since if record and mode in (st.LEARNING, st.ENFORCED) else None,
            "observations": len(state.observations(name)),
            "rules": None,
            "policy": None,
            "runs": None,
            "denials": None,
            "expected": None,
        }
        if mode == st.ENFORCED and record is not None and record.policy:
            runs, denials, expected = runs_since(record.policy, record.since)
            row.update(rules=record.rules, policy=record.policy, runs=runs)
            # Untraced runs list no denials: a count over them would be a false zero.
            if record.traced:
                row.update(denials=denials, expected=expected)
        rows.append(row)
    return rows
