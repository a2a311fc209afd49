"""How every cvg command line ends: one line on stderr and a documented status.

Each tool's ``main(argv) -> int`` hands its click command to :func:`invoke`, and its
console script is ``console(main)``. Between them: usage errors are one line and status
2; refused input is one line and the tool's own failure status; the tool's own known
errors print their message; anything unexpected is still one line (``internal error``),
never a traceback; a reader that went away (``cvg-x | head``) is not an error of ours.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import Any

import click

from .exits import (
    DEBUG_ENV,
    EXIT_USAGE,
    Exit,
    console,
    guarded,
    internal_error,
    one_line,
    say,
    usage,
)

__all__ = [
    "DEBUG_ENV",
    "EXIT_USAGE",
    "Exit",
    "FiniteFloatRange",
    "console",
    "internal_error",
    "invoke",
    "one_line",
]


class FiniteFloatRange(click.FloatRange):
    """click's FloatRange, refusing nan as well: nan compares false with both bounds,
    so FloatRange lets it through to fail later as an internal error."""

    name = "float range"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        rv = super().convert(value, param, ctx)
        if not math.isfinite(rv):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return rv


def invoke(
    command: click.Command,
    argv: Sequence[str] | None,
    *,
    prog: str,
    failure: int,
    known: tuple[type[Exception], ...] = (),
    obj: object = None,
    click_failure: int | None = None,
) -> int:
    """Run ``command`` with ``argv`` (default ``sys.argv[1:]``) and return the status.

    ``failure`` is the status for refused input and internal errors; exceptions of the
    ``known`` types are the tool's own way of refusing, and their message is the line.
    ``obj`` becomes the click context's ``obj``; ``click_failure`` is the status for a
    click error that is not a usage error (default ``failure``).
    """
    args = sys.argv[1:] if argv is None else list(argv)

    def run() -> int:
        try:
            rv = command.main(args=args, prog_name=prog, standalone_mode=False, obj=obj)
        except click.exceptions.Exit as e:
            return int(e.exit_code)
        except click.UsageError as e:
            return usage(e.ctx.command_path if e.ctx is not None else prog, e.format_message())
        except click.ClickException as e:
            say(prog, e.format_message())
            return failure if click_failure is None else click_failure
        except click.Abort:
            say(prog, "aborted")
            return failure
        return rv if isinstance(rv, int) else 0

    return guarded(run, prog=prog, failure=failure, known=known)
