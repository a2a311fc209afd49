"""Each policy in examples/policies/: it validates, runs its real tool under ``cvg-run -p``
in a fresh working directory with the expected output, and refuses one thing outside it.

Every refusal is first shown to succeed with no sandbox, judged by an oracle outside the
tool: a canary's text reaching stdout, a file appearing, a request reaching a loopback
server. Runs as root; one example also runs as the unprivileged user ``cvgtest``.
"""

from __future__ import annotations

import http.server
import json
import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import cvg_testing
from cvg_testing import TextServer

HERE = Path(__file__).resolve().parent
POLICIES = HERE / "policies"
TOOLS = HERE / "tools"
BIN = Path(sys.executable).parent
CVG_RUN = BIN / "cvg-run"
CVG_VALIDATE = BIN / "cvg-validate"
# The interpreter the python MCP server policy grants: the repository's own venv.
VENV_PYTHON = HERE.parent / ".venv" / "bin" / "python"
CANARY = "CANARY-7f3e"
SYSTEM_PYTHON = "/usr/bin/python3"
WEB_HOST = "api.example.test"
WEB_ADDR = "127.0.0.3"
WEB_PORT = 8080  # a port web-fetcher.yaml lists for WEB_HOST


@dataclass
class Place:
    """A temporary working directory, and beside it a fake HOME holding a canary key."""

    root: Path
    env: dict[str, str] = field(default_factory=dict)

    @property
    def cwd(self) -> Path:
        return self.root / "work"

    @property
    def canary(self) -> Path:
        return self.root / "home" / ".ssh" / "id_rsa"


@pytest.fixture
def place(tmp_path: Path) -> Place:
    p = Place(tmp_path)
    p.cwd.mkdir()
    p.canary.parent.mkdir(parents=True)
    p.canary.write_text(f"name,amount\n{CANARY},1\n")
    p.env = {
        **os.environ,
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    return p


def run(place: Place, argv: Sequence[str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(argv), cwd=place.cwd, env=place.env, input=stdin, capture_output=True,
        text=True, timeout=60, check=False,
    )  # fmt: skip


def sandboxed(
    place: Place, policy: str, argv: Sequence[str], stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    return run(place, [str(CVG_RUN), "-p", str(POLICIES / policy), "--", *argv], stdin)


def converse(
    place: Place, policy: str, argv: Sequence[str], stdin: str
) -> subprocess.CompletedProcess[str]:
    """Like sandboxed(), but stdin stays open until every request has its answer: a
    server may drop a request still in flight when its input ends, as a client that
    hangs up would want."""
    want = {json.loads(line)["id"] for line in stdin.splitlines() if "id" in json.loads(line)}
    proc = subprocess.Popen(
        [str(CVG_RUN), "-p", str(POLICIES / policy), "--", *argv], cwd=place.cwd,
        env=place.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    assert proc.stderr is not None
    proc.stdin.write(stdin)
    proc.stdin.flush()
    lines = []
    timer = threading.Timer(60, proc.kill)
    timer.start()
    try:
        while want and (line := proc.stdout.readline()):
            lines.append(line)
            want.discard(json.loads(line).get("id"))
        proc.stdin.close()
        out, err = proc.stdout.read(), proc.stderr.read()
        proc.wait()
    finally:
        timer.cancel()
    return subprocess.CompletedProcess(proc.args, proc.returncode, "".join(lines) + out, err)


# --- the tools' inputs and expected outputs -------------------------------------------


def _jsonrpc(*messages: dict[str, object]) -> str:
    return "".join(json.dumps({"jsonrpc": "2.0", **m}) + "\n" for m in messages)


MCP_SESSION = _jsonrpc(
    {"id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"}}},
    {"method": "notifications/initialized"},
    {"id": 2, "method": "tools/call",
     "params": {"name": "count_words", "arguments": {"text": "one two three"}}},
)  # fmt: skip


def _mcp_answer(out: str) -> None:
    answers = {m["id"]: m for m in map(json.loads, out.splitlines())}
    assert answers[2]["result"]["structuredContent"] == {"result": 3}, out


def _node_answer(out: str) -> None:
    assert json.loads(out)["result"]["content"][0]["text"] == "HELLO SANDBOX", out


@dataclass
class Example:
    policy: str
    setup: Callable[[Place], None]
    steps: list[list[str]]  # the last step's stdout is checked
    check: Callable[[str], None]
    stdin: str = ""
    # One thing outside the policy: the command, and the oracle that says it happened.
    attack: Callable[[Place], list[str]] = lambda p: []
    happened: Callable[[Place, subprocess.CompletedProcess[str]], bool] = lambda p, r: (
        CANARY in r.stdout
    )


def _nothing(place: Place) -> None:
    pass


def _csv(place: Place) -> None:
    (place.cwd / "data.csv").write_text("name,amount\nann,1.5\nbob,2\nann,3\n")


def _py_source(place: Place) -> None:
    (place.cwd / "pkg").mkdir()
    (place.cwd / "pkg" / "m.py").write_text("class A:\n    def f(self):\n        pass\n")
    (place.cwd / ".venv").mkdir()  # hidden directories are not indexed
    (place.cwd / ".venv" / "v.py").write_text("def skipped(): pass\n")


def _c_project(place: Place) -> None:
    (place.cwd / "hello.c").write_text(
        '#include <stdio.h>\nint main(void) { puts("hello from make"); return 0; }\n'
    )
    (place.cwd / "Makefile").write_text("hello: hello.c\n\tgcc -O2 -o hello hello.c\n")


def _git_files(place: Place) -> None:
    (place.cwd / "README").write_text("a repository\n")


def _read_canary_py(python: str) -> Callable[[Place], list[str]]:
    return lambda p: [python, "-c", f"print(open({str(p.canary)!r}).read())"]


EXAMPLES = [
    Example(
        "python-mcp-server.yaml",
        _nothing,
        [[str(VENV_PYTHON), str(TOOLS / "mcp_server.py")]],
        _mcp_answer,
        stdin=MCP_SESSION,
        attack=_read_canary_py(str(VENV_PYTHON)),
    ),
    Example(
        "node-stdio-tool.yaml",
        _nothing,
        [["node", str(TOOLS / "stdio_tool.js")]],
        _node_answer,
        stdin=_jsonrpc(
            {
                "id": 7,
                "method": "tools/call",
                "params": {"name": "shout", "arguments": {"text": "hello sandbox"}},
            }
        ),
        attack=lambda p: [
            "node",
            "-e",
            f"process.stdout.write(require('fs').readFileSync({str(p.canary)!r}))",
        ],
    ),
    Example(
        "git.yaml",
        _git_files,
        [
            ["git", "init", "-q"],
            ["git", "add", "README"],
            ["git", "commit", "-qm", "first"],
            ["git", "log", "--format=%s %an"],
        ],
        lambda out: None if out == "first cvg example\n" else pytest.fail(out),
        attack=lambda p: ["git", "diff", "--no-index", "/dev/null", str(p.canary)],
    ),
    Example(
        "c-toolchain.yaml",
        _c_project,
        [["make"]],
        lambda out: None if out == "gcc -O2 -o hello hello.c\n" else pytest.fail(out),
        attack=lambda p: ["gcc", "-E", "-P", "-x", "c", str(p.canary)],
    ),
    Example(
        "data-script.yaml",
        _csv,
        [[SYSTEM_PYTHON, str(TOOLS / "summarize.py"), "data.csv"]],
        lambda out: None if json.loads(out) == {"ann": 4.5, "bob": 2.0} else pytest.fail(out),
        attack=lambda p: [SYSTEM_PYTHON, str(TOOLS / "summarize.py"), str(p.canary)],
    ),
    Example(
        "shell-runner.yaml",
        _csv,
        [["sh", "-c", "cut -d, -f1 data.csv | sort | uniq -c"]],
        lambda out: (
            None if out.split() == ["2", "ann", "1", "bob", "1", "name"] else pytest.fail(out)
        ),
        attack=lambda p: ["sh", "-c", f"cat {p.canary}"],
    ),
    Example(
        "code-indexer.yaml",
        _py_source,
        [[SYSTEM_PYTHON, str(TOOLS / "index_code.py"), "."]],
        lambda out: (
            None
            if json.loads(out)
            == [
                {"name": "A", "file": "pkg/m.py", "line": 1},
                {"name": "f", "file": "pkg/m.py", "line": 2},
            ]
            else pytest.fail(out)
        ),
        # Read only: writing into the very directory it indexes is refused.
        attack=lambda p: [SYSTEM_PYTHON, "-c", "open('index.json', 'w').write('[]')"],
        happened=lambda p, r: (p.cwd / "index.json").exists(),
    ),
]


@pytest.mark.parametrize("policy", sorted(p.name for p in POLICIES.glob("*.yaml")))
def test_policy_validates_without_warnings(policy: str) -> None:
    r = subprocess.run([str(CVG_VALIDATE), str(POLICIES / policy)], capture_output=True,
                       text=True, timeout=60, check=False)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stderr == "", r.stderr
    head = (POLICIES / policy).read_text().splitlines()
    assert head[0].startswith("# ") and any("cvg-run -p" in line for line in head[:15]), (
        f"{policy}: the header comment says what it is for and how to run it"
    )


def test_every_policy_has_an_example() -> None:
    tested = {e.policy for e in EXAMPLES} | {"web-fetcher.yaml"}
    assert tested == {p.name for p in POLICIES.glob("*.yaml")}
    assert len(tested) >= 8


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.policy.removesuffix(".yaml"))
def test_tool_runs_and_outside_is_refused(example: Example, place: Place) -> None:
    if example.policy == "python-mcp-server.yaml" and not VENV_PYTHON.exists():
        pytest.skip(f"{VENV_PYTHON} does not exist: run `uv sync` at the repository root")
    example.setup(place)
    for step in example.steps:
        if example.stdin:
            r = converse(place, example.policy, step, example.stdin)
        else:
            r = sandboxed(place, example.policy, step)
        assert r.returncode == 0, (step, r.stderr)
    example.check(r.stdout)

    attack = example.attack(place)
    bare = run(place, attack)
    assert example.happened(place, bare), f"the attack does not work without cvg: {bare}"
    for leftover in ("index.json",):
        (place.cwd / leftover).unlink(missing_ok=True)
    confined = sandboxed(place, example.policy, attack)
    assert not example.happened(place, confined), confined
    assert confined.returncode != 0


# --- the web fetcher: network.hosts through cvg-run's proxy, loopback only ------------


@pytest.fixture
def web() -> Iterator[list[str]]:
    seen: list[str] = []

    def hello(request: http.server.BaseHTTPRequestHandler) -> str:
        seen.append(request.path)
        return f"hello {request.path}"

    try:
        server = TextServer((WEB_ADDR, WEB_PORT), hello)
    except OSError as e:
        pytest.skip(f"cannot listen on {WEB_ADDR}:{WEB_PORT}: {e}")
    with server:
        yield seen


def test_web_fetcher_reaches_only_its_host(place: Place, web: list[str]) -> None:
    hosts = place.root / "hosts"
    hosts.write_text(f"{WEB_ADDR} {WEB_HOST}\n{WEB_ADDR} other.example.test\n")
    place.env["CVG_RUN_HOSTS_FILE"] = str(hosts)
    fetch = [SYSTEM_PYTHON, str(TOOLS / "fetch.py")]

    r = sandboxed(place, "web-fetcher.yaml", [*fetch, f"http://{WEB_HOST}:{WEB_PORT}/ok"])
    assert (r.returncode, r.stdout) == (0, "hello /ok"), r.stderr
    assert web == ["/ok"]

    # The same server by address: reached directly with no sandbox, refused inside it
    # because no rule lists that address (and a direct connection has no port).
    direct = f"http://{WEB_ADDR}:{WEB_PORT}/by-address"
    bare = run(place, [*fetch, direct])
    assert bare.returncode == 0 and web == ["/ok", "/by-address"], bare
    confined = sandboxed(place, "web-fetcher.yaml", [*fetch, direct])
    assert confined.returncode != 0 and "403" in confined.stderr, confined
    assert web == ["/ok", "/by-address"]


# --- one example as the unprivileged user ---------------------------------------------


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to become cvgtest")
def test_shell_runner_as_unprivileged_user() -> None:
    user = cvg_testing.ensure_unpriv_user()
    # Not pytest's tmp_path: its parents are private to root.
    tmp_path = Path(tempfile.mkdtemp(prefix="cvg-example-"))
    try:
        _shell_runner_as(user, tmp_path)
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)


def _shell_runner_as(user: pwd.struct_passwd, tmp_path: Path) -> None:
    tmp_path.chmod(0o777)
    for d in ("work", "state", "cache", "home"):
        (tmp_path / d).mkdir(mode=0o777)
        (tmp_path / d).chmod(0o777)
    canary = tmp_path / "home" / "secret"
    canary.write_text(CANARY)
    canary.chmod(0o644)  # readable by cvgtest: only the sandbox stands in the way
    # This interpreter, and the clone itself, may sit under a home cvgtest cannot read:
    # an interpreter it can run loads cvg from this environment's site-packages, or
    # from a world-readable copy of it; the policy is copied out too.
    launcher = [
        cvg_testing.unpriv_python(user), "-c",
        "import site, sys; site.addsitedir(sys.argv.pop(1)); "
        "from cvg_run.cli import run; sys.argv[0] = 'cvg-run'; run()",
        cvg_testing.import_path_for(user) or sysconfig.get_paths()["purelib"],
    ]  # fmt: skip
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home"),
           "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "TMPDIR": str(tmp_path)}  # fmt: skip

    def as_user(argv: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, cwd=tmp_path / "work", env=env, user=user.pw_uid,
                              group=user.pw_gid, extra_groups=[], capture_output=True,
                              text=True, timeout=60, check=False)  # fmt: skip

    policy = str(tmp_path / "shell-runner.yaml")
    shutil.copy(POLICIES / "shell-runner.yaml", policy)
    os.chmod(policy, 0o644)
    r = as_user([*launcher, "-p", policy, "--", "sh", "-c", "id -u; echo made > out; cat out"])
    assert (r.returncode, r.stdout) == (0, f"{user.pw_uid}\nmade\n"), r.stderr
    bare = as_user(["cat", str(canary)])
    assert bare.stdout == CANARY, bare
    confined = as_user([*launcher, "-p", policy, "--", "cat", str(canary)])
    assert confined.returncode != 0 and CANARY not in confined.stdout, confined
    assert "Permission denied" in confined.stderr


# --- docs/first-run.md is current ------------------------------------------------------


@pytest.mark.skipif(shutil.which("uv") is None or shutil.which("git") is None,
                    reason="needs uv and git on PATH")  # fmt: skip
def test_first_run_transcript_is_current() -> None:
    """About 10 s here: a fresh clone, its uv sync from the cache, and the README's
    commands. Refresh with `python examples/first_run.py` after committing."""
    import first_run

    assert first_run.main(["--check"]) == 0
