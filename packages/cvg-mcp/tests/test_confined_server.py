"""Someone else's MCP server, confined: ``cvg-run -p server.yaml -- python3 server.py``
driven by the SDK's real client through the sandbox.

The server (fixtures/files_server.py, FastMCP over stdio) reads files on request.
Under its policy it reads the file it was granted; asked for ``~/.ssh/id_rsa`` (a
canary in a temporary HOME) it is refused by the sandbox, and it stays up. The same
server unconfined reads the canary: that is the oracle that the refusal is the
sandbox's doing.
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import anyio
from mcphelp import CVG_RUN_CODE, World, session, system_python, tool_site

FIXTURE = Path(__file__).parent / "fixtures" / "files_server.py"
CANARY = "-----BEGIN OPENSSH PRIVATE KEY----- canary\n"


def _setup(world: World) -> tuple[Path, Path]:
    server = world.cwd / "files_server.py"
    shutil.copy(FIXTURE, server)
    server.chmod(0o644)
    granted = world.root / "outside" / "granted.txt"
    granted.write_text("granted text\n")
    granted.chmod(0o644)
    ssh = world.home / ".ssh"
    ssh.mkdir(mode=0o700)
    key = ssh / "id_rsa"
    key.write_text(CANARY)
    key.chmod(0o600)
    world.own(ssh)
    world.own(key)
    # The interpreter may live outside /usr (a CI runner's tool cache).
    prefix = str(Path(system_python()).resolve().parents[1])
    extra = [] if prefix.startswith("/usr") else [prefix]
    read = ["/usr", "/etc", "${CWD}", tool_site(), *extra, str(granted), "/dev/urandom"]
    world.policy(
        "server",
        filesystem={
            "read": [*read, "/dev/zero"],
            "write": ["${SCRATCH}", "/dev/null"],
            "execute": ["/usr", "/bin", "/lib", "/lib64", *extra],
        },
        # The tool knows where home is; it may not read it.
        environment={"set": {"PATH": "/usr/bin:/bin", "HOME": "${HOME}"}, "pass": ["LANG"]},
    )
    return server, granted


def _cvg_run(world: World, *args: str) -> list[str]:
    python = sys.executable if world.user is None else system_python()
    return world.as_user([python, "-c", CVG_RUN_CODE, *args])


def test_a_confined_fastmcp_server_reads_what_it_may_and_not_the_ssh_key(world: World) -> None:
    server, granted = _setup(world)
    tool = [system_python(), str(server), tool_site()]
    confined = _cvg_run(world, "-p", str(world.policies / "server.yaml"), "--", *tool)

    async def body() -> None:
        # Oracle: unconfined, the same server reads the canary.
        async with session(world.as_user(tool), world.env(), str(world.cwd)) as s:
            r = await s.call_tool("read_file", {"path": "~/.ssh/id_rsa"})
            assert not r.isError and r.content[0].text == CANARY  # type: ignore[union-attr]

        async with session(confined, world.env(), str(world.cwd)) as s:
            names = {t.name for t in (await s.list_tools()).tools}
            assert names == {"read_file", "whoami"}
            before = (await s.call_tool("whoami", {})).content[0].text  # type: ignore[union-attr]
            r = await s.call_tool("read_file", {"path": str(granted)})
            assert not r.isError and r.content[0].text == "granted text\n"  # type: ignore[union-attr]
            r = await s.call_tool("read_file", {"path": "~/.ssh/id_rsa"})
            text = r.content[0].text  # type: ignore[union-attr]
            assert r.isError and "Permission denied" in text and "canary" not in text, text
            # The server is still up, the same process, and still serves.
            after = (await s.call_tool("whoami", {})).content[0].text  # type: ignore[union-attr]
            assert after == before
            uid = os.geteuid() if world.user is None else world.user.pw_uid
            assert after.split()[0] == str(uid)
            r = await s.call_tool("read_file", {"path": str(granted)})
            assert r.content[0].text == "granted text\n"  # type: ignore[union-attr]

    anyio.run(body)


def test_cvg_run_passes_stdio_through_untouched_and_unbuffered(world: World) -> None:
    world.policy()
    policy = str(world.policies / "default.yaml")
    # Every byte value, CR LF and NUL included, both ways through the sandbox.
    data = bytes(range(256)) * 256 + b"\r\n\0\n"
    done = subprocess.run(
        _cvg_run(world, "-p", policy, "--", "/usr/bin/cat"),
        input=data,
        capture_output=True,
        env=world.env(),
        cwd=world.cwd,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout == data, done.stderr

    # Unbuffered: each line comes back while the tool is still running, before
    # any more input and long before stdin closes.
    proc = subprocess.Popen(
        _cvg_run(world, "-p", policy, "--", "/usr/bin/cat"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=world.env(),
        cwd=world.cwd,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for i in range(3):
            line = f'{{"jsonrpc": "2.0", "id": {i}}}\n'.encode()
            proc.stdin.write(line)
            proc.stdin.flush()
            assert _read_within(proc.stdout.fileno(), len(line), 10) == line
            assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()


def _read_within(fd: int, size: int, seconds: float) -> bytes:
    got = b""
    end = time.monotonic() + seconds
    while len(got) < size and time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], max(0.0, end - time.monotonic()))
        if ready:
            chunk = os.read(fd, size - len(got))
            if not chunk:
                break
            got += chunk
    return got
