"""cvg's checks. `uv run nox` runs the default sessions; `uv run nox -l` lists them.

Every session installs what it needs from this repository's own files, so a
fresh clone with nothing but Python and uv passes.
"""

from __future__ import annotations

import json
import os
import shutil
import tomllib
import zipfile
from pathlib import Path

import nox

nox.options.default_venv_backend = "uv"
nox.options.sessions = [
    "lint", "typecheck", "schemas", "readme", "docs", "man", "deps", "tests", "build",
    "install", "escape", "falsedenial",
]  # fmt: skip
nox.options.reuse_existing_virtualenvs = True
os.environ.setdefault("UV_PYTHON_DOWNLOADS", "never")

ROOT = Path(__file__).parent
PACKAGES_DIR = ROOT / "packages"


def _pyproject(dist: str) -> dict:
    return tomllib.loads((PACKAGES_DIR / dist / "pyproject.toml").read_text())


PACKAGES = sorted(p.name for p in PACKAGES_DIR.iterdir() if (p / "pyproject.toml").exists())


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
    """mypy --strict on every distribution's src."""
    _sync(session, "--all-packages")
    for dist in PACKAGES:
        session.run("mypy", "--strict", str(PACKAGES_DIR / dist / "src"))


@nox.session
def schemas(session: nox.Session) -> None:
    """Regenerate the JSON Schemas and the syscall table; fail on drift."""
    _sync(session, "--all-packages")
    session.run("cvg-schema", "export", "packages/cvg-schema/schemas", "--check")
    session.run("python", "tools/gen_syscall_table.py", "--check")
    session.run("python", "tools/gen_census_doc.py", "--check")
    session.run("python", "tools/gen_protected_doc.py", "--check")


@nox.session
def readme(session: nox.Session) -> None:
    """The README's first screen holds its two set-up commands and fits in 150 lines; the
    generated tables of docs/results.md, and the peers charts beside the results, match
    the benchmark results files; the charts are well-formed SVG of what the results say."""
    _sync(session, "--only-group", "dev")
    session.run(
        "pytest", "docs/test_readme.py", "benchmarks/test_readme_tables.py",
        "benchmarks/test_peers_svg.py", "-q",
    )  # fmt: skip


@nox.session
def docs(session: nox.Session) -> None:
    """The docs are true: docs/cli.md matches every tool's --help, every internal link
    resolves, and each example policy validates and runs its tool (docs/, examples/).
    docs/mcp.md's walk-through installs an MCP server with npm: node and npm are
    installed (apt) when missing."""
    _apt_install(session, {"node": "nodejs", "npm": "npm"})
    _sync(session, "--all-packages")
    # A week with cvg-wrap runs in falsedenial, beside the suite on the same servers.
    session.run(
        "pytest", "docs", "examples", "-q", "--ignore", "docs/test_wrap_day.py", *session.posargs
    )


# What `man` needs to render and check the pages (Debian packages).
MAN_PROGRAMS = {"groff": "groff-base", "man": "man-db"}


@nox.session
def man(session: nox.Session) -> None:
    """The man pages (packages/<dist>/man/<command>.1, installed by each wheel under
    share/man/man1) match every tool's --help (docs/gen_man.py --check), and groff
    renders each without a warning and man shows it (--lint). Installs groff and
    man-db (apt, as root) when missing."""
    _apt_install(session, MAN_PROGRAMS)
    _sync(session, "--all-packages")
    session.run("python", "docs/gen_man.py", "--check")
    session.run("python", "docs/gen_man.py", "--lint")


@nox.session
def deps(session: nox.Session) -> None:
    """Each package declares what its src imports (or runs) and nothing else, and its
    test group holds what its tests import (tools/test_dependencies.py); its metadata is
    ready to publish (tools/test_packaging.py)."""
    _sync(session, "--all-packages")
    session.run("pytest", "tools/test_dependencies.py", "tools/test_packaging.py", "-q",
                *session.posargs)  # fmt: skip


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
        with zipfile.ZipFile(wheel) as zf:
            names = set(zf.namelist())
        wanted = {f"{module}-{meta['version']}.dist-info/licenses/LICENSE"}
        wanted |= {f"{module}-{meta['version']}.data/data/share/man/man1/{s}.1" for s in scripts}
        if wanted - names:
            session.error(f"{wheel.name} lacks {', '.join(sorted(wanted - names))}")
        for script in scripts:
            session.run(str(venv / "bin" / script), "--help", external=True, silent=True)


# What `install` needs besides bash to load the completion scripts, and man pages.
SHELL_PROGRAMS = {"zsh": "zsh", "fish": "fish", **MAN_PROGRAMS}
PIPX = "pipx>=1.5"  # 1.5 links the man pages a package installs


def _readme_install() -> list[str]:
    """The command lines of the README's Install block."""
    text = (ROOT / "README.md").read_text()
    block = text.split("<!-- install:begin -->", 1)[1].split("<!-- install:end -->", 1)[0]
    lines = [line.split("   #")[0].split("  #")[0].strip() for line in block.splitlines()]
    return [line for line in lines if line and not line.startswith("```")]


def _scripts_of(dists: list[str]) -> set[str]:
    return {s for d in dists for s in _pyproject(d)["project"].get("scripts", {})}


def _installed(session: nox.Session, line: str, dists: list[str], tmp: Path) -> None:
    """Run one install line in fresh tool directories; check that it installed the
    tools of ``dists`` (no more, no fewer: pipx's --include-deps adds those of the
    third-party dependencies too), each answering --help, with its man page."""
    for sub in ("uv-tools", "bin", "pipx", "man"):
        session.run("rm", "-rf", str(tmp / sub), external=True)
    env = {
        "UV_TOOL_DIR": str(tmp / "uv-tools"), "UV_TOOL_BIN_DIR": str(tmp / "bin"),
        "PIPX_HOME": str(tmp / "pipx"), "PIPX_BIN_DIR": str(tmp / "bin"),
        "PIPX_MAN_DIR": str(tmp / "man"), "UV_CACHE_DIR": str(tmp.parent / "uv-cache"),
    }  # fmt: skip
    session.run("bash", "-c", line, env=env, external=True)
    wanted = _scripts_of(dists)
    found = {p.name for p in (tmp / "bin").iterdir()}
    ours = {name for name in found if name.startswith("cvg")}
    if ours != wanted or (found != ours and "--include-deps" not in line):
        session.error(f"{line}: installed {sorted(found)}, expected {sorted(wanted)}")
    pages = {p.name for p in tmp.glob("uv-tools/*/share/man/man1/cvg*.1")}
    pages |= {p.name for p in tmp.glob("man/man1/cvg*.1")}
    # A tool's environment also holds its sibling dependencies' pages.
    if not {f"{s}.1" for s in wanted} <= pages:
        session.error(f"{line}: man pages {sorted(pages)}, expected one per tool")
    for script in sorted(wanted):
        session.run(str(tmp / "bin" / script), "--help", external=True, silent=True)


@nox.session
def install(session: nox.Session) -> None:
    """The README's Install lines, as written, from freshly built wheels into temporary
    tool directories: each distribution's tools alone (uv tool's one-tool line for
    every distribution, pipx's as written) and all at once (the cvg-sandbox distribution).
    Each installed tool answers --help and has its man page; then the completion
    script of every tool installed at once loads into bash, zsh and fish
    (tools/test_completion.py), and cvg-wrap's transcript is what those tools do
    (docs/test_wrap_transcript.py). Third-party packages come from PyPI. Installs zsh,
    fish, groff and man-db (apt, as root) when missing."""
    _apt_install(session, SHELL_PROGRAMS)
    _sync(session, "--only-group", "dev")
    session.install(PIPX)
    tmp = Path(session.create_tmp()).resolve()
    # A cache of this run only: uv keeps a sibling wheel by name and version, and would
    # install the one an earlier run built from older sources.
    session.run("rm", "-rf", str(tmp / "uv-cache"), external=True)
    shipping = [d for d in PACKAGES if _pyproject(d)["project"].get("scripts")]
    every = [*shipping, "cvg-sandbox"]
    for line in _readme_install():
        if line.startswith("uv build"):
            session.run("rm", "-rf", str(ROOT / "dist"), external=True)
            session.run("bash", "-c", line, external=True)
        elif "dist/cvg_sandbox-*.whl" in line:  # every tool at once
            _installed(session, line, every, tmp / "every")
            session.run(
                "pytest", "tools/test_completion.py", "-q",
                env={"CVG_BIN": str(tmp / "every" / "bin")},
            )  # fmt: skip
            # A user's day with the tools as installed: docs/wrap-transcript.md.
            session.run(
                "pytest", "docs/test_wrap_transcript.py", "-q",
                env={"CVG_BIN": str(tmp / "every" / "bin")},
            )  # fmt: skip
        elif line.startswith("pipx") and "dist/cvg_run-*.whl" in line:  # as written only
            _installed(session, line, ["cvg-run"], tmp / "pipx-cvg-run")
        elif "dist/cvg_run-*.whl" in line:  # one tool: the same line for each distribution
            for dist in shipping:
                module = dist.replace("-", "_")
                one = line.replace("dist/cvg_run-*.whl", f"dist/{module}-*.whl")
                _installed(session, one, [dist], tmp / dist)
        else:
            session.error(f"README's Install has a line this session does not know: {line}")


@nox.session
def escape(session: nox.Session) -> None:
    """The escape matrix (escape/): every attack as root and as an unprivileged user
    through the real cvg-run, judged by external oracles; fails on any escape outside
    docs/design.md's documented limits. Native ABI by default, into a scratch directory (the
    committed results stay as they are); `-- --matrix` runs ABI 4 and 6 too
    (simulated) and rewrites escape/results/. Then checks the reports for drift, tests
    the gates, and runs escape/test_grants.py.
    As the unprivileged user, cvg-run runs under a system Python of this venv's version
    that the user can execute (escape/run.py finds it and records it), from a staged
    copy of this venv's packages. Needs root."""
    _sync(session, "--all-packages")
    args = list(session.posargs)
    if "--matrix" not in args and "--out" not in args:
        args += ["--out", session.create_tmp()]
    try:
        session.run("python", "escape/run.py", *args)
    finally:
        # The reports' drift, the gates against the committed results, and moving
        # files between grants through the real cvg-run (root and cvgtest).
        session.run(
            "pytest", "escape/test_report.py", "escape/test_gates.py", "escape/test_grants.py",
            "-q",
        )  # fmt: skip


# The programs the false-denial workloads run, by the Debian package that ships them.
WORKLOAD_PROGRAMS = {
    "git": "git", "tar": "tar", "gzip": "gzip", "sqlite3": "sqlite3", "gcc": "gcc",
    "make": "make", "curl": "curl", "jq": "jq", "openssl": "openssl", "zip": "zip",
    "unzip": "unzip", "node": "nodejs", "ssh-keygen": "openssh-client", "strace": "strace",
    "ar": "binutils", "xz": "xz-utils", "zstd": "zstd", "bzip2": "bzip2", "wget": "wget",
    "yq": "yq", "msgfmt": "gettext", "groff": "groff-base", "patch": "patch", "file": "file",
    "perl": "perl", "npm": "npm",
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
    """The false-denial suite (benchmarks/workloads/): 41 benign real programs and MCP
    servers under their hand-written policies and under policies generated from other
    inputs; fails when a hand-written policy denies anything or the generated ones do
    worse than the committed results, workload by workload: a new denial seen twice in
    the last recordings (benchmarks/results/falsedenial-recordings.json, this run and
    its rerun alone included) fails. The MCP sessions idle as long as the committed run
    did (300 s). Installs the workloads' programs when missing (apt) and the pinned MCP servers
    into a .servers folder beside the workloads (npm, uv). To re-record the results:
    `uv run python benchmarks/workloads/suite.py` (then render docs/results.md).
    Then docs/test_wrap_day.py: five of those servers in a Claude Desktop config through
    cvg-wrap's learn, enforce and restore, about 5 minutes."""
    _apt_install(session, WORKLOAD_PROGRAMS)
    _sync(session, "--all-packages")
    session.run("pytest", "benchmarks/test_workloads.py", "-q", *session.posargs)
    session.run("pytest", "docs/test_wrap_day.py", "-q", "-rxX")


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


# The real kernels `kernels` boots under qemu (tools/kernel-run), each with the
# Landlock ABI it must report: Debian bookworm's 6.1 and bookworm-backports' 6.12.
KERNELS = {"6.1": 2, "6.12": 6}
KERNEL_PROGRAMS = {
    "qemu-system-x86_64": "qemu-system-x86", "busybox": "busybox-static", "setpriv": "util-linux",
    "strace": "strace",
}  # fmt: skip
# The kernel-facing tests: what cvg-kernel asks of Landlock and seccomp, how
# cvg-run starts, refuses and ends a tool (and its cgroup v2 limits: the guest
# mounts cgroup2, where this machine has v1), and cvg-observe's attach as a user under
# Yama's ptrace_scope 1 (Ubuntu's default; Debian's kernels have Yama, this
# repository's CI kernel does not).
KERNEL_TESTS = [
    "packages/cvg-kernel/tests/test_landlock.py", "packages/cvg-kernel/tests/test_seccomp.py",
    "packages/cvg-run/tests/test_run_exit.py", "packages/cvg-run/tests/test_run_confinement.py",
    "packages/cvg-run/tests/test_run_kernel_memory.py",
    "packages/cvg-observe/tests/test_observe_yama.py",
]  # fmt: skip
# The escape matrix on a real kernel: this many attacks (about 20 s each under TCG;
# the full matrix takes hours), chosen by _kernel_attacks.
KERNEL_ATTACKS = 100
# Every choice starts with these: one per kind of wall, the ABI-dependent ones
# (truncate, TCP, signals, abstract sockets) included.
KERNEL_SMOKE_ATTACKS = [
    "read_file_outside_grants", "create_file_outside_grants", "truncate_path_outside_grants",
    "exec_ungranted_elf", "tcp6_connect_ungranted_port", "tgkill_sentinel",
    "unix_abstract_connect_default_policy", "clone_with_newuser_flag",
    "add_key_to_user_keyring", "memfd_exec_via_proc_self_fd",
]  # fmt: skip
# What a run the user accepted with --allow-degraded lets through below an ABI, as
# cvg-run lists it: attacks through these walls escape on such a kernel, by design.
KERNEL_DEGRADED = {"truncate_path_outside_grants": 3, "tcp6_connect_ungranted_port": 4}
TCP_POLICY = """version: 1
filesystem:
  read: [/usr, /etc, /bin, /lib, /lib64]
  execute: [/usr, /bin, /lib, /lib64]
network:
  tcp_connect: [443]
"""


# kernel-run starts the guest's command with `env -i`: CI=true must be handed in, or a
# test that cannot run on that kernel would skip there and pass.
GUEST_ENV = ("--env", "CI=true")


# Walls that need Landlock ABI 3 or 4 (truncate, TCP, the hosts proxy's port): the
# committed ABI 4 cells cannot show that an attack depends on them, and on 6.1 (ABI 2)
# a degraded run lets them through. The smoke set holds the ones KERNEL_DEGRADED names.
KERNEL_ABI3_4_CLASSES = {"fs-truncate", "net-tcp", "hosts"}


def _kernel_attacks(n: int) -> list[str]:
    """``n`` attacks of the matrix for a real kernel: the smoke set, then attacks whose
    bare run escaped on this machine (the committed results; containing one that
    cannot escape proves nothing) and whose outcome is the same at every ABI there
    (one that changes with the ABI is judged on a real kernel by KERNEL_DEGRADED
    alone), a class at a time in turn so that every kind of wall is there, by name
    within a class."""
    attacks = json.loads((ROOT / "escape" / "results" / "results.json").read_text())["attacks"]
    chosen = list(KERNEL_SMOKE_ATTACKS)
    by_class: dict[str, list[str]] = {}
    for name in sorted(attacks):
        a = attacks[name]
        fired = any(b.get("fired") for b in a.get("baseline", {}).values())
        outcomes = {(cell.split("/")[0], c["outcome"]) for cell, c in a["cells"].items()}
        steady = len(outcomes) == len({who for who, _ in outcomes})
        if fired and steady and a["class"] not in KERNEL_ABI3_4_CLASSES and name not in chosen:
            by_class.setdefault(a["class"], []).append(name)
    queues = [by_class[c] for c in sorted(by_class)]
    while len(chosen) < n and any(queues):
        for q in queues:
            if q and len(chosen) < n:
                chosen.append(q.pop(0))
    return chosen


def _in_kernel(session: nox.Session, series: str, *cmd: str, writable: tuple[str, ...] = (),
               codes: tuple[int, ...] = (0,)) -> str:  # fmt: skip
    """One command on the real kernel (tools/kernel-run), as root; returns its
    output."""
    args = [f"--writable={w}" for w in writable]
    return session.run(
        "python", "tools/kernel-run", "--kernel", series, *GUEST_ENV, *args, "--", *cmd,
        external=True, silent=True, success_codes=list(codes),
    ) or ""  # fmt: skip


def _kernel_probe_and_refusal(session: nox.Session, series: str, abi: int, tmp: Path) -> None:
    """cvg-probe proves the ABI the kernel must have and every filesystem right of it
    (make_char with a real device); cvg-run refuses a TCP policy below ABI 4 unless
    --allow-degraded."""
    bindir = Path(session.bin)
    (tmp / "tcp.yaml").write_text(TCP_POLICY)
    script = (
        f"{bindir}/cvg-probe --no-cache >{tmp}/probe.json; "
        f"{bindir}/cvg-run -p {tmp}/tcp.yaml -- /bin/true 2>/dev/null; echo strict=$?; "
        f"{bindir}/cvg-run --allow-degraded -p {tmp}/tcp.yaml -- /bin/true 2>/dev/null;"
        " echo degraded=$?"
    )
    out = _in_kernel(session, series, "sh", "-c", script, writable=(str(tmp),))
    facts = json.loads((tmp / "probe.json").read_text())
    features = {f["name"]: f for f in facts["features"]}
    wrong = [] if facts["landlock_abi"] == abi else [f"landlock_abi {facts['landlock_abi']}"]
    for name, f in features.items():
        if name.startswith("landlock.fs.") and f["proven"] != (f["abi"] <= abi):
            wrong.append(f"{name} proven={f['proven']} ({f['error']})")
    strict = 125 if abi < 4 else 0
    if f"strict={strict}" not in out or "degraded=0" not in out:
        wrong.append(f"cvg-run with a tcp_connect policy: {out.strip()[-300:]}")
    proven = sorted(n for n, f in features.items() if f["proven"])
    took = [line for line in out.splitlines() if line.startswith("kernel-run:")][-1:]
    session.log(f"{series}: {facts['kernel']}, Landlock ABI {facts['landlock_abi']}, "
                f"{len(proven)}/{len(features)} features proven; {' '.join(took)}")  # fmt: skip
    if wrong:
        session.error(f"{series}: " + "; ".join(wrong))


def _kernel_escapes(session: nox.Session, series: str, abi: int, out: Path) -> list[str]:
    """The escaped cells of a real-kernel escape run, but those KERNEL_DEGRADED
    names for the kernel's ABI."""
    data = json.loads((out / "results.json").read_text())
    bad = []
    for name, a in data["attacks"].items():
        for cell, c in a["cells"].items():
            if c["outcome"] == "escaped" and not abi < KERNEL_DEGRADED.get(name, 0):
                bad.append(f"{cell} {name}: {c['evidence'][:200]}")
            elif c["outcome"] == "escaped":
                session.log(f"{cell} {name}: escaped through the degraded run (ABI {abi})")
    return bad


@nox.session(python="3.11")
def kernels(session: nox.Session) -> None:
    """Opt-in, not in the default list (under qemu's software emulation, about an
    hour and a half per kernel): cvg on real Debian kernels, 6.1 (Landlock ABI 2) and 6.12
    (ABI 6), booted by tools/kernel-run, with CI=true in the guest (a skip passes only
    when the kernel lacks the feature). On each: cvg-probe must report the kernel's
    ABI and prove its filesystem rights; cvg-run must refuse a TCP policy below ABI 4
    unless --allow-degraded; the kernel-facing tests; 100 attacks of the escape matrix
    as root and unprivileged, written to escape/results/linux-X.Y/ (cells
    IDENTITY/linux-X.Y), where only what a degraded run lets through below the
    kernel's ABI may escape. `-- --attacks=N` runs N attacks, `-- --full` every one
    (hours); `-- 6.1` one kernel. Installs qemu, busybox-static and strace (apt, as
    root). Needs root. See docs/kernels.md."""
    _apt_install(session, KERNEL_PROGRAMS)
    _sync(session, "--all-packages")
    # The guest reads this machine's /etc/passwd and cannot add to it.
    session.run("python", "-c", "import cvg_testing; cvg_testing.ensure_unpriv_user()")
    args = list(session.posargs)
    full = "--full" in args
    count = next((int(a.split("=", 1)[1]) for a in args if a.startswith("--attacks=")),
                 KERNEL_ATTACKS)  # fmt: skip
    series_list = [s for s in args if s in KERNELS] or list(KERNELS)
    py = str(Path(session.bin) / "python")
    failed: list[str] = []
    for series in series_list:
        abi = KERNELS[series]
        session.run("python", "tools/kernel-run", "--kernel", series, "--prepare", external=True)
        tmp = Path(session.create_tmp()).resolve() / f"linux-{series}"
        tmp.mkdir(parents=True, exist_ok=True)
        _kernel_probe_and_refusal(session, series, abi, tmp)
        # pytest's status goes to a file: a failing test must not stop the other steps.
        tests = " ".join(KERNEL_TESTS)
        (tmp / "tests").unlink(missing_ok=True)
        session.run(
            "python", "tools/kernel-run", "--kernel", series, *GUEST_ENV, f"--writable={tmp}",
            "--", "sh", "-c",
            f"{py} -m pytest -p no:cacheprovider -q -rs {tests}; echo $? >{tmp}/tests",
            external=True,
        )  # fmt: skip
        if (tmp / "tests").read_text().strip() != "0":
            failed.append(f"{series}: kernel-facing tests failed (above)")
        out = ROOT / "escape" / "results" / f"linux-{series}"
        out.mkdir(parents=True, exist_ok=True)
        (out / "results.json").unlink(missing_ok=True)  # a run that dies must not pass
        only = [] if full else ["--only", ",".join(_kernel_attacks(count))]
        session.run(
            "python", "tools/kernel-run", "--kernel", series, *GUEST_ENV, f"--writable={out}", "--",
            py, "escape/run.py", "--cell", f"linux-{series}", "--out", str(out), "--jobs", "2",
            "--hard-timeout", "300", *only, external=True, success_codes=[0, 1],
        )  # fmt: skip
        failed += _kernel_escapes(session, series, abi, out)
    if failed:
        session.error("\n".join(failed))
