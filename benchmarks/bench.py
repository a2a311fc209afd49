"""cvg against the peers: one harness, every configuration interleaved in one run.

    uv run python benchmarks/bench.py [--runs N] [--warmup N] [--only CONFIG]...
                                      [--sandlock-python PATH] [--gen-events N] [--output PATH]
    uv run python benchmarks/bench.py --render [--check]

Workloads: ``true``, ``python3 -c pass``, ``wc -w`` over a 10 MiB file, and a Python
script importing 200 modules (their bytecode compiled beforehand, so every
configuration reads the same .pyc files and none writes any).

Configurations (each a fresh process per run unless it says warm):

  bare          subprocess, no confinement: the floor every ratio is taken against
  cvg-warm      ``cvg_run.Sandbox.run`` on one Sandbox made up front (default policy)
  cvg-mcp       ``run_sandboxed`` over the MCP SDK's stdio client to one cvg-mcp server
  cvg-run       ``cvg-run -- CMD``, a cold process (the plan cache already warm)
  cvg-run-trace ``cvg-run --trace --record F -- CMD``
  cvg-observe   ``cvg-observe -o F -- CMD`` (strace plus the learning sandbox)
  sandlock-api  ``sandlock.Sandbox.run`` (sandlock from PyPI, in its own venv), one
                Sandbox reused, driven over a pipe by a helper in that venv
  sandlock-cli  the ``sandlock`` executable of that venv
  bwrap         ``bwrap --ro-bind / / --dev /dev --proc /proc --unshare-all ...``
  firejail      ``firejail --quiet --noprofile --net=none``

Every round runs every workload once in every configuration, the configuration order
rotating from round to round, so load that comes and goes on a shared machine hits them
all alike; the ratio to bare is taken within each round and summarised by its median.
A configuration whose tool is missing or fails on this host is reported as n/a with the
tool's own message, never dropped silently. Before timing, each configuration must
exit 0 and print what bare prints on every workload.

Also measured, once: cvg-generate on a synthetic observation of ``--gen-events``
events (wall time, peak RSS), cvg-probe (``--no-cache``, a subprocess) and the policy
compile (in process, and ``cvg-validate --compile`` as a subprocess).

Results go under the key ``"bench"`` of ``benchmarks/results/<host>.json`` (other keys
are kept). ``--render`` rewrites the "What it costs" section of docs/results.md and the peers
charts from the results files (see render.py); with ``--check`` it only reports whether
they are current.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import render  # noqa: E402  (benchmarks/ is not a package)
import results_file  # noqa: E402
import timing  # noqa: E402
from bench_run import loadavg, summary_ms  # noqa: E402  (shared timing helpers)
from executables import beside_python  # noqa: E402

KEY = "bench"
PYTHON = "/usr/bin/python3"
GNU_TIME = "/usr/bin/time"
WORDS_SIZE = 10 << 20
MODULES = 200
CONFIGS = (
    "bare",
    "cvg-warm",
    "cvg-mcp",
    "cvg-run",
    "cvg-run-trace",
    "cvg-observe",
    "sandlock-api",
    "sandlock-cli",
    "bwrap",
    "firejail",
)
CVG_DISTS = ("cvg-run", "cvg-kernel", "cvg-policy", "cvg-observe", "cvg-generate", "cvg-mcp")
SOURCES = tuple(HERE.parent.glob("packages/*/src"))
MCP_SERVER = "import sys; from cvg_mcp.cli import main; sys.exit(main(sys.argv[1:]))"

# Runs in sandlock's own venv: one Sandbox, one JSON request per line on stdin, one
# answer per line on stdout. The Sandbox grants what cvg's default policy grants: read
# the system and the working directory, write a scratch directory, no network.
SANDLOCK_HELPER = r"""
import base64, json, sys, tempfile
import sandlock
cwd = sys.argv[1]
scratch = tempfile.mkdtemp(prefix="sandlock-bench-")
box = sandlock.Sandbox(
    fs_readable=["/usr", "/lib", "/lib64", "/bin", "/etc", "/proc", "/dev", cwd],
    fs_writable=[scratch],
    cwd=cwd,
)
print(json.dumps({"ready": sandlock.__version__ if hasattr(sandlock, "__version__") else "?"}),
      flush=True)
for line in sys.stdin:
    argv = json.loads(line)
    r = box.run(argv)
    out = r.stdout or b""
    print(json.dumps({"status": r.exit_code, "stdout": base64.b64encode(out).decode(),
                      "error": str(r.error or "")}), flush=True)
"""


class NotAvailable(Exception):
    """A configuration that cannot run here; the message is the tool's own."""


@dataclass
class Config:
    name: str
    describe: str
    run: Callable[[list[str]], Awaitable[tuple[int, bytes, int | None]]]
    helper_pids: list[int] = field(default_factory=list)
    version: str = ""
    prefix: list[str] | None = None  # a fresh process per run: argv = prefix + CMD


def first_line(text: str | bytes) -> str:
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[0][:300] if lines else "(no message)"


def tool_version(argv: list[str]) -> str:
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"not available ({e})"
    return first_line(p.stdout or p.stderr)


def children(pid: int) -> list[int]:
    found = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                found += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return found


def tree_hwm_kb(pids: list[int]) -> int:
    """Peak resident set (VmHWM) summed over ``pids`` and their descendants."""
    total, todo, seen = 0, list(pids), set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        total += int(line.split()[1])
        except OSError:
            continue
        todo += children(pid)
    return total


class Spawner:
    """Run a command in the work directory, its stdout and stderr in files (the same
    cost for every configuration, and nothing to drain while it runs)."""

    def __init__(self, tmp: Path, cwd: Path) -> None:
        self.out = tmp / "spawn.out"
        self.err = tmp / "spawn.err"
        self.cwd = cwd

    def __call__(
        self, cmd: list[str], env: dict[str, str] | None = None
    ) -> tuple[int, bytes, int | None]:
        with open(self.out, "wb") as out, open(self.err, "wb") as err:
            p = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=self.cwd, env=env
            )
            status = p.wait()
        return status, self.out.read_bytes(), None

    def last_error(self) -> str:
        return first_line(self.err.read_bytes())


def peak_rss_kb(spawn: Spawner, config: Config, argv: list[str], runs: int = 3) -> int:
    """The largest process's peak RSS over ``runs`` runs, as GNU time reports it: a child
    of this (large) Python would count this process's pages it had before its exec."""
    if config.prefix is None or not os.access(GNU_TIME, os.X_OK):
        return 0
    peak = 0
    out = spawn.out.with_name("time.out")
    for _ in range(runs):
        status, _, _ = spawn([GNU_TIME, "-f", "%M", "-o", str(out), *config.prefix, *argv])
        if status == 0:
            peak = max(peak, int(out.read_text().split()[-1]))
    return peak


def make_words(path: Path, size: int) -> None:
    line = b" ".join(b"word%d" % i for i in range(12)) + b"\n"
    data = (line * (size // len(line) + 1))[:size]
    path.write_bytes(data[: data.rfind(b"\n") + 1].ljust(size, b"\n"))


def make_imports(work: Path) -> Path:
    """200 small modules and a script importing them all, compiled ahead of time."""
    pkg = work / "mods"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for i in range(MODULES):
        (pkg / f"m{i:03d}.py").write_text(
            f'"""Module {i}."""\n\nimport os\n\nVALUE = {i}\n\n\n'
            f"def f{i}(x):\n    return x + VALUE\n\n\nclass C{i}:\n"
            f"    def method(self):\n        return f{i}(len(os.sep))\n"
        )
    script = work / "imports.py"
    script.write_text(
        "import importlib\n"
        f"print(sum(importlib.import_module(f'mods.m{{i:03d}}').VALUE for i in range({MODULES})))\n"
    )
    subprocess.run([PYTHON, "-m", "compileall", "-q", str(work)], check=True)
    return script


def cvg_tool(name: str) -> str:
    found = beside_python(name)
    if not found:
        raise NotAvailable(f"{name}: not installed next to {sys.executable} nor on PATH")
    return found


# --- configurations -------------------------------------------------------------------


def cmd_config(
    name: str, describe: str, spawn: Spawner, prefix: list[str], env: dict[str, str] | None = None
) -> Config:
    async def run(argv: list[str]) -> tuple[int, bytes, int | None]:
        return spawn([*prefix, *argv], env)

    return Config(name, describe, run, prefix=prefix)


async def setup(
    name: str, stack: contextlib.AsyncExitStack, spawn: Spawner, work: Path, tmp: Path, args: Any
) -> Config:
    if name == "bare":
        return cmd_config(name, "subprocess, no confinement", spawn, [])
    if name == "cvg-warm":
        from cvg_run import Sandbox

        before = set(children(os.getpid()))
        box = Sandbox(cwd=str(work))
        stack.callback(box.close)

        async def warm(argv: list[str]) -> tuple[int, bytes, int | None]:
            r = box.run(argv)
            return r.status, r.stdout, None

        cfg = Config(name, "Sandbox().run(argv), one Sandbox made up front", warm)
        box.run(["/usr/bin/true"])  # its helper starts on first use
        cfg.helper_pids = sorted(set(children(os.getpid())) - before)
        cfg.version = metadata.version("cvg-run")
        return cfg
    if name == "cvg-mcp":
        return await setup_mcp(stack, work, tmp)
    if name == "cvg-run":
        cfg = cmd_config(name, "cvg-run -- CMD (plan cache warm)", spawn, [cvg_tool("cvg-run")])
        cfg.version = metadata.version("cvg-run")
        return cfg
    if name == "cvg-run-trace":
        if not shutil.which("strace"):
            raise NotAvailable("cvg-run --trace needs strace, which is not on PATH")
        prefix = [cvg_tool("cvg-run"), "--trace", "--record", str(tmp / "trace-run.json"), "--"]
        cfg = cmd_config(name, "cvg-run --trace --record F -- CMD", spawn, prefix)
        cfg.version = metadata.version("cvg-run")
        return cfg
    if name == "cvg-observe":
        prefix = [cvg_tool("cvg-observe"), "-o", str(tmp / "obs.json"), "--"]
        cfg = cmd_config(name, "cvg-observe -o F -- CMD", spawn, prefix)
        cfg.version = metadata.version("cvg-observe")
        return cfg
    if name in ("sandlock-api", "sandlock-cli"):
        return setup_sandlock(name, stack, spawn, work, args.sandlock_python)
    if name == "bwrap":
        exe = shutil.which("bwrap")
        if not exe:
            raise NotAvailable("bwrap: not installed (the bench nox session apt-installs it)")
        prefix = [exe, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        prefix += ["--unshare-all", "--die-with-parent", "--new-session", "--chdir", str(work)]
        shown = shlex.join([*prefix, "--"]).replace(str(work), "DIR")
        cfg = cmd_config(name, shown, spawn, [*prefix, "--"])
        cfg.version = tool_version([exe, "--version"])
        return cfg
    if name == "firejail":
        exe = shutil.which("firejail")
        if not exe:
            raise NotAvailable("firejail: not installed (the bench nox session apt-installs it)")
        prefix = [exe, "--quiet", "--noprofile", "--net=none"]
        cfg = cmd_config(name, shlex.join(prefix), spawn, prefix)
        cfg.version = tool_version([exe, "--version"])
        return cfg
    raise ValueError(name)


async def setup_mcp(stack: contextlib.AsyncExitStack, work: Path, tmp: Path) -> Config:
    try:
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        from cvg_run.planning import default_policy_bytes
    except ImportError as e:
        raise NotAvailable(f"cvg-mcp: {e}")
    policies = tmp / "policies"
    policies.mkdir(exist_ok=True)
    (policies / "default.yaml").write_bytes(default_policy_bytes())
    server = [sys.executable, "-c", MCP_SERVER, "--policies", str(policies), "--cwd", str(work)]
    params = StdioServerParameters(command=server[0], args=server[1:], env=dict(os.environ))
    before = set(children(os.getpid()))
    r, w = await stack.enter_async_context(stdio_client(params))
    session = await stack.enter_async_context(ClientSession(r, w))
    await session.initialize()

    async def call(argv: list[str]) -> tuple[int, bytes, int | None]:
        res = await session.call_tool("run_sandboxed", {"policy": "default", "argv": argv})
        sc = res.structuredContent or {}
        if res.isError or "status" not in sc:
            text = res.content[0].text if res.content else str(sc)  # type: ignore[union-attr]
            raise NotAvailable(f"cvg-mcp run_sandboxed: {first_line(text)}")
        return int(sc["status"]), str(sc.get("stdout", "")).encode(), None

    cfg = Config("cvg-mcp", "MCP run_sandboxed over stdio (SDK client), warm server", call)
    await call(["/usr/bin/true"])
    cfg.helper_pids = sorted(set(children(os.getpid())) - before)
    cfg.version = metadata.version("cvg-mcp")
    return cfg


def setup_sandlock(
    name: str, stack: contextlib.AsyncExitStack, spawn: Spawner, work: Path, python: str | None
) -> Config:
    if not python:
        raise NotAvailable("sandlock: no venv given (--sandlock-python; nox -s bench makes one)")
    if not os.access(python, os.X_OK):
        raise NotAvailable(f"sandlock: {python}: no such interpreter")
    # Absolute: the helper starts in the work directory.
    python = os.path.abspath(python)
    probe = subprocess.run(
        [
            python,
            "-c",
            "import json, importlib.metadata as m; d = m.distribution('sandlock'); "
            "print(json.dumps([d.version, [e.name for e in d.entry_points "
            "if e.group == 'console_scripts']]))",
        ],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        raise NotAvailable(f"sandlock: {first_line(probe.stderr)}")
    version, scripts = json.loads(probe.stdout)
    if name == "sandlock-cli":
        exe = Path(python).parent / "sandlock"
        if not exe.exists():
            raise NotAvailable(
                f"{exe}: no such file; sandlock {version} from PyPI installs the console "
                f"scripts {scripts} and no sandlock CLI"
            )
        cfg = cmd_config(name, f"{exe} run -- CMD", spawn, [str(exe), "run", "--"])
        cfg.version = version
        return cfg
    helper = subprocess.Popen(
        [python, "-c", SANDLOCK_HELPER, str(work)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=work,
    )
    assert helper.stdin is not None and helper.stdout is not None

    def stop() -> None:
        helper.kill()
        helper.wait()

    stack.callback(stop)
    ready = helper.stdout.readline()
    if not ready:
        raise NotAvailable(f"sandlock: {first_line(helper.stderr.read() if helper.stderr else '')}")

    async def call(argv: list[str]) -> tuple[int, bytes, int | None]:
        assert helper.stdin is not None and helper.stdout is not None
        helper.stdin.write((json.dumps(argv) + "\n").encode())
        helper.stdin.flush()
        line = helper.stdout.readline()
        if not line:
            raise NotAvailable("sandlock helper exited")
        answer = json.loads(line)
        if answer["error"] and answer["status"] != 0:
            raise NotAvailable(f"sandlock: {answer['error']}")
        import base64

        return int(answer["status"]), base64.b64decode(answer["stdout"]), None

    cfg = Config(name, "sandlock.Sandbox(...).run(argv), one Sandbox reused", call)
    cfg.helper_pids = [helper.pid]
    cfg.version = version
    return cfg


# --- one-off measurements -------------------------------------------------------------


def synthetic_observation(path: Path, events: int, work: Path) -> None:
    """A plausible big observation: a Python tool reading a tree, probing missing
    paths, writing in its workspace and connecting to a few ports, streamed to disk."""
    rng = random.Random(11)
    dirs = [f"/usr/lib/python3/dist-packages/pkg{d}" for d in range(300)]
    with open(path, "w") as f:
        head = {
            "kind": "cvg.observation",
            "schema_version": "1.0",
            "argv": [PYTHON, "tool.py"],
            "cwd": str(work),
            "home": "/root",
            "scratch": [],
            "strace_version": "6.1",
            "executables": [
                {
                    "path": "/usr/bin/python3.11",
                    "interpreter": "/lib64/ld-linux-x86-64.so.2",
                    "shebang": [],
                    "event_id": "e1",
                }
            ],
            "exit_status": 0,
            "partial": False,
            "source": None,
            "notes": [],
        }
        f.write(json.dumps(head)[:-1] + ', "events": [')
        t = 1_700_000_000.0
        for i in range(1, events + 1):
            t += 0.00001
            k = rng.random()
            ev: dict[str, Any] = {"id": f"e{i}", "pid": 1000 + (i % 7), "time": round(t, 6)}
            if i == 1:
                ev.update(op="execute", syscall="execve", path="/usr/bin/python3.11", result="ok")
            elif k < 0.6:
                d = rng.choice(dirs)
                ev.update(op="read", syscall="openat", path=f"{d}/m{rng.randrange(40)}.py")
                ev["result"] = "ok"
            elif k < 0.85:
                d = rng.choice(dirs)
                ev.update(op="stat", syscall="newfstatat", path=f"{d}/x{rng.randrange(99)}.so")
                ev["result"] = "ENOENT"
            elif k < 0.97:
                ev.update(op="write", syscall="openat", path=f"{work}/out/{rng.randrange(500)}.txt")
                ev["result"] = "ok"
            else:
                ev.update(op="connect", syscall="connect", family="inet")
                ev.update(address="127.0.0.1", port=rng.choice([80, 443, 5432]), result="ok")
            f.write(("" if i == 1 else ",") + json.dumps(ev))
        f.write("]}\n")


def measure_generate(tmp: Path, events: int, work: Path) -> dict[str, Any]:
    obs = tmp / "big-observation.json"
    synthetic_observation(obs, events, work)
    spawn = Spawner(tmp, work)
    timing = tmp / "generate.time"
    cmd = [cvg_tool("cvg-generate"), "-q", str(obs), "-o", str(tmp / "big.json")]
    t0 = time.perf_counter()
    status, _, _ = spawn([GNU_TIME, "-f", "%M", "-o", str(timing), *cmd])
    seconds = time.perf_counter() - t0
    rss = int(timing.read_text().split()[-1]) if status == 0 else 0
    entry: dict[str, Any] = {
        "events": events,
        "observation_mb": round(obs.stat().st_size / 1e6, 1),
        "status": status,
    }
    if status != 0:
        entry["error"] = spawn.last_error()
        return entry
    policy = json.loads((tmp / "big.json").read_text())
    fs = policy.get("filesystem", {})
    entry.update(
        seconds=round(seconds, 2),
        peak_rss_mb=round(rss / 1024, 1),
        rules={k: len(v) for k, v in fs.items() if isinstance(v, list)},
    )
    obs.unlink()
    return entry


def measure_probe(spawn: Spawner, runs: int) -> dict[str, Any]:
    cmd = [cvg_tool("cvg-probe"), "--no-cache"]
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter_ns()
        status, _, _ = spawn(cmd)
        samples.append(time.perf_counter_ns() - t0)
        if status != 0:
            return {"error": f"cvg-probe exited {status}: {spawn.last_error()}"}
    return {"command": "cvg-probe --no-cache", **summary_ms(samples)}


def measure_compile(spawn: Spawner, tmp: Path, work: Path, runs: int) -> dict[str, Any]:
    from cvg_policy.compile import compile_policy
    from cvg_policy.load import load_policy
    from cvg_policy.variables import context
    from cvg_run.planning import default_policy_bytes

    data = default_policy_bytes()
    variables = context(cwd=str(work), home=os.path.expanduser("~"), policy_dir=str(work))
    inproc = []
    for _ in range(runs):
        t0 = time.perf_counter_ns()
        compile_policy(load_policy(data, filename="default").policy, variables=variables)
        inproc.append(time.perf_counter_ns() - t0)
    policy = tmp / "default.yaml"
    policy.write_bytes(data)
    facts = tmp / "facts.json"
    p = subprocess.run([cvg_tool("cvg-probe")], capture_output=True)
    facts.write_bytes(p.stdout)
    cmd = [cvg_tool("cvg-validate"), "--compile", "--facts", str(facts), str(policy)]
    sub = []
    for _ in range(max(1, runs // 5)):
        t0 = time.perf_counter_ns()
        status, _, _ = spawn(cmd)
        sub.append(time.perf_counter_ns() - t0)
        if status != 0:
            return {"error": f"cvg-validate --compile exited {status}: {spawn.last_error()}"}
    return {
        "policy": "cvg-run's default policy",
        "in_process": summary_ms(inproc),
        "cvg_validate_compile_subprocess": summary_ms(sub),
    }


# --- the run --------------------------------------------------------------------------


async def measure(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    work = tmp / "cwd"
    work.mkdir()
    for var, sub in (("XDG_CACHE_HOME", "cache"), ("XDG_STATE_HOME", "state")):
        (tmp / sub).mkdir()
        os.environ[var] = str(tmp / sub)
    make_words(work / "words.txt", WORDS_SIZE)
    script = make_imports(work)
    workloads = {
        "true": ["/usr/bin/true"],
        "python3 -c pass": [PYTHON, "-c", "pass"],
        "wc -w 10MiB": ["/usr/bin/wc", "-w", "words.txt"],
        f"import {MODULES} modules": [PYTHON, script.name],
    }
    spawn = Spawner(tmp, work)
    unavailable: dict[str, str] = {}
    configs: dict[str, Config] = {}
    async with contextlib.AsyncExitStack() as stack:
        for name in args.only or CONFIGS:
            try:
                configs[name] = await setup(name, stack, spawn, work, tmp, args)
            except NotAvailable as e:
                unavailable[name] = str(e)
            except Exception as e:  # noqa: BLE001 - a peer's own failure is a result, not a crash
                unavailable[name] = f"{type(e).__name__}: {first_line(str(e))}"
        if "bare" not in configs:
            raise SystemExit("bench: the bare configuration is needed for the ratios")

        # Every configuration must do the same work as bare before it is timed.
        expected = {}
        for wname, argv in workloads.items():
            status, out, _ = await configs["bare"].run(argv)
            if status != 0:
                raise SystemExit(f"bench: bare {wname!r} exited {status}: {spawn.last_error()}")
            expected[wname] = out
        for name in [n for n in configs if n != "bare"]:
            for wname, argv in workloads.items():
                try:
                    status, out, _ = await configs[name].run(argv)
                except NotAvailable as e:
                    status, out = -1, str(e).encode()
                if status != 0 or out != expected[wname]:
                    err = spawn.last_error() if status > 0 else first_line(out)
                    unavailable[name] = f"{wname!r}: exit {status}: {err}"
                    del configs[name]
                    break

        names = list(configs)
        samples = timing.empty(workloads, names)
        load_start = loadavg()
        t_start = time.monotonic()
        for slot in timing.slots(workloads, names, args.warmup, args.runs, progress="bench"):
            with timing.Stopwatch() as sw:
                status, _, _ = await configs[slot.config].run(slot.argv)
            if status != 0:
                raise SystemExit(
                    f"bench: {slot.config} {slot.workload!r} exited {status} round {slot.round}"
                )
            timing.keep(samples, slot, sw.ns)
        duration = time.monotonic() - t_start
        rss = {
            w: {n: peak_rss_kb(spawn, c, argv) for n, c in configs.items()}
            for w, argv in workloads.items()
        }
        helper_rss = {n: tree_hwm_kb(c.helper_pids) for n, c in configs.items() if c.helper_pids}
        load_end = loadavg()

    results: dict[str, dict[str, Any]] = {}
    for wname in workloads:
        results[wname] = {}
        bare = samples[wname]["bare"]
        for name in names:
            s = summary_ms(samples[wname][name])
            ratios = [x / b for x, b in zip(samples[wname][name], bare, strict=True)]
            s["ratio_to_bare_median"] = round(statistics.median(ratios), 2)
            if rss[wname].get(name):
                s["peak_rss_mb"] = round(rss[wname][name] / 1024, 1)
            results[wname][name] = s

    spawn = Spawner(tmp, work)
    extra: dict[str, Any] = {}
    if not args.skip_extras:
        print("bench: probe and compile timings", file=sys.stderr)
        extra["probe"] = measure_probe(spawn, 10)
        extra["compile"] = measure_compile(spawn, tmp, work, 50)
        if args.gen_events:
            print(f"bench: cvg-generate on {args.gen_events} events", file=sys.stderr)
            extra["generate"] = measure_generate(tmp, args.gen_events, work)

    return {
        "workloads": {
            w: [a if not a.startswith(str(work)) else a[len(str(work)) + 1 :] for a in argv]
            for w, argv in workloads.items()
        },
        "workload_order": list(workloads),
        "configs": {n: c.describe for n, c in configs.items()},
        "config_order": names,
        "versions": {n: c.version for n, c in configs.items() if c.version},
        "unavailable": unavailable,
        "results": results,
        "helper_peak_rss_mb": {n: round(kb / 1024, 1) for n, kb in helper_rss.items()},
        "loadavg_start": load_start,
        "loadavg_end": load_end,
        "timed_seconds": round(duration, 1),
        **extra,
    }


def main(argv: list[str] | None = None) -> int:
    parser = timing.rounds_parser(
        __doc__,
        runs=200,
        warmup=3,
        epilog="Run as root on a machine as idle as you can make it; then --render, and "
        "commit benchmarks/results/<host>.json and docs/results.md together.",
    )
    parser.add_argument(
        "--only", action="append", choices=CONFIGS, help="only this configuration (repeatable)"
    )
    parser.add_argument(
        "--sandlock-python",
        default=os.environ.get("CVG_BENCH_SANDLOCK_PYTHON"),
        help="the Python of a venv holding sandlock (default: $CVG_BENCH_SANDLOCK_PYTHON)",
    )
    parser.add_argument(
        "--gen-events",
        type=int,
        default=1_000_000,
        help="events in the synthetic observation given to cvg-generate (0: skip)",
    )
    parser.add_argument(
        "--skip-extras", action="store_true", help="skip the generate, probe and compile timings"
    )
    parser.add_argument(
        "--render", action="store_true", help="rewrite the tables of docs/results.md and the charts"
    )
    parser.add_argument("--check", action="store_true", help="with --render: only check")
    args = parser.parse_args(argv)
    if args.render:
        return render.main(["--check"] if args.check else [])
    timing.check_rounds(parser, args)
    if args.only and "bare" not in args.only:
        args.only.insert(0, "bare")
    if not os.access(PYTHON, os.X_OK):
        raise SystemExit(f"bench: {PYTHON} is needed (the same interpreter everywhere)")

    import anyio

    os.environ.pop("CVG_LANDLOCK_ABI_MAX", None)
    os.environ.pop("CVG_TRACE_MODE", None)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", *map(str, sorted(SOURCES))], check=True
    )
    started = datetime.now(UTC)
    with tempfile.TemporaryDirectory(prefix="cvg-bench-") as tmp:
        measured = anyio.run(measure, args, Path(tmp))
    entry: dict[str, Any] = {
        **results_file.machine(),
        "cvg_versions": results_file.versions(CVG_DISTS),
        "euid": os.geteuid(),
        "measured_at": started.isoformat(timespec="seconds"),
        "runs": args.runs,
        "warmup_rounds": args.warmup,
        "method": (
            "interleaved rounds: every workload once in every configuration per round, "
            "configuration order rotating; ratio to bare per round, summarised by its median; "
            "peak RSS of the largest process of a run (GNU time %M, max of 3 untimed runs) for "
            "per-run processes, VmHWM of "
            "the long-lived helper or server for warm configurations"
        ),
        **measured,
    }
    path = args.output or results_file.default_path()
    results_file.record(path, KEY, entry, who="bench")
    for wname, by_config in entry["results"].items():
        for name, s in by_config.items():
            print(
                f"{wname:20} {name:14} p50 {s['p50_ms']:9.2f} ms  p95 {s['p95_ms']:9.2f} ms"
                f"  x{s['ratio_to_bare_median']:.2f}  rss {s.get('peak_rss_mb', '-')}"
            )
    for name, why in entry["unavailable"].items():
        print(f"n/a {name}: {why}")
    print(f"written to {path} under {KEY!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
