"""The API: a run record and its policy in, a ``cvg.explanation`` (and the fixed policy) out.

:func:`explain` explains each denial on its own: its diff is against the policy as it
is. :func:`plan_fixes` merges every fix into one consistent policy (several denials
needing the same rule give one edit), which is what ``cvg-explain --apply`` writes.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from cvg_policy.errors import PolicyError
from cvg_policy.load import LoadedPolicy, load_policy, read_policy_file
from cvg_policy.protected import protected_reason
from cvg_policy.variables import system_python
from cvg_schema import Explanation
from cvg_schema.explanation import ExplainedDenial, Risk
from cvg_schema.io import digest
from cvg_schema.run import Connection, Denial, RunRecord

from .attribute import Change, Context, Finding, attribute, attribute_connection
from .change import deliberate
from .diff import unified_diff
from .risk import LEVELS
from .yamledit import EditError, add_host, add_item, set_value

__all__ = [
    "DEFAULT_POLICY_NAME",
    "ExplainError",
    "Fixes",
    "PolicySource",
    "apply_changes",
    "explain",
    "merge_changes",
    "plan_fixes",
    "policy_changed",
    "policy_source",
]

DEFAULT_POLICY_NAME: Final = "default-policy.yaml"
"""The name diffs give cvg-run's embedded default policy (it has no file)."""


class ExplainError(Exception):
    """Bad input (an unreadable policy, a record that cannot be explained): one line."""


@dataclass(frozen=True)
class PolicySource:
    """The policy text a run used, and where it came from."""

    text: str
    loaded: LoadedPolicy
    path: str | None  # the file, None for the embedded default (or text given directly)
    name: str  # the name diffs use: the file's base name

    @property
    def directory(self) -> str | None:
        return os.path.dirname(os.path.abspath(self.path)) if self.path else None


def _default_policy_text() -> str:
    from cvg_run.planning import default_policy_bytes

    data: bytes = default_policy_bytes()
    return data.decode("utf-8")


def policy_source(
    record: RunRecord, *, policy_text: str | None = None, policy_path: str | None = None
) -> PolicySource:
    """The policy to explain against: ``policy_text`` if given, else the file at
    ``policy_path``, else the record's ``policy_path``, else the embedded default."""
    path = policy_path if policy_path is not None else record.policy_path
    if path is not None and policy_path is None and not os.path.isabs(path):
        # A relative path in a record is relative to the run's working directory.
        path = os.path.join(record.cwd, path)
    if policy_text is None:
        if path is None:
            text, path = _default_policy_text(), None
            name = DEFAULT_POLICY_NAME
        else:
            if path == "-":
                raise ExplainError(
                    "the policy came from stdin, which cannot be read again: name its "
                    "file with -p (or pass policy_text)"
                )
            try:
                # At most one byte past the loader's limit, so a huge file is refused
                # without being read whole.
                raw = read_policy_file(path)
            except OSError as e:
                raise ExplainError(f"{path}: cannot read the policy: {e.strerror or e}") from None
            except ValueError:  # a NUL byte in the record's path
                raise ExplainError(f"{path!r}: not a file name") from None
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise ExplainError(f"{path}: the policy is not UTF-8 text") from None
            name = posixpath.basename(path) or "policy.yaml"
    else:
        text = policy_text
        name = posixpath.basename(path) if path else "policy.yaml"
    filename = path if path is not None else name
    try:
        loaded = load_policy(text, filename=filename)
    except PolicyError as e:
        raise ExplainError(str(e)) from None
    return PolicySource(text=text, loaded=loaded, path=path, name=name)


def _variables(record: RunRecord, source: PolicySource) -> dict[str, str]:
    out = {"CWD": record.cwd}
    home = os.environ.get("HOME")
    if home and os.path.isabs(home) and home != "/":
        out["HOME"] = posixpath.normpath(home)
    if record.scratch is not None:
        out["SCRATCH"] = record.scratch.path
    out["POLICY_DIR"] = source.directory or record.cwd
    out.update(system_python())
    return out


def merge_changes(changes: Iterable[Change]) -> list[Change]:
    """One consistent set of edits: each list item added once, each value set once
    (the largest number, true over false)."""
    merged: list[Change] = []
    seen_adds: set[tuple[str, str, object, int | None]] = set()
    sets: dict[tuple[str, str], int] = {}
    for c in changes:
        if c.op in ("add", "host"):
            key = (c.section, c.field, c.value, c.port)
            if key not in seen_adds:
                seen_adds.add(key)
                merged.append(c)
            continue
        where = (c.section, c.field)
        if where not in sets:
            sets[where] = len(merged)
            merged.append(c)
            continue
        old = merged[sets[where]]
        if isinstance(c.value, bool) or isinstance(old.value, bool):
            value: str | int | bool = bool(old.value) or bool(c.value)
        elif isinstance(c.value, int) and isinstance(old.value, int):
            value = max(old.value, c.value)
        else:
            value = c.value
        merged[sets[where]] = Change("set", c.section, c.field, value)
    return merged


def apply_changes(text: str, changes: Iterable[Change]) -> str:
    """``text`` with each change made, in order (EditError when one cannot be)."""
    for c in changes:
        if c.op == "host":
            assert isinstance(c.value, str) and c.port is not None
            text = add_host(text, c.value, c.port)
        elif c.op == "add":
            text = add_item(text, c.section, c.field, c.value)
        else:
            text = set_value(text, c.section, c.field, c.value)
    return text


def _checked(source: PolicySource, new_text: str) -> str | None:
    """``new_text`` if it is still a valid policy, else None (the edit went wrong)."""
    try:
        load_policy(new_text, filename=source.path or source.name)
    except PolicyError:
        return None
    return new_text


def _noise(d: Denial) -> bool:
    """A call that failed with ENOENT for a reason of its own: a search along a path
    list (PATH, sys.path, the loader's library path), not something cvg refused."""
    return d.mechanism == "none" and d.errno == "ENOENT"


def _real_denials(record: RunRecord) -> list[Denial]:
    return [d for d in record.denials if not _noise(d)]


def _refused_connections(record: RunRecord) -> list[tuple[Denial, Connection]]:
    """Each distinct connection the ``network.hosts`` proxy refused, as a denial of the
    supervisor (the proxy is part of cvg-run) with an id of its own: ``c1``, ``c2``..."""
    out: list[tuple[Denial, Connection]] = []
    seen: set[tuple[str | None, int | None, str]] = set()
    for c in getattr(record, "connections", []):
        if c.verdict != "refused":
            continue
        key = (c.host.lower() if c.host else None, c.port, c.reason if c.host is None else "")
        if key in seen:
            continue
        seen.add(key)
        where = f"{c.host}:{c.port}" if c.host is not None else "an unreadable request"
        denial = Denial(
            id=f"c{len(out) + 1}",
            syscall="connect",
            op="connect",
            port=c.port,
            mechanism="supervisor",
            rule="network.hosts",
            time=c.time,
            detail=f"the network.hosts proxy refused {c.protocol} {where}: {c.reason}"[:4096],
        )
        out.append((denial, c))
    return out


@dataclass
class _Explained:
    denial: ExplainedDenial
    change: Change | None


def _explain_all(record: RunRecord, source: PolicySource) -> list[_Explained]:
    ctx = Context(
        policy=source.loaded.policy,
        variables=_variables(record, source),
        home=os.environ.get("HOME"),
    )
    pairs: list[tuple[Denial, Finding]] = [(d, attribute(d, ctx)) for d in _real_denials(record)]
    pairs += [(d, attribute_connection(c, ctx)) for d, c in _refused_connections(record)]
    out = []
    for d, finding in pairs:
        fix = None
        risk = None
        change = finding.change
        if change is not None and finding.risk is not None:
            try:
                new = _checked(source, apply_changes(source.text, [change]))
            except EditError:
                new = None
            if new is None:
                change = None
            else:
                fix = unified_diff(source.text, new, source.name)
                risk = Risk(level=finding.risk.level, text=finding.risk.text)
        cause = finding.cause
        if finding.change is not None and change is None:
            cause += (
                f" (the fix, {finding.change.address} += {finding.change.value!r}, could not "
                "be written into this policy's text)"
            )
        explained = ExplainedDenial(denial=d, cause=cause, rule=finding.rule, fix=fix, risk=risk)
        out.append(_Explained(explained, change))
    return out


def _summary(record: RunRecord, items: list[_Explained]) -> str:
    noise = len(record.denials) - len(_real_denials(record))
    note = f" ({noise} ENOENT failure{'s' if noise != 1 else ''} of the tool's own left out)"
    if not items:
        if not record.traced:
            return (
                "no denials recorded: the run was not traced (run cvg-run --trace to "
                "record what the sandbox refused)"
            )
        return "no denials: the sandbox refused nothing this run" + (note if noise else "")
    fixable = [i for i in items if i.denial.fix is not None]
    high = [i for i in fixable if i.denial.risk is not None and i.denial.risk.level == "high"]
    n = len(items)
    parts = [f"{n} denial{'s' if n != 1 else ''}", f"{len(fixable)} with a fix"]
    unfixed = [i for i in items if i.denial.fix is None and i.denial.rule is not None]
    denied = [i for i in unfixed if deliberate(i.denial.rule)]
    unwritten = [i for i in unfixed if not deliberate(i.denial.rule)]
    if unwritten:
        parts.append(f"{len(unwritten)} needing a value only you know")
    if denied:
        parts.append(f"{len(denied)} denied on purpose (filesystem.deny)")
    if n - len(fixable) - len(unfixed):
        parts.append(f"{n - len(fixable) - len(unfixed)} that no policy change allows")
    if high:
        parts.append(f"{len(high)} fix{'es' if len(high) != 1 else ''} rated high risk")
    return ", ".join(parts) + (note if noise else "")


def explain(
    record: RunRecord, *, policy_text: str | None = None, policy_path: str | None = None
) -> Explanation:
    """Explain every denial of ``record``: cause, rule, smallest fix (a unified diff of
    the policy text) and its risk.

    ``policy_text`` overrides reading ``policy_path``; with neither, the record's
    ``policy_path`` is read, and cvg-run's embedded default policy is used when that
    is null. Raises ExplainError (one line) when the policy cannot be read or loaded.
    """
    source = policy_source(record, policy_text=policy_text, policy_path=policy_path)
    items = _explain_all(record, source)
    summary = _summary(record, items)
    if policy_changed(record, source):
        summary += (
            f"; {source.path or source.name} is not the policy this run used (its digest "
            "differs from the record's): the causes and fixes are against it as it is now"
        )
    return Explanation(
        run_id=record.run_id,
        policy_digest=record.policy_digest,
        summary=summary,
        denials=[i.denial for i in items],
    )


def policy_changed(record: RunRecord, source: PolicySource) -> bool:
    """Whether the policy explained against is not the one the run used (edited since,
    fixed already, or another file): its digest is not the record's."""
    return digest(source.loaded.policy) != record.policy_digest


@dataclass
class Fixes:
    """Every fix of a run merged into one policy."""

    source: PolicySource
    old_text: str
    new_text: str
    diff: str
    changes: list[Change] = field(default_factory=list)
    risks: Mapping[str, Risk] = field(default_factory=dict)  # per change address+value
    # Each write the fixes add to a protected path: its value as written, and why.
    protected: Mapping[str, str] = field(default_factory=dict)

    @property
    def highest(self) -> str | None:
        """The highest risk level among the merged fixes, None when there are none."""
        best = -1
        for r in self.risks.values():
            best = max(best, LEVELS.index(r.level))
        return LEVELS[best] if best >= 0 else None

    @property
    def high_risks(self) -> list[str]:
        return [f"{k}: {r.text}" for k, r in self.risks.items() if r.level == "high"]


def plan_fixes(
    record: RunRecord, *, policy_text: str | None = None, policy_path: str | None = None
) -> Fixes:
    """The policy with every fix of ``record`` applied (merged), and its diff."""
    source = policy_source(record, policy_text=policy_text, policy_path=policy_path)
    items = _explain_all(record, source)
    changes = [i.change for i in items if i.change is not None]
    merged = merge_changes(changes)
    risks: dict[str, Risk] = {}
    for i in items:
        if i.change is not None and i.denial.risk is not None:
            key = f"{i.change.address} {i.change.value!r}"
            prev = risks.get(key)
            if prev is None or LEVELS.index(i.denial.risk.level) > LEVELS.index(prev.level):
                risks[key] = i.denial.risk
    try:
        new = apply_changes(source.text, merged)
    except EditError as e:
        raise ExplainError(f"{source.path or source.name}: cannot edit the policy: {e}") from None
    if _checked(source, new) is None:
        raise ExplainError(
            f"{source.path or source.name}: the merged fixes do not give a valid policy"
        )
    return Fixes(
        source=source,
        old_text=source.text,
        new_text=new,
        diff=unified_diff(source.text, new, source.name),
        changes=merged,
        risks=risks,
        protected=_protected_writes(merged, _variables(record, source)),
    )


def _protected_writes(changes: Iterable[Change], variables: Mapping[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    home = variables.get("HOME")
    for c in changes:
        if c.section != "filesystem" or c.field != "write":
            continue
        written = str(c.value)
        expanded = written
        for name, base in variables.items():
            expanded = expanded.replace("${" + name + "}", base)
        reason = protected_reason(expanded, home) or protected_reason(written, home)
        if reason is not None:
            out[written] = reason
    return out
