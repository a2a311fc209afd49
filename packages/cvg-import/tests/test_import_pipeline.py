"""The pipeline of docs/design.md, exactly as written, on the real reports:

    cvg-import divergence report.json --baseline runtime.json | cvg-generate | cvg-validate > p.yaml

Every benign sample gives a valid policy. For every other sample whose report shows a
decoy or secret read or a network attempt, the policy grants none of it: judged per
file, from the raw report and the policy text, by an oracle that does not use the
importer's marks.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from importhelp import RAW_REPORTS, executable, load

CREDENTIAL = re.compile(
    r"(/\.ssh(/|$)|/\.aws(/|$)|(^|/)\.netrc$|divergence-token|(^|/)id_(rsa|ed25519)|credentials)"
)
OVERLAY = re.compile(r"^/tmp/divergence-overlay-[^/]+/(home|scratch)(/.*)?$")
ROOT = re.compile(r"^(/srv/divergence/corpus/samples/[^/]+/[^/]+/[^/]+/artifact)(/|$)")

BENIGN = [p for p in RAW_REPORTS if p.name.startswith("benign-")]


def _sensitive(path: Path) -> bool:
    return any(
        o["decoy"]
        or o["capability"] in ("secrets_read", "net_outbound", "net_listen")
        or CREDENTIAL.search(o["target"])
        for o in load(path)["observations"]
    )


MARKED = [p for p in RAW_REPORTS if not p.name.startswith("benign-") and _sensitive(p)]


def _root(report: dict[str, Any]) -> str | None:
    for o in report["observations"]:
        m = ROOT.match(o["target"])
        if m:
            return m.group(1)
    return None


def pipeline(report: Path, runtime: Path, tmp_path: Path, extra: str = "") -> dict[str, Any]:
    """Run the pipeline in a shell, as a user types it; the policy as parsed YAML."""
    bindir = Path(executable("cvg-import")).parent
    root = _root(load(report))
    args = f" --artifact-root {shlex.quote(root)}" if root else ""
    policy = tmp_path / "p.yaml"
    line = (
        f"cvg-import divergence {shlex.quote(str(report))} --baseline {shlex.quote(str(runtime))}"
        f"{args}{extra} | cvg-generate | cvg-validate > {shlex.quote(str(policy))}"
    )
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", line],
        capture_output=True,
        timeout=180,
        cwd=tmp_path,
        env={"PATH": f"{bindir}:/usr/bin:/bin", "LANG": "C.UTF-8"},
    )
    assert done.returncode == 0, done.stderr.decode()
    doc = yaml.safe_load(policy.read_text())
    assert isinstance(doc, dict) and doc["version"] == 1, policy.read_text()[:500]
    return doc


def _covers(rule: str, path: str) -> bool:
    rule = posixpath.normpath(rule)
    return path == rule or path.startswith(rule.rstrip("/") + "/")


def _forms(target: str) -> list[str]:
    """Every way a policy could name this path."""
    norm = posixpath.normpath(target)
    forms = [norm]
    m = OVERLAY.match(norm)
    if m:
        forms.append(("${HOME}" if m.group(1) == "home" else "${SCRATCH}") + (m.group(2) or ""))
    return forms


def granted_of_the_forbidden(report: dict[str, Any], policy: dict[str, Any]) -> list[str]:
    fs = policy.get("filesystem") or {}
    rules = [*fs.get("read", []), *fs.get("write", []), *fs.get("execute", [])]
    net = policy.get("network") or {}
    ports = {*net.get("tcp_connect", []), *net.get("tcp_bind", [])}
    found = []
    for o in report["observations"]:
        failed = o["succeeded"] is False or o["result"] < 0
        secret = o["capability"] == "secrets_read" or CREDENTIAL.search(o["target"])
        if o["capability"] in ("net_outbound", "net_listen"):
            port = int(o["target"].rsplit(":", 1)[1])
            if failed and port in ports:
                found.append(f"port {port} ({o['target']})")
            continue
        if not (o["decoy"] or secret or failed):
            continue
        for form in _forms(o["target"]):
            for rule in rules:
                if _covers(rule, form):
                    found.append(f"{rule} covers {form}")
    return found


@pytest.mark.parametrize("report", BENIGN, ids=lambda p: p.stem)
def test_benign_sample_gives_a_valid_policy(report: Path, runtime: Path, tmp_path: Path) -> None:
    policy = pipeline(report, runtime, tmp_path)
    # The runtime itself is granted, from the baseline: the policy can start the tool.
    assert any("python3" in p for p in policy["filesystem"]["execute"]), policy
    assert granted_of_the_forbidden(load(report), policy) == []


@pytest.mark.parametrize("report", MARKED, ids=lambda p: p.stem)
def test_decoys_secrets_and_exfiltration_are_not_granted(
    report: Path, runtime: Path, tmp_path: Path
) -> None:
    policy = pipeline(report, runtime, tmp_path)
    assert granted_of_the_forbidden(load(report), policy) == []
    net = policy["network"]
    assert net["tcp_connect"] == [] and net["tcp_bind"] == [], net


def test_the_sample_lists_are_what_the_corpus_holds() -> None:
    assert len(BENIGN) == 20
    assert len(MARKED) == 25


def test_the_oracle_sees_a_grant_when_there_is_one(runtime: Path, tmp_path: Path) -> None:
    """A positive control: the same report with its decoy unmarked and renamed, and its
    connect succeeding, is granted, and the oracle says so."""
    src = next(p for p in MARKED if p.name.startswith("mcp-mal-001-"))
    doc = load(src)
    decoy, connect = doc["observations"]
    decoy.update(
        capability="fs_read",
        decoy=False,
        target=decoy["target"].replace(".ssh/id_rsa", "notes.txt"),
    )
    connect.update(succeeded=True, result=0)
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(doc))
    policy = pipeline(forged, runtime, tmp_path)
    # The oracle judges the forged report's own (unmarked) events: flip them back to
    # what a marked report said, and every grant is caught.
    as_marked = json.loads(json.dumps(doc))
    as_marked["observations"][0].update(decoy=True, capability="secrets_read")
    as_marked["observations"][1].update(succeeded=False, result=-1)
    caught = granted_of_the_forbidden(as_marked, policy)
    assert any("9" in c for c in caught), (caught, policy["network"])
    assert any("notes.txt" in c for c in caught), (caught, policy["filesystem"])


@pytest.mark.parametrize(
    ("capability", "target", "errno_"),
    [("net_outbound", "93.184.216.34:443", 111), ("net_listen", "0.0.0.0:8080", 98)],
)
def test_a_failed_network_attempt_is_never_granted_whatever_its_errno(
    runtime: Path, tmp_path: Path, capability: str, target: str, errno_: int
) -> None:
    """ECONNREFUSED and EADDRINUSE would say the port was open to the tool; a report
    may still claim them on a failed attempt, and source.never_grant keeps it out."""
    doc = load(next(p for p in MARKED if p.name.startswith("mcp-mal-001-")))
    doc["observations"][1].update(
        capability=capability,
        syscall="connect" if capability == "net_outbound" else "bind",
        target=target,
        result=-errno_,
        succeeded=False,
    )
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(doc))
    policy = pipeline(forged, runtime, tmp_path)
    assert granted_of_the_forbidden(doc, policy) == []
