"""cvg-observe's whole command line in click: its options, its help (``--help``, which
docs/cli.md and the man page are made from), shell completion, and every usage error.
:mod:`.cli` reads the usual command lines without it (:mod:`.fast_args`) and hands the
rest here."""

from __future__ import annotations

from typing import Any

import click

from ._version import __version__
from .cli import Usage, observe_command
from .lifetime import DEFAULT_IDLE, DEFAULT_TIMEOUT


@click.command(
    context_settings={
        "help_option_names": ["-h", "--help"],
        "max_content_width": 100,
        "allow_interspersed_args": False,
    },
    epilog="""\b
Examples:
  cvg-observe -- python3 tool.py | cvg-generate | cvg-validate > p.yaml
  cvg-observe --out obs.json -- python3 mcp_server.py     # a real client talks to it
  cvg-observe --unconfined -- make test                   # trusted code: no sandbox

\b
Never readable while learning, those that exist (every path is in
docs/secrets.md; those denied are in the observation's notes): MCP client
configs (Claude Desktop, ~/.claude.json, Cursor, VS Code, a project's
.mcp.json), shell and REPL histories, ~/.ssh, ~/.netrc, ~/.git-credentials,
~/.docker/config.json, ~/.kube, ~/.npmrc, ~/.pypirc, ~/.config/gh, aws, gcloud
and azure credentials, password stores and keyrings, browser profiles, .env
files in the working directory, /etc/shadow and the host's keys, and /root
unless it is your home.

\b
Exit status:
  the command's own status (128+N when killed by signal N), as cvg-run gives it;
  124  the wall clock (--timeout) ran out: the tree was ended, the observation
       written;
  125  the observation could not be made (strace missing, or failing before the
       command started; the sandbox could not be built; the command was not
       started; strace ended while the command ran, when the command's processes
       are ended and nothing is written), one line on stderr;
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
@click.option(
    "--timeout",
    "timeout",
    type=click.FloatRange(min=0),
    default=DEFAULT_TIMEOUT,
    show_default=True,
    metavar="SECONDS",
    help="Wall clock: after SECONDS the command's processes are ended, the observation "
    "is written and the status is 124. 0: none.",
)
@click.option(
    "--idle",
    "idle",
    type=click.FloatRange(min=0),
    default=DEFAULT_IDLE,
    show_default=True,
    metavar="SECONDS",
    help="Once the client has closed the command's stdin (a pipe, a socket or a "
    "terminal), end its processes when they have made no call for SECONDS; the "
    "observation is written. A server waiting on a stdin that is still open is never "
    "idle. 0: never.",
)
@click.version_option(__version__, "-V", "--version", prog_name="cvg-observe")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="-- CMD...")
def cli(**options: Any) -> int:
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
    It may signal only its own processes (Landlock's scope, or below Landlock ABI 6
    cvg-observe deciding each signal), not strace nor any other process; it runs
    under cvg-run's default rlimits (300 CPU seconds, 4096 MiB of data and 1024
    descriptors per process, files up to 1024 MiB, no core dumps). Its processes
    live no longer than the observation: when its first process exits, the wall
    clock runs out or it stays idle after its client left (--timeout, --idle),
    whatever it started is ended, daemons included.
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
    try:
        return observe_command(**options)
    except Usage as e:
        raise click.UsageError(str(e)) from None
