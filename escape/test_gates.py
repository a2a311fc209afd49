"""The gates against the committed results.json: they compare sets of names, so a
lost proof, a deleted attack or a contained cell that now tests nothing each fail,
whatever else changed at the same time; and the outcomes a cell can have."""

import copy
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gates  # noqa: E402
import judges  # noqa: E402
import staging  # noqa: E402

DATA = json.loads((HERE / "results" / "results.json").read_text())["attacks"]


def _proven_by_root() -> list[str]:
    return [n for n, a in DATA.items() if a["baseline"]["root"].get("fired")]


def test_the_committed_results_pass_every_gate():
    assert gates.lost_proofs(DATA, DATA, ["root", "unpriv"]) == []
    assert gates.untested_now(DATA, DATA) == []
    assert gates.deleted(set(DATA), DATA) == []


def test_one_proof_lost_while_another_is_gained_fails():
    now = copy.deepcopy(DATA)
    lost = _proven_by_root()[0]
    gained = next(n for n, a in now.items() if not a["baseline"]["root"].get("fired"))
    now[lost]["baseline"]["root"]["fired"] = False
    now[gained]["baseline"]["root"]["fired"] = True
    lines = gates.lost_proofs(now, DATA, ["root"])
    assert len(lines) == 1 and lost in lines[0] and gained not in lines[0]


def test_a_deleted_attack_fails():
    name = _proven_by_root()[0]
    lines = gates.deleted(set(DATA) - {name}, DATA)
    assert len(lines) == 1 and name in lines[0]


def test_a_contained_cell_now_refused_or_timed_out_fails():
    name, cell = next(
        (n, c)
        for n, a in DATA.items()
        for c, v in a["cells"].items()
        if v["outcome"] == "contained"
    )
    for untested in gates.UNTESTED:
        now = copy.deepcopy({name: DATA[name]})
        now[name]["cells"][cell] = {"outcome": untested, "evidence": "x", "status": 125}
        lines = gates.untested_now(now, DATA)
        assert len(lines) == 1 and name in lines[0] and cell in lines[0]


def test_a_proof_varies_attack_is_retried_not_forgiven():
    """A proof_varies attack unproven now is tried again (to_retry); after the tries
    it counts as lost like any other: it is not left out of the comparison."""
    name = _proven_by_root()[0]
    now = copy.deepcopy(DATA)
    now[name]["baseline"]["root"]["fired"] = False
    assert gates.to_retry(now, DATA, ["root"], {name}) == [(name, "root")]
    assert gates.to_retry(now, DATA, ["root"], set()) == []
    assert any(name in line for line in gates.lost_proofs(now, DATA, ["root"]))


def test_every_proof_varies_says_why():
    registry = staging.load_attacks()
    extras = {n: a.extra for n, a in registry.items()}
    assert any("proof_varies" in e for e in extras.values())
    assert gates.varies_reasons(extras) == []
    assert gates.varies_reasons({"x": {"proof_varies": True}}) != []


def _cell(**kw):
    return {"fired": False, "evidence": "oracle silent", "attempted": True, **kw}


def test_a_cell_is_contained_only_when_the_attack_ran():
    base = {"fired": True, "evidence": "fired"}
    attack = {"limit": None, "policy": "workspace"}
    assert judges.outcome(base, _cell(), attack, 7)[0] == "contained"
    assert judges.outcome(base, _cell(attempted=False), attack, 7)[0] == "not-attempted"
    assert judges.outcome(base, _cell(refused=True, attempted=False), attack, 7)[0] == "refused"
    assert judges.outcome(base, _cell(timeout=True), attack, 7)[0] == "timed-out"
    assert judges.outcome(base, _cell(fired=True), attack, 7)[0] == "escaped"
    assert judges.outcome({"fired": False, "evidence": "x"}, _cell(), attack, 7)[0] == "not-proven"
