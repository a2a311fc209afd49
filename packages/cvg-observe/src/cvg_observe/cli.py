"""The ``cvg-observe`` command."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from typing import BinaryIO

import click

from cvg_policy.secrets import CWD_SECRETS, HOME_SECRETS, SYSTEM_SECRETS
from cvg_schema.console import console, invoke

from ._version import __version__
from .observe import EXIT_NOT_OBSERVED, NotStarted, ObserveError, observe

EXIT_USAGE = 2

UNCONFINED_WARNING = (
    "cvg-observe: warning: --unconfined: the command runs under strace only, with no "
    "sandbox at all; it can read your secrets and write anywhere you can"
)


@click.command(
    context_settings={
        "help_option_names": ["-h", "--help"],
        "max_content_width": 100,
        "allow_interspersed_args": False,
    },
    epilog=f"""\b
Examples:
  cvg-observe -- python3 tool.py | cvg-generate | cvg-validate > p.yaml
  cvg-observe --out obs.json -- python3 mcp_server.py     # a real client talks to it
  cvg-observe --unconfined -- make test                   # trusted code: no sandbox

\b
Never readable while learning (those that exist; the list is in the
observation's notes):
  in $HOME: {", ".join("~/" + s for s in HOME_SECRETS)}
  in the working directory: {", ".join(CWD_SECRETS)}
  system: {", ".join(SYSTEM_SECRETS)}, and /root unless it is your home

\b
Exit status:
  the command's own status (128+N when killed by signal N), as cvg-run gives it;
  125  the observation could not be made (strace missing, or failing before the
       command started; the sandbox could not be built; the command was not
       started), one line on stderr;
  126  the command could not be executed;  127  it was not found;
  2    a usage error.
""",
)
@click.option(
    "--out",
    "-o",
    "out",
    type=click.Path(dir_okay=False, writable=True, allow_dash=True),
    default=None,
    metavar="FILE",
    help="Write the observation to FILE (atomically) and leave the command's stdin, "
    "stdout and stderr alone. Without it the observation goes to stdout and the "
    "command's stdout is sent to stderr.",
)
@click.option(
    "--out-dir",
    "out_dir",
    type=click.Path(file_okay=False),
    default=None,
    metavar="DIR",
    help="Like --out, to a new file in DIR (made if missing) named by the time the "
    "observation started, e.g. 20261201T182749Z-1a2b3c4d.json: one observation per "
    "session of a tool a client starts again and again (an MCP server).",
)
@click.option(
    "--unconfined",
    is_flag=True,
    help="Plain strace, no learning sandbox (for code you trust; prints a warning).",
)
@click.option(
    "--strace",
    "strace",
    default=None,
    metavar="PATH",
    help="The strace to use (default: $CVG_STRACE, else strace on PATH).",
)
@click.version_option(__version__, "-V", "--version", prog_name="cvg-observe")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="-- CMD...")
def cli(
    out: str | None,
    out_dir: str | None,
    unconfined: bool,
    strace: str | None,
    command: tuple[str, ...],
) -> int:
    """Run CMD under strace and write what it did as a cvg.observation.

    Every file it opened, created, removed, renamed or executed, every socket, connect,
    bind and signal becomes an event with an id (e1, e2, ...), the process, the path
    (absolute: relative paths are resolved against that process's own working
    directory), port or address, the result ("ok" or an errno name) and the time.
    The observation also lists the executables with their ELF interpreter and #!
    chain, the working directory, $HOME and the scratch directory (so cvg-generate can
    turn paths into ${CWD}, ${HOME} and ${SCRATCH}), and the strace version.

    By default CMD runs in a learning sandbox (cvg's own Landlock + seccomp, as cvg-exec
    applies them): it may read everything except the secrets below, write only under the
    working directory, its scratch directory ($TMPDIR points there) and /tmp, reach
    any TCP or UDP port, and not use UNIX sockets; cvg's seccomp deny list applies.
    A working directory that is a system tree (/, /usr, ...) or holds a home is not
    writable; one that is the home is writable only in its existing folders, never
    in its dot-files (~/.bashrc, ~/.config/autostart) nor directly in it.
    What the sandbox refused is still an event, with its errno (EACCES, EPERM) and
    denied_while_learning set, so you see what the tool tried.

    Without --out, stdout carries exactly one JSON observation, ready for a pipe, and
    the command's own stdout is sent to stderr. With --out FILE the command's stdio is
    untouched: that is how a stdio MCP server is observed while a real client talks to
    it. cvg-observe is not a sandbox for running untrusted code in production; use
    cvg-run with the generated policy for that.
    """
    argv = list(command)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise click.UsageError("no command given (usage: cvg-observe [OPTIONS] -- CMD...)")
    if out_dir is not None:
        if out is not None:
            raise click.UsageError("--out and --out-dir: give one")
        out = _session_file(out_dir)
    if unconfined:
        click.echo(UNCONFINED_WARNING, err=True)
    sys.stdout.flush()
    try:
        if out is None or out == "-":
            stdout = _binary_stdout()
            result = observe(
                argv, stdout, confined=not unconfined, tool_stdout=_stderr_fd(), strace=strace
            )
        else:
            with _atomic(out) as dest:
                result = observe(argv, dest.open, confined=not unconfined, strace=strace)
    except NotStarted as e:
        click.echo(f"cvg-observe: {e}", err=True)
        return e.status
    for note in result.notes:
        if note.endswith("skipped") or "left out" in note:
            click.echo(f"cvg-observe: note: {note}", err=True)
    return result.exit_status


def _session_file(directory: str) -> str:
    """A name in ``directory`` no other session takes: the start time, then random."""
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
    except OSError as e:
        raise click.UsageError(f"--out-dir {directory}: {e.strerror}") from None
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
    return invoke(cli, argv, prog="cvg-observe", failure=EXIT_NOT_OBSERVED, known=(ObserveError,))


def run() -> None:
    """The console-script entry point."""
    console(main)
