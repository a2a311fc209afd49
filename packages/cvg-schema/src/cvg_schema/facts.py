"""``cvg.facts``: what this kernel can enforce, each feature proven live by ``cvg-probe``."""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, Field, model_validator

from .base import CvgModel, MessageBase, fail_on_repeats

__all__ = ["Facts", "Feature", "StraceInfo"]


class Feature(CvgModel):
    """One enforcement feature, and whether a live test proved it works here."""

    name: str = Field(
        pattern=r"^[a-z0-9_]+(\.[a-z0-9_]+)*$",
        max_length=200,
        description="Dotted name, e.g. `landlock.fs.refer`, `landlock.scope.signal`.",
        examples=["landlock.net.connect_tcp", "seccomp.filter"],
    )
    proven: bool = Field(
        description="True only when a live test showed the feature enforcing here."
    )
    how: str = Field(
        min_length=1, max_length=2000, description="The test that was run, in one line."
    )
    error: str | None = Field(
        default=None,
        max_length=2000,
        description="Why the test failed or could not run (e.g. `EINVAL from add_rule`).",
    )
    abi: int | None = Field(
        default=None, ge=1, le=255, description="The Landlock ABI that introduced it, if any."
    )


class StraceInfo(CvgModel):
    """The strace found on this host (cvg-observe needs it)."""

    path: str = Field(min_length=1, max_length=4096, description="The strace executable.")
    version: str | None = Field(default=None, max_length=100, description="e.g. `6.1`.")


class Facts(MessageBase):
    """What this kernel can enforce: kernel, architecture, Landlock ABI, each feature."""

    kind: Literal["cvg.facts"] = Field(default="cvg.facts", description="Always `cvg.facts`.")
    kernel: str = Field(
        min_length=1, max_length=200, description="The kernel release (`uname -r`)."
    )
    arch: str = Field(
        min_length=1, max_length=64, description="The machine (`uname -m`), e.g. `x86_64`."
    )
    landlock_abi: int = Field(
        ge=0,
        le=255,
        description="The Landlock ABI the kernel reports; 0 when Landlock is absent or off.",
    )
    landlock_abi_cap: int | None = Field(
        default=None,
        ge=0,
        le=255,
        description="The cap set by CVG_LANDLOCK_ABI_MAX, when set; the ABI used is the lower.",
    )
    euid: int | None = Field(
        default=None,
        ge=0,
        le=2**32 - 1,
        description="The effective user the probes ran as (root can differ from others).",
    )
    features: list[Feature] = Field(default_factory=list, description="Each feature probed.")
    strace: StraceInfo | None = Field(default=None, description="null when strace is absent.")
    probed_at: AwareDatetime = Field(
        strict=False, description="When the probes ran (RFC 3339 with a time zone)."
    )
    cached: bool = Field(
        default=False, description="True when these facts were read from the cache."
    )

    @model_validator(mode="after")
    def _unique_features(self) -> Facts:
        names = (f.name for f in self.features)
        fail_on_repeats(names, "features", "name", "feature {} is listed")
        return self

    @property
    def effective_landlock_abi(self) -> int:
        """The ABI actually used: the kernel's, lowered to the cap when there is one."""
        if self.landlock_abi_cap is None:
            return self.landlock_abi
        return min(self.landlock_abi, self.landlock_abi_cap)

    def feature(self, name: str) -> Feature | None:
        """The feature of that name, or None."""
        return next((f for f in self.features if f.name == name), None)

    def proven(self, name: str) -> bool:
        """True when the feature was probed and proven."""
        f = self.feature(name)
        return f is not None and f.proven
