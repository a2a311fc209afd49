"""--apply only applies a record cvg-run wrote: a forged one (a tool that could write the
record's directory, or anyone) is refused, as root and as the unprivileged user.

The oracle is the policy file: the same forged record, sealed with the user's key (which
only the user's cvg can read: bare, with no sandbox, the forger has it), is applied."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from planted import Box, Who, cvg_explain, cvg_run, default_policy, write_policy

from cvg_kernel import seal

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs as root and cvgtest")


def _line(data: dict[str, Any]) -> bytes:
    return (json.dumps(data, separators=(",", ":")) + "\n").encode()


def test_apply_refuses_a_forged_record(box: Box, who: Who) -> None:
    policy = write_policy(box, default_policy())
    original = policy.read_text()
    record = box.root / "run.json"
    r = cvg_run(who, box, "--record", str(record), "-p", str(policy), "--", "true")
    assert r.returncode == 0, r.stderr
    genuine = json.loads(record.read_bytes())
    assert genuine["seal"].startswith("hmac-sha256:")
    r = cvg_explain(who, box, "--apply", str(record))
    assert r.returncode == 0 and "nothing to apply" in r.stderr, r

    # A fabricated denial, and the exit status the tool would like recorded.
    wanted = box.data / "notes.txt"
    forged = {k: v for k, v in genuine.items() if k != "seal"}
    forged["traced"] = True
    forged["exit"] = {"status": 0, "meaning": "exited"}
    forged["denials"] = [{"id": "d1", "syscall": "openat", "path": str(wanted),
                          "mechanism": "landlock_fs", "right": "read_file",
                          "errno": "EACCES"}]  # fmt: skip
    key = (box.state / "cvg" / "key" / "seal").read_bytes()

    # Bare, with the key, the forgery is applied: the oracle sees the policy change.
    record.write_bytes(seal.seal_record(key, _line(forged)))
    r = cvg_explain(who, box, "--apply", str(record))
    assert r.returncode == 0, r.stderr
    assert str(wanted) in policy.read_text()
    policy.write_text(original)

    unsealed = _line(forged)
    stolen_seal = _line({**forged, "seal": genuine["seal"]})
    other_key = seal.seal_record(os.urandom(32), _line(forged))
    for name, data in (("unsealed", unsealed), ("stolen seal", stolen_seal),
                       ("other key", other_key)):  # fmt: skip
        record.write_bytes(data)
        r = cvg_explain(who, box, "--apply", str(record))
        assert r.returncode == 3, (name, r)
        assert r.stderr.count("\n") == 1 and "refusing --apply" in r.stderr, (name, r.stderr)
        assert policy.read_text() == original, name
    # Explaining it still works, and says what it is.
    r = cvg_explain(who, box, str(record))
    assert r.returncode == 0, r
    assert "unauthenticated record" in r.stderr, r.stderr


def test_apply_refuses_when_the_key_is_not_private(box: Box, who: Who) -> None:
    policy = write_policy(box, default_policy())
    record = box.root / "run.json"
    r = cvg_run(who, box, "--record", str(record), "-p", str(policy), "--", "true")
    assert r.returncode == 0, r.stderr
    key = Path(box.state / "cvg" / "key" / "seal")
    key.chmod(0o644)  # another user could have read it, so could have forged with it
    r = cvg_explain(who, box, "--apply", str(record))
    assert r.returncode == 3 and "refusing --apply" in r.stderr, r
