"""``ImportRefused``: a report (or a baseline) this importer will not turn into events."""

from __future__ import annotations

__all__ = ["ImportRefused", "one_line", "shown"]


class ImportRefused(ValueError):
    """The input cannot be imported. ``str(error)`` is one line: ``where: what is wrong``.

    ``where`` is a JSON path into the report (``$.observations[3].target``) or ``$`` for
    the whole document; the command line puts the file name in front.
    """

    def __init__(self, where: str, problem: str) -> None:
        self.where = where
        self.problem = one_line(problem)
        super().__init__(f"{where}: {self.problem}")


def one_line(text: str) -> str:
    """``text`` on one line: a hostile value must not forge extra lines of diagnostics."""
    return " ".join(text.split())


def shown(value: object, limit: int = 60) -> str:
    """A short, printable rendering of a value from the report, for an error message."""
    text = repr(value)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text
