"""Reading a Divergence report: recognise its shape, check it, and pull out what we map.

Two shapes are accepted, and nothing else:

- the raw runner report, ``{"schema": "divergence.sandbox/1", "observations": [...]}``;
- the CLI wrapper's JSON (``divergence scan --dynamic --json``), which has no ``schema``
  field: ``{"version": "1.x", "targets": [{"name", "source", "dynamic": {...}}]}``,
  where ``dynamic`` holds the same observations as the raw report.

The report is untrusted input (it describes what a possibly hostile tool did, and may
itself be forged), so every field we use is checked for type and size here, and every
problem is an :class:`~cvg_import.errors.ImportRefused` naming its JSON path.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Final

from cvg_schema import json_type

from .errors import ImportRefused, shown

__all__ = [
    "CAPABILITIES",
    "MAX_DEPTH",
    "MAX_OBSERVATIONS",
    "MAX_REPORT_BYTES",
    "RAW_SCHEMA",
    "SCAN_FORMAT",
    "SUPPORTED_MAJOR",
    "RawObservation",
    "Report",
    "parse_report",
]

SUPPORTED_MAJOR: Final = 1
RAW_SCHEMA: Final = f"divergence.sandbox/{SUPPORTED_MAJOR}"
SCAN_FORMAT: Final = "divergence scan --json"

CAPABILITIES: Final = (
    "fs_read",
    "fs_write",
    "fs_delete",
    "secrets_read",
    "proc_spawn",
    "net_outbound",
    "net_listen",
)
"""The capabilities a ``divergence.sandbox/1`` observation can carry (measured on the
110 reports of the Divergence corpus)."""

MAX_REPORT_BYTES: Final = 64 * 1024 * 1024
MAX_OBSERVATIONS: Final = 100_000
MAX_DEPTH: Final = 64
MAX_TARGET: Final = 4096
_MAX_NODES: Final = 5_000_000

_SCHEMA_RE: Final = re.compile(r"^divergence\.sandbox/([0-9]{1,6})(?:\.([0-9]{1,6}))?$")
_VERSION_RE: Final = re.compile(r"^v?([0-9]{1,6})(?:\.[0-9A-Za-z.+-]*)?$")
_SYSCALL_RE: Final = re.compile(r"^[a-z_][a-z0-9_]{0,63}$")
_INT64: Final = 2**63


@dataclass(frozen=True)
class RawObservation:
    """One checked Divergence observation, as the report gave it."""

    index: int
    capability: str
    syscall: str
    target: str
    decoy: bool
    succeeded: bool
    result: int


@dataclass
class Report:
    """What the importer needs from either shape."""

    format: str
    observations: list[RawObservation]
    runner_version: str | None = None
    cli_version: str | None = None
    target_name: str | None = None
    artifact_source: str | None = None
    coverage: dict[str, str | int | float | bool | None] = field(default_factory=dict)
    capabilities: list[str] = field(default_factory=list)
    limitations: list[str] = field(default_factory=list)


def parse_report(data: bytes, *, target: str | None = None) -> Report:
    """Check ``data`` and return the report. Raises only :class:`ImportRefused`.

    ``target`` picks one target of a CLI wrapper report by name or source (needed only
    when it holds several).
    """
    doc = _load_json(data)
    if not isinstance(doc, dict):
        raise ImportRefused(
            "$", f"expected a JSON object (a Divergence report), got {json_type(doc)}"
        )
    if "schema" in doc:
        return _raw(doc)
    if "targets" in doc:
        return _scan(doc, target)
    if "kind" in doc:
        raise ImportRefused(
            "$",
            f"this is a cvg message ({shown(doc['kind'])}), not a Divergence report",
        )
    if "observations" in doc:
        raise ImportRefused(
            "$.schema",
            f'missing: a runner report names its format (expected "{RAW_SCHEMA}")',
        )
    raise ImportRefused(
        "$",
        f"not a Divergence report: neither a runner report (schema {RAW_SCHEMA}) nor "
        "the divergence CLI's JSON (targets[].dynamic)",
    )


def _load_json(data: bytes) -> Any:
    if len(data) > MAX_REPORT_BYTES:
        raise ImportRefused(
            "$", f"the report is {len(data)} bytes, more than the {MAX_REPORT_BYTES} accepted"
        )
    if not data.strip():
        raise ImportRefused("$", "empty input: expected a Divergence report (JSON)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ImportRefused("$", f"not UTF-8 text (byte {e.start}: {e.reason})") from None
    try:
        doc = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        raise ImportRefused("$", f"not valid JSON: {e.msg} (line {e.lineno} column {e.colno})")
    except RecursionError:
        raise ImportRefused("$", "not accepted: the JSON is nested too deeply") from None
    except ValueError as e:  # a constant, or an integer too long to convert
        raise ImportRefused("$", f"not accepted JSON: {e}") from None
    _check_tree(doc)
    return doc


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _check_tree(doc: Any) -> None:
    """Refuse what cannot be carried on faithfully: deep nesting, lone surrogates (they
    cannot be written as UTF-8), integers beyond 64 bits, and absurd sizes."""
    stack: list[tuple[Any, int]] = [(doc, 0)]
    nodes = 0
    while stack:
        value, depth = stack.pop()
        nodes += 1
        if nodes > _MAX_NODES:
            raise ImportRefused("$", f"not accepted: more than {_MAX_NODES} JSON values")
        if depth > MAX_DEPTH:
            raise ImportRefused("$", f"not accepted: nested deeper than {MAX_DEPTH} levels")
        if isinstance(value, dict):
            for k, v in value.items():
                _check_text(k)
                stack.append((v, depth + 1))
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)
        elif isinstance(value, str):
            _check_text(value)
        elif isinstance(value, bool):
            pass
        elif isinstance(value, int):
            if not -_INT64 <= value < _INT64:
                raise ImportRefused("$", f"not accepted: integer {shown(value)} beyond 64 bits")
        elif isinstance(value, float) and not math.isfinite(value):
            raise ImportRefused("$", f"not accepted: number {value} is not finite")


def _check_text(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ImportRefused(
            "$", f"not accepted: string {shown(text)} holds a lone surrogate (\\ud800-\\udfff)"
        ) from None


def _raw(doc: dict[str, Any]) -> Report:
    schema = doc["schema"]
    if not isinstance(schema, str):
        raise ImportRefused("$.schema", f"must be a string, got {json_type(schema)}")
    m = _SCHEMA_RE.match(schema)
    if m is None:
        raise ImportRefused(
            "$.schema", f"unknown report format {shown(schema)} (this reader knows {RAW_SCHEMA})"
        )
    if int(m.group(1)) != SUPPORTED_MAJOR:
        raise ImportRefused(
            "$.schema",
            f"{schema} is major version {int(m.group(1))}; this reader knows only {RAW_SCHEMA}",
        )
    return Report(
        format=schema,
        observations=_observations(doc, "$"),
        runner_version=_opt_str(doc, "runner_version", "$"),
        coverage=_coverage(doc, "$"),
        capabilities=_str_list(doc, "capabilities", "$"),
        limitations=_str_list(doc, "limitations", "$"),
    )


def _scan(doc: dict[str, Any], want: str | None) -> Report:
    version = doc.get("version")
    if version is not None:
        if not isinstance(version, str) or (m := _VERSION_RE.match(version)) is None:
            raise ImportRefused("$.version", f"not a version: {shown(version)}")
        if int(m.group(1)) != SUPPORTED_MAJOR:
            raise ImportRefused(
                "$.version",
                f"divergence {version} is major version {int(m.group(1))}; this reader "
                f"knows only the JSON of divergence {SUPPORTED_MAJOR}.x",
            )
    targets = doc["targets"]
    if not isinstance(targets, list):
        raise ImportRefused("$.targets", f"must be an array, got {json_type(targets)}")
    if not targets:
        raise ImportRefused("$.targets", "empty: the report covers no target")
    names: list[str] = []
    for i, t in enumerate(targets):
        if not isinstance(t, dict):
            raise ImportRefused(f"$.targets[{i}]", f"must be an object, got {json_type(t)}")
        names.append(_label(t, i))
    if want is None:
        if len(targets) > 1:
            raise ImportRefused(
                "$.targets",
                f"{len(targets)} targets ({', '.join(names[:10])}); choose one with --target",
            )
        index = 0
    else:
        found = [
            i for i, t in enumerate(targets) if want in (t.get("name"), t.get("source"), names[i])
        ]
        if not found:
            raise ImportRefused(
                "$.targets", f"no target {shown(want)} (there are: {', '.join(names[:10])})"
            )
        if len(found) > 1:
            raise ImportRefused(
                "$.targets", f"{len(found)} targets match {shown(want)}; name one by source"
            )
        index = found[0]
    at = f"$.targets[{index}]"
    chosen = targets[index]
    dynamic = chosen.get("dynamic")
    if not isinstance(dynamic, dict):
        raise ImportRefused(
            f"{at}.dynamic",
            "missing: this target has no dynamic results (run divergence scan --dynamic)",
        )
    if dynamic.get("available") is False or dynamic.get("ran") is False:
        reason = dynamic.get("unavailable_reason")
        why = f": {shown(reason, 200)}" if isinstance(reason, str) and reason else ""
        raise ImportRefused(f"{at}.dynamic", f"Divergence did not run this target{why}")
    dat = f"{at}.dynamic"
    return Report(
        format=SCAN_FORMAT,
        observations=_observations(dynamic, dat),
        runner_version=_opt_str(dynamic, "runner_version", dat),
        cli_version=version,
        target_name=_opt_str(chosen, "name", at),
        artifact_source=_opt_str(chosen, "source", at),
        coverage=_coverage(dynamic, dat),
        capabilities=_str_list(dynamic, "capabilities", dat),
        limitations=_str_list(dynamic, "limitations", dat),
    )


def _label(target: dict[str, Any], i: int) -> str:
    for key in ("name", "source"):
        value = target.get(key)
        if isinstance(value, str) and value:
            return shown(value, 80)
    return f"#{i}"


def _observations(container: dict[str, Any], at: str) -> list[RawObservation]:
    if "observations" not in container:
        raise ImportRefused(f"{at}.observations", "missing")
    items = container["observations"]
    if not isinstance(items, list):
        raise ImportRefused(f"{at}.observations", f"must be an array, got {json_type(items)}")
    if len(items) > MAX_OBSERVATIONS:
        raise ImportRefused(
            f"{at}.observations",
            f"{len(items)} observations, more than the {MAX_OBSERVATIONS} accepted",
        )
    return [_observation(item, i, f"{at}.observations[{i}]") for i, item in enumerate(items)]


def _observation(item: object, index: int, at: str) -> RawObservation:
    if not isinstance(item, dict):
        raise ImportRefused(at, f"must be an object, got {json_type(item)}")
    for key in ("capability", "syscall", "target", "decoy", "succeeded", "result"):
        if key not in item:
            raise ImportRefused(f"{at}.{key}", "missing")
    capability = item["capability"]
    if not isinstance(capability, str) or not capability or len(capability) > 64:
        raise ImportRefused(f"{at}.capability", f"not a capability name: {shown(capability)}")
    syscall = item["syscall"]
    if not isinstance(syscall, str) or not _SYSCALL_RE.match(syscall):
        raise ImportRefused(f"{at}.syscall", f"not a system call name: {shown(syscall)}")
    target = item["target"]
    if not isinstance(target, str):
        raise ImportRefused(f"{at}.target", f"must be a string, got {json_type(target)}")
    if not target:
        raise ImportRefused(f"{at}.target", "empty")
    if len(target) > MAX_TARGET:
        raise ImportRefused(f"{at}.target", f"longer than {MAX_TARGET} characters")
    if "\0" in target:
        raise ImportRefused(f"{at}.target", "holds a NUL character, which no path can")
    if "${" in target:
        # A policy would read it as a variable (${HOME}), granting another place.
        raise ImportRefused(f"{at}.target", "holds '${', which a policy reads as a variable")
    for key in ("decoy", "succeeded"):
        if not isinstance(item[key], bool):
            raise ImportRefused(f"{at}.{key}", f"must be true or false, got {shown(item[key])}")
    result = item["result"]
    if isinstance(result, bool) or not isinstance(result, int):
        raise ImportRefused(f"{at}.result", f"must be an integer, got {shown(result)}")
    return RawObservation(
        index=index,
        capability=capability,
        syscall=syscall,
        target=target,
        decoy=item["decoy"],
        succeeded=item["succeeded"],
        result=result,
    )


def _opt_str(container: dict[str, Any], key: str, at: str) -> str | None:
    value = container.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > 4096:
        raise ImportRefused(f"{at}.{key}", f"must be a string, got {shown(value)}")
    return value


def _str_list(container: dict[str, Any], key: str, at: str) -> list[str]:
    value = container.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ImportRefused(f"{at}.{key}", "must be an array of strings")
    # Carried along for a reviewer only; a forged report must not bloat the output.
    return [v[:1000] for v in value[:100]]


def _coverage(container: dict[str, Any], at: str) -> dict[str, str | int | float | bool | None]:
    value = container.get("coverage")
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ImportRefused(f"{at}.coverage", f"must be an object, got {json_type(value)}")
    out: dict[str, str | int | float | bool | None] = {}
    for k, v in list(value.items())[:50]:
        if isinstance(v, str):
            out[k[:100]] = v[:1000]
        elif v is None or isinstance(v, bool | int | float):
            out[k[:100]] = v
    return out
