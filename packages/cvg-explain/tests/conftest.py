"""Hand-made run records that match the cvg.run schema, the policies they name, and a
box and an identity for the real cvg-run and cvg-explain."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from planted import ROOT, Box, Who

from cvg_kernel import seal
from cvg_schema.run import RunRecord
from cvg_testing import ensure_unpriv_user

DIGEST = "sha256:" + "0" * 64

MakeRecord = Callable[..., RunRecord]


def record_dict(
    denials: list[dict[str, Any]],
    *,
    policy_path: str | None,
    cwd: str = "/work/project",
    scratch: str | None = "/tmp/cvg-scratch-abc",
) -> dict[str, Any]:
    for i, d in enumerate(denials, 1):
        d.setdefault("id", f"d{i}")
    data: dict[str, Any] = {
        "kind": "cvg.run",
        "schema_version": "1.0",
        "run_id": "20261129T120000Z-0a1b2c3d",
        "policy_digest": DIGEST,
        "policy_path": policy_path,
        "argv": ["python3", "tool.py"],
        "cwd": cwd,
        "exit": {"status": 1, "meaning": "exited"},
        "timings": {"wall_seconds": 0.5},
        "traced": True,
        "denials": denials,
        "started": "2026-11-29T12:00:00Z",
        "ended": "2026-11-29T12:00:01Z",
    }
    if scratch is not None:
        data["scratch"] = {"path": scratch, "kept": False}
    return data


@pytest.fixture
def make_record() -> MakeRecord:
    def make(
        denials: list[dict[str, Any]],
        *,
        policy_path: str | None = None,
        cwd: str = "/work/project",
        scratch: str | None = "/tmp/cvg-scratch-abc",
    ) -> RunRecord:
        return RunRecord.model_validate(
            record_dict(denials, policy_path=policy_path, cwd=cwd, scratch=scratch)
        )

    return make


@pytest.fixture(autouse=True)
def _home(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A fixed HOME, so ${HOME} forms and secrets do not depend on who runs the tests;
    cvg's state (where the key that seals records is) in a directory of the test's own."""
    monkeypatch.setenv("HOME", "/home/alice")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))


@pytest.fixture
def box() -> Iterator[Box]:
    """A world-writable tree for the real cvg-run and cvg-explain (planted.py)."""
    b = Box.make()
    try:
        yield b
    finally:
        b.remove()


@pytest.fixture(params=["root", "cvgtest"])
def who(request: pytest.FixtureRequest) -> Who:
    return ROOT if request.param == "root" else Who("cvgtest", ensure_unpriv_user())


def sealed(data: dict[str, Any]) -> str:
    """A record's text as cvg-run writes it: one line, sealed with the user's key."""
    line = json.dumps(data, separators=(",", ":")) + "\n"
    return seal.seal_record(seal.load_key(create=True), line.encode()).decode()
