"""memory_mb limits what a process fills, not what it reserves (RLIMIT_DATA, not
RLIMIT_AS): V8, WebAssembly, Go and glibc's thread arenas reserve address space far
beyond what they use, and a limit on reservations broke node on the input its policy
was learned from. Filling private memory past the number is still refused, and shared
memory, which RLIMIT_DATA does not count, is caught by the tree's resident sum."""

from __future__ import annotations

import pwd

from runhelp import Box, make_policy, run_main

Identity = pwd.struct_passwd | None

# 4 GiB of address space reserved, none of it usable until made writable.
RESERVE = """
import mmap
m = mmap.mmap(-1, 4 << 30, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, prot=0)  # PROT_NONE
print("reserved")
"""

# 400 MiB of private writable memory, filled.
FILL = """
b = bytearray(400 << 20)
print("filled")
"""

# 400 MiB of shared anonymous memory, touched: not data, but resident.
SHARED = """
import mmap, time
m = mmap.mmap(-1, 400 << 20, flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS)
for i in range(0, 400 << 20, 4096):
    m[i] = 1
time.sleep(2)
print("shared")
"""

LIMITS = {"memory_mb": 256, "wall_clock_seconds": 60}


def _run(box: Box, identity: Identity, name: str, code: str):
    policy = make_policy(box.share, name=name, resources=LIMITS)
    return run_main(["-p", str(policy), "--", "python3", "-c", code], box=box, user=identity)


def test_reserving_address_space_is_not_using_it(identity: Identity, box: Box) -> None:
    out = _run(box, identity, "reserve.json", RESERVE)
    assert (out.rc, out.out) == (0, "reserved\n"), out.err


def test_filling_private_memory_past_memory_mb_is_refused(identity: Identity, box: Box) -> None:
    out = _run(box, identity, "fill.json", FILL)
    assert out.rc != 0 and "filled" not in out.out
    assert "MemoryError" in out.err or "memory_mb" in out.err, out.err


def test_shared_memory_rlimit_data_misses_is_caught_by_the_tree_sum(
    identity: Identity, box: Box
) -> None:
    out = _run(box, identity, "shared.json", SHARED)
    assert out.rc == 137 and "shared" not in out.out, out.err
    assert "more than memory_mb=256" in out.err
