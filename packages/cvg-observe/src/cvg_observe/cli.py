"""The ``cvg-observe`` command: ``main(argv)`` and the console script.

A command line of the usual shape (options with plain values, then the command) is read
by :mod:`.fast_args` without importing click, whose import is a good part of an
observation's fixed cost; anything else (``--help``, completion, a usage error, an odd
spelling) goes to the click command in :mod:`.command`, which reads the same values
(tests/test_observe_fast_args.py holds the two to each other).
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from typing import BinaryIO

from cvg_schema.exits import console, guarded, say, usage

from .fast_args import Args, fast_args
from .observe import EXIT_NOT_OBSERVED, LOUD_NOTE, NotStarted, ObserveError, observe

PROG = "cvg-observe"

UNCONFINED_WARNING = (
    "cvg-observe: warning: --unconfined: the command runs under strace only, with no "
    "sandbox at all; it can read your secrets and write anywhere you can"
)


class Usage(Exception):
    """A usage error found past the parsing: one line (click shows it as its own)."""


def observe_command(
    out: str | None,
    out_dir: str | None,
    unconfined: bool,
    strace: str | None,
    timeout: float,
    idle: float,
    command: tuple[str, ...],
) -> int:
    """What ``cvg-observe [OPTIONS] -- CMD...`` does, its options read; its status."""
    argv = list(command)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise Usage("no command given (usage: cvg-observe [OPTIONS] -- CMD...)")
    if out_dir is not None:
        if out is not None:
            raise Usage("--out and --out-dir: give one")
        out = _session_file(out_dir)
    if unconfined:
        print(UNCONFINED_WARNING, file=sys.stderr, flush=True)
    sys.stdout.flush()
    wall, quiet = timeout or None, idle or None  # 0: no such limit
    try:
        if out is None or out == "-":
            stdout = _binary_stdout()
            result = observe(argv, stdout, confined=not unconfined, tool_stdout=_stderr_fd(),
                             strace=strace, timeout=wall, idle=quiet)  # fmt: skip
        else:
            with _atomic(out) as dest:
                result = observe(argv, dest.open, confined=not unconfined, strace=strace,
                                 timeout=wall, idle=quiet)  # fmt: skip
    except NotStarted as e:
        say(PROG, str(e))
        return e.status
    for note in result.notes:
        if LOUD_NOTE in note or "left out" in note:
            print(f"cvg-observe: note: {note}", file=sys.stderr, flush=True)
    return result.exit_status


def _session_file(directory: str) -> str:
    """A name in ``directory`` no other session takes: the start time, then random."""
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
    except OSError as e:
        raise Usage(f"--out-dir {directory}: {e.strerror}") from None
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return os.path.join(directory, f"{stamp}-{os.urandom(4).hex()}.json")


def _binary_stdout() -> BinaryIO:
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is not None:
        return buffer  # type: ignore[no-any-return]
    return _TextAdapter(sys.stdout)  # type: ignore[return-value]


class _TextAdapter:
    """Bytes written to a text stream (a test's captured stdout)."""

    def __init__(self, stream: object) -> None:
        self.stream = stream

    def write(self, data: bytes) -> int:
        self.stream.write(data.decode("utf-8"))  # type: ignore[attr-defined]
        return len(data)

    def flush(self) -> None:
        self.stream.flush()  # type: ignore[attr-defined]


def _stderr_fd() -> int:
    sys.stderr.flush()
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return 2


class _AtomicOut:
    """A temporary file beside ``path``, created only when asked for (``open``) and
    renamed over ``path`` by ``commit``; ``abort`` removes it."""

    def __init__(self, path: str) -> None:
        self.target = os.path.abspath(path)
        self.directory = os.path.dirname(self.target)
        self.tmp: str | None = None
        self.file: BinaryIO | None = None

    def open(self) -> BinaryIO:
        fd, self.tmp = tempfile.mkstemp(
            dir=self.directory, prefix=f".{os.path.basename(self.target)}."
        )
        self.file = os.fdopen(fd, "wb")
        return self.file

    def commit(self) -> None:
        if self.file is None or self.tmp is None:
            return
        f = self.file
        f.flush()
        os.fchmod(f.fileno(), 0o666 & ~_umask())
        os.fsync(f.fileno())
        f.close()
        os.replace(self.tmp, self.target)
        self.tmp = None
        dir_fd = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    def abort(self) -> None:
        if self.file is not None:
            self.file.close()
        if self.tmp is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.tmp)


@contextlib.contextmanager
def _atomic(path: str) -> Iterator[_AtomicOut]:
    out = _AtomicOut(path)
    try:
        yield out
    except BaseException:
        out.abort()
        raise
    out.commit()


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command with ``argv`` (default: ``sys.argv[1:]``); return the exit status."""
    args = sys.argv[1:] if argv is None else list(argv)
    fast = fast_args(args)
    if fast is None:
        from cvg_schema.console import invoke

        from .command import cli

        return invoke(cli, args, prog=PROG, failure=EXIT_NOT_OBSERVED, known=(ObserveError,))
    return guarded(lambda: _run(fast), prog=PROG, failure=EXIT_NOT_OBSERVED, known=(ObserveError,))


def _run(args: Args) -> int:
    """``observe_command`` ending as it does under click's ``main``."""
    try:
        return observe_command(*args)
    except Usage as e:
        return usage(PROG, str(e))
    except (EOFError, KeyboardInterrupt):
        # click's main makes these an abort, after a blank line to close the ^C echo.
        print(file=sys.stderr)
        say(PROG, "aborted")
        return EXIT_NOT_OBSERVED
    except OSError as e:
        if e.errno != errno.EPIPE:
            raise
        # click's main ends a run whose reader went away with 1, quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 1


def run() -> None:
    """The console-script entry point. When main returns the observation is written
    and closed, the scratch directory removed and every child reaped: the
    interpreter's teardown is skipped."""
    console(main, teardown=False)
