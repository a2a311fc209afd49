"""cvg-run: run a command under a cvg policy.

Not click, and argparse only for --help: cvg-run's cold start is part of what
it costs a user per tool call, and every import on this path counts. One small
hand-written grammar (:func:`parse`) reads every command line; argparse only
formats the help text from the same option names.
"""

from __future__ import annotations

import os
import sys
import time

# collections.abc is this module, behind the collections package: its imports cost
# every cold start milliseconds.
from _collections_abc import Sequence

from cvg_kernel.plan import EXIT_NOT_STARTED, PlanError, prepare
from cvg_kernel.seccomp import Filter, SeccompError

from . import guarding, planning, planted, policy_lookup, record
from .supervisor import Outcome, not_started, resolve_command, supervise, tree_limits

TYPE_CHECKING = False  # not typing's: importing typing costs every cold start
if TYPE_CHECKING:
    import argparse
    from typing import Any

    from cvg_kernel.plan import Prepared

    from .tracing.tracer import Tracer

DESCRIPTION = """\
Run CMD under a cvg policy that the kernel enforces: Landlock for files and TCP
ports, seccomp-bpf for escape-prone syscalls and socket families, rlimits for
resources, no_new_privs and no capabilities. With no -p, an embedded default
policy is used: read the system (/usr, /etc, /opt, the working directory),
write a private ${SCRATCH} directory, no network.

The tool's stdin, stdout and stderr are its own (but with -p -: stdin carried
the policy, and the tool's stdin is /dev/null); cvg-run speaks only on stderr,
prefixed "cvg-run:", and only when something is wrong, when -p NAME was looked
up (the file used), or with -v. When the
tool's first process exits, or the wall clock runs out, everything it started
is killed, daemons that left its session included. Each run leaves a cvg.run
record at --record PATH or in $XDG_STATE_HOME/cvg/runs/<run-id>.json; that
directory keeps the newest 100 records of each policy and 200 MB in all, the
oldest deleted first (CVG_RUNS_KEEP=N records per policy, CVG_RUNS_MAX_MB=M;
0 for no bound).

examples:
  cvg-run -- python3 -c 'print(1)'
  cvg-run -p p.yaml -- python3 tool.py
  cvg-run -p files -- files-server       # ~/.config/cvg/policies/files.yaml
  cvg-validate p.yaml | cvg-run -p - -- python3 tool.py   # the tool's stdin: /dev/null
  cvg-observe -- python3 tool.py | cvg-generate | cvg-validate > p.yaml

shell completion (bash, zsh or fish, as for every cvg tool):
  eval "$(_CVG_RUN_COMPLETE=bash_source cvg-run)"

exit status:
  the tool's own status;
  128+N  the tool was killed by signal N (137 also when cvg-run ended it at the
         processes limit: see the record's exit.meaning);
  124    the wall clock ran out;
  125    the tool was not started (bad policy, a policy NAME found nowhere, refused
         degraded policy, internal error);
         the embedded default policy is never refused as degraded: it is the best
         this kernel offers, and the record lists anything it could not enforce;
  126    the tool could not be executed (including a missing execute grant);
  127    the tool was not found;
  123    the run record was refused: its path had become something other than a
         regular file, its file was replaced or its directory moved during the run,
         or it could not be written where a file was made before the run;
  122    a protected path (docs/protected-paths.md) beneath a write grant that did
         not exist when the tool started existed once its processes were gone: each
         is moved aside to NAME.cvg-moved-RUN_ID in its own directory, said on
         stderr and listed in the record's protected_created (122 outranks 123);
  2      usage error (a bad option, no command, a --cwd that is not a directory,
         a --record whose directory does not exist or that is not a regular file,
         a CVG_RUNS_KEEP or CVG_RUNS_MAX_MB that is not a whole number); nothing
         was run.
"""


def _parser() -> argparse.ArgumentParser:
    import argparse

    p = argparse.ArgumentParser(
        prog="cvg-run",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        usage=USAGE[len("usage: ") :],
    )
    p.add_argument(
        "-p",
        "--policy",
        metavar="POLICY",
        help="policy file (YAML or JSON); a bare NAME that is no file here is "
        "NAME.yaml in $XDG_CONFIG_HOME/cvg/policies (default ~/.config/cvg/policies), "
        "else in /etc/cvg/policies, and the file used is named on stderr; - reads the "
        "policy from stdin, and the tool's stdin is then /dev/null",
    )
    p.add_argument(
        "--allow-degraded",
        action="store_true",
        help="run even if this kernel cannot enforce every rule; each degraded rule is "
        "listed on stderr and in the record",
    )
    p.add_argument(
        "--trace",
        action="store_true",
        help="run the tool under strace and name every refused call: one line per distinct "
        "denial on stderr as it happens, each failed call in the record's denials with the "
        "mechanism that refused it and the policy rule that would grant it; failures that "
        "are the tool's own (ENOENT on a probe, file modes) are recorded with mechanism "
        "none and not printed; refusals by cvg-run's supervisor (a denied entry inside a "
        "grant, a socket path network.unix does not list) have mechanism supervisor. Needs "
        "strace (exit 125 without it); a policy with a deny inside a grant is traced in "
        "ptrace mode, slower; CVG_TRACE_MODE=ptrace or bpf picks another way of tracing "
        "(see cvg_run.tracing.tracer)",
    )
    p.add_argument("--record", metavar="PATH", help="write the cvg.run record here")
    p.add_argument(
        "--keep-scratch", action="store_true", help="keep the ${SCRATCH} directory after the run"
    )
    p.add_argument("--cwd", metavar="DIR", help="run the tool in DIR (also ${CWD})")
    p.add_argument("-v", "--verbose", action="store_true", help="say what cvg-run is doing")
    p.add_argument("command", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    return p


def _say(message: str) -> None:
    sys.stderr.write(f"cvg-run: {message}\n")
    sys.stderr.flush()


class Options:
    """What the command line asked for."""

    def __init__(self) -> None:
        self.policy: str | None = None
        self.allow_degraded = False
        self.trace = False
        self.record: str | None = None
        self.keep_scratch = False
        self.cwd: str | None = None
        self.verbose = False
        self.help = False
        self.command: list[str] = []
        self.bounds: record.Bounds | None = None  # the state directory's, when written there


class UsageError(Exception):
    """A command line outside the grammar: one line for the user, exit 2."""


FLAGS = {
    "--allow-degraded": "allow_degraded",
    "--trace": "trace",
    "--keep-scratch": "keep_scratch",
    "-v": "verbose",
    "--verbose": "verbose",
}
VALUES = {"-p": "policy", "--policy": "policy", "--record": "record", "--cwd": "cwd"}


def parse(argv: Sequence[str]) -> Options:
    """The one grammar of cvg-run's command line.

    Options come first, then the command: ``--`` ends the options, and so does the
    first word that does not start with ``-`` (or is ``-`` itself); everything from
    there is the command, untouched. A value option takes the next word whatever it is
    (``-p -- -- true`` reads the policy file named ``--``), or its value attached
    (``--policy=FILE``, ``-pFILE``). Flags take no value. Options are not abbreviated.
    ``-h``/``--help`` asks for the help. Anything else raises :class:`UsageError`.
    """
    opts = Options()
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            opts.command = list(argv[i + 1 :])
            return opts
        if arg == "-" or not arg.startswith("-"):
            opts.command = list(argv[i:])
            return opts
        if arg in ("-h", "--help"):
            opts.help = True
            return opts
        name, eq, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if name in FLAGS:
            if eq:
                raise UsageError(f"{name} takes no value")
            setattr(opts, FLAGS[name], True)
        elif name in VALUES:
            if not eq:
                if i + 1 >= len(argv):
                    raise UsageError(f"{name} needs a value")
                i += 1
                value = argv[i]
            elif not value:
                raise UsageError(f"{name} needs a value")
            setattr(opts, VALUES[name], value)
        elif len(arg) > 2 and arg[:2] in VALUES:
            setattr(opts, VALUES[arg[:2]], arg[2:])
        else:
            raise UsageError(f"unknown option {arg}")
        i += 1
    return opts


USAGE = (
    "usage: cvg-run [-p POLICY] [--allow-degraded] [--trace] [--record PATH] "
    "[--keep-scratch] [--cwd DIR] [-v] -- CMD [ARG...]"
)


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if "_CVG_RUN_COMPLETE" in os.environ:
        from cvg_kernel.completion import from_argparse, respond

        options = from_argparse(_parser(), files={"policy", "record"}, dirs={"cwd"})
        return respond("cvg-run", options) or 0
    try:
        args = parse(argv)
    except UsageError as e:
        _say(f"{e} ({USAGE[len('usage: ') :]})")
        return 2
    if args.help:
        sys.stdout.write(_parser().format_help())
        return 0
    command = args.command
    if not command:
        _say(f"no command given ({USAGE})")
        return 2
    try:
        return _run(args, command)
    except KeyboardInterrupt:
        return 128 + 2
    except Exception as e:  # noqa: BLE001 - an internal error is still one line
        # cvg_schema.console.internal_error's rule, without importing click on this path.
        if os.environ.get("CVG_DEBUG", "") not in ("", "0"):
            import traceback

            traceback.print_exception(e, file=sys.stderr)
        _say(f"internal error: {type(e).__name__}: {e}")
        return EXIT_NOT_STARTED


def _run(args: Options, command: list[str]) -> int:
    cwd = os.path.abspath(args.cwd) if args.cwd else os.getcwd()
    refused = _refused_arguments(args, cwd)
    if refused is not None:
        return refused
    run_id = record.new_run_id()
    record_path = args.record or os.path.join(record.state_dir(), f"{run_id}.json")
    try:
        text = _policy_source(args)
        planned = planning.plan_for(args.policy, cwd=cwd, home=os.path.expanduser("~"),
                                    data=text)  # fmt: skip
    except (planning.PolicyRefused, policy_lookup.PolicyNotFound) as e:
        _say(str(e))
        return EXIT_NOT_STARTED
    if args.verbose:
        source = "cache" if planned.cached else "compiled"
        _say(f"plan {planned.plan_digest[:19]} ({source}) for {args.policy or 'default policy'}")
    if _refused_as_degraded(args, planned.plan):
        return _finish(args, planned, command, cwd, run_id, record_path,
                       not_started("policy degraded on this kernel"), None)  # fmt: skip

    proxy = None
    if planned.hosts:
        from . import hosts  # only for a policy with network.hosts

        try:
            proxy = hosts.start(planned.hosts)
        except (OSError, ValueError) as e:
            _say(f"cannot start the network.hosts proxy: {e}")
            return _finish(args, planned, command, cwd, run_id, record_path,
                           not_started(f"network.hosts proxy: {e}"), None)  # fmt: skip
        planned = proxy.patched(planned)  # plus a connect rule for its port, this run only

    # Before the tool starts: the protected paths its write grants could create.
    watch = planted.watch(planned.plan, cwd, os.path.expanduser("~"), os.environ)
    scratch = make_scratch(run_id)
    try:
        outcome, denials, reserved = _confined(args, planned, command, cwd, scratch,
                                               record_path)  # fmt: skip
    finally:
        if proxy is not None:
            proxy.stop()
        if not args.keep_scratch:
            _remove_scratch(scratch)
        elif args.verbose:
            _say(f"kept scratch directory {scratch}")
        created = _swept(watch, run_id)  # the tool's whole tree is gone by now
    extra: dict[str, object] = proxy.record_fields() if proxy is not None else {}
    if created:
        extra["protected_created"] = created
        outcome = _protected_created(outcome, created)
    return _finish(args, planned, command, cwd, run_id, record_path, outcome, scratch, denials,
                   extra, reserved)  # fmt: skip


def _swept(watch: planted.Watch | None, run_id: str) -> list[dict[str, object]]:
    """The protected paths created during the run, moved aside, each said on stderr."""
    if watch is None:
        return []
    try:
        created = watch.sweep(run_id)
    finally:
        watch.close()
    for item in created:
        where = item["path"]
        done = f"moved aside to {item['moved_to']}" if "moved_to" in item else (
            f"could not be moved aside: {item['error']}")  # fmt: skip
        _say(f"protected path created during the run: {where} ({item['reason']}); {done}")
    return created


def _protected_created(outcome: Outcome, created: list[dict[str, Any]]) -> Outcome:
    """The run's outcome once it created a protected path: status 122, the tool's own
    ending kept in the detail."""
    detail = planted.detail(created, outcome.status, outcome.meaning)
    outcome.status, outcome.meaning = planted.EXIT_PROTECTED_CREATED, "protected_created"
    outcome.signal, outcome.detail = None, detail
    return outcome


def _policy_source(args: Options) -> bytes | None:
    """Settle what -p names: ``-`` is read from stdin here (and the tool's stdin
    becomes /dev/null: what it would have read is the policy, already consumed); a
    bare name with no such file here is looked up (args.policy becomes the file found,
    said on stderr). Returns the policy's text when it came from stdin."""
    if args.policy == "-":
        try:
            text = sys.stdin.buffer.read()
        except (OSError, ValueError) as e:
            raise planning.PolicyRefused(f"-p -: cannot read the policy from stdin: {e}")
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        return text
    if args.policy is not None:
        path, looked_up = policy_lookup.find(args.policy)
        if looked_up:
            _say(f"policy {args.policy}: {path}")
        args.policy = path
    return None


def _refused_arguments(args: Options, cwd: str) -> int | None:
    """A status when the command line cannot run at all (say why), else None."""
    if not os.path.isdir(cwd):
        _say(f"--cwd {args.cwd}: not a directory")
        return 2
    if args.record:
        # Refused before the run, as other tools refuse an output file they cannot
        # write: creating a mistyped directory tree, or finding out only after the
        # tool has run, would both be worse. The state directory is cvg-run's own.
        parent = os.path.dirname(os.path.abspath(args.record))
        if not os.path.isdir(parent):
            _say(f"--record {args.record}: no such directory {parent}")
            return 2
        if os.path.islink(args.record) or (
            os.path.lexists(args.record) and not os.path.isfile(args.record)
        ):
            _say(f"--record {args.record}: not a regular file")
            return 2
    else:
        try:
            args.bounds = record.bounds()
        except ValueError as e:
            _say(str(e))
            return 2
    if args.trace:
        from cvg_trace.tool import StraceNotFound, find_strace

        from .tracing.tracer import TraceUnavailable, trace_mode

        try:
            find_strace()
            trace_mode()
        except (StraceNotFound, TraceUnavailable) as e:
            _say(f"--trace: {e}")
            return EXIT_NOT_STARTED
    return None


def _refused_as_degraded(args: Options, plan: dict[str, Any]) -> bool:
    """Say what this kernel cannot enforce; True when that refuses the run."""
    degraded = plan.get("degraded") or []
    # The embedded default is "the best this kernel offers": on a kernel without a
    # mechanism it asks for it still runs, and the record lists what was degraded.
    # A policy the user chose is refused instead, unless --allow-degraded.
    if args.policy is None and degraded:
        args.allow_degraded = True
    if degraded and (args.policy is not None or args.verbose):
        for item in degraded:
            rule = f" [{item['rule']}]" if item.get("rule") else ""
            _say(f"degraded{rule}: {item['item']}: {item['reason']}")
    if degraded and not args.allow_degraded:
        _say(
            "refusing to run: this kernel cannot enforce the policy fully "
            "(use --allow-degraded to run anyway)"
        )
        return True
    return False


def _confined(
    args: Options,
    planned: planning.Planned,
    command: list[str],
    cwd: str,
    scratch: str,
    record_path: str,
) -> tuple[Outcome, list[dict[str, object]], record.Reserved | None]:
    """Prepare the plan, start the tool confined and supervise it to its end: the
    outcome, the trace's denials, and the record's file when it could be opened first."""
    plan = planned.plan
    guard = None
    reserved: record.Reserved | None = None
    denials: list[dict[str, object]] = []
    try:
        try:
            compiled = None
            if planned.filter_data is not None:
                try:  # assembled when the plan was cached
                    compiled = Filter.from_data(planned.filter_data)
                except SeccompError:
                    pass  # prepare assembles it from the plan
            notify_sock = None
            late = {"SCRATCH": scratch, "CWD": cwd}
            guards = guarding.plan_guards(plan, late)
            if not args.trace and guarding.supervised(plan):
                guard = guarding.Guarding(plan, guards=guards)  # the tracer's under --trace
                notify_sock = guard.theirs
            prepared = prepare(plan, late, notify_sock=notify_sock, compiled=compiled)
            if guard is not None:
                guard.program, guard.arch = prepared.filter.errno_program, prepared.filter.arch
        except (PlanError, OSError) as e:
            _say(f"cannot apply the plan: {e}")
            return not_started(str(e)), denials, None
        problem = resolve_command(command[0], prepared.env.get("PATH"), cwd)
        if problem is not None:
            prepared.close()  # its Landlock ruleset descriptor, never used now
            status, message = problem
            _say(message)
            meaning = "not_found" if status == 127 else "not_executable"
            outcome = Outcome(status, meaning, detail=message)
            outcome.started = outcome.ended = time.time()
            return outcome, denials, None
        tracer = None
        try:
            if args.trace:
                tracer = _tracer(plan, late, prepared, args.verbose, guards)
            for line in record.repair_modes(record_path):
                _say(line)
            try:
                reserved = record.Reserved(record_path)
            except (OSError, record.Refused):
                reserved = None  # written the usual way at the end, if it can be
            outcome = supervise(
                prepared,
                command,
                cwd=cwd,
                wall_clock=plan.get("wall_clock_seconds"),
                processes=plan.get("processes"),
                totals=tree_limits(plan, scratch),
                tracer=tracer,
                guard=guard,
            )
            if outcome.meaning in ("not_found", "not_executable", "not_started"):
                _say(outcome.detail or outcome.meaning)
            elif outcome.meaning in ("wall_clock", "limit"):
                _say(f"ended the run: {outcome.detail}")
            if tracer is not None:
                denials = tracer.finish(outcome.meaning, outcome.detail)
                if args.verbose:
                    _say(f"trace ({tracer.mode} mode): {len(denials)} distinct failed "
                         "calls recorded")  # fmt: skip
        finally:
            prepared.close()
            if tracer is not None:
                tracer.close()
        return outcome, denials, reserved
    except BaseException:
        if reserved is not None:
            reserved.discard()  # no record will be written through it
        raise
    finally:
        if guard is not None:
            guard.stop()  # closes its sockets when the run never started
            if guard.error:
                _say(f"the supervisor stopped deciding {', '.join(guard.calls)} calls "
                     f"(they failed with ENOSYS from then on): {guard.error}")  # fmt: skip


def _tracer(
    plan: dict[str, object], variables: dict[str, str], prepared: Prepared, verbose: bool,
    guards: dict[str, Any],
) -> Tracer:  # fmt: skip
    from .tracing.tracer import Tracer

    flt = prepared.filter
    tracer = Tracer(plan, variables, say=_say, program=flt.errno_program, arch=flt.arch,
                    guards=guards)  # fmt: skip
    if verbose:
        seen = "seccomp denials unseen" if tracer.mode == "bpf" else "seccomp denials included"
        _say(f"trace: {tracer.strace} in {tracer.mode} mode ({seen})")
    tracer.prepare_files(prepared)
    return tracer


def make_scratch(run_id: str) -> str:
    """A fresh private directory (mode 0700) under $TMPDIR, as tempfile.mkdtemp
    would make, without importing tempfile on the cold path."""
    base = os.environ.get("TMPDIR") or "/tmp"
    while True:
        path = os.path.join(base, f"cvg-{run_id}-{os.urandom(4).hex()}")
        try:
            os.mkdir(path, 0o700)
            return path
        except FileExistsError:
            continue


def _remove_scratch(path: str) -> None:
    try:
        os.rmdir(path)  # the common case: the tool left nothing
        return
    except OSError:
        pass
    import shutil  # only when there is something to remove

    shutil.rmtree(path, ignore_errors=True)
    if not os.path.lexists(path):
        return

    # chmod is outside Landlock: the tool may have left directories its own user
    # cannot list or empty. Everything it started is dead by now: open them up
    # from the top and remove again.
    stack = [path]
    while stack:
        d = stack.pop()
        try:
            os.chmod(d, 0o700)
            with os.scandir(d) as entries:
                stack.extend(e.path for e in entries if e.is_dir(follow_symlinks=False))
        except OSError:
            continue
    shutil.rmtree(path, ignore_errors=True)
    if os.path.lexists(path):
        _say(f"could not remove the scratch directory {path}")


def _finish(
    args: Options,
    planned: planning.Planned,
    command: list[str],
    cwd: str,
    run_id: str,
    record_path: str,
    outcome: Outcome,
    scratch: str | None,
    denials: list[dict[str, object]] | None = None,
    extra: dict[str, object] | None = None,
    reserved: record.Reserved | None = None,
) -> int:
    rec = record.build(
        run_id=run_id,
        plan=planned.plan,
        plan_digest=planned.plan_digest,
        policy_digest=planned.policy_digest,
        policy_path=planned.policy_path,
        argv=command,
        cwd=cwd,
        outcome=outcome,
        allow_degraded=args.allow_degraded,
        scratch=scratch,
        scratch_kept=bool(args.keep_scratch and scratch),
        traced=bool(args.trace),
        denials=denials or [],
    )
    rec.update(extra or {})  # the network.hosts proxy's connections
    try:
        if reserved is not None:
            unsealed = reserved.unsealed
            reserved.write(record.dumps(rec))
        else:
            unsealed = record.write_unreserved(record_path, record.dumps(rec))
    except record.Refused as e:
        # The tool may have done this to hide its record: its status is not the answer.
        _say(f"run record refused: {e} (the tool's status was {outcome.status})")
        return _refused(outcome)
    except OSError as e:
        if reserved is not None:
            # Its directory took a file before the run: the tool may have made it fail.
            _say(f"cannot write the run record {record_path}: {e.strerror} "
                 f"(the tool's status was {outcome.status})")  # fmt: skip
            return _refused(outcome)
        # Never writable, before the run either: the tool's status stays the answer.
        _say(f"cannot write the run record {record_path}: {e.strerror}")
    else:
        if unsealed is not None:
            _say(f"the run record is not sealed (cvg-explain --apply will refuse it): {unsealed}")
        if args.bounds is not None:
            record.prune(os.path.dirname(record_path), record_path, args.bounds)
    if args.verbose:
        _say(f"run {run_id}: {outcome.meaning} {outcome.status}; record {record_path}")
    return outcome.status


def _refused(outcome: Outcome) -> int:
    # A protected path created during the run outweighs the record: it is said on
    # stderr either way, and 122 is what asks the user to look.
    if outcome.meaning == "protected_created":
        return outcome.status
    return record.EXIT_REFUSED


def run() -> None:
    """The console script. Ends with os._exit once stdout and stderr are flushed: the
    interpreter's own teardown (module and object finalisation) costs several
    milliseconds of every cold run and has nothing left to do: the record is written,
    the tool's tree is gone and no file of ours is open for writing."""
    status = main()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        pass  # `cvg-run ... | head`: the reader went away, as a pipe writer would
    try:
        sys.stderr.flush()
    except OSError:
        pass
    os._exit(status & 0xFF if status >= 0 else 1)
