"""A big observation gives the same policy, byte for byte, whether each path is judged
and resolved once (what cvg-generate does) or once per event (the plain reference),
and with or without garbage collection."""

from __future__ import annotations

import gc
import hashlib
import importlib.util
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pytest

import cvg_generate.generate as generate_mod
from cvg_generate.cli import main
from cvg_generate.generate import Source, generate
from cvg_generate.paths import PathContext
from cvg_schema import Observation
from cvg_schema.io import dumps

EVENTS = 4000
SYNTH = Path(__file__).resolve().parents[3] / "benchmarks" / "synth_observation.py"


def _synth() -> ModuleType:
    spec = importlib.util.spec_from_file_location("synth_observation", SYNTH)
    assert spec is not None and spec.loader is not None, f"cannot load {SYNTH}"
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def data() -> dict[str, Any]:
    return _synth().observation(EVENTS)  # type: ignore[no-any-return]


def _reference(data: dict[str, Any]) -> tuple[bytes, list[str]]:
    """The policy with every path judged and resolved anew for each event."""
    mp = pytest.MonkeyPatch()
    try:
        mp.setattr(generate_mod.functools, "lru_cache", lambda maxsize: lambda f: f)
        mp.setattr(PathContext, "resolve", lambda self, p, *, follow=True: self._resolve(p, follow))
        result = generate([Source(Observation.model_validate(data))])
    finally:
        mp.undo()
    return dumps(result.policy, pretty=True), result.notes


def test_the_synthetic_observation_exercises_what_is_never_granted(data: dict[str, Any]) -> None:
    policy, notes = _reference(data)
    text = "\n".join(notes)
    assert "~/.ssh holds credentials" in text
    assert "/home/u/project/.env" in text
    assert "write on /etc as a whole" in text
    assert "write on ${HOME} as a whole" in text
    assert "listing /usr would need read on all of it" in text
    assert "denied while learning" in text
    assert b".ssh" not in policy.split(b'"reasons"')[0]
    paths = {e["path"] for e in data["events"] if "path" in e}
    assert len(paths) > EVENTS // 10, "too few unique paths to be like a trace"


def test_memoised_policy_is_byte_identical_to_the_reference(
    data: dict[str, Any], tmp_path: Path
) -> None:
    expected, expected_notes = _reference(data)
    obs = tmp_path / "obs.json"
    obs.write_bytes(orjson.dumps(data))
    out = tmp_path / "policy.json"
    assert main([str(obs), "-q", "-o", str(out)]) == 0
    got = out.read_bytes()
    assert hashlib.sha256(got).hexdigest() == hashlib.sha256(expected).hexdigest()
    assert gc.isenabled(), "the command left garbage collection off"
    again = generate([Source(Observation.model_validate(data))])
    assert again.notes == expected_notes


def test_each_path_is_judged_once(data: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    judge = generate_mod.secret_reason

    def counted(path: str, home: str | None = None) -> str | None:
        calls.append(path)
        return judge(path, home)

    monkeypatch.setattr(generate_mod, "secret_reason", counted)
    generate([Source(Observation.model_validate(data))])
    # Once for its events; an executed file again for its grants and its package's.
    path, most = Counter(calls).most_common(1)[0]
    assert most <= 3, f"{path} was judged {most} times"
    assert len(calls) < EVENTS // 2
