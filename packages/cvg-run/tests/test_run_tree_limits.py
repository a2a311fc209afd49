"""memory_mb and cpu_seconds bind the tool's whole tree, not each process.

RLIMIT_AS and RLIMIT_CPU are per process: a tool that splits its work over
several processes stays under each while holding several times the policy's
number. The supervisor sums resident memory and CPU time over the tree. The
escape matrix found both splits (escape/attacks/resources.py); these tests
keep them closed, each first showing the split gets through with room to
spare, then that it is ended at the policy's number.
"""

from __future__ import annotations

import pwd

import pytest
from runhelp import Box, load_record, make_policy, run_main

Identity = pwd.struct_passwd | None

# Four processes, each under 192 MiB of address space, holding ~440 MiB together.
SPLIT_MEMORY = """
import os, time
kids = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        b = bytearray(110 << 20); time.sleep(2); os._exit(0)
    kids.append(pid)
b = bytearray(110 << 20); time.sleep(2)
for k in kids: os.waitpid(k, 0)
print("held")
"""

# Three processes burning 0.7 CPU seconds each: 2.1 s in all, each under 1 s.
SPLIT_CPU = """
import os, time
def burn():
    end = time.process_time() + 0.7
    while time.process_time() < end: pass
kids = []
for _ in range(2):
    pid = os.fork()
    if pid == 0:
        burn(); os._exit(0)
    kids.append(pid)
burn()
for k in kids: os.waitpid(k, 0)
print("burned")
"""


def _run(box: Box, identity: Identity, name: str, resources: dict, code: str):
    policy = make_policy(box.share, name=name, resources=resources)
    return run_main(["-p", str(policy), "--", "python3", "-c", code], box=box, user=identity)


@pytest.mark.parametrize(
    ("limit", "roomy", "tight", "code", "done"),
    [
        pytest.param("memory_mb", 1024, 192, SPLIT_MEMORY, "held\n", id="memory"),
        pytest.param("cpu_seconds", 10, 1, SPLIT_CPU, "burned\n", id="cpu"),
    ],
)
def test_a_split_across_processes_is_limited(
    identity: Identity, box: Box, limit: str, roomy: int, tight: int, code: str, done: str
) -> None:
    spare = _run(box, identity, "roomy.json", {limit: roomy, "wall_clock_seconds": 60}, code)
    assert (spare.rc, spare.out) == (0, done), spare.err
    ended = _run(box, identity, "tight.json", {limit: tight, "wall_clock_seconds": 60}, code)
    assert ended.rc == 137 and ended.out == "", ended.err
    assert f"more than {limit}={tight}" in ended.err
    records = sorted((load_record(p)[1] for p in box.records()), key=lambda r: r.started)
    assert [r.exit.meaning for r in records] == ["exited", "limit"]
