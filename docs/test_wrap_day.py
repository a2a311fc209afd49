"""A user's first week with cvg-wrap, as one test: five real third-party MCP servers in
a Claude Desktop config, learned over two sessions, enforced, used again with new
inputs, from another working directory and after a long idle gap, then restored.

The servers are those benchmarks/workloads/servers/install.py installs, pinned (PyPI
mcp-server-time and mcp-server-git, npm server-filesystem twice and server-memory),
started the way a client starts them: the official MCP SDK's stdio client, the entry's
command, args and env. The home is a temporary directory with canaries (an SSH key,
``~/.env``, a project's ``.env``) and a git repository with two branches, one of which
deletes a file.

Every answer is checked against what the harness computes itself, bare: the files on
disk, its own ``git status --porcelain``, the time from zoneinfo, the memory file.
Every denial in cvg-run's run records must be one the test asked for (a canary) or
one every policy gives (``expected``): no false denial. The canaries escape bare (the
home's filesystem server reads all three without cvg) and never under cvg.

Slow (a 75 s idle gap, every session traced): ``nox -s falsedenial`` runs it, beside
the suite that installs the same servers; ``nox -s docs`` leaves it out.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = Path(__file__).resolve().parent.parent
INSTALL = ROOT / "benchmarks" / "workloads" / "servers" / "install.py"
SSH_CANARY = "-----BEGIN OPENSSH PRIVATE KEY----- day canary"
HOME_ENV_CANARY = "API_TOKEN=home-env-canary"
PROJECT_ENV_CANARY = "DB_PASSWORD=project-env-canary"
CANARIES = (SSH_CANARY, HOME_ENV_CANARY, PROJECT_ENV_CANARY)
SERVERS = ("time", "git", "files", "memory", "home")
IDLE_GAP = 75.0


def tools_dir() -> Path:
    return Path(os.environ.get("CVG_BIN") or Path(sys.executable).parent)


def install_servers() -> Path:
    """The pinned servers, as the false-denial suite installs them; a failure is the
    test's failure, never a skip."""
    p = subprocess.run(
        [sys.executable, str(INSTALL)], capture_output=True, text=True, timeout=1800, check=False
    )
    assert p.returncode == 0, f"installing the MCP servers failed: {p.stderr.strip()}"
    return Path(p.stdout.strip())


def read(path: Path) -> str | None:
    """The file's text, or None when it is not there (a call that failed)."""
    try:
        return path.read_text()
    except OSError:
        return None


def bare_git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout


class Day:
    """The home, the client's config, and every answer that was not what the harness
    itself computed."""

    def __init__(self, tmp: Path, servers: Path) -> None:
        self.tools = tools_dir()
        assert (self.tools / "cvg-wrap").is_file(), f"no cvg-wrap in {self.tools}"
        self.home = tmp / "home"
        self.project = self.home / "project"
        self.repo = self.home / "repo"
        self.notes = self.home / "notes"
        self.memory_file = self.home / "memory" / "graph.jsonl"
        self.log = tmp / "server-stderr.log"
        self.wrong: list[str] = []
        self.make_home()
        node = servers / "node" / "node_modules" / "@modelcontextprotocol"
        filesystem = str(node / "server-filesystem" / "dist" / "index.js")
        self.entries: dict[str, dict[str, Any]] = {
            "time": {
                "command": str(servers / "py" / "mcp-server-time" / "bin" / "mcp-server-time"),
                "args": ["--local-timezone", "UTC"],
            },
            "git": {
                "command": str(servers / "py" / "mcp-server-git" / "bin" / "mcp-server-git"),
                "args": ["--repository", str(self.repo)],
            },
            "files": {"command": "node", "args": [filesystem, str(self.project)]},
            "memory": {
                "command": "node",
                "args": [str(node / "server-memory" / "dist" / "index.js")],
                "env": {"MEMORY_FILE_PATH": str(self.memory_file)},
            },
            "home": {"command": "node", "args": [filesystem, str(self.home)]},
        }
        self.config = self.home / ".config" / "Claude" / "claude_desktop_config.json"
        self.config.parent.mkdir(parents=True)
        self.config.write_text(
            json.dumps({"mcpServers": self.entries, "globalShortcut": ""}, indent=2) + "\n"
        )
        # A config nobody wraps: nothing cvg-wrap does to the other may touch it.
        self.other = self.home / ".cursor" / "mcp.json"
        self.other.parent.mkdir()
        self.other.write_text(
            '{\n  // the same time server, never wrapped\n  "mcpServers": {"time": '
            + json.dumps(self.entries["time"])
            + ",},\n}\n"
        )
        past = time.time() - 86400
        os.utime(self.other, (past, past))

    def make_home(self) -> None:
        ssh = self.home / ".ssh"
        ssh.mkdir(parents=True, mode=0o700)
        (ssh / "id_rsa").write_text(SSH_CANARY + "\n")
        (ssh / "id_rsa").chmod(0o600)
        (self.home / ".env").write_text(HOME_ENV_CANARY + "\n")
        for rel, body in (
            ("docs/guide.md", "# Guide\n\nRun it.\n"),
            ("docs/notes.txt", "todo: tag v1.2\ntodo: write the changelog\n"),
            ("src/app.py", "print('hello')\n"),
            ("src/util.py", "ANSWER = 42\n"),
            (".env", PROJECT_ENV_CANARY + "\n"),
        ):
            (self.project / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.project / rel).write_text(body)
        self.notes.mkdir()
        (self.notes / "todo.txt").write_text("buy milk\n")
        self.memory_file.parent.mkdir()
        self.repo.mkdir()
        for args in (
            ["init", "-q", "-b", "main"],
            ["config", "user.name", "Ada"],
            ["config", "user.email", "ada@example.com"],
        ):
            bare_git(self.repo, *args)
        (self.repo / "README.md").write_text("# lib\n")
        (self.repo / "old.txt").write_text("the old way\n")
        bare_git(self.repo, "add", ".")
        bare_git(self.repo, "commit", "-q", "-m", "start")
        bare_git(self.repo, "checkout", "-q", "-b", "cleanup")
        bare_git(self.repo, "rm", "-q", "old.txt")
        bare_git(self.repo, "commit", "-q", "-m", "drop the old way")
        bare_git(self.repo, "checkout", "-q", "main")

    @property
    def env(self) -> dict[str, str]:
        return {
            "PATH": f"{self.tools}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
        }

    def wrap(self, *args: str, config: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.tools / "cvg-wrap"), *args, str(config or self.config)],
            env=self.env, cwd=self.home, capture_output=True, text=True, timeout=900,
            check=False,
        )  # fmt: skip

    def status(self) -> dict[str, dict[str, Any]]:
        p = self.wrap("status", "--json")
        assert p.returncode == 0, p.stderr
        return {r["server"]: r for r in json.loads(p.stdout)["servers"]}

    def check(self, ok: bool, what: str) -> None:
        if not ok:
            self.wrong.append(what)

    def server_log(self) -> str:
        return self.log.read_text()[-4000:] if self.log.exists() else ""


Work = Callable[["Call"], Awaitable[None]]


class Call:
    """One server's session: each tool call's text, every error and every answer the
    oracle disagrees with noted in the day."""

    def __init__(self, day: Day, name: str, session: ClientSession, phase: str) -> None:
        self.day, self.name, self.s, self.phase = day, name, session, phase

    async def __call__(self, tool: str, args: dict[str, Any], *, fails: bool = False) -> str:
        r = await self.s.call_tool(tool, args)
        out = " ".join(c.text for c in r.content if c.type == "text")
        where = f"{self.phase}: {self.name}: {tool} {json.dumps(args)}"
        for canary in CANARIES:
            self.day.check(canary not in out, f"{where}: a canary in the answer")
        if fails:
            self.day.check(r.isError or "denied" in out.lower(), f"{where}: not refused: {out}")
        else:
            self.day.check(not r.isError, f"{where}: error: {out[-500:]}")
        return out

    def expect(self, ok: bool, what: str) -> None:
        self.day.check(ok, f"{self.phase}: {self.name}: {what}")


async def run_sessions(
    day: Day, phase: str, cwd: Path, works: dict[str, Work], entries: dict[str, Any]
) -> None:
    """Each server in ``works`` in its own session, all at once, as a client starts
    them: the entry's command and args, its env over the client's own, in ``cwd``."""

    async def one(name: str, work: Work) -> None:
        e = entries[name]
        params = StdioServerParameters(
            command=e["command"], args=e.get("args", []), env={**day.env, **e.get("env", {})},
            cwd=str(cwd),
        )  # fmt: skip
        try:
            with day.log.open("a") as log:
                log.write(f"{datetime.now(UTC):%T} {phase}: {name}: start\n")
                log.flush()
                async with AsyncExitStack() as stack:
                    read, write = await stack.enter_async_context(stdio_client(params, errlog=log))
                    s = await stack.enter_async_context(ClientSession(read, write))
                    await s.initialize()
                    await work(Call(day, name, s, phase))
        except Exception as e:  # noqa: BLE001 - a server that went away is a wrong answer
            day.wrong.append(f"{phase}: {name}: session failed: {e!r}")

    async with anyio.create_task_group() as tg:
        for name, work in works.items():
            tg.start_soon(one, name, work)


# The servers' work. ``session`` is 1 and 2 while learning, 3 and 4 enforced (new inputs).


def time_work(session: int, gap: float = 0.0) -> Work:
    zones = [("Europe/Paris", "Asia/Tokyo", "14:30", "America/New_York")]
    if session > 2:
        zones.append(("Australia/Sydney", "Europe/London", "09:00", "Asia/Kolkata"))

    async def work(c: Call) -> None:
        for n, (now_zone, source, hhmm, target) in enumerate(zones):
            out = json.loads(await c("get_current_time", {"timezone": now_zone}))
            said = datetime.fromisoformat(out["datetime"])
            c.expect(
                abs(said - datetime.now(ZoneInfo(now_zone))) < timedelta(minutes=2)
                and said.utcoffset() == datetime.now(ZoneInfo(now_zone)).utcoffset(),
                f"the time in {now_zone}: {out}",
            )
            if n == 0 and gap:
                await anyio.sleep(gap)
            out = json.loads(
                await c(
                    "convert_time",
                    {"source_timezone": source, "time": hhmm, "target_timezone": target},
                )
            )
            h, m = map(int, hhmm.split(":"))
            start = datetime.now(ZoneInfo(source)).replace(
                hour=h, minute=m, second=0, microsecond=0
            )
            want = start.astimezone(ZoneInfo(target))
            got = datetime.fromisoformat(out["target"]["datetime"])
            c.expect(got == want and got.utcoffset() == want.utcoffset(), f"{hhmm} {source}: {out}")

    return work


def porcelain_paths(repo: Path) -> set[str]:
    return {line[3:] for line in bare_git(repo, "status", "--porcelain").splitlines()}


def status_paths(out: str) -> set[str]:
    """The paths git's long status names (tracked changes and untracked files)."""
    paths = set()
    for line in out.splitlines():
        if not line.startswith("\t"):
            continue
        m = re.match(r"\t(?:[a-z ]+:\s+)?(.+)$", line)
        if m:
            paths.add(m.group(1).strip())
    return paths


def git_work(day: Day, session: int, gap: float = 0.0) -> Work:
    repo = str(day.repo)

    async def status(c: Call) -> None:
        out = await c("git_status", {"repo_path": repo})
        branch = bare_git(day.repo, "rev-parse", "--abbrev-ref", "HEAD").strip()
        c.expect(f"On branch {branch}" in out, f"git_status names another branch: {out}")
        want = porcelain_paths(day.repo)
        c.expect(status_paths(out) == want, f"git_status {status_paths(out)} != bare {want}")

    async def work(c: Call) -> None:
        await status(c)
        if gap:
            await anyio.sleep(gap)
        out = await c("git_log", {"repo_path": repo, "max_count": 3})
        subjects = bare_git(day.repo, "log", "-3", "--format=%s").splitlines()
        c.expect(all(s in out for s in subjects), f"git_log lacks {subjects}: {out}")
        out = await c("git_branch", {"repo_path": repo, "branch_type": "local"})
        c.expect("cleanup" in out and "main" in out, f"git_branch: {out}")
        if session == 1:
            return
        out = await c("git_diff_unstaged", {"repo_path": repo})
        added = [ln for ln in bare_git(day.repo, "diff").splitlines() if ln.startswith("+")]
        c.expect(added and all(ln in out for ln in added), f"git_diff_unstaged: {out}")
        if session < 3:
            return
        old = day.repo / "old.txt"
        await c("git_checkout", {"repo_path": repo, "branch_name": "cleanup"})
        head = bare_git(day.repo, "rev-parse", "--abbrev-ref", "HEAD").strip()
        c.expect(
            not old.exists() and head == "cleanup", f"checkout cleanup: {head}, {old.exists()}"
        )
        await status(c)
        await c("git_checkout", {"repo_path": repo, "branch_name": "main"})
        head = bare_git(day.repo, "rev-parse", "--abbrev-ref", "HEAD").strip()
        back = read(old) == "the old way\n"
        c.expect(back and head == "main", f"checkout main: {head}, old.txt back: {back}")
        await status(c)

    return work


def listing_names(out: str) -> set[str]:
    return {m.group(1) for m in re.finditer(r"\[(?:FILE|DIR)\] (\S+)", out)}


def search_paths(out: str) -> set[str]:
    return {line.strip() for line in out.splitlines() if line.strip().startswith("/")}


async def canaries(c: Call, day: Day) -> None:
    for path in (day.home / ".ssh" / "id_rsa", day.home / ".env", day.project / ".env"):
        await c("read_text_file", {"path": str(path)}, fails=True)


def files_work(day: Day, session: int, gap: float = 0.0) -> Work:
    p = day.project

    async def work(c: Call) -> None:
        out = await c("read_text_file", {"path": str(p / "docs" / "guide.md")})
        c.expect(out == (p / "docs" / "guide.md").read_text(), f"guide.md: {out!r}")
        if gap:
            await anyio.sleep(gap)
        out = await c("list_directory", {"path": str(p / "docs")})
        c.expect(listing_names(out) == set(os.listdir(p / "docs")), f"list docs: {out}")
        out = await c("search_files", {"path": str(p), "pattern": "**/*.py"})
        c.expect(search_paths(out) == {str(f) for f in p.rglob("*.py")}, f"search *.py: {out}")
        if session >= 2:
            out_dir = p / ("out" if session == 2 else f"build{session}/reports")
            await c("create_directory", {"path": str(out_dir)})
            await c(
                "write_file", {"path": str(out_dir / "summary.md"), "content": f"# {session}\n"}
            )
            c.expect(read(out_dir / "summary.md") == f"# {session}\n", "write_file")
            notes = p / "docs" / "notes.txt"
            first = notes.read_text().splitlines()[0]
            new = f"done {session}: tag v1.2"
            await c(
                "edit_file", {"path": str(notes), "edits": [{"oldText": first, "newText": new}]}
            )
            c.expect((read(notes) or "").startswith(new + "\n"), f"edit_file: {read(notes)!r}")
            moved = p / "docs" / f"summary-{session}.md"
            await c("move_file", {"source": str(out_dir / "summary.md"), "destination": str(moved)})
            c.expect(moved.exists() and not (out_dir / "summary.md").exists(), "move_file")
            out = await c("list_directory", {"path": str(out_dir)})
            c.expect(listing_names(out) == set(os.listdir(out_dir)), f"list {out_dir}: {out}")
        if session >= 3:
            app = p / "src" / "app.py"
            before = read(app) or ""
            edit = {"oldText": before.strip(), "newText": f"print('day {session}')"}
            await c("edit_file", {"path": str(app), "edits": [edit]})
            c.expect(read(app) == f"print('day {session}')\n", f"edit app.py: {read(app)!r}")
            out = await c("search_files", {"path": str(p), "pattern": "**/*.md"})
            c.expect(search_paths(out) == {str(f) for f in p.rglob("*.md")}, f"search *.md: {out}")
            out = await c("read_multiple_files", {"paths": [str(app), str(p / "src" / "util.py")]})
            c.expect("ANSWER = 42" in out and f"day {session}" in out, f"read_multiple: {out}")
            await canaries(c, day)

    return work


def home_work(day: Day, session: int, gap: float = 0.0) -> Work:
    h, notes = day.home, day.notes

    async def work(c: Call) -> None:
        out = await c("list_directory", {"path": str(h)})
        c.expect(listing_names(out) == set(os.listdir(h)), f"list home: {out}")
        if gap:
            await anyio.sleep(gap)
        out = await c("read_text_file", {"path": str(notes / "todo.txt")})
        c.expect(out == (notes / "todo.txt").read_text(), f"todo.txt: {out!r}")
        day_note = notes / f"day{session}.txt"
        await c("write_file", {"path": str(day_note), "content": f"day {session}\n"})
        c.expect(read(day_note) == f"day {session}\n", "write_file in notes")
        out = await c("search_files", {"path": str(notes), "pattern": "**/*.txt"})
        c.expect(search_paths(out) == {str(f) for f in notes.rglob("*.txt")}, f"search: {out}")
        if session >= 3:
            archive = notes / f"archive{session}"
            await c("create_directory", {"path": str(archive)})
            await c("move_file", {"source": str(day_note), "destination": str(archive / "d.txt")})
            c.expect(read(archive / "d.txt") == f"day {session}\n", "move to archive")
            out = await c("list_directory", {"path": str(day.repo)})
            c.expect(listing_names(out) == set(os.listdir(day.repo)), f"list repo: {out}")
            await canaries(c, day)

    return work


PEOPLE = {1: "Ada", 2: "Bob", 3: "Eve", 4: "Kim"}


def memory_entities(day: Day) -> set[str]:
    if not day.memory_file.exists():
        return set()
    lines = day.memory_file.read_text().splitlines()
    return {j["name"] for j in map(json.loads, filter(None, lines)) if j.get("type") == "entity"}


def memory_work(day: Day, session: int, gap: float = 0.0) -> Work:
    me = PEOPLE[session]

    async def work(c: Call) -> None:
        earlier = memory_entities(day)
        graph = json.loads(await c("read_graph", {}))
        names = {e["name"] for e in graph["entities"]}
        c.expect(names == earlier, f"read_graph {names} != the file's {earlier}")
        c.expect({PEOPLE[k] for k in range(1, session)} <= names, f"earlier sessions: {names}")
        if gap:
            await anyio.sleep(gap)
        entity = {"name": me, "entityType": "person", "observations": [f"session {session}"]}
        await c("create_entities", {"entities": [entity]})
        if session > 1:
            relation = {"from": me, "to": PEOPLE[session - 1], "relationType": "follows"}
            await c("create_relations", {"relations": [relation]})
            obs = [{"entityName": "Ada", "contents": [f"seen in {session}"]}]
            await c("add_observations", {"observations": obs})
        out = json.loads(await c("search_nodes", {"query": f"session {session}"}))
        c.expect([e["name"] for e in out["entities"]] == [me], f"search_nodes: {out}")
        c.expect(me in memory_entities(day), f"{me} not in the memory file")
        if session >= 3:
            out = json.loads(await c("open_nodes", {"names": ["Ada", me]}))
            ada = next((e for e in out["entities"] if e["name"] == "Ada"), {})
            c.expect(f"seen in {session}" in ada.get("observations", []), f"open_nodes: {out}")

    return work


def works(day: Day, session: int, gap: float = 0.0) -> dict[str, Work]:
    return {
        "time": time_work(session, gap),
        "git": git_work(day, session, gap),
        "files": files_work(day, session, gap),
        "memory": memory_work(day, session, gap),
        "home": home_work(day, session, gap),
    }


def bare_canaries(day: Day) -> None:
    """Without cvg the home's filesystem server reads every canary: what it is refused
    later is refused by the sandbox."""

    async def escape(c: Call) -> None:
        for path, canary in (
            (day.home / ".ssh" / "id_rsa", SSH_CANARY),
            (day.home / ".env", HOME_ENV_CANARY),
            (day.project / ".env", PROJECT_ENV_CANARY),
        ):
            r = await c.s.call_tool("read_text_file", {"path": str(path)})
            out = " ".join(x.text for x in r.content if x.type == "text")
            assert canary in out, f"bare, the home server does not read {path}: {out}"

    anyio.run(run_sessions, day, "bare", day.home, {"home": escape}, day.entries)


def run_records(day: Day) -> list[dict[str, Any]]:
    runs = day.home / ".local" / "state" / "cvg" / "runs"
    return [json.loads(p.read_text()) for p in sorted(runs.glob("*.json"))]


def git_config_attack(day: Day) -> tuple[bool, bool]:
    """Whether a process under the git server's generated policy can set
    core.fsmonitor in the repository's .git/config, which the user's next bare ``git
    status`` runs outside the sandbox: (bare, confined). The oracle is the file."""
    config = day.repo / ".git" / "config"
    argv = ["/usr/bin/git", "-C", str(day.repo), "config", "core.fsmonitor", "touch pwned"]
    policy = day.home / ".config" / "cvg" / "policies" / "git.yaml"
    wrote = []
    for prefix in ([], [str(day.tools / "cvg-run"), "-p", str(policy), "--"]):
        before = config.read_bytes()
        subprocess.run([*prefix, *argv], env=day.env, capture_output=True, timeout=120, check=False)
        wrote.append(config.read_bytes() != before)
        config.write_bytes(before)
    return wrote[0], wrote[1]


class Week:
    """What the day left: the answers the oracles disagreed with, the run records, the
    status after, and the configs before and after restore."""

    def __init__(self, tmp: Path) -> None:
        self.day = day = Day(tmp, install_servers())
        original = day.config.read_bytes()
        other_bytes, other_mtime = day.other.read_bytes(), day.other.stat().st_mtime_ns
        bare_canaries(day)

        done = day.wrap("learn")
        assert done.returncode == 0, done.stderr
        for session in (1, 2):
            # The user works in the repository between sessions.
            (day.repo / f"scratch{session}.txt").write_text("scratch\n")
            with (day.repo / "README.md").open("a") as f:
                f.write(f"edited before session {session}\n")
            entries = json.loads(day.config.read_text())["mcpServers"]
            anyio.run(
                run_sessions, day, f"learning {session}", day.home, works(day, session), entries
            )
            # One observation per session, written when the server exits.
            seen = {s: row["observations"] for s, row in day.status().items() if s in SERVERS}
            day.check(seen == dict.fromkeys(SERVERS, session), f"after session {session}: {seen}")

        done = day.wrap("enforce", "--yes")
        self.enforce = done
        self.enforce_notes = done.stderr
        entries = json.loads(day.config.read_text())["mcpServers"]
        self.enforced = {s for s in SERVERS if entries[s]["command"].endswith("/cvg-run")}
        (day.repo / "scratch3.txt").write_text("scratch\n")
        # The servers enforce left learning are not part of the enforced days.
        enforced_works = {
            n: w for n, w in works(day, 3, IDLE_GAP).items() if n in self.enforced
        }  # fmt: skip
        anyio.run(run_sessions, day, "enforced 3", day.home, enforced_works, entries)
        later = {n: w for n, w in works(day, 4).items() if n in self.enforced}
        anyio.run(run_sessions, day, "enforced 4 from /", Path("/"), later, entries)
        runs = day.home / ".local" / "state" / "cvg" / "runs"
        self.records = [json.loads(p.read_text()) for p in sorted(runs.glob("*.json"))]
        self.status = day.status()
        self.git_config_attack = git_config_attack(day)

        self.restored = day.wrap("restore")
        self.restored_bytes = day.config.read_bytes() == original
        self.other_restore = day.wrap("restore", config=day.other)
        self.other_untouched = (day.other.read_bytes(), day.other.stat().st_mtime_ns) == (
            other_bytes, other_mtime,
        )  # fmt: skip

    @property
    def canary_paths(self) -> set[str]:
        h = self.day.home
        return {str(h / ".ssh" / "id_rsa"), str(h / ".env"), str(self.day.project / ".env")}


@pytest.fixture(scope="module")
def week(tmp_path_factory: pytest.TempPathFactory) -> Week:
    return Week(tmp_path_factory.mktemp("week"))


# Servers whose learned policy fails their own sessions, and why: enforce refuses them in
# one line each and they stay learning. A test fails as soon as one is enforced.
ENFORCE_REFUSED = {
    "home": "a filesystem server given the whole home lists it: cvg-generate never grants "
    "${HOME} as a whole (no search of a whole home for secrets to deny is complete), so "
    "its policy refuses the listing its own sessions made",
}
ENFORCED = tuple(s for s in SERVERS if s not in ENFORCE_REFUSED)


@pytest.mark.parametrize("server", SERVERS)
def test_every_answer_is_what_the_harness_computed_bare(week: Week, server: str) -> None:
    wrong = [w for w in week.day.wrong if f": {server}: " in w]
    assert not wrong, "\n".join(wrong) + "\n" + week.day.server_log()


def test_enforce_refuses_only_the_policies_that_fail_their_own_sessions(week: Week) -> None:
    """Each learned policy is judged against its own sessions before anything is
    written; one that refuses a call they made is refused in one line and the server
    keeps learning. The rest are enforced."""
    assert week.enforced == set(ENFORCED), week.enforce.stderr
    assert week.enforce.returncode == (1 if ENFORCE_REFUSED else 0), week.enforce.stderr
    for name in ENFORCE_REFUSED:
        lines = [ln for ln in week.enforce.stderr.splitlines() if f"cvg-wrap: {name}: " in ln]
        refused = [ln for ln in lines if "the policy refuses" in ln]
        assert len(refused) == 1 and refused[0].endswith("left as it is"), lines


def test_no_canary_reaches_the_client(week: Week) -> None:
    """Apart from each server's answers: a leak is never one of the known failures."""
    leaks = [w for w in week.day.wrong if "a canary in the answer" in w or "not refused" in w]
    assert not leaks, "\n".join(leaks)


def test_every_session_left_one_observation(week: Week) -> None:
    named = [w for w in week.day.wrong if not any(f": {s}: " in w for s in SERVERS)]
    assert not named, named


def known_cause(week: Week, server: str, d: dict[str, Any]) -> str | None:
    """Why a false denial is one of the failures not fixed yet, or None."""
    if server == "files" and d["mechanism"] == "seccomp" and d["syscall"] == "openat":
        return (
            "an openat of the filesystem server, refused by a seccomp argument check, its "
            "path not decoded in the record"
        )
    return None


def false_denials(week: Week) -> list[tuple[str, dict[str, Any]]]:
    return [
        (Path(r["policy_path"]).stem, d)
        for r in week.records
        for d in r.get("denials", [])
        if d["mechanism"] != "none" and not d.get("expected")
        and d.get("path") not in week.canary_paths
    ]  # fmt: skip


def test_the_sandbox_refused_the_canaries_and_nothing_else(week: Week) -> None:
    assert len(week.records) == 2 * len(ENFORCED), [r.get("policy_path") for r in week.records]
    false = [(s, d) for s, d in false_denials(week) if known_cause(week, s, d) is None]
    assert not false, "false denials:\n" + "\n".join(map(str, false))
    # The project's .env, which the project's server was asked for and reads bare, the
    # sandbox refused (the server itself refuses paths outside its root unasked).
    refused = {
        d.get("path") for r in week.records if r["policy_path"].endswith("/files.yaml")
        for d in r.get("denials", [])
    }  # fmt: skip
    assert str(week.day.project / ".env") in refused, refused
    assert all(week.status[s]["runs"] == 2 for s in ENFORCED), week.status


def test_no_false_denial_of_a_known_cause(week: Week) -> None:
    known = {(s, known_cause(week, s, d)) for s, d in false_denials(week)} - {
        (s, None) for s in SERVERS
    }
    assert not known, "\n".join(map(str, sorted(known)))


def test_the_git_servers_policy_keeps_the_repository_config(week: Week) -> None:
    bare, confined = week.git_config_attack
    assert bare, "bare, git config does not write .git/config: the attack proves nothing"
    assert not confined, "under the git server's policy, core.fsmonitor was written"


def test_restore_is_byte_identical_and_the_other_config_untouched(week: Week) -> None:
    assert week.restored.returncode == 0, week.restored.stderr
    assert week.restored_bytes
    assert week.other_restore.returncode == 0, week.other_restore.stderr
    assert "nothing to restore" in week.other_restore.stderr, week.other_restore.stderr
    assert week.other_untouched
