"""cvg-exec: confine this process with a compiled plan, then exec a command.

Standard library only (argparse, not click): this is the trusted base, and it
is what a minimal production host installs.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
from collections.abc import Sequence

from .plan import EXIT_NOT_STARTED, PlanError, loads, prepare

DESCRIPTION = """\
Confine this process with a compiled cvg plan (kind cvg.plan), then exec CMD.

The plan is usually written by `cvg-validate --compile`; see docs/plan-format.md
for its shape. Everything the plan does not grant is denied: files by Landlock,
escape-prone syscalls and socket families by seccomp, resources by rlimits.
no_new_privs is set and every capability is dropped, so a command started by
root holds none. Descriptors other than 0, 1 and 2 are closed at exec, and the
environment is built from the plan alone.

examples:
  cvg-exec --plan plan.json -- cat /etc/hostname
  cvg-validate --compile p.yaml | cvg-exec --plan - -- python3 tool.py
  cvg-exec --plan plan.json --var SCRATCH=/tmp/work -- ./tool
  python -m cvg_kernel --plan plan.json --notify-fd 3 -- ./tool

reporting denials (--notify-fd N):
  N is an inherited AF_UNIX socket whose other end a supervisor holds. The
  seccomp filter is installed with every denial sent to a listener instead of
  answered in the kernel; the listener goes down socket N, and both are closed
  before CMD runs. The supervisor answers each call with the errno the plain
  filter gives (cvg_kernel.notify.serve) and learns which call was refused, by
  whom, with which arguments. Nothing more is allowed: with nobody listening a
  denied call fails with ENOSYS. If the listener cannot be created or sent, CMD
  is not started (125).

shell completion (bash, zsh or fish):
  eval "$(_CVG_EXEC_COMPLETE=bash_source cvg-exec)"

exit status:
  the command's own status once it runs;
  2    usage error (including a --notify-fd that is not an open socket, or is
       0, 1 or 2);
  125  the command was not started (bad plan, confinement failed);
  126  the command could not be executed (including a missing execute grant);
  127  the command was not found.
"""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="cvg-exec",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        usage="cvg-exec --plan FILE|- [--var NAME=VALUE]... [--notify-fd N] [-v] -- CMD [ARG...]",
    )
    p.add_argument("--plan", required=True, metavar="FILE|-", help="the cvg.plan to apply")
    p.add_argument(
        "--var",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a late-bound variable used as ${NAME} in the plan (CWD defaults to the "
        "working directory)",
    )
    p.add_argument(
        "--notify-fd",
        type=int,
        metavar="N",
        help="send the seccomp denials' listener down inherited socket N (see below)",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="also report skipped rules")
    p.add_argument("command", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    return p


class _Usage(Exception):
    pass


def main(argv: Sequence[str] | None = None) -> int:
    """Parse, prepare, confine and exec. Returns only on failure."""
    parser = _parser()
    from .completion import from_argparse, respond

    completing = respond("cvg-exec", from_argparse(parser, files={"plan"}))
    if completing is not None:
        return completing
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse exits 2 on usage errors, 0 on --help
        return int(e.code or 0)
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        print("cvg-exec: no command given (usage: cvg-exec --plan FILE -- CMD...)", file=sys.stderr)
        return 2
    try:
        variables = {"CWD": os.getcwd()}
        for item in args.var:
            name, sep, value = item.partition("=")
            if not sep or not name:
                raise _Usage(f"--var {item!r}: expected NAME=VALUE")
            variables[name] = value
        if args.notify_fd is not None and args.notify_fd < 3:
            raise _Usage(f"--notify-fd {args.notify_fd}: 0, 1 and 2 are the command's stdio")
        if args.notify_fd is not None and not _is_socket(args.notify_fd):
            raise _Usage(f"--notify-fd {args.notify_fd}: not an open socket")
        plan = loads(_read(args.plan))
        prepared = prepare(plan, variables, notify_sock=args.notify_fd)
    except _Usage as e:
        print(f"cvg-exec: {e}", file=sys.stderr)
        return 2
    except (PlanError, OSError) as e:
        print(f"cvg-exec: {_where(args.plan)}: {e}", file=sys.stderr)
        return EXIT_NOT_STARTED
    for note in prepared.notes:
        if args.verbose or not note.skipped:
            print(f"cvg-exec: note: {note}", file=sys.stderr)
    try:
        prepared.apply()
    except OSError as e:
        print(f"cvg-exec: confinement failed: {e}", file=sys.stderr)
        return EXIT_NOT_STARTED
    sys.stdout.flush()
    sys.stderr.flush()
    prepared.exec(command)


def _is_socket(fd: int) -> bool:
    try:
        return stat.S_ISSOCK(os.fstat(fd).st_mode)
    except OSError:
        return False


def _read(source: str) -> bytes:
    if source == "-":
        return sys.stdin.buffer.read()
    with open(source, "rb") as f:
        return f.read()


def _where(source: str) -> str:
    return "<stdin>" if source == "-" else source


def run() -> None:
    sys.exit(main())
