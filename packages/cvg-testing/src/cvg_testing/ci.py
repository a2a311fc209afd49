"""The one rule for skips: outside CI a test may skip when this machine lacks what it
needs (strace, root, a kernel feature); under CI=true only a Landlock ABI the kernel
does not offer, or Yama on a kernel built without it, may skip, named by these
helpers and proven again when the skip is judged."""

from __future__ import annotations

import os
import re

import pytest

_NEEDS = re.compile(r"needs Landlock ABI (\d+);")
_BELOW = re.compile(r"needs a kernel below Landlock ABI (\d+);")
YAMA_SCOPE = "/proc/sys/kernel/yama/ptrace_scope"
_NO_YAMA = f"needs Yama; this kernel has none ({YAMA_SCOPE} is absent)"


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def kernel_abi() -> int | None:
    """The Landlock ABI the running kernel reports (not the capped one), or None when
    cvg_kernel cannot be imported and so nothing is proven."""
    try:
        from cvg_kernel.landlock import kernel_abi as probe
    except ImportError:
        return None
    return probe()


def _needs_reason(n: int) -> str:
    return f"needs Landlock ABI {n}; this kernel offers {kernel_abi()}"


def _below_reason(n: int) -> str:
    return f"needs a kernel below Landlock ABI {n}; this kernel offers {kernel_abi()}"


def needs_abi(n: int) -> pytest.MarkDecorator:
    """Skip the test on a kernel older than Landlock ABI n."""
    k = kernel_abi()
    return pytest.mark.skipif(k is None or k < n, reason=_needs_reason(n))


def below_abi(n: int) -> pytest.MarkDecorator:
    """Skip the test on a kernel that offers Landlock ABI n (it tests older kernels)."""
    k = kernel_abi()
    return pytest.mark.skipif(k is None or k >= n, reason=_below_reason(n))


def require_abi(n: int) -> None:
    """needs_abi(n), from inside a test body."""
    k = kernel_abi()
    if k is None or k < n:
        pytest.skip(_needs_reason(n))


def require_yama() -> None:
    """Skip, from inside a test body, on a kernel without Yama (the LSM behind
    Ubuntu's ptrace_scope)."""
    if not os.path.exists(YAMA_SCOPE):
        pytest.skip(_NO_YAMA)


def skip_is_proven(reason: str) -> bool:
    """True when the skip names a Landlock ABI and the kernel really is on the other
    side of it. The kernel is asked again here: a reason cannot vouch for itself."""
    if reason.endswith(_NO_YAMA):
        return not os.path.exists(YAMA_SCOPE)
    k = kernel_abi()
    if k is None:
        return False
    if m := _NEEDS.search(reason):
        return k < int(m.group(1))
    if m := _BELOW.search(reason):
        return k >= int(m.group(1))
    return False
