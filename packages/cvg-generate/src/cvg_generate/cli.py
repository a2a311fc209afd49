"""The ``cvg-generate`` command.

``main(argv)`` runs the command line and returns the exit status, so tests call it
directly; ``run()`` is the console script.
"""

from __future__ import annotations

import contextlib
import gc
import sys
from collections.abc import Iterator, Sequence
from typing import Final

import click

from cvg_schema.console import Exit, FiniteFloatRange, console, invoke
from cvg_schema.io import dumps, write_atomic

from . import __version__
from .generate import DEFAULT_HEADROOM, Generated, Source, generate
from .load import InputError, read_observations

__all__ = ["EXIT_GAPS", "EXIT_INPUT", "EXIT_OK", "EXIT_USAGE", "main", "run"]

PROG: Final = "cvg-generate"
EXIT_OK: Final = 0
EXIT_INPUT: Final = 1
EXIT_GAPS: Final = 1
EXIT_USAGE: Final = 2
MAX_NOTES: Final = 40


def _err(line: str) -> None:
    click.echo(" ".join(line.split()), err=True)


_EPILOG = """\b
Pipelines:
  cvg-observe -- python3 tool.py | cvg-generate | cvg-validate > p.yaml
  cvg-generate a.json b.json | cvg-validate > p.yaml      two inputs, one policy
  cat a.json b.json | cvg-generate -o policy.json          several documents on stdin
  cvg-generate obs.json --verify -- python3 tool.py other-input.txt

\b
What becomes a rule (each with the events behind it as its reasons):
  a file read                  filesystem.read on that file
  a directory listed           filesystem.read on the directory (a tree)
  8+ files read in one dir     filesystem.read on the directory
  a file written               filesystem.write on that file
  a name created or removed    filesystem.write on its directory
  anything in the working dir  one rule on ${CWD} (the tool's workspace); write on it
                               only when the tool wrote beneath it
  a program run                filesystem.execute on it, its ELF interpreter, its #! chain
  python, node, perl, glibc    their runtime baseline (stdlib, modules, locale, gconv, libs)
  a shell or make ran          execute on the standard utilities (rm, xargs, gunzip, ...)
  a script a shell read        execute on each program it names in command position and
   (or a makefile's recipes)   that is on PATH (another input takes another branch); a
                               named #! script brings its interpreter and its runtime
  a program of a dpkg package  execute on the package's other programs (bin, sbin, libexec,
                               ELF helpers such as gcc's collect2; not for a package with
                               a setuid/setgid program or a shell)
  a file of an installed tree  read on the tree (/usr/share/perl, /usr/share/groff, ...)
                               when nothing beneath it is named like a secret
  a compiler or linker ran     execute on a writable ${CWD}: it runs what it builds
  any program                  write on /dev/null; read on /dev/urandom, /dev/random,
                               /dev/zero
  a TCP connect or bind        network.tcp_connect / tcp_bind on the port
  a TCP or UDP connect         read on the resolver files (/etc/hosts, resolv.conf, ...)
  a server (waited on stdin    wall_clock_seconds: null, an hour of CPU per process
   or accepted a connection)
  memory measured              memory_mb: 4x the peak, at least 512
  variables it was given       environment.set (a secret-looking one: environment.pass)
  a probe that got ENOENT      nothing: Landlock keeps it ENOENT
Never granted: a secret (~/.ssh, .env, *.pem, ...) or a decoy, whatever the tool
did; write on a protected path (~/.bashrc, .git/config, ~/.local/bin, ...: see
docs/protected-paths.md); what the learning sandbox denied (unless --grant-denied); a shell or a
setuid program that did not run; write on /, /usr, /etc, ${HOME} or another
top-level tree as a whole. What was left out is listed on
stderr, one "note:" line each.

\b
Exit status:
  0  the policy was written (with --verify: and the command ran with no denial)
  1  an observation is not valid (one line: FILE: $.json.path: problem), or
     --verify found gaps (each denial and its smallest fix on stderr)
  2  usage error
  125, 126, 127  --verify: the command could not be started (cvg-run refused
     it, it is not executable, it was not found); nothing was verified
"""


@click.command(
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog=_EPILOG,
)
@click.version_option(__version__, "--version", prog_name=PROG, message="%(prog)s %(version)s")
@click.argument("observations", nargs=-1, metavar="[OBS|-]... [--verify -- CMD [ARG...]]")
@click.option(
    "--grant-denied",
    is_flag=True,
    help="Also grant what the learning sandbox denied (never a secret or a decoy).",
)
@click.option(
    "--headroom",
    type=FiniteFloatRange(min=1.0, max=100.0),
    default=DEFAULT_HEADROOM,
    show_default=True,
    metavar="FACTOR",
    help="Multiply the measured run time and process count by FACTOR for the resources.",
)
@click.option(
    "--workspace/--no-workspace",
    default=True,
    show_default=True,
    help="Grant the working directory as one rule (the tool's workspace), or its paths "
    "one by one like any other (smaller, but another input with other names there is "
    "more likely refused).",
)
@click.option(
    "--cwd/--no-cwd",
    "cwd",
    default=True,
    show_default=True,
    help="Write paths beneath the working directory as ${CWD}. --no-cwd for a tool "
    "whose working directory means nothing (an MCP server a client starts wherever it "
    "is): every path is absolute or beneath ${HOME}; the workspace is instead each "
    "directory its command line names (a repository, a root it serves), read or written "
    "as a whole from a read or a write beneath it.",
)
@click.option(
    "--syscalls",
    "syscalls",
    type=click.Choice(["denylist", "allowlist"]),
    default="denylist",
    show_default=True,
    help="denylist: every call but cvg's deny list. allowlist: only the calls the "
    "observations made, plus the measured baseline of each runtime they ran (python3, "
    "node, sh, native programs on the C library) and the few every program needs "
    "(exit_group...).",
)
@click.option(
    "-o",
    "--out",
    metavar="FILE",
    default=None,
    help="Write the policy to FILE (atomically) instead of stdout.",
)
@click.option("-q", "--quiet", is_flag=True, help="No note lines for what was left out.")
@click.option(
    "--verify",
    "verify",
    is_flag=True,
    help="After generating, run -- CMD under the policy with cvg-run --trace and report "
    "each denial (a gap) with its smallest fix. The command's stdout goes to stderr.",
)
@click.pass_context
def cli(
    ctx: click.Context,
    observations: tuple[str, ...],
    grant_denied: bool,
    headroom: float,
    workspace: bool,
    out: str | None,
    quiet: bool,
    verify: bool,
    syscalls: str,
    cwd: bool,
) -> int:
    """Write the smallest cvg policy that lets a tool do what it was observed doing.

    Reads one or more cvg.observation messages (from cvg-observe or cvg-import) from
    files, or from stdin when OBS is - or none is given; stdin may carry several
    documents one after another. Several observations (several inputs of the same
    tool) give one policy, their union, with every rule citing its events in each.

    The policy is a cvg.policy message (JSON) on stdout: pipe it into cvg-validate
    for reviewable YAML with each rule's reasons as comments above it. Paths under the
    working directory, the scratch directory and the home become ${CWD}, ${SCRATCH}
    and ${HOME}, so the policy works for another input in another directory.
    """
    command: list[str] = (ctx.obj or {}).get("command", [])
    if verify and not command:
        raise click.UsageError("--verify needs a command: --verify -- CMD [ARG...]")
    if command and not verify:
        raise click.UsageError("a command after -- is only used with --verify")
    with _bulk():
        try:
            loaded = read_observations(list(observations))
        except InputError as e:
            _err(f"{PROG}: {e}")
            return EXIT_INPUT
        several = len(loaded) > 1
        result = generate(
            [Source(item.obs, item.name if several else None) for item in loaded],
            grant_denied=grant_denied,
            headroom=headroom,
            workspace=workspace,
            syscalls=syscalls,
            cwd=cwd,
        )
        del loaded
    if not quiet:
        for note in result.notes[:MAX_NOTES]:
            _err(f"{PROG}: note: {note}")
        if len(result.notes) > MAX_NOTES:
            _err(f"{PROG}: note: and {len(result.notes) - MAX_NOTES} more left out")
    _write(result, out)
    if verify:
        from .verify import verify_policy

        return int(verify_policy(result.policy, command))
    return EXIT_OK


@contextlib.contextmanager
def _bulk() -> Iterator[None]:
    """No garbage collection while the observations are read and the policy is made:
    what they build holds no cycle to free, and each full pass walked every event of
    the heap (most of the time of a million-event observation)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _write(result: Generated, out: str | None) -> None:
    data = dumps(result.policy, pretty=True)
    if out is None or out == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    try:
        write_atomic(out, data)
    except OSError as e:
        _err(f"{PROG}: {out}: cannot write: {e.strerror or e}")
        raise Exit(EXIT_USAGE) from None


def _split(args: list[str]) -> tuple[list[str], list[str]]:
    """The arguments of cvg-generate, and the command after ``--`` (for --verify)."""
    if "--" in args:
        i = args.index("--")
        return args[:i], args[i + 1 :]
    return args, []


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``cvg-generate`` with ``argv`` (default: ``sys.argv[1:]``); return the status."""
    args, command = _split(list(sys.argv[1:] if argv is None else argv))
    return invoke(cli, args, prog=PROG, failure=EXIT_INPUT, obj={"command": command},
                  click_failure=EXIT_USAGE)  # fmt: skip


def run() -> None:
    """The console script."""
    console(main)
