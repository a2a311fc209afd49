"""Every real Divergence report imports into a valid, marked, partial observation.

The marks are judged by an oracle that reads the raw report itself (decoy flag,
succeeded flag, sign of the result, and a credential-path pattern list written here,
independently of cvg_policy's), never by the mapping code under test.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from importhelp import RAW_REPORTS, SCAN_REPORTS, load

from cvg_import.cli import main
from cvg_schema import Observation, dumps, loads_as

# The five decoys the runner plants, and host credential paths, by their own names.
CREDENTIAL = re.compile(
    r"(/\.ssh/|/\.aws/|(^|/)\.netrc$|divergence-token|(^|/)id_(rsa|ed25519|ecdsa|dsa)"
    r"|credentials|(^|/)\.env$|/etc/shadow)"
)
NEVER = {"decoy", "secret", "failed"}
OVERLAY = re.compile(r"^/tmp/divergence-overlay-[0-9]+-[0-9]+-[0-9]+/(home|scratch)(/.*)?$")
FILE_CAPS = ("fs_read", "fs_write", "fs_delete", "secrets_read")


def test_all_fixture_reports_are_present() -> None:
    # The corpus has 110 samples; fewer means the data moved, not that we passed.
    assert len(RAW_REPORTS) == 110
    assert len(SCAN_REPORTS) == 4


def _import(path: Path, capfdbinary: pytest.CaptureFixture[bytes], *args: str) -> Observation:
    status = main(["divergence", str(path), *args])
    out, err = capfdbinary.readouterr()
    assert status == 0, err.decode()
    assert b"Traceback" not in err
    assert out.endswith(b"\n") and out.count(b"\n") == 1
    obs = loads_as(Observation, out)
    assert loads_as(Observation, dumps(obs)) == obs, "round trip changed the observation"
    assert loads_as(Observation, dumps(obs, pretty=True)) == obs
    return obs


def _raw_observations(path: Path) -> list[dict[str, Any]]:
    doc = load(path)
    if "schema" in doc:
        return doc["observations"]  # type: ignore[no-any-return]
    (target,) = doc["targets"]
    return target["dynamic"]["observations"]  # type: ignore[no-any-return]


def _check_marks(path: Path, obs: Observation) -> dict[str, int]:
    raws = _raw_observations(path)
    assert obs.partial is True
    assert len(obs.events) == len(raws), "one event per Divergence observation"
    overlays = {
        m.group(0) for r in raws if (m := re.match(r"/tmp/divergence-overlay-[^/]+", r["target"]))
    }
    if overlays:
        (overlay,) = overlays
        assert (obs.home, obs.scratch) == (f"{overlay}/home", [f"{overlay}/scratch"])
    else:
        assert (obs.home, obs.scratch) == (None, [])
    seen = {"decoy": 0, "secret": 0, "failed": 0}
    for i, (raw, event) in enumerate(zip(raws, obs.events, strict=True)):
        src = event.source
        assert src is not None
        assert event.id == f"e{i + 1}"
        assert src["tool"] == "divergence" and src["index"] == i
        for key in ("capability", "syscall", "target", "result", "decoy"):
            assert src[key] == raw[key], (key, raw)
        assert event.syscall == raw["syscall"]
        failed = raw["succeeded"] is False or raw["result"] < 0
        secret = raw["capability"] == "secrets_read" or bool(CREDENTIAL.search(raw["target"]))
        # never_grant names the first that applies, in the documented order.
        if raw["decoy"]:
            seen["decoy"] += 1
            assert src["never_grant"] == "decoy", (path.name, i, src)
            assert src["decoy"] is True
        if secret:
            seen["secret"] += 1
            assert src["never_grant"] == ("decoy" if raw["decoy"] else "secret"), (i, src)
            assert src["secret"], (path.name, i, src)
        if failed:
            seen["failed"] += 1
            assert src["never_grant"] in NEVER, (path.name, i, src)
            if not (raw["decoy"] or secret):
                assert src["never_grant"] == "failed", (path.name, i, src)
            assert event.result != "ok", (path.name, i, event)
        if not (raw["decoy"] or secret or failed):
            assert src["never_grant"] is None, (path.name, i, src)
            assert event.result == "ok"
        # The dead overlay is the observation's home and scratch, so a policy says
        # ${HOME} and ${SCRATCH} for it, never the overlay's own name.
        m = OVERLAY.match(raw["target"])
        plain = not re.search(r"//|/\.\.?(/|$)", raw["target"])
        if m is not None and plain and raw["capability"] in FILE_CAPS:
            role, rest = m.group(1), m.group(2) or ""
            assert event.path is not None
            assert event.path == (obs.home if role == "home" else obs.scratch[0]) + rest
            assert src["policy_path"] == ("${HOME}" if role == "home" else "${SCRATCH}") + rest
    return seen


@pytest.mark.parametrize(
    ("path", "fmt"),
    [(p, "divergence.sandbox/1") for p in RAW_REPORTS]
    + [(p, "divergence scan --json") for p in SCAN_REPORTS],
    ids=lambda v: v.stem if isinstance(v, Path) else "",
)
def test_report_imports_marked(
    path: Path, fmt: str, capfdbinary: pytest.CaptureFixture[bytes]
) -> None:
    obs = _import(path, capfdbinary)
    _check_marks(path, obs)
    assert obs.source is not None and obs.source["format"] == fmt


def test_oracle_sees_every_kind_of_mark(capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    # If the fixtures held no decoy, secret or failure, the marks test would prove nothing.
    totals = {"decoy": 0, "secret": 0, "failed": 0}
    for path in RAW_REPORTS:
        for key, n in _check_marks(path, _import(path, capfdbinary)).items():
            totals[key] += n
    # Counted by hand in the 110 reports: 6 decoy opens, 7 credential paths, 25 failures.
    assert totals == {"decoy": 6, "secret": 7, "failed": 25}, totals


def test_token_read_as_fs_read_is_a_secret(capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    (path,) = [p for p in RAW_REPORTS if p.name.startswith("obf-026-")]
    raw = _raw_observations(path)
    assert raw[0]["capability"] == "fs_read" and raw[0]["target"].endswith("divergence-token")
    event = _import(path, capfdbinary).events[0]
    assert event.source is not None and event.source["secret"]
    assert event.source["policy_path"] == "${HOME}/.config/divergence-token"


def test_host_credential_attempt_is_secret_and_failed(
    capfdbinary: pytest.CaptureFixture[bytes],
) -> None:
    (path,) = [p for p in RAW_REPORTS if p.name.startswith("obf-003-")]
    event = _import(path, capfdbinary).events[0]
    assert event.path == "/root/.ssh/id_rsa"
    assert event.result == "EACCES"
    assert event.source is not None and event.source["never_grant"] == "secret"


def test_both_shapes_agree(capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    """The CLI wrapper's JSON and the runner's report of the same sample give the same
    events, up to paths (the two runs had different overlays and working directories)."""
    for scan in SCAN_REPORTS:
        a = _import(scan, capfdbinary)
        b = _import(scan.parent.parent / scan.name, capfdbinary)

        def shape(o: Observation) -> list[tuple[Any, ...]]:
            return [
                (e.op, e.syscall, e.result, e.port, (e.source or {})["never_grant"])
                for e in o.events
            ]

        assert shape(a) == shape(b), scan.name

        # Overlay paths land on the same variables in both, whatever the overlay's name.
        def policy(o: Observation) -> list[Any]:
            return [(e.source or {})["policy_path"] for e in o.events]

        assert [p for p in policy(a) if p and p.startswith(("${H", "${S"))] == [
            p for p in policy(b) if p and p.startswith(("${H", "${S"))
        ], scan.name
