"""How cvg-policy reports problems: one line each, naming file, line and rule.

p.yaml:7: filesystem.read[2]: path must be absolute or start with a variable
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


def locate(file: str | None, line: int | None, address: str | None, message: str) -> str:
    parts = []
    if file:
        parts.append(f"{file}:{line}" if line else file)
    if address:
        parts.append(address)
    parts.append(message)
    return ": ".join(parts)


class PolicyError(Exception):
    """The policy is invalid. ``str()`` is the one line shown to the user.

    ``more`` holds the other problems of the same file that were found with this one
    (the schema reports every invalid value at once), each a PolicyError of its own.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        address: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.address = address
        self.more: list[PolicyError] = []

    @property
    def problems(self) -> list[PolicyError]:
        """This problem and every other one found with it, in the file's order."""
        everything = [self, *self.more]
        return sorted(everything, key=lambda e: e.line or 0)

    def __str__(self) -> str:
        return locate(self.file, self.line, self.address, self.message)


@dataclass(frozen=True)
class Finding:
    """A check's result about one rule: an error, or a warning with its reason."""

    severity: Literal["error", "warning"]
    address: str  # e.g. "filesystem.write[0]"
    message: str
    file: str | None = None
    line: int | None = None

    def __str__(self) -> str:
        return locate(self.file, self.line, self.address, f"{self.severity}: {self.message}")
