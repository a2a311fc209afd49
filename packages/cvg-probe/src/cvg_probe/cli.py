"""The ``cvg-probe`` command."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click
from tabulate import tabulate

from cvg_schema import Facts, dumps
from cvg_schema.console import console, invoke

from . import probe
from ._version import __version__
from .probes import ProbeError

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


def render_table(facts: Facts) -> str:
    """Facts for people: a header, then one row per feature."""
    cap = facts.landlock_abi_cap
    abi = f"Landlock ABI {facts.landlock_abi}"
    if cap is not None and cap < facts.landlock_abi:
        abi += f" (capped to {cap} by CVG_LANDLOCK_ABI_MAX)"
    strace = "not found"
    if facts.strace is not None:
        strace = facts.strace.path + (f" {facts.strace.version}" if facts.strace.version else "")
    when = facts.probed_at.isoformat(timespec="seconds")
    head = [
        f"kernel {facts.kernel} ({facts.arch}), {abi}, euid {facts.euid}",
        f"strace: {strace}",
        f"probed {when}" + (" (cached)" if facts.cached else ""),
    ]
    rows = [
        [f.name, "yes" if f.proven else "NO", f.abi or "", f.how if f.proven else f.error]
        for f in facts.features
    ]
    proven = sum(f.proven for f in facts.features)
    table = tabulate(rows, headers=["feature", "proven", "abi", "how / why not"], tablefmt="simple")
    return "\n".join([*head, "", table, "", f"{proven} of {len(rows)} features proven"]) + "\n"


@click.command(
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog="""\b
Examples:
  cvg-probe                          # a table on a terminal, JSON in a pipe
  cvg-probe --format json --fresh    # re-probe now, refresh the cache
  CVG_LANDLOCK_ABI_MAX=4 cvg-probe   # what an Ubuntu 24.04 kernel (ABI 4) would give
  cvg-probe | cvg-validate --explain --facts - p.yaml
""",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["json", "table"]),
    default=None,
    help="json: one cvg.facts message; table: for people. "
    "Default: table on a terminal, json otherwise.",
)
@click.option("--pretty", is_flag=True, help="Indent the JSON.")
@click.option("--fresh", is_flag=True, help="Ignore cached results; probe now and re-cache.")
@click.option("--no-cache", is_flag=True, help="Probe now; neither read nor write the cache.")
@click.version_option(__version__, "-V", "--version", prog_name="cvg-probe")
def cli(fmt: str | None, pretty: bool, fresh: bool, no_cache: bool) -> None:
    """Prove, live, what this kernel can enforce for cvg, and print it as cvg.facts.

    Nothing is taken from a version number. Each feature is used in a throwaway
    forked child and watched to bite: every Landlock filesystem right the
    kernel's ABI knows (each must turn an operation that works into EACCES),
    TCP connect and bind by port, signal and abstract-socket scoping, the
    restrict_self log flags and tsync; the seccomp filter (it installs, a denied
    call gets its errno, socket families are filtered, an int 0x80 call is
    killed with SIGSYS); no_new_privs, capability dropping, the rlimits cvg sets,
    the subreaper, pidfds, close_range; and whether strace can trace (cvg-observe
    and cvg-run --trace need it). Each feature says proven true or false, the
    test that ran (how), why it failed (error), and the Landlock ABI that
    introduced it. The whole probe takes a fraction of a second.

    CVG_LANDLOCK_ABI_MAX=N caps the Landlock ABI, as cvg-run does, to see what an
    older kernel would give; the cap is reported as landlock_abi_cap.

    Results are cached in $XDG_CACHE_HOME/cvg/ (default ~/.cache/cvg/) for this
    boot, kernel, user, ABI cap and cvg-probe version; cached output says
    "cached": true. --fresh re-probes and refreshes the cache; --no-cache leaves
    it alone. A corrupt cache file is ignored.

    Exit status: 0 when the probe ran, whatever the kernel lacks (read the
    features); 1 when the probe itself could not run (one line on stderr);
    2 for a usage error.
    """
    facts = probe(fresh=fresh, cache=not no_cache)
    if fmt is None:
        fmt = "table" if sys.stdout.isatty() else "json"
    if fmt == "table":
        click.echo(render_table(facts), nl=False)
    else:
        click.echo(dumps(facts, pretty=pretty).decode(), nl=False)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command with ``argv`` (default: ``sys.argv[1:]``); return the exit status."""
    return invoke(cli, argv, prog="cvg-probe", failure=EXIT_FAILED, known=(ProbeError,))


def run() -> None:
    """The console-script entry point."""
    console(main)
