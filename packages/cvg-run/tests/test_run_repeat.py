"""A long-lived caller: after many runs in one process, the supervisor's own
descriptors, threads and children are back where they started."""

from __future__ import annotations

import os
import pwd
import time
from typing import Any

from runhelp import Box, main, start

Identity = pwd.struct_passwd | None
RUNS = 1000


def _state() -> dict[str, Any]:
    try:
        os.waitpid(-1, os.WNOHANG)
        has_children = True
    except ChildProcessError:
        has_children = False
    return {
        "fds": sorted(os.listdir("/proc/self/fd")),
        "threads": len(os.listdir("/proc/self/task")),
        "children": open(f"/proc/self/task/{os.getpid()}/children").read().split(),
        "has_children": has_children,
    }


def test_a_thousand_runs_leak_nothing(identity: Identity, box: Box) -> None:
    (box.cwd / "not-executable").write_text("#!/bin/sh\n")
    (box.cwd / "not-executable").chmod(0o644)
    rec = str(box.share / "run.json")
    base = ["--cwd", str(box.cwd), "--record", rec, "--"]

    def child() -> dict[str, Any]:
        main([*base, "true"])  # the first run compiles and caches the plan
        before = _state()
        t0 = time.monotonic()
        failures = [rc for rc in (main([*base, "true"]) for _ in range(RUNS)) if rc != 0]
        seconds = time.monotonic() - t0
        # Runs that end before a fork (126, 127) must release what they prepared too.
        odd = [main([*base, "no-such-command-cvg"]) for _ in range(50)]
        odd += [main([*base, "./not-executable"]) for _ in range(50)]
        after = _state()
        return {"before": before, "after": after, "failures": failures,
                "odd": sorted(set(odd)), "seconds": seconds}  # fmt: skip

    ran = start(child, user=identity, env=box.env).finish(timeout=300)
    assert ran.error is None, ran.error
    value = ran.value
    print(f"\n{RUNS} runs of `true` via main() as {(identity and identity.pw_name) or 'root'}: "
          f"{value['seconds']:.1f} s, {value['seconds'] / RUNS * 1000:.1f} ms each")  # fmt: skip
    assert value["failures"] == []
    assert value["odd"] == [126, 127]
    assert value["after"] == value["before"]
    assert value["before"]["children"] == [] and not value["before"]["has_children"]
    assert ran.out == ""
    leftovers = [p.name for p in box.share.iterdir() if p.name != "run.json"]
    assert leftovers == []  # no temporary record files left behind
