"""Divergence observations to ``cvg.observation`` events that keep their provenance.

Each observation of the report becomes one event, in report order (``e1`` is the first
observation). The mapping:

=============================  ==========================================================
Divergence capability          event
=============================  ==========================================================
``fs_read``, ``secrets_read``  ``read`` of the path
``fs_write``                   ``write`` of the path
``fs_delete``                  ``remove`` of the path
``proc_spawn`` (``execve``)    ``execute`` of the path (also listed in ``executables``)
``proc_spawn`` (``clone3``..)  ``other``: a process was started, no file was executed
``net_outbound``               ``connect`` with ``port``, ``address``, ``family``
``net_listen``                 ``bind`` with ``port``, ``address``, ``family``
anything else                  ``other``
=============================  ==========================================================

The marks cvg-generate relies on. Every imported event has a ``source`` dict with at
least these keys::

    {"tool": "divergence", "origin": "report", "index": <position in the report>,
     "capability": ..., "syscall": ..., "target": <as reported>,
     "result": <raw syscall return>, "succeeded": bool, "decoy": bool,
     "secret": <why the path is a secret> | null,
     "never_grant": "decoy" | "secret" | "failed" | null,
     "driver_probe": <why it came from Divergence's own driver> | null,
     "policy_path": <the path as a policy names it: ${HOME}/.netrc> | null,
     "unresolved": <why the path could not be placed> | null,
     "path_rewrite": <how the path was placed> | null,
     "notes": [<what the report does not say about this event>, ...]}

``never_grant`` is set, in that order of precedence, when Divergence marked the access
``decoy: true`` (a planted credential was opened), when the path is a secret (by
:func:`cvg_policy.secrets.secret_reason`, whatever capability it came as, or because
Divergence reported it as ``secrets_read``), or when the attempt failed
(``succeeded: false`` or a negative result). A failed attempt also has ``result`` set to
the errno name (``-13`` becomes ``EACCES``; ``EUNKNOWN`` when the report says it failed
but gives no errno), never ``"ok"``. Such events stay in the observation so a reviewer
sees them; a generator must grant none of them. ``secret``, ``decoy`` and the result
are all kept, so an event that is both a decoy and a failure says so.

Paths are absolute, and the observation's ``home``, ``scratch`` and ``cwd`` name
Divergence's overlay HOME, its TMPDIR and the artifact root, so cvg-generate writes
them as ``${HOME}``, ``${SCRATCH}`` and ``${CWD}`` (see :mod:`cvg_import.paths`). An
event whose ``unresolved`` is set has a path as reported (relative), which names no
place a policy can grant; its ``policy_path`` is null. ``driver_probe`` events are
inputs Divergence's driver fed the tool (``http://127.0.0.1:9/divergence-probe``,
``$TMPDIR/probe.txt``), not choices the tool made.
"""

from __future__ import annotations

import errno
import posixpath
from collections import Counter
from typing import Any, Final

from pydantic import JsonValue

from cvg_policy.secrets import secret_reason
from cvg_schema import Event, EventOp, Executable, Observation

from .network import IPV6_LOST_NOTE, parse_endpoint
from .paths import ArtifactRoot, Placer
from .report import SCAN_FORMAT, RawObservation, Report

__all__ = ["FILE_OPS", "NEVER_GRANT", "observation_from_report"]

FILE_OPS: Final[dict[str, EventOp]] = {
    "fs_read": "read",
    "secrets_read": "read",
    "fs_write": "write",
    "fs_delete": "remove",
}
NET_OPS: Final[dict[str, EventOp]] = {"net_outbound": "connect", "net_listen": "bind"}
EXEC_SYSCALLS: Final = ("execve", "execveat")
NEVER_GRANT: Final = ("decoy", "secret", "failed")

DRIVER_URL: Final = "127.0.0.1:9"
DRIVER_PATH: Final = "${SCRATCH}/probe.txt"

PARTIAL_NOTE: Final = (
    "partial: Divergence leaves out the language runtime's own reads (/usr/lib, /etc, *.so, "
    "*.py, site-packages, ...), so absence of an event proves nothing"
)
FAILED_NOTE: Final = (
    "Divergence drops failed operations except on credential paths and the network, so "
    "most of what the tool tried and was refused is missing"
)
NO_COMMAND_NOTE: Final = (
    "the report does not carry the command Divergence ran, its environment reads "
    "(env_read), the loaders and #! interpreters of what was executed, or socket types"
)
NO_BASELINE_NOTE: Final = (
    "no baseline merged: a policy generated from this alone lacks what the runtime "
    "itself needs; merge one with --baseline (e.g. cvg-observe -- python3 -c pass)"
)
NETWORK_NOTE: Final = (
    "network targets are IP addresses the tool connected to or bound, never host names; "
    "a cvg policy filters ports, not hosts"
)
OVERLAY_NOTE: Final = (
    "Divergence ran the tool with HOME and TMPDIR in a temporary overlay, now gone: it is "
    "this observation's home and scratch, so paths beneath become ${HOME} and ${SCRATCH}"
)


def observation_from_report(
    report: Report,
    *,
    root: ArtifactRoot,
    report_name: str | None = None,
    report_digest: str | None = None,
) -> Observation:
    """The partial observation of one Divergence report (see the module docstring)."""
    events: list[Event] = []
    executables: list[Executable] = []
    counts: Counter[str] = Counter()
    placer = Placer(root)
    for raw in report.observations:
        event = _event(raw, f"e{len(events) + 1}", placer, counts)
        events.append(event)
        if event.op == "execute" and event.result == "ok" and _placed(event):
            assert event.path is not None
            executables.append(Executable(path=event.path, event_id=event.id))
    return Observation(
        argv=[],
        cwd=root.path,
        home=placer.home,
        scratch=[placer.scratch] if placer.scratch else [],
        events=events,
        executables=executables,
        exit_status=_exit_status(report),
        partial=True,
        source=_source(report, root, report_name, report_digest),
        notes=_notes(report, root, counts),
    )


def _placed(event: Event) -> bool:
    src = event.source or {}
    return src.get("unresolved") is None and src.get("never_grant") is None


def _event(raw: RawObservation, eid: str, placer: Placer, counts: Counter[str]) -> Event:
    notes: list[str] = []
    fields: dict[str, Any] = {}
    path: str | None = None
    policy: str | None = None
    unresolved: str | None = None
    rewrite: str | None = None
    secret: str | None = None
    probe: str | None = None

    if raw.capability in FILE_OPS or (
        raw.capability == "proc_spawn" and raw.syscall in EXEC_SYSCALLS
    ):
        op: EventOp = FILE_OPS.get(raw.capability, "execute")
        placed = placer.place(raw.target)
        path, policy, unresolved = placed.path, placed.policy, placed.unresolved
        rewrite = placed.rewritten
        secret = _secret_reason(raw.target, policy or path)
        if raw.capability == "secrets_read" and secret is None:
            secret = "Divergence reports it as secrets_read"
        if policy == DRIVER_PATH:
            probe = "Divergence's driver passes $TMPDIR/probe.txt as a path argument"
    elif raw.capability in NET_OPS:
        op = NET_OPS[raw.capability]
        endpoint = parse_endpoint(raw.target)
        fields.update(port=endpoint.port, address=endpoint.address, family=endpoint.family)
        notes.extend(endpoint.notes)
        if IPV6_LOST_NOTE in endpoint.notes:
            counts["ipv6_lost"] += 1
        if raw.target == DRIVER_URL and op == "connect":
            probe = (
                "Divergence's driver passes http://127.0.0.1:9/divergence-probe as a URL argument"
            )
    elif raw.capability == "proc_spawn":
        op = "other"
        notes.append(f"a process was started ({raw.syscall}); no file was executed")
    else:
        op = "other"
        notes.append(f"capability {raw.capability!r} is not one this importer knows")
        counts["unknown"] += 1

    failed = raw.result < 0 or not raw.succeeded
    never: str | None = None
    if raw.decoy:
        never = "decoy"
    elif secret is not None:
        never = "secret"
    elif failed:
        never = "failed"
    if never is not None:
        counts[never] += 1
    if unresolved is not None:
        counts["unresolved"] += 1
    if probe is not None:
        counts["driver_probe"] += 1
    if rewrite is not None and rewrite.startswith("Divergence's temporary"):
        counts["overlay"] += 1
    if raw.succeeded and raw.result < 0:
        notes.append("the report says it succeeded but its result is an error: taken as failed")

    source: dict[str, JsonValue] = {
        "tool": "divergence",
        "origin": "report",
        "index": raw.index,
        "capability": raw.capability,
        "syscall": raw.syscall,
        "target": raw.target,
        "result": raw.result,
        "succeeded": raw.succeeded,
        "decoy": raw.decoy,
        "secret": secret,
        "never_grant": never,
        "driver_probe": probe,
        "policy_path": policy,
        "unresolved": unresolved,
        "path_rewrite": rewrite,
        "notes": list(notes),
    }
    return Event(
        id=eid,
        op=op,
        syscall=raw.syscall,
        path=path,
        result=_result_name(raw) if failed else "ok",
        source=source,
        **{k: v for k, v in fields.items() if v is not None},
    )


def _result_name(raw: RawObservation) -> str:
    if raw.result < 0:
        name: str = errno.errorcode.get(-raw.result, "EUNKNOWN")
        return name
    return "EUNKNOWN"


def _secret_reason(target: str, placed: str) -> str | None:
    """A secret by pattern, judged on the policy form (``${HOME}/.aws/config``) and on
    the path as reported (``/root/.ssh/id_rsa``, a host credential Divergence denied)."""
    for path in (placed, target):
        reason: str | None = secret_reason(path, _home_of(path))
        if reason is not None:
            return reason
    return None


def _home_of(path: str) -> str | None:
    """The home a host path lies in (``/root``, ``/home/NAME``), so that the home-relative
    secrets (``~/.kube``, ``~/.docker/config.json``) are recognised there too."""
    parts = posixpath.normpath(path).split("/")
    if len(parts) >= 3 and parts[0] == "" and parts[1] == "root":
        return "/root"
    if len(parts) >= 4 and parts[0] == "" and parts[1] == "home" and parts[2]:
        return "/home/" + parts[2]
    return None


def _exit_status(report: Report) -> int | None:
    code = report.coverage.get("exit_code")
    if isinstance(code, int) and not isinstance(code, bool) and 0 <= code <= 255:
        return code
    return None


def _source(
    report: Report, root: ArtifactRoot, name: str | None, digest: str | None
) -> dict[str, JsonValue]:
    source: dict[str, JsonValue] = {
        "tool": "divergence",
        "format": report.format,
        "runner_version": report.runner_version,
        "report": name,
        "digest": digest,
        "artifact_root": root.path,
        "coverage": dict(report.coverage),
        "capabilities": list(report.capabilities),
        "limitations": list(report.limitations),
    }
    if report.format == SCAN_FORMAT:
        source["cli_version"] = report.cli_version
        source["target"] = report.target_name
        source["artifact_source"] = report.artifact_source
    return source


def _notes(report: Report, root: ArtifactRoot, counts: Counter[str]) -> list[str]:
    notes = [PARTIAL_NOTE, FAILED_NOTE, NO_COMMAND_NOTE, NO_BASELINE_NOTE]
    if any(o.capability in NET_OPS for o in report.observations):
        notes.append(NETWORK_NOTE)
    if counts["ipv6_lost"]:
        notes.append(
            f"{counts['ipv6_lost']} network event(s) used IPv6, whose address the report "
            "does not carry (only the port)"
        )
    if counts["overlay"]:
        notes.append(OVERLAY_NOTE)
    if root.path:
        notes.append(
            "the artifact root was the tool's working directory: it is this observation's "
            "cwd, so paths beneath it become ${CWD}"
        )
    never = {k: counts[k] for k in NEVER_GRANT if counts[k]}
    if never:
        detail = ", ".join(f"{k} {n}" for k, n in never.items())
        notes.append(
            f"{sum(never.values())} event(s) must never become grants ({detail}); "
            "they are kept, marked in source.never_grant, for review"
        )
    if counts["unresolved"]:
        hint = "" if root.path else " (give --artifact-root)"
        notes.append(
            f"{counts['unresolved']} path(s) could not be placed and stay as reported{hint}"
        )
    if counts["driver_probe"]:
        notes.append(
            f"{counts['driver_probe']} event(s) came from Divergence's driver inputs, not "
            "from the tool's own choices (source.driver_probe)"
        )
    if counts["unknown"]:
        notes.append(
            f"{counts['unknown']} observation(s) had a capability this importer "
            "does not know, kept as op other"
        )
    notes.extend(_coverage_notes(report))
    return notes


def _coverage_notes(report: Report) -> list[str]:
    cov = report.coverage
    out: list[str] = []
    invoked, completed, failed = (
        cov.get("entrypoints_invoked"),
        cov.get("entrypoints_completed"),
        cov.get("entrypoints_failed"),
    )
    if isinstance(invoked, int) and isinstance(completed, int):
        line = f"Divergence ran {invoked} entrypoint(s), {completed} to completion"
        if isinstance(failed, int) and failed:
            line += f", {failed} failed: what they would have done is missing"
        out.append(line)
    dropped = cov.get("observations_dropped")
    if isinstance(dropped, int) and not isinstance(dropped, bool) and dropped > 0:
        out.append(f"Divergence dropped {dropped} observation(s) from the report")
    if cov.get("timed_out") is True:
        out.append("the run timed out: what the tool would have done next is missing")
    if cov.get("confinement_enforced") is False:
        out.append("Divergence says its confinement was not enforced during this run")
    return out
