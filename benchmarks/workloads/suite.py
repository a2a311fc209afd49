"""The false-denial suite: benign real programs under hand-written and generated policies.

    uv run python benchmarks/workloads/suite.py [--only NAME]... [--syscalls MODE]
                                                 [--output PATH] [--keep DIR]

Each workload is a directory here holding ``run.sh`` (what the tool does, given the
input ``A`` or ``B`` as its argument; the two differ as real use does: other files,
other options, other sub-commands), the files it works on, and ``policy.yaml``, its
hand-written least-privilege policy. A workload with a ``client.py`` is a stdio server
(``server.py``) that its client drives from outside the sandbox; ``run.sh`` is then the
server's command.

Every run starts in a fresh copy of the workload directory (a new path each time, as
another checkout of the same project would have), with ``HOME`` a private directory
and ``TMPDIR`` a fresh one. For each workload:

  bare      the command, unconfined, on A and on B: the reference results;
  hand-B    cvg-run with policy.yaml on B;  (hand-A on A too, as a check)
  learn     cvg-observe on A, then cvg-generate | cvg-validate: the generated policy;
  gen-A     cvg-run with the generated policy on A (another copy: the same input);
  gen-B     cvg-run with the generated policy on B.

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
import itertools
import json
import math
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import results_file  # noqa: E402

TIMEOUT = 300
LABELS = ("hand-A", "hand-B", "gen-A", "gen-B")
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
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if not found:
        raise SystemExit(f"suite: {name} is not installed next to {sys.executable} nor on PATH")
    return found


def wilson(failures: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score interval for a proportion, 95% by default."""
    if n == 0:
        return (0.0, 1.0)
    p = failures / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


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
    def __init__(self, root: Path, syscalls: str | None, base_env: dict[str, str]) -> None:
        self.root = root
        self.syscalls = syscalls
        self.env = base_env
        self.count = 0
        self.cvg_run = tool("cvg-run")
        self.cvg_observe = tool("cvg-observe")
        self.cvg_generate = tool("cvg-generate")
        self.cvg_validate = tool("cvg-validate")

    def fresh(self, workload: Path, label: str) -> tuple[Path, dict[str, str]]:
        """A new copy of the workload directory, and an environment with a fresh TMPDIR."""
        self.count += 1
        run_dir = self.root / f"{self.count:03d}-{workload.name}-{label}"
        work = run_dir / "work"
        shutil.copytree(workload, work, ignore=shutil.ignore_patterns("__pycache__"))
        tmp = run_dir / "tmp"
        tmp.mkdir()
        return work, dict(self.env, TMPDIR=str(tmp))

    def run(self, workload: Path, label: str, wrap: list[str], input_: str) -> Outcome:
        work, env = self.fresh(workload, label)
        client = work / "client.py"
        server = ["/bin/sh", "run.sh", input_]
        if client.exists():
            # The client stays outside the sandbox and drives the confined server.
            cmd = [sys.executable, str(client), input_, "--", *wrap, *server]
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
                timeout=TIMEOUT,
            )
            status, out, err = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired as e:
            status, out, err = -9, e.stdout or b"", (e.stderr or b"") + b"\nsuite: timed out"
        seconds = time.monotonic() - t0
        return Outcome(status, out.decode(errors="replace"), err.decode(errors="replace"), seconds)

    def learn(self, workload: Path, out_dir: Path) -> tuple[Path | None, str, Outcome]:
        """Observe the workload on A and generate a policy from it."""
        obs = out_dir / f"{workload.name}.observation.json"
        observed = self.run(workload, "observe-A", [self.cvg_observe, "-o", str(obs), "--"], "A")
        if not obs.exists():
            return None, f"cvg-observe wrote no observation (exit {observed.status})", observed
        gen_cmd = [self.cvg_generate, "-q", str(obs)]
        if self.syscalls:
            gen_cmd += ["--syscalls", self.syscalls]
        gen = subprocess.run(gen_cmd, capture_output=True, env=self.env)
        if gen.returncode != 0:
            return None, "cvg-generate: " + gen.stderr.decode(errors="replace").strip(), observed
        policy = out_dir / f"{workload.name}.generated.yaml"
        val = subprocess.run(
            [self.cvg_validate, "-o", str(policy), "-"],
            input=gen.stdout,
            capture_output=True,
            env=self.env,
        )
        if val.returncode != 0 or not policy.exists():
            return None, "cvg-validate: " + val.stderr.decode(errors="replace").strip(), observed
        return policy, "", observed


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


def judge(suite: Suite, wl: Path) -> dict[str, Any]:
    """Every run of one workload, and which of them were false denials."""
    hand_policy = wl / "policy.yaml"
    hand = yaml.safe_load(hand_policy.read_text())
    bare = {i: suite.run(wl, f"bare-{i}", [], i) for i in ("A", "B")}
    entry: dict[str, Any] = {"bare": {i: o.brief() for i, o in bare.items()}}
    for i, o in bare.items():
        if o.status != 0:
            entry["error"] = f"bare run on {i} exited {o.status}: {o.stderr.strip()[-300:]}"
    runs: dict[str, Outcome] = {}
    wrap_hand = [suite.cvg_run, "-p", str(hand_policy), "--"]
    runs["hand-A"] = suite.run(wl, "hand-A", wrap_hand, "A")
    runs["hand-B"] = suite.run(wl, "hand-B", wrap_hand, "B")
    gen_policy, gen_error, observed = suite.learn(wl, suite.root)
    entry["observe"] = observed.brief()
    if gen_policy is None:
        entry["generate_error"] = gen_error
    else:
        generated = yaml.safe_load(gen_policy.read_text())
        entry["overgrants"] = overgrants(generated, hand)
        entry["generated_rules"] = {
            k: len(v) for k, v in (generated.get("filesystem") or {}).items()
        }
        wrap_gen = [suite.cvg_run, "-p", str(gen_policy), "--"]
        runs["gen-A"] = suite.run(wl, "gen-A", wrap_gen, "A")
        runs["gen-B"] = suite.run(wl, "gen-B", wrap_gen, "B")
    verdicts: dict[str, Any] = {}
    for label in LABELS:
        ref = bare[label[-1]]
        if label not in runs:
            verdicts[label] = {"denied": True, "why": "no generated policy"}
            continue
        o = runs[label]
        same = o.status == ref.status and o.stdout == ref.stdout
        verdicts[label] = {"denied": not same, **o.brief()}
        if not same:
            verdicts[label]["cause"] = cause(o, ref)
            verdicts[label]["stdout_diff"] = {
                "bare": ref.stdout[-300:],
                "confined": o.stdout[-300:],
            }
        mark = "ok" if same else "FALSE DENIAL"
        print(f"suite:   {label}: {mark} (exit {o.status})", file=sys.stderr)
    entry["verdicts"] = verdicts
    return entry


def run_suite(chosen: list[Path], syscalls: str | None, root: Path) -> dict[str, Any]:
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
    suite = Suite(root, syscalls, base_env)
    per: dict[str, Any] = {}
    for wl in chosen:
        print(f"suite: {wl.name}", file=sys.stderr)
        per[wl.name] = judge(suite, wl)

    valid = [n for n, e in per.items() if "error" not in e]
    rates = {
        label: rate(sum(per[n]["verdicts"][label]["denied"] for n in valid), len(valid))
        for label in LABELS
    }
    return {
        "host": socket.gethostname(),
        "kernel": platform.release(),
        "arch": platform.machine(),
        "euid": os.geteuid(),
        "measured_at": started.isoformat(timespec="seconds"),
        "duration_s": round(time.monotonic() - t_start, 1),
        "syscalls_mode": syscalls or "default (deny list)",
        "cvg_versions": versions(),
        "programs": program_versions(),
        "workloads": sorted(per),
        "invalid_workloads": {n: per[n]["error"] for n in per if n not in valid},
        "rates": rates,
        "overgrants": sum(len(per[n].get("overgrants", [])) for n in valid),
        "targets": {
            "hand-B": {"limit": 0.0, "met": rates["hand-B"]["false_denials"] == 0},
            "gen-A": {"limit": 0.0, "met": rates["gen-A"]["false_denials"] == 0},
            "gen-B": {"limit": 0.10, "met": (rates["gen-B"]["rate"] or 0) <= 0.10},
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
    args = parser.parse_args(argv)
    key = "falsedenial" + (f"-{args.syscalls}" if args.syscalls else "")
    chosen = workloads(args.only)
    with tempfile.TemporaryDirectory(prefix="cvg-falsedenial-") as tmp_name:
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            root = Path(tempfile.mkdtemp(prefix="run-", dir=args.keep))
        else:
            root = Path(tmp_name)
        entry = run_suite(chosen, args.syscalls, root)
        if args.keep:
            (root / "results.json").write_text(json.dumps(entry, indent=2) + "\n")
            print(f"suite: runs kept in {root}", file=sys.stderr)
    for label, r in entry["rates"].items():
        print(
            f"{label}: {r['false_denials']}/{r['runs']} false denials "
            f"(Wilson 95% {r['wilson95'][0]:.2f}-{r['wilson95'][1]:.2f})"
        )
    print(f"overgrants in generated policies: {entry['overgrants']}")
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
