"""Benchmark cvg-mcp: what an MCP run_sandboxed call costs next to the warm Python API.

    uv run python benchmarks/bench_mcp.py [--runs N] [--warmup N] [--calls N] [--output PATH]

Latency: ``run_sandboxed(policy, ["true"])`` through the official MCP SDK's stdio
client (a real ``ClientSession`` talking to a ``cvg-mcp`` process), against
``Sandbox(policy).run(["true"])`` in this process, both warm, on the same policy
(cvg-run's default policy, copied into a policy directory). The two are
interleaved: each round runs one of each, the order alternating, so load that
comes and goes hits both alike. The difference is taken per round and summarised
by its median.

Throughput: calls per second, for ``--calls`` calls of ``["true"]``
  - sequential: one stdio client, one call at a time;
  - 8 concurrent clients: eight streamable-HTTP sessions to one ``cvg-mcp --http``
    server, each making its share of calls one after another;
  - 8 concurrent calls on one stdio session (the SDK's client multiplexes them);
  - for reference, the warm API itself, sequential and from 8 threads.

Targets, recorded with ``met``: the call's p50 at most 3 ms, and at least 200 calls per
second by the best of the MCP ways (the reference rows do not count).

Results go under the key ``"mcp"`` of ``benchmarks/results/<hostname>.json``
(read, updated and replaced atomically under a lock; other keys untouched).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import results_file  # benchmarks/ is on sys.path when run as a script
import timing
from bench_run import summary_ms  # shared timing helpers
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from cvg_run import Sandbox
from cvg_run.planning import default_policy_bytes

KEY = "mcp"
TARGET_MS = 3.0
TARGET_CALLS = 200.0
CLIENTS = 8
SERVER = "import sys; from cvg_mcp.cli import main; sys.exit(main(sys.argv[1:]))"
DISTRIBUTIONS = ("cvg-mcp", "cvg-run", "mcp")
TOKEN = "bench-token"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def check(result: Any, where: str) -> None:
    sc = result.structuredContent or {}
    if result.isError or sc.get("status") != 0:
        raise SystemExit(f"bench_mcp: {where}: {result.content[0].text if result.content else sc}")


async def latency(session: ClientSession, box: Sandbox, rounds: int, warmup: int) -> dict[str, Any]:
    samples = timing.empty(["true"], ("mcp", "warm"))
    args = {"policy": "default", "argv": ["true"]}
    for slot in timing.slots({"true": ["true"]}, ("mcp", "warm"), warmup, rounds):
        if slot.config == "mcp":
            with timing.Stopwatch() as sw:
                res = await session.call_tool("run_sandboxed", args)
            check(res, f"round {slot.round}")
        else:
            with timing.Stopwatch() as sw:
                out = box.run(slot.argv)
            if out.status != 0:
                raise SystemExit(f"bench_mcp: warm round {slot.round}: status {out.status}")
        timing.keep(samples, slot, sw.ns)
    mcp_ns, warm_ns = samples["true"]["mcp"], samples["true"]["warm"]
    extra = sorted((m - w) / 1e6 for m, w in zip(mcp_ns, warm_ns, strict=True))
    return {
        "mcp": summary_ms(mcp_ns),
        "warm": summary_ms(warm_ns),
        "mcp_minus_warm_ms": {
            "median": round(statistics.median(extra), 3),
            "p95": round(results_file.percentile(extra, 95), 3),
        },
    }


async def sequential(session: ClientSession, calls: int) -> float:
    args = {"policy": "default", "argv": ["true"]}
    t0 = time.perf_counter()
    for _ in range(calls):
        check(await session.call_tool("run_sandboxed", args), "sequential")
    return calls / (time.perf_counter() - t0)


async def concurrent_one_session(session: ClientSession, calls: int) -> float:
    args = {"policy": "default", "argv": ["true"]}
    share = calls // CLIENTS

    async def worker() -> None:
        for _ in range(share):
            check(await session.call_tool("run_sandboxed", args), "one session")

    t0 = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(CLIENTS):
            tg.start_soon(worker)
    return share * CLIENTS / (time.perf_counter() - t0)


async def concurrent_http(url: str, calls: int) -> float:
    args = {"policy": "default", "argv": ["true"]}
    share = calls // CLIENTS
    headers = {"Authorization": f"Bearer {TOKEN}"}
    ready = anyio.Event()
    started = 0
    t0 = 0.0

    async def client() -> None:
        nonlocal started, t0
        async with (
            create_mcp_http_client(headers=headers) as http,
            streamable_http_client(url, http_client=http) as (r, w, _),
            ClientSession(r, w) as s,
        ):
            await s.initialize()
            check(await s.call_tool("run_sandboxed", args), "http warmup")
            started += 1
            if started == CLIENTS:
                t0 = time.perf_counter()
                ready.set()
            await ready.wait()
            for _ in range(share):
                check(await s.call_tool("run_sandboxed", args), "http")

    async with anyio.create_task_group() as tg:
        for _ in range(CLIENTS):
            tg.start_soon(client)
    return share * CLIENTS / (time.perf_counter() - t0)


def wait_port(port: int, proc: subprocess.Popen[bytes], seconds: float = 30) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise SystemExit(f"bench_mcp: the HTTP server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("bench_mcp: the HTTP server did not start listening")


def warm_throughput(box: Sandbox, calls: int, threads: int) -> float:
    """The warm API's own calls per second, for reference: ``threads`` at once."""
    share = calls // threads

    def worker() -> None:
        for _ in range(share):
            if box.run(["true"]).status != 0:
                raise SystemExit("bench_mcp: a warm reference run failed")

    t0 = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        for f in [pool.submit(worker) for _ in range(threads)]:
            f.result()
    return share * threads / (time.perf_counter() - t0)


async def measure(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    policies = tmp / "policies"
    policies.mkdir()
    (policies / "default.yaml").write_bytes(default_policy_bytes())
    work = tmp / "cwd"
    work.mkdir()
    server = [sys.executable, "-c", SERVER, "--policies", str(policies), "--cwd", str(work)]
    params = StdioServerParameters(command=server[0], args=server[1:], env=dict(os.environ))
    box = Sandbox(policies / "default.yaml", cwd=str(work))
    try:
        async with stdio_client(params) as (r, w), ClientSession(r, w) as session:
            await session.initialize()
            lat = await latency(session, box, args.runs, args.warmup)
            seq = await sequential(session, args.calls)
            one = await concurrent_one_session(session, args.calls)
        warm_seq = warm_throughput(box, args.calls, 1)
        warm_par = warm_throughput(box, args.calls, CLIENTS)
    finally:
        box.close()
    port = free_port()
    env = dict(os.environ, CVG_MCP_TOKEN=TOKEN)
    proc = subprocess.Popen(
        [*server, "--http", str(port)],
        env=env,
        stdin=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_port(port, proc)
        http = await concurrent_http(f"http://127.0.0.1:{port}/mcp", args.calls)
    finally:
        proc.terminate()
        proc.wait(10)
    return {
        "latency_true": lat,
        "calls_per_second": {
            "sequential_stdio": round(seq, 1),
            f"{CLIENTS}_clients_http": round(http, 1),
            f"{CLIENTS}_concurrent_calls_one_stdio_session": round(one, 1),
            "reference_warm_api_sequential": round(warm_seq, 1),
            f"reference_warm_api_{CLIENTS}_threads": round(warm_par, 1),
        },
    }


def main() -> int:
    parser = timing.rounds_parser(__doc__, runs=200, warmup=10)
    parser.add_argument("--calls", type=int, default=400, help="calls per throughput test (400)")
    args = parser.parse_args()
    timing.check_rounds(parser, args)
    if args.calls < CLIENTS:
        parser.error(f"--calls must be at least {CLIENTS}")
    os.environ.pop("CVG_LANDLOCK_ABI_MAX", None)
    started = datetime.now(UTC)
    load_start = [round(x, 2) for x in os.getloadavg()]
    tmp = Path(tempfile.mkdtemp(prefix="cvg-bench-mcp-"))
    try:
        for var, sub in (("XDG_CACHE_HOME", "cache"), ("XDG_STATE_HOME", "state")):
            (tmp / sub).mkdir()
            os.environ[var] = str(tmp / sub)
        measured = anyio.run(measure, args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    extra = measured["latency_true"]["mcp_minus_warm_ms"]["median"]
    latency = measured["latency_true"]["mcp"]["p50_ms"]
    throughput = max(
        v for k, v in measured["calls_per_second"].items() if not k.startswith("reference_")
    )
    entry: dict[str, Any] = {
        **results_file.machine(),
        "versions": results_file.versions(DISTRIBUTIONS),
        "euid": os.geteuid(),
        "measured_at": started.isoformat(timespec="seconds"),
        "duration_s": round((datetime.now(UTC) - started).total_seconds(), 1),
        "runs": args.runs,
        "warmup_rounds": args.warmup,
        "calls": args.calls,
        "loadavg_start": load_start,
        "loadavg_end": [round(x, 2) for x in os.getloadavg()],
        "method": (
            "latency: MCP run_sandboxed(['true']) over the SDK's stdio client vs warm "
            "Sandbox.run(['true']) in-process, interleaved, order alternating per round; "
            "throughput: --calls calls of ['true'], sequential on one stdio session, "
            f"{CLIENTS} streamable-HTTP clients to one server, and {CLIENTS} concurrent "
            "calls on one stdio session"
        ),
        **measured,
        "targets": {
            "mcp_true_at_most_3ms": results_file.bound(
                "p50 of mcp(true) over the SDK's stdio client, ms",
                latency,
                TARGET_MS,
                f"MCP run_sandboxed of `true` at most {TARGET_MS:g} ms",
            ),
            "calls_per_second_at_least_200": {
                "description": f"MCP run_sandboxed of `true`, at least {TARGET_CALLS:g} calls/s",
                "measure": "the most calls per second of the MCP ways measured "
                "(sequential, concurrent on one session, several clients)",
                "value": throughput,
                "limit": TARGET_CALLS,
                "met": throughput >= TARGET_CALLS,
            },
        },
    }
    path = args.output or results_file.default_path()
    results_file.record(path, KEY, entry, who="bench_mcp")
    lat = measured["latency_true"]
    print(
        f"true: mcp p50 {lat['mcp']['p50_ms']} ms p95 {lat['mcp']['p95_ms']} ms; "
        f"warm p50 {lat['warm']['p50_ms']} ms p95 {lat['warm']['p95_ms']} ms; "
        f"mcp - warm median {extra} ms; target: mcp p50 <= {TARGET_MS} ms, "
        f">= {TARGET_CALLS:g} calls/s (best {throughput})"
    )
    for name, value in measured["calls_per_second"].items():
        print(f"{name}: {value} calls/s")
    print(f"written under {KEY!r} in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
