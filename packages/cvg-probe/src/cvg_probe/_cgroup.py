"""The cgroup probe: whether cvg-run's tree limits are a cgroup's or sampled.

With a cgroup (v2 where the probing user's cgroup can hand down memory and
pids, else v1 when its hierarchies are writable, as for root), ``processes``
is exact and memory the kernel holds for the tool counts against
``memory_mb``; without one the supervisor samples the tree (docs/policy.md).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from cvg_kernel import cgroup
from cvg_schema import Feature

from ._fork import Outcome, Send
from ._group import Group, Spec, outcome_of

NO_CGROUP = (
    "no cgroup this user may make for a run (cgroup2 without memory and pids delegated, "
    "no writable v1 hierarchy): processes and memory_mb are sampled"
)
CGROUP = Spec(
    "limits.cgroup",
    "a run's cgroup made as cvg-run makes it (memory.max 64 MiB, pids.max 1): a process "
    "that joined it had its fork() refused with EAGAIN",
)


class CgroupGroup(Group):
    name = "cgroup"
    specs = (CGROUP,)

    def body(self, send: Send) -> Mapping[str, Any]:
        group = cgroup.make(64 << 20, 1)
        if group is None:
            return {"version": None}
        try:
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:  # pragma: no cover - runs in the joined process
                try:
                    group.enter()
                    got = outcome_of(lambda: os.fork() or os._exit(0))
                    os.write(w, got.encode())
                finally:
                    os._exit(0)
            os.close(w)
            got = os.read(r, 100).decode()
            os.waitpid(pid, 0)
            return {"version": group.version, "fork": got}
        finally:
            group.close()

    def interpret(self, outcome: Outcome) -> list[Feature]:
        got = outcome.report
        version = got.get("version")
        if version is None:
            return [CGROUP.failed(NO_CGROUP)]
        if got.get("fork") != "EAGAIN":
            return [CGROUP.failed(f"{version}: fork in the cgroup gave {got.get('fork')}")]
        return [CGROUP.proven(f"{version}: {CGROUP.how}")]
