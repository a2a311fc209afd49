"""``cvg.explanation``: for each denial in a run record, why it happened and the smallest fix."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from .base import CvgModel, Digest, Identifier, MessageBase, RuleAddress, fail
from .run import Denial

__all__ = ["ExplainedDenial", "Explanation", "Risk", "RiskLevel"]

RiskLevel = Literal["low", "medium", "high"]


class Risk(CvgModel):
    """How much applying the fix would widen what the tool can do."""

    level: RiskLevel = Field(description="low, medium or high.")
    text: str = Field(
        min_length=1,
        max_length=2000,
        description="Why, in a sentence (e.g. `grants reading every SSH key in HOME`).",
    )


class ExplainedDenial(CvgModel):
    """One denial, its cause, and the smallest policy change that would allow it."""

    denial: Denial = Field(description="The denial, copied from the run record.")
    cause: str = Field(
        min_length=1,
        max_length=4000,
        description="Why it was denied, for a person (e.g. `no filesystem.read grant covers ...`).",
    )
    rule: RuleAddress | None = Field(
        default=None, description="The policy rule involved (to add to or change)."
    )
    fix: str | None = Field(
        default=None,
        max_length=20000,
        description=(
            "The smallest policy change that allows it, as a unified diff of the policy "
            "YAML; null when no policy change can or should allow it."
        ),
    )
    risk: Risk | None = Field(
        default=None, description="The risk of applying the fix; set whenever `fix` is."
    )

    @model_validator(mode="after")
    def _fix_has_risk(self) -> ExplainedDenial:
        if self.fix is not None and self.risk is None:
            fail("a fix needs its risk", at=("risk",))
        return self


class Explanation(MessageBase):
    """Per denial of a run: cause, the rule involved, the smallest fix, and its risk."""

    kind: Literal["cvg.explanation"] = Field(
        default="cvg.explanation", description="Always `cvg.explanation`."
    )
    run_id: Identifier | None = Field(default=None, description="The run explained.")
    record: str | None = Field(
        default=None, max_length=4096, description="The run record file that was read."
    )
    policy_digest: Digest | None = Field(default=None, description="The run's policy digest.")
    summary: str | None = Field(
        default=None, max_length=4000, description="One paragraph for a person."
    )
    denials: list[ExplainedDenial] = Field(default_factory=list)
