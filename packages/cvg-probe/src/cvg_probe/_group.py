"""What every probe shares: a feature, the check that proves it, and the group of
features one forked child proves (run by :mod:`cvg_probe._fork`)."""

from __future__ import annotations

import errno
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cvg_schema import Feature

from ._fork import Outcome, Send


class ProbeError(RuntimeError):
    """The probe itself could not run (not: the kernel lacks a feature)."""


def outcome_of(fn: Callable[[], object]) -> str:
    """``"OK"``, the errno name of the OSError ``fn`` raised, or the exception."""
    try:
        fn()
    except OSError as e:
        if e.errno is None:
            return f"{type(e).__name__}: {e}"
        return errno.errorcode.get(e.errno, str(e.errno))
    except Exception as e:  # noqa: BLE001 - whatever the probe raised is its result
        return f"{type(e).__name__}: {e}"
    return "OK"


def _one_line(text: str, limit: int = 2000) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _feature(name: str, how: str, *, error: str | None = None, abi: int | None = None) -> Feature:
    return Feature(
        name=name,
        proven=error is None,
        how=_one_line(how),
        error=None if error is None else _one_line(error),
        abi=abi,
    )


@dataclass(frozen=True)
class Spec:
    """A feature a group reports: its name, the ABI that introduced it, the test."""

    name: str
    how: str
    abi: int | None = None

    def proven(self, how: str | None = None) -> Feature:
        return _feature(self.name, how or self.how, abi=self.abi)

    def failed(self, error: str, how: str | None = None) -> Feature:
        return _feature(self.name, how or self.how, error=error or "unknown failure", abi=self.abi)


def check(spec: Spec, got: Mapping[str, Any], expect: Mapping[str, str | set[str]]) -> Feature:
    """Proven when every named result is what was expected; else say which was not."""
    for key, want in expect.items():
        have = got.get(key, "no result")
        ok = have in want if isinstance(want, set) else have == want
        if not ok:
            shown = " or ".join(sorted(want)) if isinstance(want, set) else want
            return spec.failed(f"{key}: got {have}, expected {shown}")
    return spec.proven()


class Group:
    """The features one child proves. ``body`` runs in the child."""

    name = "group"
    specs: Sequence[Spec] = ()

    def body(self, send: Send) -> Mapping[str, Any]:  # pragma: no cover - overridden
        raise NotImplementedError

    def interpret(self, outcome: Outcome) -> list[Feature]:  # pragma: no cover - overridden
        raise NotImplementedError

    def results(self, outcome: Outcome) -> list[Feature]:
        failure = outcome.failure()
        if failure is not None:
            return [s.failed(failure) for s in self.specs]
        return self.interpret(outcome)

    def close(self) -> None:
        """Release what the parent holds for this group (sockets, rulesets)."""
