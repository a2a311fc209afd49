"""What a probe run on this machine must report, feature by feature."""

from __future__ import annotations

import os
import shutil

from cvg_kernel import cgroup, landlock
from cvg_probe._cgroup import NO_CGROUP
from cvg_schema import Facts

KERNEL_ABI = landlock.kernel_abi()
# The cgroup a run of this process would get (None: the limits are sampled).
CGROUP = cgroup.available()
ARCH = {"arm64": "aarch64"}.get(os.uname().machine, os.uname().machine)

# The Landlock ABI each Landlock feature needs.
LANDLOCK_ABI: dict[str, int] = {
    "landlock.abi": 1,
    **{f"landlock.fs.{n}": r.abi for n, r in landlock.FS_RIGHTS.items()},
    **{f"landlock.net.{n}": r.abi for n, r in landlock.NET_RIGHTS.items()},
    **{f"landlock.scope.{n}": r.abi for n, r in landlock.SCOPES.items()},
    **{f"landlock.flag.{n}": r.abi for n, r in landlock.FLAGS.items()},
}


def expected_error(
    name: str, effective: int = KERNEL_ABI, cap: int | None = None, group: str | None = CGROUP
) -> str | None:
    """The error a feature must carry on this machine, or None if it must be proven.
    ``group``: the cgroup version a run of the probing identity gets."""
    need = LANDLOCK_ABI.get(name)
    if need is not None and need > effective:
        note = f" (capped by CVG_LANDLOCK_ABI_MAX={cap})" if cap is not None else ""
        return f"needs Landlock ABI {need}; this kernel offers {effective}{note}"
    if name == "limits.cgroup" and group is None:
        return NO_CGROUP
    if name == "strace" and shutil.which("strace") is None:
        return "strace is not installed (not found on PATH)"
    return None


def assert_feature(
    facts: Facts,
    name: str,
    effective: int = KERNEL_ABI,
    cap: int | None = None,
    group: str | None = CGROUP,
) -> None:
    feature = facts.feature(name)
    assert feature is not None, f"{name} not reported"
    assert "\n" not in feature.how
    if name in LANDLOCK_ABI and name != "landlock.abi":
        assert feature.abi == LANDLOCK_ABI[name]
    want = expected_error(name, effective, cap, group)
    if want is None:
        assert feature.proven, f"{name}: {feature.error} (how: {feature.how})"
        assert feature.error is None
    else:
        assert not feature.proven
        assert feature.error == want
