"""The gates that compare a run of the matrix with the committed results.json.

Each takes plain dicts (results.json's "attacks" shape) and returns the lines to
print, one per failure; an empty list passes. They compare sets of names, never
counts: one attack losing its proof while another gains one still fails.
"""

from __future__ import annotations

# How often the runner retries the bare run of a `proof_varies` attack whose proof
# the committed results record, before it counts the proof as lost.
PROOF_TRIES = 5
# Cell outcomes that test nothing (report.OUTCOMES): the tool never ran the attack.
UNTESTED = ("refused", "timed-out", "not-attempted")


def proven(attacks: dict, ident: str) -> set[str]:
    """The attacks whose oracle fired unconfined as ``ident``."""
    return {n for n, e in attacks.items() if e["baseline"].get(ident, {}).get("fired")}


def lost_proofs(now: dict, committed: dict, identities: list[str]) -> list[str]:
    """Attacks run now that the committed results prove (per identity) and that are
    not proven now. A `proof_varies` attack is in ``now`` only after PROOF_TRIES bare
    runs, so it counts like any other."""
    lines = []
    for ident in identities:
        gone = sorted((proven(committed, ident) & set(now)) - proven(now, ident))
        if gone:
            lines.append(
                f"PROOF LOST as {ident}: proven in results.json, not proven now: " + ", ".join(gone)
            )
    return lines


def deleted(registry: set[str], committed: dict) -> list[str]:
    """Attacks the committed results record that no attack module defines any more."""
    gone = sorted(set(committed) - registry)
    if not gone:
        return []
    return [
        "ATTACK DELETED: in results.json, defined by no module under escape/attacks: "
        + ", ".join(gone)
    ]


def untested_now(now: dict, committed: dict) -> list[str]:
    """Cells contained in the committed results that are now refused, timed out or
    not attempted: the matrix lost the power to say they are contained."""
    lines = []
    for name, e in sorted(now.items()):
        was = committed.get(name, {}).get("cells", {})
        for cell, c in sorted(e["cells"].items()):
            if c["outcome"] in UNTESTED and was.get(cell, {}).get("outcome") == "contained":
                lines.append(
                    f"NO LONGER TESTED {cell} {name}: contained in results.json, "
                    f"{c['outcome']} now ({c['evidence'][:120]})"
                )
    return lines


def varies_reasons(extras: dict[str, dict]) -> list[str]:
    """Every `proof_varies` must say, in words, why the bare proof depends on the
    machine's state."""
    return [
        f"proof_varies of {name} is not a reason: {e['proof_varies']!r}"
        for name, e in sorted(extras.items())
        if "proof_varies" in e
        and not (isinstance(e["proof_varies"], str) and len(e["proof_varies"].split()) >= 3)
    ]


def to_retry(now: dict, committed: dict, identities: list[str], varies: set[str]) -> list:
    """(name, identity) of the `proof_varies` attacks the committed results prove and
    this run did not: their bare run is tried again, up to PROOF_TRIES times."""
    return [
        (n, ident)
        for ident in identities
        for n in sorted((proven(committed, ident) & varies & set(now)) - proven(now, ident))
    ]
