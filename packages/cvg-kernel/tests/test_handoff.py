"""A prepared plan handed to another process (Prepared.handoff, adopt) confines as the
prepared one does: the process that adopts it opens no rule and assembles nothing.

Each run is a forked child, as root and as the unprivileged user, that prepares the
plan, passes its handoff through marshal (as cvg-run's --trace launcher gets it),
adopts it, applies it and execs a real program. The oracle comes first: with no
sandbox the secret file is readable.
"""

from __future__ import annotations

import marshal
import os
from pathlib import Path

import pytest

from cvg_kernel.plan import PlanError, adopt, prepare
from cvg_testing import spawn

SYSTEM = [{"path": "/usr", "access": ["read_file", "read_dir", "execute"]},
          {"path": "/etc/ld.so.cache", "access": ["read_file"]}]  # fmt: skip


def _plan(files: Path) -> dict:
    rules = [
        *SYSTEM,
        {"path": "/proc", "access": ["read_file", "read_dir"]},
        {"path": str(files / "granted.txt"), "access": ["read_file"]},
    ]
    return {
        "kind": "cvg.plan",
        "schema_version": "1.0",
        "landlock": {"fs_rules": rules},
        "rlimits": {"nofile": 64},
        "environment": {"set": {"PATH": "/usr/bin:/bin"}},
    }


def _adopted_run(plan: dict, argv: list[str]) -> int:
    prepared = prepare(plan)
    handoff = marshal.loads(marshal.dumps(prepared.handoff()))
    adopted = adopt(handoff)
    adopted.apply()
    adopted.exec(argv)


def test_an_adopted_plan_confines_like_the_prepared_one(files: Path, identity) -> None:
    plan = _plan(files)
    secret, granted = str(files / "secret.txt"), str(files / "granted.txt")
    bare = spawn(lambda: os.execv("/usr/bin/cat", ["cat", secret]), user=identity)
    assert (bare.exitcode, bare.stdout) == (0, b"secret\n")

    ok = spawn(lambda: _adopted_run(plan, ["cat", granted]), user=identity)
    assert (ok.exitcode, ok.stdout) == (0, b"granted\n"), ok.stderr
    denied = spawn(lambda: _adopted_run(plan, ["cat", secret]), user=identity)
    assert (denied.exitcode, denied.stdout) == (1, b""), denied.stderr
    assert b"Permission denied" in denied.stderr
    # The rlimits, the environment and the capabilities come through too.
    shown = spawn(
        lambda: _adopted_run(
            plan, ["sh", "-c", 'ulimit -n; echo "$PATH"; grep CapEff /proc/self/status']
        ),
        user=identity,
    )
    assert shown.exitcode == 0, shown.stderr
    assert shown.stdout.decode().split("\n")[:3] == [
        "64",
        "/usr/bin:/bin",
        "CapEff:\t0000000000000000",
    ]


@pytest.mark.parametrize(
    "data",
    [{}, {"filter": {}, "ruleset": None, "rlimits": [], "keep": [], "env": {}},
     {"filter": None, "ruleset": (-1, 0), "rlimits": [], "keep": [], "env": {}}],
)  # fmt: skip
def test_what_is_not_a_handoff_is_a_plan_error(data: dict) -> None:
    with pytest.raises(PlanError, match="not a prepared plan's handoff"):
        adopt(data)
