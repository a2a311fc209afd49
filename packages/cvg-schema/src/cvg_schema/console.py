"""How every cvg command line ends: one line on stderr and a documented status.

Each tool's ``main(argv) -> int`` hands its click command to :func:`invoke`, and its
console script is ``console(main)``. Between them: usage errors are one line and status
2; refused input is one line and the tool's own failure status; the tool's own known
errors print their message; anything unexpected is still one line (``internal error``),
never a traceback; a reader that went away (``cvg-x | head``) is not an error of ours.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import click

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

EXIT_USAGE = 2


class Exit(Exception):
    """Stop with this status; the lines that say why were already printed."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class FiniteFloatRange(click.FloatRange):
    """click's FloatRange, refusing nan as well: nan compares false with both bounds,
    so FloatRange lets it through to fail later as an internal error."""

    name = "float range"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        rv = super().convert(value, param, ctx)
        if not math.isfinite(rv):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return rv


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (newlines included) made one space."""
    return " ".join(text.split())


def _say(prog: str, message: str) -> None:
    click.echo(f"{prog}: {one_line(message)}", err=True)


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
    try:
        rv = command.main(args=args, prog_name=prog, standalone_mode=False, obj=obj)
    except Exit as e:
        return e.status
    except click.exceptions.Exit as e:
        return int(e.exit_code)
    except click.UsageError as e:
        where = e.ctx.command_path if e.ctx is not None else prog
        _say(where, f"{e.format_message()} (see '{where} --help')")
        return EXIT_USAGE
    except click.ClickException as e:
        _say(prog, e.format_message())
        return failure if click_failure is None else click_failure
    except click.Abort:
        _say(prog, "aborted")
        return failure
    except BrokenPipeError:
        raise
    except KeyboardInterrupt:
        _say(prog, "interrupted")
        return 130
    except known as e:
        _say(prog, str(e))
        return failure
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        _say(prog, f"{where}{e.strerror or e}")
        return failure
    except Exception as e:  # noqa: BLE001 - our own bug: one line, the traceback only when asked for
        internal_error(prog, e)
        return failure
    return rv if isinstance(rv, int) else 0


DEBUG_ENV = "CVG_DEBUG"
"""Set (to anything but empty or 0) to see the traceback behind an internal error."""


def internal_error(prog: str, e: BaseException) -> None:
    """Say an unexpected exception in one line; with CVG_DEBUG set, its traceback too."""
    if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
        import traceback

        traceback.print_exception(e, file=sys.stderr)
    _say(prog, f"internal error: {type(e).__name__}: {e}")


def console(main: Callable[[], int]) -> NoReturn:
    """The console script: ``sys.exit(main())``, quiet when the reader went away."""
    try:
        status = main()
        sys.stdout.flush()
    except BrokenPipeError:
        # `cvg-x ... | head`: stdout is gone. Point it at /dev/null so the interpreter's
        # own flush at exit does not complain, and end as a pipe writer would (SIGPIPE).
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        status = 141
    sys.exit(status)
