"""What learn, enforce and restore do to a config's servers, decided before anything
is written: the new servers, the policies to write, and one note per server left alone.

A server is cvg-wrap's while its command line is exactly the one cvg-wrap wrote (kept
in the state). One edited since is left alone, and so is one that already starts under
cvg-observe or cvg-run without cvg-wrap knowing it (nothing is ever wrapped twice).
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field
from typing import Any

from . import state as st
from . import tools
from .config import Change, ClientConfig, argv_of, is_process, with_argv

OURS = (tools.OBSERVE, tools.RUN)
# A learning session lasts as long as the client keeps it, days if need be; once the
# client has closed the server's stdin, a server that makes no call for LEARN_IDLE
# seconds is ended with whatever it started (cvg-observe --timeout, --idle).
LEARN_TIMEOUT = 7 * 24 * 3600
LEARN_IDLE = 10


@dataclass
class Plan:
    servers: dict[str, Any]  # the config's new servers object
    state: st.State
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    policies: dict[str, str] = field(default_factory=dict)  # path -> YAML
    changed: list[str] = field(default_factory=list)  # server names
    edits: dict[str, Change] = field(default_factory=dict)  # what becomes of each entry
    forgotten: list[str] = field(default_factory=list)  # left the state, text unchanged
    summaries: dict[str, list[str]] = field(default_factory=dict)  # enforce: per server

    def note(self, name: str, text: str) -> None:
        self.notes.append(f"{name}: {text}")


def _start(config: ClientConfig, state: st.State) -> Plan:
    return Plan(copy.deepcopy(config.servers), state)


def _ours(entry: dict[str, Any], record: st.Server | None) -> bool:
    return record is not None and argv_of(entry) == record.wrapped


def _learnable(plan: Plan, name: str, entry: Any, named: bool) -> bool:
    record = plan.state.servers.get(name)
    if not is_process(entry):
        plan.note(name, "not a server the client starts as a process (url, http); left as it is")
        return False
    if _ours(entry, record):
        assert record is not None
        if record.mode == st.LEARNING:
            return False  # already learning: learn twice changes nothing
        if not named:
            plan.note(name, "enforced; name it with --server to learn it again")
            return False
        return True
    if record is not None and argv_of(entry) != record.original:
        plan.note(name, "changed since cvg-wrap rewrote it; left as it is")
        return False
    if os.path.basename(entry["command"]) in OURS:
        plan.note(name, f"already starts under {os.path.basename(entry['command'])}; left as it is")
        return False
    return True


def learn(config: ClientConfig, state: st.State, only: list[str]) -> Plan:
    plan = _start(config, state)
    observe = tools.find(tools.OBSERVE)
    for name, entry in config.servers.items():
        if only and name not in only:
            continue
        if not _learnable(plan, name, entry, name in only):
            continue
        record = state.servers.get(name)
        original = record.original if record else argv_of(entry)
        had_args = record.had_args if record else "args" in entry
        out_dir = state.observations_dir(name)
        wrapped = [observe, "--timeout", str(LEARN_TIMEOUT), "--idle", str(LEARN_IDLE),
                   "--out-dir", out_dir, "--", *original]  # fmt: skip
        plan.servers[name] = with_argv(entry, wrapped)
        plan.state.servers[name] = st.Server(
            original, had_args, wrapped, st.LEARNING, st.now(), record.policy if record else None,
            original_text=record.original_text if record else config.entry_text(name),
        )  # fmt: skip
        plan.edits[name] = Change(wrapped)
        plan.changed.append(name)
    return plan


def enforce(
    config: ClientConfig, state: st.State, only: list[str], policies: str, trace: bool
) -> Plan:
    plan = _start(config, state)
    for name, entry in config.servers.items():
        if only and name not in only:
            continue
        record = state.servers.get(name)
        if record is None or not _ours(entry, record):
            if is_process(entry):
                plan.note(name, "not learning under cvg-wrap; left as it is")
            continue
        if record.mode == st.ENFORCED:
            plan.note(name, f"already enforced ({record.policy})")
            continue
        observations = state.observations(name)
        if not observations:
            plan.note(name, "no observation yet (no session has ended); left as it is")
            continue
        # cvg-run builds the server's environment from the policy alone: the names the
        # client sets for this server must be passed, or it loses its keys.
        env = sorted(entry["env"]) if isinstance(entry.get("env"), dict) else []
        if "envFile" in entry:
            plan.note(name, "the variables of its envFile are not passed under the policy; "
                      "add their names to environment.pass")  # fmt: skip
        try:
            text, policy, warnings = tools.learned_policy(observations, env)
        except tools.ToolFailed as e:
            plan.errors.append(f"{name}: {e}; left as it is")
            continue
        rules = tools.grants(policy)
        path = os.path.join(os.path.abspath(policies), f"{st.safe_name(name)}.yaml")
        plan.summaries[name] = [
            f"{name}: {len(observations)} observations -> {path}",
            f"  rules: {tools.counts(policy)}",
            *(f"  {w}" for w in warnings),
        ]
        plan.policies[path] = text
        flags = ["--trace"] if trace else []
        wrapped = [tools.find(tools.RUN), *flags, "-p", path, "--", *record.original]
        plan.servers[name] = with_argv(entry, wrapped)
        plan.state.servers[name] = st.Server(record.original, record.had_args, wrapped,
                                             st.ENFORCED, st.now(), path, rules, trace,
                                             original_text=record.original_text)  # fmt: skip
        plan.edits[name] = Change(wrapped)
        plan.changed.append(name)
    return plan


def restore(config: ClientConfig, state: st.State) -> Plan:
    plan = _start(config, state)
    for name, record in list(state.servers.items()):
        entry = config.servers.get(name)
        if entry is None:
            plan.note(name, "no longer in the config; forgotten")
            del plan.state.servers[name]
            plan.forgotten.append(name)
        elif argv_of(entry) == record.original:
            del plan.state.servers[name]
            plan.forgotten.append(name)
        elif not _ours(entry, record):
            plan.note(name, "changed since cvg-wrap rewrote it; left as it is")
        else:
            plan.servers[name] = with_argv(entry, record.original, record.had_args)
            del plan.state.servers[name]
            # Untouched since cvg-wrap wrote it: the entry goes back byte for byte.
            untouched = record.wrapped_text is not None and (
                config.entry_text(name) == record.wrapped_text
            )
            plan.edits[name] = Change(record.original, record.had_args,
                                      record.original_text if untouched else None)  # fmt: skip
            plan.changed.append(name)
    return plan
