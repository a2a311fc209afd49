"""Drive cvg-mcp (and confined MCP servers) with the official SDK's real client.

Every test talks to a real server process over stdio through
``mcp.client.stdio.stdio_client`` and ``ClientSession``: no in-process shortcuts.
The server runs as root, or as the unprivileged user ``cvgtest`` (through
``setpriv``, on an interpreter of this version that user can run: pytest's own may
live under /root, mode 0700, so the workspace's sources and site-packages are given
on PYTHONPATH instead, or a world-readable copy of them when the clone itself sits
where that user cannot look).

Oracles are outside the code under test: files, the process table (/proc), and the
output of the same command run with no sandbox.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import sys
import sysconfig
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import yaml
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult

import cvg_testing
from cvg_run.planning import default_policy_bytes

WORKSPACE = Path(__file__).resolve().parents[3]
SITE = sysconfig.get_paths()["purelib"]
SERVER_CODE = "import sys; from cvg_mcp.cli import main; sys.exit(main(sys.argv[1:]))"
CVG_RUN_CODE = "import sys; from cvg_run.cli import main; sys.exit(main(sys.argv[1:]))"


def _anyone() -> pwd.struct_passwd:
    return cvg_testing.ensure_unpriv_user() if os.geteuid() == 0 else pwd.getpwuid(os.getuid())


def system_python() -> str:
    """An interpreter of this Python version that every identity here can run."""
    return cvg_testing.unpriv_python(_anyone())


def pythonpath() -> str:
    """What an interpreter other than pytest's needs to import the workspace."""
    staged = cvg_testing.import_path_for(_anyone())
    if staged is not None:
        return staged
    srcs = sorted(str(p) for p in (WORKSPACE / "packages").glob("*/src"))
    return os.pathsep.join([*srcs, SITE])


def tool_site() -> str:
    """The one directory a confined tool adds to its path to import mcp."""
    return cvg_testing.import_path_for(_anyone()) or SITE


@dataclass
class World(cvg_testing.Tree):
    """A per-test directory tree every identity can use."""

    user: pwd.struct_passwd | None  # None: as root (ourselves)

    policies = cvg_testing.Under("policies")

    def env(self) -> dict[str, str]:
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", **self.xdg_env(), "LANG": "C.UTF-8"}
        if self.user is not None:
            env["PYTHONPATH"] = pythonpath()
        return env

    def policy(self, name: str = "default", **sections: Any) -> Path:
        """cvg-run's default policy with ``sections`` merged in (lists replace)."""
        data = yaml.safe_load(default_policy_bytes())
        for key, value in sections.items():
            if isinstance(value, dict) and isinstance(data.get(key), dict):
                data[key].update(value)
            else:
                data[key] = value
        path = self.policies / f"{name}.yaml"
        path.write_text(yaml.safe_dump(data))
        path.chmod(0o644)
        return path

    def as_user(self, argv: list[str]) -> list[str]:
        """``argv`` (which must start with an interpreter every user can run) run as
        this world's user."""
        if self.user is None:
            return argv
        u = self.user
        return ["setpriv", f"--reuid={u.pw_uid}", f"--regid={u.pw_gid}", "--clear-groups",
                "--", *argv]  # fmt: skip

    def own(self, path: Path) -> None:
        if self.user is not None:
            os.chown(path, self.user.pw_uid, self.user.pw_gid)

    def server_argv(self, *flags: str) -> list[str]:
        python = sys.executable if self.user is None else system_python()
        return self.as_user(
            [python, "-c", SERVER_CODE, "--policies", str(self.policies), "--cwd", str(self.cwd),
             *flags]
        )  # fmt: skip


def make_world(user: pwd.struct_passwd | None) -> World:
    readonly = ("policies", "outside")
    return World(
        cvg_testing.tree_root("cvg-mcp-test-", *readonly, mode=0o755, readonly=readonly), user
    )


def remove_world(world: World) -> None:
    shutil.rmtree(world.root, ignore_errors=True)


@asynccontextmanager
async def session(
    argv: list[str], env: dict[str, str], cwd: str | None = None
) -> AsyncIterator[ClientSession]:
    """An initialized SDK client session with the stdio server ``argv``."""
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=cwd)
    with open(os.devnull, "w") as quiet:
        async with (
            stdio_client(params, errlog=quiet) as (read, write),
            ClientSession(read, write) as s,
        ):
            await s.initialize()
            yield s


@asynccontextmanager
async def cvg_mcp(world: World, *flags: str) -> AsyncIterator[ClientSession]:
    async with session(world.server_argv(*flags), world.env(), str(world.cwd)) as s:
        yield s


def in_session(body: Callable[[ClientSession], Awaitable[None]], world: World, *flags: str) -> None:
    """Run ``body`` with a fresh cvg-mcp session on ``world``, started with ``flags``."""

    async def main() -> None:
        async with cvg_mcp(world, *flags) as s:
            await body(s)

    anyio.run(main)


def answer(result: CallToolResult) -> dict[str, Any]:
    """The structured answer of a successful call."""
    assert not result.isError, result.content[0].text if result.content else result
    assert isinstance(result.structuredContent, dict)
    # The text content carries the same answer, for clients that read only text.
    assert json.loads(result.content[0].text) == result.structuredContent  # type: ignore[union-attr]
    return result.structuredContent


def refusal(result: CallToolResult) -> str:
    """The one-line message of a refused call."""
    assert result.isError, result.structuredContent
    text = result.content[0].text  # type: ignore[union-attr]
    assert isinstance(text, str)
    return text


# --- the process table ----------------------------------------------------------------


def pids_with(marker: str) -> list[int]:
    """Processes whose command line contains ``marker``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(int(name))
    return found


def wait_for(predicate: Callable[[], bool], seconds: float = 15.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0
