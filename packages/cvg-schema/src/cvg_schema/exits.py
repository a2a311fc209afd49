"""How every cvg command line ends, without click: one line on stderr and a documented
status.

:mod:`.console` builds its click runner on these; a command that reads its own command
line on its fast path (cvg-observe) ends the same way without importing click. Refused
input is one line and the tool's own failure status; the tool's own known errors print
their message; anything unexpected is still one line (``internal error``), never a
traceback; a reader that went away (``cvg-x | head``) is not an error of ours.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import NoReturn

__all__ = [
    "DEBUG_ENV",
    "EXIT_USAGE",
    "Exit",
    "console",
    "guarded",
    "internal_error",
    "one_line",
    "say",
    "usage",
]

EXIT_USAGE = 2

DEBUG_ENV = "CVG_DEBUG"
"""Set (to anything but empty or 0) to see the traceback behind an internal error."""


class Exit(Exception):
    """Stop with this status; the lines that say why were already printed."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (newlines included) made one space."""
    return " ".join(text.split())


def say(prog: str, message: str) -> None:
    """``prog: message`` on stderr, on one line."""
    sys.stderr.write(f"{prog}: {one_line(message)}\n")
    sys.stderr.flush()


def usage(where: str, message: str) -> int:
    """Say a usage error, pointing at ``where --help``; its status."""
    say(where, f"{message} (see '{where} --help')")
    return EXIT_USAGE


def internal_error(prog: str, e: BaseException) -> None:
    """Say an unexpected exception in one line; with CVG_DEBUG set, its traceback too."""
    if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
        import traceback

        traceback.print_exception(e, file=sys.stderr)
    say(prog, f"internal error: {type(e).__name__}: {e}")


def guarded(
    run: Callable[[], int],
    *,
    prog: str,
    failure: int,
    known: tuple[type[Exception], ...] = (),
) -> int:
    """``run()``'s status, or the one its exception stands for: :class:`Exit`'s own;
    ``failure`` for one of the ``known`` types (its message is the line), an OSError
    and anything unexpected; 130 for an interrupt. A broken pipe is left to
    :func:`console`."""
    try:
        return run()
    except Exit as e:
        return e.status
    except BrokenPipeError:
        raise
    except KeyboardInterrupt:
        say(prog, "interrupted")
        return 130
    except known as e:
        say(prog, str(e))
        return failure
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        say(prog, f"{where}{e.strerror or e}")
        return failure
    except Exception as e:  # noqa: BLE001 - our own bug: one line, the traceback only when asked for
        internal_error(prog, e)
        return failure


def console(main: Callable[[], int], *, teardown: bool = True) -> NoReturn:
    """The console script: ``sys.exit(main())``, quiet when the reader went away.

    ``teardown=False`` ends with ``os._exit`` once stdout and stderr are flushed, for a
    command that leaves nothing open when ``main`` returns: the interpreter's own
    teardown (finalising every module and object) costs milliseconds of every run."""
    try:
        status = main()
        sys.stdout.flush()
    except BrokenPipeError:
        # `cvg-x ... | head`: stdout is gone. Point it at /dev/null so the interpreter's
        # own flush at exit does not complain, and end as a pipe writer would (SIGPIPE).
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        status = 141
    if not teardown:
        try:
            sys.stderr.flush()
        except OSError:
            pass
        os._exit(status & 0xFF)
    sys.exit(status)
