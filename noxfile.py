"""cvg's checks. `uv run nox` runs the default sessions; `uv run nox -l` lists them.

Every session installs what it needs from this repository's own files, so a
fresh clone with nothing but Python and uv passes.
"""

from __future__ import annotations

import os
import shutil
import tomllib
from pathlib import Path

import nox

nox.options.default_venv_backend = "uv"
nox.options.sessions = [
    "lint", "typecheck", "schemas", "readme", "docs", "deps", "tests", "build", "escape",
    "falsedenial",
]  # fmt: skip
nox.options.reuse_existing_virtualenvs = True
os.environ.setdefault("UV_PYTHON_DOWNLOADS", "never")

ROOT = Path(__file__).parent
PACKAGES_DIR = ROOT / "packages"


def _pyproject(dist: str) -> dict:
    return tomllib.loads((PACKAGES_DIR / dist / "pyproject.toml").read_text())


PACKAGES = sorted(p.name for p in PACKAGES_DIR.iterdir() if (p / "pyproject.toml").exists())
STRICT = ["cvg-kernel", "cvg-schema"]


def _sync(session: nox.Session, *args: str) -> None:
    """Install into the session's venv from uv.lock, so every session runs the
    exact versions the lock pins (a new pydantic must not show up as drift)."""
    session.run_install(
        "uv", "sync", "--frozen", "--inexact", *args,
        env={"UV_PROJECT_ENVIRONMENT": session.virtualenv.location},
    )  # fmt: skip


@nox.session
def lint(session: nox.Session) -> None:
    """ruff: lint and formatting."""
    _sync(session, "--only-group", "dev")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy: strict on cvg-kernel and cvg-schema, standard on the rest."""
    _sync(session, "--all-packages")
    for dist in PACKAGES:
        args = ["--strict"] if dist in STRICT else []
        session.run("mypy", *args, str(PACKAGES_DIR / dist / "src"))


@nox.session
def schemas(session: nox.Session) -> None:
    """Regenerate the JSON Schemas and the syscall table; fail on drift."""
    _sync(session, "--all-packages")
    session.run("cvg-schema", "export", "packages/cvg-schema/schemas", "--check")
    session.run("python", "tools/gen_syscall_table.py", "--check")
    session.run("python", "tools/gen_census_doc.py", "--check")


@nox.session
def readme(session: nox.Session) -> None:
    """The README's generated tables match the benchmark results files."""
    _sync(session, "--only-group", "dev")
    session.run("pytest", "benchmarks/test_readme_tables.py", "-q")


@nox.session
def docs(session: nox.Session) -> None:
    """The docs are true: docs/cli.md matches every tool's --help, every internal link
    resolves, and each example policy validates and runs its tool (docs/, examples/)."""
    _sync(session, "--all-packages")
    session.run("pytest", "docs", "examples", "-q", *session.posargs)


@nox.session
def deps(session: nox.Session) -> None:
    """Each package declares what its src imports (or runs) and nothing else, and its
    test group holds what its tests import (tools/test_dependencies.py)."""
    _sync(session, "--all-packages")
    session.run("pytest", "tools/test_dependencies.py", "-q", *session.posargs)


@nox.session
@nox.parametrize("dist", PACKAGES)
def tests(session: nox.Session, dist: str) -> None:
    """Each package's tests, in a venv holding only its declared dependencies
    and its own `test` dependency group."""
    _sync(session, "--package", dist, "--no-default-groups", "--group", "test")
    session.run("pytest", str(PACKAGES_DIR / dist / "tests"), "-q", *session.posargs)


@nox.session
def build(session: nox.Session) -> None:
    """Build every wheel; install each alone in a fresh venv; check it imports and
    that its executable answers --help."""
    dist_dir = ROOT / "dist"
    session.run("rm", "-rf", str(dist_dir), external=True)
    session.run("uv", "build", "--all-packages", "--wheel", "-o", str(dist_dir), external=True)
    tmp = Path(session.create_tmp())
    for dist in PACKAGES:
        meta = _pyproject(dist)["project"]
        module = dist.replace("-", "_")
        scripts = list(meta.get("scripts", {}))  # cvg-testing has none
        venv = tmp / f"alone-{dist}"
        session.run("rm", "-rf", str(venv), external=True)
        session.run("uv", "venv", "-q", str(venv), external=True)
        py = str(venv / "bin" / "python")
        wheel = next(dist_dir.glob(f"{module}-*.whl"))
        # Siblings come from the freshly built wheels; third-party deps from the index.
        session.run(
            "uv",
            "pip",
            "install",
            "-q",
            # uv would otherwise reuse a cached wheel of the same name and version
            # built from older sources, and test that instead of this build.
            "--no-cache",
            "-p",
            py,
            "--find-links",
            str(dist_dir),
            str(wheel),
            external=True,
        )
        session.run(py, "-c", f"import {module}", external=True)
        for script in scripts:
            session.run(str(venv / "bin" / script), "--help", external=True, silent=True)


@nox.session(python="3.11")
def escape(session: nox.Session) -> None:
    """The escape matrix (escape/): every attack as root and as an unprivileged user
    through the real cvg-run, judged by external oracles; fails on any escape outside
    DESIGN.md's documented limits. Native ABI by default, into a scratch directory (the
    committed results stay as they are); `-- --matrix` runs ABI 4 and 6 too
    (simulated) and rewrites escape/results/. Then checks the reports for drift.
    Python 3.11: cvg-run runs as the unprivileged user under /usr/bin/python3.11 from
    a staged copy of this venv's packages. Needs root."""
    _sync(session, "--all-packages")
    args = list(session.posargs)
    if "--matrix" not in args and "--out" not in args:
        args += ["--out", session.create_tmp()]
    try:
        session.run("python", "escape/run.py", *args)
    finally:
        session.run("pytest", "escape/test_report.py", "-q")


# The programs the false-denial workloads run, by the Debian package that ships them.
WORKLOAD_PROGRAMS = {
    "git": "git", "tar": "tar", "gzip": "gzip", "sqlite3": "sqlite3", "gcc": "gcc",
    "make": "make", "curl": "curl", "jq": "jq", "openssl": "openssl", "zip": "zip",
    "unzip": "unzip", "node": "nodejs", "ssh-keygen": "openssh-client", "strace": "strace",
}  # fmt: skip
# The peers bench.py compares cvg with, and GNU time for their peak RSS.
PEER_PROGRAMS = {"bwrap": "bubblewrap", "firejail": "firejail", "/usr/bin/time": "time"}
SANDLOCK = "sandlock==0.9.0"


def _apt_install(session: nox.Session, programs: dict[str, str]) -> None:
    """apt-get install the packages of whichever programs are missing (as root)."""
    missing = sorted({pkg for prog, pkg in programs.items() if not shutil.which(prog)})
    if not missing:
        return
    if not shutil.which("apt-get") or os.geteuid() != 0:
        session.error(f"missing {', '.join(missing)}: install them (apt-get needs root)")
    session.run("apt-get", "update", "-qq", external=True)
    session.run("apt-get", "install", "-y", "-qq", *missing, external=True)


@nox.session
def falsedenial(session: nox.Session) -> None:
    """The false-denial suite (benchmarks/workloads/): 16 benign real programs under their
    hand-written policies and under policies generated from another input; fails when a
    hand-written policy denies anything or the generated ones do worse than the committed
    results. Installs the workloads' programs when missing. To re-record the results:
    `uv run python benchmarks/workloads/suite.py` (then render the README)."""
    _apt_install(session, WORKLOAD_PROGRAMS)
    _sync(session, "--all-packages")
    session.run("pytest", "benchmarks/test_workloads.py", "-q", *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """Opt-in: benchmarks/bench.py, cvg against sandlock (PyPI, in its own venv),
    bubblewrap and firejail, every configuration interleaved; writes
    benchmarks/results/<host>.json. Installs the peers (apt, as root) when missing.
    Arguments after -- go to bench.py (e.g. -- --runs 20). Then
    `uv run python benchmarks/bench.py --render`."""
    _apt_install(session, PEER_PROGRAMS)
    _sync(session, "--all-packages")
    venv = Path(session.create_tmp()).resolve() / "sandlock"
    if not (venv / "bin" / "python").exists():
        session.run("uv", "venv", "-q", str(venv), external=True)
    session.run(
        "uv", "pip", "install", "-q", "-p", str(venv / "bin" / "python"), SANDLOCK,
        external=True,
    )  # fmt: skip
    session.run(
        "python", "benchmarks/bench.py", "--sandlock-python", str(venv / "bin" / "python"),
        *session.posargs,
    )  # fmt: skip


# What `container` needs on the host: rootful podman with runc and crun (and
# containers-common's seccomp.json, which podman depends on), and debootstrap.
CONTAINER_PROGRAMS = {
    "podman": "podman", "runc": "runc", "crun": "crun", "debootstrap": "debootstrap",
}  # fmt: skip
CONTAINER_RESULTS = ROOT / "docs" / "containers.json"


@nox.session(venv_backend="none")
def container(session: nox.Session) -> None:
    """Opt-in, not in the default list (about 2 minutes, plus a few for debootstrap the
    first time): cvg inside a rootful podman container under containers-common's default
    seccomp profile, as a non-root container user (tools/container-run, docs/containers.md):
    which of the calls cvg needs the profile admits, cvg-probe, cvg-run's refusals proven
    bare first, --trace, supervised listen and signals, and the escape smoke set. Fails
    when a check or an attack fails, or when an outcome differs from docs/containers.json;
    `-- --write` rewrites that file instead. Installs podman, runc, crun and debootstrap
    (apt, as root). Needs root."""
    _apt_install(session, CONTAINER_PROGRAMS)
    if "--write" in session.posargs:
        session.run("python3", "tools/container-run", "--out", str(CONTAINER_RESULTS),
                    external=True)  # fmt: skip
        return
    out = Path(session.create_tmp()).resolve() / "containers.json"
    session.run("python3", "tools/container-run", "--out", str(out), "--compare",
                str(CONTAINER_RESULTS), external=True)  # fmt: skip
