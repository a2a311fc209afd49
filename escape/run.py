"""The escape matrix runner: every attack, judged by external oracles only.

    uv run python escape/run.py [--matrix] [--only PATTERN] [--identity root|unpriv]
                                [--abi N] [--report-only] [--jobs N]

For each attack and identity it first runs the attack with no sandbox (the same
user, the same command, under a plain fork-exec-wait parent: support/passthru.py)
and counts the attack only if its oracle fires there ("proven"). Then it runs it
through the real `cvg-run -p POLICY -- PYTHON ATTACK.py NAME` at
each Landlock ABI of the cell (the native one, and with --matrix 4 and 6
through CVG_LANDLOCK_ABI_MAX: a simulation on a newer kernel).

Outcomes per cell: contained (the attack's attempted marker arrived and the oracle
stayed silent), escaped, documented-limit (the oracle fired, but only through a
limit docs/design.md documents), refused (cvg-run exited 125 before the tool
started), timed-out (the runner ended the run), not-attempted (the marker never
arrived), not-proven (the oracle did not fire even without a sandbox on this host).

Must run as root: it runs every attack as root and as the unprivileged user
(`cvgtest`, created if missing). Everything runs under one interpreter of the
runner's Python version that `cvgtest` can execute (probes.find_python), from a
staged, world-readable copy of the packages and of support/.

It exits 1 on any escape, runner error or not-attempted cell, and on what gates.py
finds against escape/results/results.json: a proof lost, an attack deleted, a
contained cell now refused, timed out or not attempted; 2 when --only matches nothing.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gates
import probes
import runtime
from cells import run_job, worker_init
from judges import outcome
from runtime import ABI_MATRIX, HERE, RESULTS_DIR, SUPPORT_DIR
from staging import ensure_unpriv_user, load_attacks, stage_python


def native_abi() -> int:
    r = runtime.libc.syscall(444, None, 0, 1)
    return max(int(r), 0)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--matrix", action="store_true", help="also ABI 4 and 6 (simulated)")
    p.add_argument(
        "--only", metavar="PATTERN", help="attack names matching this glob (comma-separated: any)"
    )
    p.add_argument("--identity", choices=("root", "unpriv"), action="append")
    p.add_argument(
        "--abi", type=int, action="append", help="ABI(s) to run (simulated below native)"
    )
    p.add_argument(
        "--report-only", action="store_true", help="regenerate the reports from results.json"
    )
    p.add_argument("--jobs", type=int, default=min(8, 2 * (os.cpu_count() or 2) + 2))
    p.add_argument("--out", default=str(RESULTS_DIR), help="where results.json and README.md go")
    p.add_argument("--no-write", action="store_true", help="do not write the results")
    p.add_argument(
        "--merge",
        action="store_true",
        help="replace only the attacks run now in the existing results.json",
    )
    p.add_argument(
        "--cell",
        metavar="NAME",
        help="name the cells IDENTITY/NAME (e.g. linux-6.1 for a real kernel in a virtual"
        " machine, tools/kernel-run): native ABI only, no comparison with the committed"
        " results (another kernel proves what it proves); a timed-out cell fails",
    )
    p.add_argument(
        "--hard-timeout",
        type=float,
        default=runtime.HARD_TIMEOUT,
        metavar="S",
        help=f"end a run after S seconds (default {runtime.HARD_TIMEOUT:.0f}); a virtual machine"
        " under software emulation needs more. With --cell a sandboxed run ended so is"
        " timed-out and fails",
    )
    opts = p.parse_args(argv)
    if opts.cell and (opts.matrix or opts.abi or opts.merge):
        p.error("--cell runs the native ABI alone, into its own --out")

    sys.path.insert(0, str(HERE))
    import report

    out_dir = Path(opts.out)
    if opts.report_only:
        data = json.loads((out_dir / "results.json").read_text())
        report.write_all(data, out_dir)
        return 0
    if os.geteuid() != 0:
        print(
            "run.py must run as root (it runs attacks as root and as an unprivileged user)",
            file=sys.stderr,
        )
        return 2
    attacks = load_attacks()
    registry = dict(attacks)
    if opts.only:
        chosen = {}
        for pat in opts.only.split(","):
            hits = {n: a for n, a in attacks.items() if fnmatch.fnmatch(n, pat) or pat in n}
            if not hits:
                print(f"run.py: --only pattern {pat!r} matches no attack", file=sys.stderr)
                return 2
            chosen.update(hits)
        attacks = chosen
    native = native_abi()
    abis = opts.abi or ([native, *ABI_MATRIX] if opts.matrix else [native])
    abis = sorted({min(x, native) for x in abis}, reverse=True)
    identities = opts.identity or ["root", "unpriv"]
    unpriv = ensure_unpriv_user()
    ids = {"root": (0, 0), "unpriv": (unpriv.pw_uid, unpriv.pw_gid)}

    def as_unpriv():
        os.setgroups([])
        os.setgid(unpriv.pw_gid)
        os.setuid(unpriv.pw_uid)

    # Set before the pool forks its workers, which read them from runtime.
    runtime.HARD_TIMEOUT = opts.hard_timeout
    runtime.PY = probes.find_python(as_unpriv)
    print(f"interpreter: {runtime.PY}", flush=True)
    # Under /tmp whatever TMPDIR says (nox sets a deep one): UNIX socket paths must
    # stay under 108 bytes, and the unprivileged user must be able to reach it.
    tmp = tempfile.mkdtemp(prefix="cvg-escape-", dir="/tmp")
    os.chmod(tmp, 0o755)
    pythonpath = stage_python(Path(tmp))
    # support/ too: the clone may sit in a home the unprivileged user cannot enter.
    support = Path(tmp) / "support"
    shutil.copytree(SUPPORT_DIR, support, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(["chmod", "-R", "a+rX", str(support)], check=True)
    t_start = time.monotonic()
    jobs = []
    for ident in identities:
        for name, a in attacks.items():
            meta = {
                "name": name,
                "module": a.module,
                "cls": a.cls,
                "oracle": a.oracle,
                "policy": a.policy,
                "limit": a.limit,
                "hold": a.hold,
                "extra": a.extra,
            }
            for abi in [None, *abis]:
                uid, gid = ids[ident]
                jobs.append(
                    {
                        "attack": meta,
                        "identity": ident,
                        "abi": abi,
                        "abi_sim": abi != native if abi is not None else False,
                        "uid": uid,
                        "gid": gid,
                        "tmp": tmp,
                        "pythonpath": pythonpath,
                        "support": str(support),
                    }
                )
    # Long-holding attacks first, so the pool drains evenly. Attacks whose oracle or
    # whose effect is system-wide (Shmem; renicing every process of the user, other
    # runs' sentinels included) run afterwards, one at a time, with nothing else.
    alone = [i for i, j in enumerate(jobs) if j["attack"]["extra"].get("alone")]
    order = sorted(
        (i for i in range(len(jobs)) if i not in alone), key=lambda i: -jobs[i]["attack"]["hold"]
    )
    ctx = multiprocessing.get_context("fork")
    results: dict[int, dict] = {}
    for idx, n in ((order, opts.jobs), (alone, 1)):
        if not idx:
            continue
        with ctx.Pool(n, initializer=worker_init, maxtasksperchild=20) as pool:
            for i, res in zip(idx, pool.imap(run_job, [jobs[i] for i in idx]), strict=True):
                results[i] = res
    elapsed = time.monotonic() - t_start

    per_attack: dict[str, dict] = {}
    for i, job in enumerate(jobs):
        a = job["attack"]
        entry = per_attack.setdefault(
            a["name"],
            {
                "class": a["cls"],
                "oracle": a["oracle"],
                "policy": a["policy"],
                "limit": a["limit"],
                "doc": attacks[a["name"]].doc,
                "module": a["module"],
                "baseline": {},
                "cells": {},
            },
        )
        if job["abi"] is None:
            entry["baseline"][job["identity"]] = results[i]
    committed = json.loads((RESULTS_DIR / "results.json").read_text())["attacks"]
    varies = {name for name, a in attacks.items() if "proof_varies" in a.extra}
    if not opts.cell:
        retry_proofs(jobs, results, per_attack, committed, identities, varies, ctx)
    shutil.rmtree(tmp, ignore_errors=True)
    failed, untested = [], []
    for i, job in enumerate(jobs):
        if job["abi"] is None:
            continue
        a = job["attack"]
        entry = per_attack[a["name"]]
        base = entry["baseline"][job["identity"]]
        res = results[i]
        verdict, why = outcome(base, res, a, job["abi"])
        cell = f"{job['identity']}/abi{job['abi']}{'-sim' if job['abi_sim'] else ''}"
        if opts.cell:
            cell = f"{job['identity']}/{opts.cell}"
        entry["cells"][cell] = {"outcome": verdict, "evidence": why, "status": res.get("status")}
        line = f"{verdict:17} {cell:16} {a['name']:45} {why[:110]}"
        print(line, flush=True)
        if os.environ.get("CVG_ESCAPE_DEBUG"):
            print(f"    baseline: {base['evidence']}", flush=True)
            for k in ("stderr", "trace"):
                if res.get(k):
                    print("    " + res[k].strip()[-300:].replace("\n", "\n    "), flush=True)
        if verdict == "escaped":
            failed.append((a["name"], cell, why, res.get("stderr", "")[-200:]))
        elif verdict == "not-attempted" or (opts.cell and verdict == "timed-out"):
            # A tool that started but never ran the attack tests nothing; nor, on a
            # real kernel with no committed cell to compare with, does a run ended
            # at --hard-timeout.
            untested.append(f"{verdict.upper()} {cell} {a['name']}: {why[:160]}")
    if opts.merge:
        old = json.loads((out_dir / "results.json").read_text())
        per_attack = {**old["attacks"], **per_attack}
        elapsed = old["elapsed_seconds"]
    data = report.build(per_attack, native=native, elapsed=elapsed, jobs=opts.jobs)
    data["python"] = {"path": runtime.PY, "version": platform_version(runtime.PY)}
    if not opts.no_write:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "results.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        report.write_all(data, out_dir)
    print(report.summary_text(data))
    print(f"{len(attacks)} attacks, {len(jobs)} runs in {elapsed:.0f} s")
    errors = [
        (jobs[i]["attack"]["name"], r["evidence"]) for i, r in results.items() if r.get("error")
    ]
    for name, why in errors:
        print(f"RUNNER ERROR {name}: {why}", file=sys.stderr)
    lost = untested + gates.varies_reasons({n: a.extra for n, a in registry.items()})
    if not opts.cell:
        lost += gates.lost_proofs(per_attack, committed, identities)
        lost += gates.deleted(set(registry), committed)
        lost += gates.untested_now(per_attack, committed)
    for line in lost:
        print(line)
    if failed:
        print(f"\n{len(failed)} ESCAPE(S) outside documented limits:")
        for name, cell, why, _err in failed:
            print(f"  {cell} {name}: {why}")
        return 1
    return 1 if errors or lost else 0


def retry_proofs(jobs, results, per_attack, committed, identities, varies, ctx) -> None:
    """Run the bare run of each `proof_varies` attack the committed results prove and
    this run did not, up to gates.PROOF_TRIES times in all, keeping the first that
    fires: such a proof may fail once, but not every time."""
    pending = gates.to_retry(per_attack, committed, identities, varies)
    if not pending:
        return
    with ctx.Pool(1, initializer=worker_init, maxtasksperchild=1) as pool:
        for name, ident in pending:
            i = next(
                k
                for k, j in enumerate(jobs)
                if j["abi"] is None and j["identity"] == ident and j["attack"]["name"] == name
            )
            for n in range(2, gates.PROOF_TRIES + 1):
                res = pool.apply(run_job, (jobs[i],))
                print(f"proof_varies {name} as {ident}: try {n}: {res['evidence'][:100]}")
                if res["fired"]:
                    results[i] = per_attack[name]["baseline"][ident] = res
                    break


def platform_version(py: str) -> str:
    r = subprocess.run([py, "-V"], capture_output=True, text=True)
    return (r.stdout or r.stderr).strip()


if __name__ == "__main__":
    sys.exit(main())
