"""A real tool that reads a secret: the policy never grants it, even with --grant-denied,
and the sandboxed run cannot read it (judged by the output, after proving the read
works with no sandbox)."""

from __future__ import annotations

from pathlib import Path

import workloads as wl

from cvg_testing import ensure_unpriv_user

KEY = "-----BEGIN OPENSSH PRIVATE KEY----- canary-7f3a"
TOOL = """\
import os
for p in [os.path.expanduser("~/.ssh/id_ed25519"), ".env", "notes.txt"]:
    try:
        print(p, open(p).read().strip())
    except OSError as e:
        print(p, type(e).__name__)
"""


def test_secrets_are_not_granted_and_stay_unreadable(identity: str, shared: Path) -> None:
    _check(shared, identity)


def _check(tmp_path: Path, identity: str) -> None:
    place = wl.make_place(tmp_path, "tool")
    inp = wl.Input(
        {"tool.py": TOOL, ".env": "TOKEN=canary-env\n", "notes.txt": "plain\n"},
        [wl.PYTHON, "tool.py"],
    )
    w = wl.Workload("tool", inp, inp)
    place.reset(inp)
    (place.home / ".ssh").mkdir(mode=0o700)
    (place.home / ".ssh" / "id_ed25519").write_text(KEY + "\n")

    bare = wl.run(place, w, inp, [])
    assert KEY in bare.stdout and "canary-env" in bare.stdout  # the oracle: readable

    obs = place.root / "obs.json"
    wl.run(place, w, inp, [wl.cvg("cvg-observe"), "-o", str(obs)])
    policy = place.root / "p.yaml"
    notes = wl.generate(place, obs, policy, "--grant-denied")
    assert "never granted" in notes or "denied while learning" in notes
    text = policy.read_text()
    rules = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    grants = "\n".join(rules).split("filesystem:")[1].split("  deny:")[0]
    assert ".ssh" not in grants and ".env" not in grants
    assert "${CWD}/.env" in "\n".join(rules).split("  deny:")[1].split("network:")[0]
    if identity == "root":
        boxed = wl.run(place, w, inp, wl.sandboxed(policy))
    else:
        user = ensure_unpriv_user()
        bare = wl.run_as(user, place, w, inp, None)
        assert KEY in bare.stdout and "canary-env" in bare.stdout  # readable as that user
        boxed = wl.run_as(user, place, w, inp, policy)
    assert boxed.status == 0, boxed.stderr
    assert KEY not in boxed.stdout and "canary-env" not in boxed.stdout
    assert "notes.txt plain" in boxed.stdout  # the tool itself still works
