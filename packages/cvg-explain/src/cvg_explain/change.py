"""What an explanation proposes and what it reads: a :class:`Change` to the policy, and
the :class:`Context` (policy, variables) the attribution and the risk rating share."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from cvg_schema import Policy

__all__ = ["Change", "Context", "deliberate"]


def deliberate(rule: str | None) -> bool:
    """Whether a denial's rule is a ``filesystem.deny`` entry: refused on purpose, so no
    fix is written (the only one would be removing the deny)."""
    return rule is not None and (rule == "filesystem.deny" or rule.startswith("filesystem.deny["))


@dataclass(frozen=True)
class Change:
    """One edit to the policy: append ``value`` to the list ``section.field`` (add),
    set ``section.field`` to ``value`` (set), or grant ``port`` on the host ``value`` in
    ``network.hosts`` (host)."""

    op: Literal["add", "set", "host"]
    section: str
    field: str
    value: str | int | bool
    port: int | None = None

    @property
    def address(self) -> str:
        return f"{self.section}.{self.field}"


@dataclass(frozen=True)
class Context:
    """What the attribution needs besides the denial: the policy and the variables."""

    policy: Policy
    variables: Mapping[str, str]  # CWD, HOME, SCRATCH, POLICY_DIR when known
    home: str | None = None
