"""The one rule for skips: outside CI a test may skip when this machine lacks what it
needs (strace, root, a kernel feature); under CI=true only a skip raised by these
helpers passes: a Landlock ABI the kernel does not offer, or Yama on a kernel built
without it. Such a skip is a :class:`KernelLacks`, which carries its own probe, and
the kernel is asked again when the skip is judged. Its message vouches for nothing: a
plain ``pytest.skip`` with the same words fails."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

YAMA_SCOPE = "/proc/sys/kernel/yama/ptrace_scope"
_NO_YAMA = f"needs Yama; this kernel has none ({YAMA_SCOPE} is absent)"
# The marker needs_abi and below_abi put on a test; the plugin acts on it at setup.
MARK = "cvg_kernel_needs"


class KernelLacks(pytest.skip.Exception):  # type: ignore[name-defined, misc]
    """A skip because the running kernel lacks a feature. ``proven`` asks the kernel
    again; under CI=true the skip passes only when it still answers True."""

    def __init__(self, reason: str, proven: Callable[[], bool]) -> None:
        super().__init__(reason)
        self.proven = proven


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


def _lacks_abi(n: int) -> bool:
    k = kernel_abi()
    return k is not None and k < n


def _has_abi(n: int) -> bool:
    k = kernel_abi()
    return k is not None and k >= n


def needs_abi(n: int) -> pytest.MarkDecorator:
    """Skip the test on a kernel older than Landlock ABI n."""
    return pytest.mark.cvg_kernel_needs(abi=n)


def below_abi(n: int) -> pytest.MarkDecorator:
    """Skip the test on a kernel that offers Landlock ABI n (it tests older kernels)."""
    return pytest.mark.cvg_kernel_needs(below_abi=n)


def require_abi(n: int) -> None:
    """needs_abi(n), from inside a test body."""
    k = kernel_abi()
    if k is None or k < n:
        raise KernelLacks(f"needs Landlock ABI {n}; this kernel offers {k}", lambda: _lacks_abi(n))


def require_below_abi(n: int) -> None:
    """below_abi(n), from inside a test body."""
    k = kernel_abi()
    if k is None or k >= n:
        raise KernelLacks(
            f"needs a kernel below Landlock ABI {n}; this kernel offers {k}", lambda: _has_abi(n)
        )


def require_yama() -> None:
    """Skip, from inside a test body, on a kernel without Yama (the LSM behind
    Ubuntu's ptrace_scope)."""
    if not os.path.exists(YAMA_SCOPE):
        raise KernelLacks(_NO_YAMA, lambda: not os.path.exists(YAMA_SCOPE))


def apply_marks(item: pytest.Item) -> None:
    """Raise the skip that a needs_abi or below_abi mark on ``item`` asks for, if any."""
    for mark in item.iter_markers(MARK):
        if "abi" in mark.kwargs:
            require_abi(mark.kwargs["abi"])
        if "below_abi" in mark.kwargs:
            require_below_abi(mark.kwargs["below_abi"])


def skip_is_proven(exc: BaseException | None) -> bool:
    """True when the skip was raised by these helpers and the kernel, asked again here,
    still lacks what the test needs."""
    return isinstance(exc, KernelLacks) and exc.proven()
