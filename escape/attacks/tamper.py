# ruff: noqa: SIM115  (attacks keep files open on purpose: short, one-shot scripts)
"""Tampering with cvg's own state: the policy file, the plan cache and the run records
(the runner points cvg-run's XDG_CACHE_HOME and XDG_STATE_HOME at per-attack
directories seeded with a plan and a record, and snapshots them)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _lib import attack, main


def _p(a, *parts):
    return os.path.join(a["state"], *parts)


@attack("tamper", "canary")
def write_policy_file(a):
    """Append a grant to the policy file the run was started with, so the next run is
    looser. Stopped by Landlock write_file."""
    with open(a["policy"], "a") as f:
        f.write("\n# filesystem: {write: [/]}\n")


@attack("tamper", "canary")
def replace_policy_file_by_rename(a):
    """Write a new policy in the workspace and rename it over the policy file.
    Stopped by Landlock (refer, make_reg/remove_file on the policy's directory)."""
    p = os.path.join(a["ws"], "p.yaml")
    open(p, "w").write("version: 1\n")
    os.rename(p, a["policy"])


@attack("tamper", "canary", limit="metadata")
def chmod_policy_file_world_writable(a):
    """chmod 0666 the policy file so anyone can rewrite it later. Not stopped: file
    metadata is outside Landlock (documented limit)."""
    os.chmod(a["policy"], 0o666)


@attack("tamper", "canary")
def poison_plan_cache(a):
    """Overwrite an entry of cvg-run's plan cache (a cache hit skips compiling).
    Stopped by Landlock write_file (the cache is outside every grant)."""
    with open(_p(a, "cache", "cvg", "plans", "seed.json"), "w") as f:
        f.write('{"plan": {}, "plan_digest": "x", "policy_digest": "x"}')


@attack("tamper", "canary")
def delete_run_record(a):
    """Delete an earlier cvg.run record (covering tracks). Stopped by Landlock."""
    os.unlink(_p(a, "state", "cvg", "runs", "seed.json"))


@attack("tamper", "canary")
def rename_state_directory(a):
    """Rename cvg's state directory away, so records land elsewhere. Stopped by Landlock."""
    os.rename(_p(a, "state", "cvg"), _p(a, "state", "gone"))


@attack("tamper", "canary", policy="default")
def poison_plan_cache_default_policy(a):
    """Overwrite the plan cache entry under the default policy. Stopped by Landlock."""
    with open(_p(a, "cache", "cvg", "plans", "seed.json"), "w") as f:
        f.write("{}")


if __name__ == "__main__":
    main(globals())
