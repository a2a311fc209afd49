"""What every Landlock probe shares: the ABI to test, and a child entering its domain."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from cvg_kernel import landlock
from cvg_kernel.process import PR_SET_NO_NEW_PRIVS

from ._group import ProbeError
from ._libc import prctl


@dataclass(frozen=True)
class LandlockState:
    kernel: int  # what the kernel reports (0: none)
    effective: int  # after CVG_LANDLOCK_ABI_MAX
    cap: int | None
    error: str | None = None  # why the kernel could not be asked

    def lacks(self, abi: int) -> str | None:
        """Why a feature of ``abi`` cannot be tested here, or None when it can."""
        if self.error is not None:
            return self.error
        if self.effective >= abi:
            return None
        capped = self.cap is not None and self.cap < self.kernel
        offer = str(self.effective) if self.kernel or capped else "no Landlock (ABI 0)"
        note = f" (capped by {landlock.ABI_ENV}={self.cap})" if capped else ""
        return f"needs Landlock ABI {abi}; this kernel offers {offer}{note}"


def landlock_state() -> LandlockState:
    """The kernel's ABI, the cap from ``CVG_LANDLOCK_ABI_MAX`` and the ABI to test.

    An invalid cap is a ProbeError: the caller asked for something meaningless.
    """
    try:
        effective, _ = landlock.effective_abi()
    except landlock.LandlockError as e:
        raw = os.environ.get(landlock.ABI_ENV, "")
        if raw and not re.fullmatch(r"[0-9]{1,4}", raw):
            raise ProbeError(str(e)) from None
        return LandlockState(0, 0, _cap(), error=str(e))
    return LandlockState(landlock.kernel_abi(), effective, _cap())


def _cap() -> int | None:
    raw = os.environ.get(landlock.ABI_ENV, "")
    return int(raw) if re.fullmatch(r"[0-9]{1,4}", raw) else None


def restrict(ruleset: landlock.Ruleset) -> str:
    try:
        prctl(PR_SET_NO_NEW_PRIVS, 1)
        ruleset.restrict_self()
    except (OSError, landlock.LandlockError) as e:
        return f"{type(e).__name__}: {e}"
    return "OK"
