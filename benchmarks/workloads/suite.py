"""The false-denial suite: benign real programs under hand-written and generated policies.

    uv run python benchmarks/workloads/suite.py [--only NAME]... [--syscalls MODE]
                                                 [--output PATH] [--keep DIR]
                                                 [--gap SECONDS] [--jobs N]

Each workload is a directory here holding ``run.sh`` (what the tool does, given the
input ``A`` or ``B`` as its argument; the two differ as real use does: other files,
other options, other sub-commands), the files it works on, and ``policy.yaml``, its
hand-written least-privilege policy. A workload with a ``calls.json`` is a stdio MCP
server: ``run.sh`` is its command, and mcp_client.py drives it with the MCP SDK's client
from outside the sandbox through the sessions calls.json lists, the one on B idling
``--gap`` seconds in the middle.

Every run starts in a fresh copy of the workload directory (a new path each time, as
another checkout of the same project would have), with ``HOME`` a private directory
and ``TMPDIR`` a fresh one. For each workload:

  bare      the command, unconfined, on A and on B: the reference results;
  hand-B    cvg-run with policy.yaml on B;  (hand-A on A too, as a check)
  learn     cvg-observe on A, then cvg-generate | cvg-validate: the generated policy;
  gen-A     cvg-run with the generated policy on A (another copy: the same input);
  gen-B     cvg-run with the generated policy on B;
  hand-C, hand-D, and the learning curve, for a workload with inputs C and D too
  (``# inputs: A B C D`` in run.sh, or sessions C and D): cvg-observe on B and C, then
            cvg-generate given A; A and B; A, B and C, each policy run on D.

Each false denial of a generated policy is run again, traced and without the gap, and
classed (classify.py: exec, output-dir, input-dir, wall-clock, memory, proc-self,
resolver, env, other).

A run is a false denial when its exit status or its stdout differs from bare's on the
same input (each run.sh prints only what is the same from run to run). The rates over
the workloads come with Wilson 95% intervals. Overgrants in each generated policy are
counted: write on a whole system tree (``/``, ``/usr``, ``/etc``, ``/var``, ``/tmp``,
...) or on ``${HOME}``, and TCP ports granted that the hand-written policy does not need.

``--syscalls allowlist`` generates with ``cvg-generate --syscalls allowlist`` (a
seccomp allow list learned from the observation instead of the default deny list).
Results go under the key ``"falsedenial"`` (or ``"falsedenial-<mode>"``) of
``benchmarks/results/<host>.json``.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import itertools
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml

from cvg_testing import stats

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import results_file  # noqa: E402
from classify import CLASSES, classify, env_missing  # noqa: E402
from executables import beside_python  # noqa: E402

TIMEOUT = 300
LABELS = ("hand-A", "hand-B", "gen-A", "gen-B")
GAP = 300.0  # the idle gap inside an MCP session on B, in seconds
CURVE = (1, 2, 3)  # learn from A; A and B; A, B and C; run on the held-out D
SERVERS_PLACEHOLDER = "@SERVERS@"
# Write on any of these as a whole is an overgrant: the tool could rewrite the system,
# plant files for other programs, or touch every user file.
BROAD_WRITE = {
    "/",
    "/usr",
    "/etc",
    "/var",
    "/tmp",
    "/var/tmp",
    "/home",
    "/root",
    "/opt",
    "/srv",
    "/boot",
    "/bin",
    "/sbin",
    "/lib",
    "/lib64",
    "/dev",
    "/proc",
    "/sys",
    "/run",
    "${HOME}",
}


def tool(name: str) -> str:
    found = beside_python(name)
    if not found:
        raise SystemExit(f"suite: {name} is not installed next to {sys.executable} nor on PATH")
    return found


def wilson(failures: int, n: int) -> tuple[float, float]:
    """The Wilson score interval for a proportion, 95%."""
    return stats.wilson(failures, n, 1.959964)


def rate(failures: int, n: int) -> dict[str, Any]:
    low, high = wilson(failures, n)
    return {
        "false_denials": failures,
        "runs": n,
        "rate": round(failures / n, 4) if n else None,
        "wilson95": [round(low, 4), round(high, 4)],
    }


@dataclass
class Outcome:
    status: int
    stdout: str
    stderr: str
    seconds: float

    def brief(self) -> dict[str, Any]:
        tail = [ln for ln in self.stderr.strip().splitlines() if ln.strip()][-3:]
        return {"status": self.status, "seconds": round(self.seconds, 2), "stderr_tail": tail}


class Suite:
    def __init__(
        self,
        root: Path,
        syscalls: str | None,
        base_env: dict[str, str],
        gap: float = GAP,
        servers: Path | None = None,
    ) -> None:
        self.root = root
        self.syscalls = syscalls
        self.env = base_env
        self.gap = gap
        self.servers = servers
        self.count = 0
        self.lock = threading.Lock()
        self.cvg_run = tool("cvg-run")
        self.cvg_observe = tool("cvg-observe")
        self.cvg_generate = tool("cvg-generate")
        self.cvg_validate = tool("cvg-validate")

    def fresh(self, workload: Path, label: str) -> tuple[Path, dict[str, str]]:
        """A new copy of the workload directory, and an environment with a fresh TMPDIR."""
        with self.lock:
            self.count += 1
            run_dir = self.root / f"{self.count:03d}-{workload.name}-{label}"
        work = run_dir / "work"
        shutil.copytree(workload, work, ignore=shutil.ignore_patterns("__pycache__"))
        tmp = run_dir / "tmp"
        tmp.mkdir()
        env = dict(self.env, TMPDIR=str(tmp))
        run_sh = work / "run.sh"
        text = run_sh.read_text()
        if SERVERS_PLACEHOLDER in text:
            # A real host's configuration names where the server is installed.
            if self.servers is None:
                raise SystemExit(f"suite: {workload.name} needs the MCP servers installed")
            run_sh.write_text(text.replace(SERVERS_PLACEHOLDER, str(self.servers)))
        setup = work / "setup.sh"
        if setup.exists():
            # What the user has before the session (a repository, a database), made
            # outside the sandbox.
            subprocess.run(["/bin/sh", "setup.sh"], cwd=work, env=env, check=True,
                           stdin=subprocess.DEVNULL, capture_output=True)  # fmt: skip
        return work, env

    def run(
        self, workload: Path, label: str, wrap: list[str], input_: str, gap: float = 0.0
    ) -> Outcome:
        work, env = self.fresh(workload, label)
        calls = work / "calls.json"
        server = ["/bin/sh", "run.sh", input_]
        if calls.exists():
            # The client stays outside the sandbox and drives the confined server.
            cmd = [sys.executable, str(HERE / "mcp_client.py"), str(calls), input_,
                   "--gap", str(gap), "--", *wrap, *server]  # fmt: skip
        else:
            cmd = [*wrap, *server]
        t0 = time.monotonic()
        try:
            p = subprocess.run(
                cmd,
                cwd=work,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=TIMEOUT + gap,
            )
            status, out, err = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired as e:
            status, out, err = -9, e.stdout or b"", (e.stderr or b"") + b"\nsuite: timed out"
        seconds = time.monotonic() - t0
        return Outcome(status, out.decode(errors="replace"), err.decode(errors="replace"), seconds)

    def observe(self, workload: Path, input_: str) -> tuple[Path | None, Outcome]:
        """Observe the workload on one input: the observation file, if one was written."""
        obs = self.root / f"{workload.name}.observation-{input_}.json"
        wrap = [self.cvg_observe, "-o", str(obs), "--"]
        observed = self.run(workload, f"observe-{input_}", wrap, input_)
        return (obs if obs.exists() else None), observed

    def generate(self, observations: list[Path], stem: Path) -> tuple[Path | None, str]:
        """cvg-generate from the observations, then cvg-validate: the policy file."""
        gen_cmd = [self.cvg_generate, "-q", *map(str, observations)]
        if self.syscalls:
            gen_cmd += ["--syscalls", self.syscalls]
        gen = subprocess.run(gen_cmd, capture_output=True, env=self.env)
        if gen.returncode != 0:
            return None, "cvg-generate: " + gen.stderr.decode(errors="replace").strip()
        policy = stem.with_name(stem.name + ".generated.yaml")
        val = subprocess.run(
            [self.cvg_validate, "-o", str(policy), "-"],
            input=gen.stdout,
            capture_output=True,
            env=self.env,
        )
        if val.returncode != 0 or not policy.exists():
            return None, "cvg-validate: " + val.stderr.decode(errors="replace").strip()
        return policy, ""


def cause(o: Outcome, ref: Outcome) -> str:
    """One line on why a run differs from bare: the first refusal it printed, else the
    first line of output that differs."""
    for line in o.stderr.splitlines():
        if "denied" in line.lower() or "not permitted" in line.lower():
            return line.strip()[:160]
    for want, got in itertools.zip_longest(ref.stdout.splitlines(), o.stdout.splitlines()):
        if want != got:
            return f"printed {got!r} where bare printed {want!r}"[:160]
    return f"exit {o.status} where bare exited {ref.status}"


def overgrants(generated: dict[str, Any], hand: dict[str, Any]) -> list[str]:
    found = []
    fs = generated.get("filesystem") or {}
    for path in fs.get("write") or []:
        if path.rstrip("/") in BROAD_WRITE or path == "/":
            found.append(f"write {path}")
    gnet = generated.get("network") or {}
    hnet = hand.get("network") or {}
    for key in ("tcp_connect", "tcp_bind"):
        extra = sorted(set(gnet.get(key) or []) - set(hnet.get(key) or []))
        found += [f"{key} {port} (unused)" for port in extra]
    return found


def versions() -> dict[str, str]:
    found = {}
    for dist in ("cvg-run", "cvg-observe", "cvg-generate", "cvg-policy"):
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            found[dist] = "not installed"
    return found


def program_versions() -> dict[str, str]:
    checks = {
        "git": ["git", "--version"],
        "sqlite3": ["sqlite3", "--version"],
        "gcc": ["gcc", "--version"],
        "jq": ["jq", "--version"],
        "openssl": ["openssl", "version"],
        "node": ["node", "--version"],
        "curl": ["curl", "--version"],
        "zip": ["zip", "-v"],
        "ssh-keygen": ["ssh", "-V"],
        "python3": ["/usr/bin/python3", "--version"],
    }
    found = {}
    for name, argv in checks.items():
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=10)
            text = (p.stdout or p.stderr).strip().splitlines()
            found[name] = text[1 if name == "zip" and len(text) > 1 else 0][:80] if text else "?"
        except (OSError, subprocess.TimeoutExpired):
            found[name] = "not installed"
    return found


def workloads(only: list[str] | None) -> list[Path]:
    found = sorted(p for p in HERE.iterdir() if (p / "run.sh").exists())
    if only:
        names = {p.name for p in found}
        unknown = sorted(set(only) - names)
        if unknown:
            raise SystemExit(f"suite: no workload {', '.join(unknown)} in {HERE}")
        found = [p for p in found if p.name in only]
    return found


def inputs(wl: Path) -> tuple[str, ...]:
    """The inputs a workload takes: its calls.json's sessions, else run.sh's
    ``# inputs:`` line, else A and B."""
    calls = wl / "calls.json"
    if calls.exists():
        return tuple(sorted(json.loads(calls.read_text())["calls"]))
    for line in (wl / "run.sh").read_text().splitlines():
        if line.startswith("# inputs:"):
            return tuple(line.split(":", 1)[1].split())
    return ("A", "B")


def given_env(wl: Path) -> set[str]:
    """The variables the host sets for an MCP server (calls.json's ``env``)."""
    calls = wl / "calls.json"
    return set(json.loads(calls.read_text()).get("env", {})) if calls.exists() else set()


def verdict(label: str, o: Outcome, ref: Outcome) -> dict[str, Any]:
    same = o.status == ref.status and o.stdout == ref.stdout
    found: dict[str, Any] = {"denied": not same, **o.brief()}
    if not same:
        found["cause"] = cause(o, ref)
        found["stdout_diff"] = {"bare": ref.stdout[-300:], "confined": o.stdout[-300:]}
    mark = "ok" if same else "FALSE DENIAL"
    print(f"suite:   {label}: {mark} (exit {o.status})", file=sys.stderr)
    return found


def failure_class(
    suite: Suite, wl: Path, policy: Path, input_: str, o: Outcome, ref: Outcome, gap: float
) -> str:
    """Run a false denial again, traced and without its idle gap, and classify it."""
    hand = yaml.safe_load((wl / "policy.yaml").read_text())
    generated = yaml.safe_load(policy.read_text())
    env = env_missing(hand, generated, given_env(wl))
    with suite.lock:
        suite.count += 1
        record = suite.root / f"trace-{suite.count:03d}.json"
    wrap = [suite.cvg_run, "--trace", "--record", str(record), "-p", str(policy), "--"]
    again = suite.run(wl, f"trace-{input_}", wrap, input_)
    rec = json.loads(record.read_text()) if record.exists() else None
    passes = (again.status == ref.status and again.stdout == ref.stdout) if gap else None
    # What the tool said, without the traced cvg-run's own list of every denial.
    said = [ln for ln in (again.stderr + o.stderr).splitlines() if not ln.startswith("cvg-run:")]
    output = again.stdout + o.stdout + "\n".join(said)
    return classify(rec, o.status, output, env=env, passes_without_gap=passes)


def learning_curve(suite: Suite, wl: Path, first: Path, bare_d: Outcome) -> dict[str, Any]:
    """Learn from A, then A and B, then A, B and C; each policy runs the held-out D."""
    observations = [first]
    for input_ in ("B", "C"):
        obs, observed = suite.observe(wl, input_)
        if obs is None:
            return {"error": f"cvg-observe on {input_} wrote no observation ({observed.status})"}
        observations.append(obs)
    found: dict[str, Any] = {}
    for k in CURVE:
        stem = suite.root / f"{wl.name}-from-{k}"
        policy, error = suite.generate(observations[:k], stem)
        label = f"curve-{k}"
        if policy is None:
            found[label] = {"denied": True, "why": error, "class": "other"}
            continue
        o = suite.run(wl, f"{label}-D", [suite.cvg_run, "-p", str(policy), "--"], "D")
        found[label] = verdict(f"{wl.name} {label}", o, bare_d)
        if found[label]["denied"]:
            found[label]["class"] = failure_class(suite, wl, policy, "D", o, bare_d, 0.0)
    return found


def judge(suite: Suite, wl: Path) -> dict[str, Any]:
    """Every run of one workload, and which of them were false denials."""
    hand_policy = wl / "policy.yaml"
    given = inputs(wl)
    mcp = (wl / "calls.json").exists()
    gap = {i: (suite.gap if mcp and i == "B" else 0.0) for i in given}
    # A session with an idle gap waits, it does not work: the gapped sessions (bare, hand
    # and generated on B) run beside the rest, each in its own fresh copy, so a workload
    # costs one gap, not three.
    idle = ThreadPoolExecutor(max_workers=3)

    def run(label: str, wrap: list[str], i: str) -> Future[Outcome]:
        if gap[i]:
            return idle.submit(suite.run, wl, label, wrap, i, gap[i])
        done: Future[Outcome] = Future()
        done.set_result(suite.run(wl, label, wrap, i))
        return done

    try:
        return _judge(suite, wl, hand_policy, given, gap, run, mcp)
    finally:
        idle.shutdown(wait=True)


def _judge(
    suite: Suite,
    wl: Path,
    hand_policy: Path,
    given: list[str],
    gap: dict[str, float],
    run: Callable[[str, list[str], str], Future[Outcome]],
    mcp: bool,
) -> dict[str, Any]:
    hand = yaml.safe_load(hand_policy.read_text())
    started = {i: run(f"bare-{i}", [], i) for i in given}
    wrap_hand = [suite.cvg_run, "-p", str(hand_policy), "--"]
    hand_runs = {i: run(f"hand-{i}", wrap_hand, i) for i in given}
    bare = {i: f.result() for i, f in started.items()}
    entry: dict[str, Any] = {"inputs": list(given), "bare": {i: o.brief() for i, o in bare.items()}}
    if mcp:
        entry["gap_s"] = suite.gap
    for i, o in bare.items():
        if o.status != 0:
            entry["error"] = f"bare run on {i} exited {o.status}: {o.stderr.strip()[-300:]}"
    verdicts: dict[str, Any] = {}
    first, observed = suite.observe(wl, "A")
    entry["observe"] = observed.brief()
    gen_policy, gen_error = (
        suite.generate([first], suite.root / wl.name)
        if first
        else (None, f"cvg-observe wrote no observation (exit {observed.status})")
    )
    if gen_policy is None:
        entry["generate_error"] = gen_error
        for label in ("gen-A", "gen-B"):
            verdicts[label] = {"denied": True, "why": "no generated policy", "class": "other"}
    else:
        generated = yaml.safe_load(gen_policy.read_text())
        entry["overgrants"] = overgrants(generated, hand)
        entry["generated_rules"] = {
            k: len(v) for k, v in (generated.get("filesystem") or {}).items()
        }
        wrap_gen = [suite.cvg_run, "-p", str(gen_policy), "--"]
        gen_runs = {i: run(f"gen-{i}", wrap_gen, i) for i in ("A", "B")}
        for i in ("A", "B"):
            label = f"gen-{i}"
            o = gen_runs[i].result()
            verdicts[label] = verdict(f"{wl.name} {label}", o, bare[i])
            if verdicts[label]["denied"]:
                verdicts[label]["class"] = failure_class(
                    suite, wl, gen_policy, i, o, bare[i], gap[i]
                )
        if first and "D" in given:
            entry["curve"] = learning_curve(suite, wl, first, bare["D"])
    for i, f in hand_runs.items():
        label = f"hand-{i}"
        verdicts[label] = verdict(f"{wl.name} {label}", f.result(), bare[i])
    entry["verdicts"] = dict(sorted(verdicts.items(), key=lambda kv: _LABEL_ORDER.get(kv[0], 99)))
    return entry


_LABEL_ORDER = {"hand-A": 0, "hand-B": 1, "hand-C": 2, "hand-D": 3, "gen-A": 4, "gen-B": 5}


def class_counts(verdicts: list[dict[str, Any]]) -> dict[str, int]:
    counts = dict.fromkeys(CLASSES, 0)
    for v in verdicts:
        if v.get("denied"):
            counts[v.get("class", "other")] += 1
    return counts


def summary(per: dict[str, Any], valid: list[str]) -> dict[str, Any]:
    """Rates over the workloads: each label, by class of failure, and the learning curve."""
    rates = {
        label: rate(sum(per[n]["verdicts"][label]["denied"] for n in valid), len(valid))
        for label in LABELS
    }
    on_curve = [n for n in valid if "verdicts" in per[n] and "curve-1" in per[n].get("curve", {})]
    curve = {
        str(k): rate(sum(per[n]["curve"][f"curve-{k}"]["denied"] for n in on_curve), len(on_curve))
        for k in CURVE
    }
    return {
        "rates": rates,
        "classes": {
            label: class_counts([per[n]["verdicts"][label] for n in valid])
            for label in ("gen-A", "gen-B")
        },
        "curve": {
            "held_out": "D",
            "workloads": on_curve,
            "rates": curve,
            "classes": {
                str(k): class_counts([per[n]["curve"][f"curve-{k}"] for n in on_curve])
                for k in CURVE
            },
        },
        "hand_denials": sorted(
            f"{n} {label}"
            for n in per
            for label, v in per[n]["verdicts"].items()
            if label.startswith("hand-") and v["denied"]
        ),
    }


def run_all(suite: Suite, chosen: list[Path], jobs: int) -> dict[str, Any]:
    """Judge every workload: the MCP sessions (idle most of their time) all at once,
    the others ``jobs`` at a time beside them."""
    mcp = [wl for wl in chosen if (wl / "calls.json").exists()]
    plain = [wl for wl in chosen if wl not in mcp]
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(mcp) + jobs) as pool:
        futures = {wl.name: pool.submit(judge, suite, wl) for wl in mcp + plain}
        return {name: futures[name].result() for name in sorted(futures)}


def install_servers() -> Path:
    p = subprocess.run(
        [sys.executable, str(HERE / "servers" / "install.py")], capture_output=True, text=True
    )
    if p.returncode != 0:
        raise SystemExit(p.stderr.strip() or "suite: installing the MCP servers failed")
    return Path(p.stdout.strip())


def run_suite(
    chosen: list[Path], syscalls: str | None, root: Path, gap: float = GAP, jobs: int = 2
) -> dict[str, Any]:
    """Run the chosen workloads with every run's files under ``root``; the results entry."""
    started = datetime.now(UTC)
    t_start = time.monotonic()
    home = root / "home"
    home.mkdir(exist_ok=True)
    base_env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "XDG_CACHE_HOME": str(root / "cache"),
        "XDG_STATE_HOME": str(root / "state"),
    }
    needs_servers = any(SERVERS_PLACEHOLDER in (wl / "run.sh").read_text() for wl in chosen)
    servers = install_servers() if needs_servers else None
    suite = Suite(root, syscalls, base_env, gap, servers)
    per = run_all(suite, chosen, jobs)
    valid = [n for n, e in per.items() if "error" not in e]
    found = summary(per, valid)
    rates = found["rates"]
    return {
        "host": socket.gethostname(),
        "kernel": platform.release(),
        "arch": platform.machine(),
        "euid": os.geteuid(),
        "measured_at": started.isoformat(timespec="seconds"),
        "duration_s": round(time.monotonic() - t_start, 1),
        "syscalls_mode": syscalls or "default (deny list)",
        "gap_s": gap,
        "cvg_versions": versions(),
        "programs": program_versions(),
        "workloads": sorted(per),
        "invalid_workloads": {n: per[n]["error"] for n in per if n not in valid},
        **found,
        "overgrants": sum(len(per[n].get("overgrants", [])) for n in valid),
        "targets": {
            "hand-B": {"limit": 0.0, "met": rates["hand-B"]["false_denials"] == 0},
            "gen-A": {"limit": 0.0, "met": rates["gen-A"]["false_denials"] == 0},
            "gen-B": {"limit": 0.05, "met": (rates["gen-B"]["rate"] or 0) <= 0.05},
        },
        "per_workload": per,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", help="only this workload (repeatable)")
    parser.add_argument(
        "--syscalls",
        choices=["allowlist"],
        help="generate with cvg-generate --syscalls MODE (default: its default)",
    )
    parser.add_argument("--output", type=Path, help="results file (default: per hostname)")
    parser.add_argument("--no-record", action="store_true", help="print only; write no results")
    parser.add_argument("--keep", type=Path, help="keep every run's directory and policy here")
    parser.add_argument(
        "--gap",
        type=float,
        default=GAP,
        help=f"idle seconds inside each MCP session on B (default {GAP:g})",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=2,
        help="workloads other than MCP servers run at once (default 2)",
    )
    args = parser.parse_args(argv)
    key = "falsedenial" + (f"-{args.syscalls}" if args.syscalls else "")
    chosen = workloads(args.only)
    with tempfile.TemporaryDirectory(prefix="cvg-falsedenial-") as tmp_name:
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            root = Path(tempfile.mkdtemp(prefix="run-", dir=args.keep))
        else:
            root = Path(tmp_name)
        entry = run_suite(chosen, args.syscalls, root, args.gap, args.jobs)
        if args.keep:
            (root / "results.json").write_text(json.dumps(entry, indent=2) + "\n")
            print(f"suite: runs kept in {root}", file=sys.stderr)
    for label, r in entry["rates"].items():
        print(
            f"{label}: {r['false_denials']}/{r['runs']} false denials "
            f"(Wilson 95% {r['wilson95'][0]:.2f}-{r['wilson95'][1]:.2f})"
        )
    for k, r in entry["curve"]["rates"].items():
        print(
            f"learned from {k} input(s), run on D: {r['false_denials']}/{r['runs']} false denials"
        )
    for label, counts in entry["classes"].items():
        print(f"{label} by class: " + ", ".join(f"{c} {n}" for c, n in counts.items() if n))
    print(f"overgrants in generated policies: {entry['overgrants']}")
    for denial in entry["hand_denials"]:
        print(f"hand-written policy denied: {denial}")
    for name, why in entry["invalid_workloads"].items():
        print(f"not counted: {name}: {why}")
    if args.no_record:
        return 0
    if args.only:
        print("suite: --only given: a partial run is not recorded", file=sys.stderr)
        return 0
    path = args.output or results_file.default_path()
    results_file.record(path, key, entry, who="suite")
    print(f"written to {path} under {key!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
