"""run_sandboxed through the SDK's real client: runs, refusals, denials, output caps.

Each denial test first shows, with no sandbox, that the same identity can do what
the sandbox then refuses.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import anyio
from mcp import ClientSession
from mcphelp import World, answer, in_session, refusal, rss_kb, session

RUN_ID = re.compile(r"[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}")


def _secret(world: World) -> Path:
    secret = world.root / "outside" / "secret.txt"
    secret.write_text("s3cret-canary\n")
    secret.chmod(0o600)
    world.own(secret)
    # Oracle: with no sandbox, this identity reads it.
    plain = subprocess.run(world.as_user(["cat", str(secret)]), capture_output=True)
    assert plain.stdout == b"s3cret-canary\n", plain.stderr
    return secret


def test_runs_a_command_and_the_sandbox_refuses_a_file(world: World) -> None:
    world.policy()
    secret = _secret(world)

    async def body(s: ClientSession) -> None:
        tools = {t.name for t in (await s.list_tools()).tools}
        assert {"run_sandboxed", "check_policy", "generate_policy", "explain_denials"} <= tools
        a = answer(
            await s.call_tool(
                "run_sandboxed",
                {
                    "policy": "default",
                    "argv": ["sh", "-c", "cat; echo out; echo err >&2; exit 3"],
                    "stdin": "hello ",
                },
            )
        )
        assert (a["status"], a["meaning"]) == (3, "exited")
        assert (a["stdout"], a["stderr"]) == ("hello out\n", "err\n")
        assert RUN_ID.fullmatch(a["run_id"])
        cat = {"policy": "default", "argv": ["cat", str(secret)]}
        a = answer(await s.call_tool("run_sandboxed", cat))
        assert a["status"] == 1 and "Permission denied" in a["stderr"]
        assert "s3cret" not in a["stdout"]

    in_session(body, world)


def test_a_traced_denial_is_structured_in_the_result(world: World) -> None:
    world.policy()
    secret = _secret(world)

    async def body(s: ClientSession) -> None:
        a = answer(
            await s.call_tool(
                "run_sandboxed",
                {"policy": "default", "argv": ["cat", str(secret)], "trace": True},
            )
        )
        assert a["status"] == 1 and a["traced"] is True
        mine = [d for d in a["denials"] if d.get("path") == str(secret)]
        assert mine, a
        d = mine[0]
        assert d["refused_by"] == "cvg sandbox"
        assert d["mechanism"].startswith("landlock") and d["rule"] == "filesystem.read"
        # The smallest fix names the exact file (cvg-explain's answer).
        assert str(secret) in d["fix"], d
        assert any("refused" in n for n in a["notes"])

    in_session(body, world)


def test_refusals(rworld: World) -> None:
    w = rworld
    w.policy()
    outside = w.policy("elsewhere").rename(w.root / "outside" / "valid.yaml")
    (w.policies / "escape.yaml").symlink_to(outside)
    (w.policies / "sub").mkdir()
    (w.policies / "sub" / "ok.yaml").write_bytes(outside.read_bytes())

    async def body(s: ClientSession) -> None:

        async def refused(args: dict[str, object]) -> str:
            text = refusal(await s.call_tool("run_sandboxed", args))
            # One line, saying it was refused and what: never a validation dump.
            assert text.startswith("refused: ") and "\n" not in text, text
            return text

        true = ["true"]
        # Oracle: the outside file is a valid policy; a copy inside DIR runs.
        assert (
            answer(await s.call_tool("run_sandboxed", {"policy": "sub/ok", "argv": true}))["status"]
            == 0
        )
        assert "unknown policy" in await refused({"policy": "nope", "argv": true})
        assert "'..'" in await refused({"policy": "../outside/valid", "argv": true})
        assert "'..'" in await refused({"policy": "sub/../../outside/valid", "argv": true})
        assert "absolute" in await refused({"policy": str(outside), "argv": true})
        assert "absolute" in await refused({"policy": "~root/p", "argv": true})
        assert "outside the policy directory" in await refused({"policy": "escape", "argv": true})
        inline = outside.read_text()
        assert "--allow-inline-policy" in await refused({"policy": inline, "argv": true})
        assert "argv" in await refused({"policy": "default", "argv": []})
        assert "argv" in await refused({"policy": "default", "argv": [""]})
        assert "argv" in await refused({"policy": "default", "argv": "ls -l"})
        assert "argv" in await refused({"policy": "default", "argv": ["echo", 1]})
        assert "argv" in await refused({"policy": "default", "argv": [["sh"]]})
        assert "cwd" in await refused({"policy": "default", "argv": true, "cwd": "/no/dir"})
        assert "timeout" in await refused({"policy": "default", "argv": true, "timeout": -1})
        assert "--allow-inline-policy" in refusal(
            await s.call_tool("check_policy", {"policy": inline})
        )

    in_session(body, w)


def test_inline_policy_with_the_flag(rworld: World) -> None:
    w = rworld
    text = w.policy().read_text()
    marker = w.cwd / "marker"
    marker.write_text("inside cwd\n")

    async def body(s: ClientSession) -> None:
        a = answer(await s.call_tool("run_sandboxed", {"policy": text, "argv": ["cat", "marker"]}))
        assert (a["status"], a["stdout"]) == (0, "inside cwd\n")
        listed = answer(await s.call_tool("list_policies", {}))
        assert listed == {"policies": ["default"], "inline_policy_allowed": True}

    in_session(body, w, "--allow-inline-policy")


def test_output_is_capped_and_truncation_said(rworld: World) -> None:
    w = rworld
    w.policy()

    async def body(s: ClientSession) -> None:
        a = answer(
            await s.call_tool(
                "run_sandboxed",
                {"policy": "default", "argv": ["head", "-c", "100000", "/dev/zero"]},
            )
        )
        assert a["status"] == 0
        assert a["stdout_truncated"] is True and a["stdout_bytes"] == 100000
        assert "truncated" in a["stdout"] and len(a["stdout"].encode()) < 4096 + 200
        assert "stderr_truncated" not in a
        # A tool that writes without end for two seconds: the server's memory
        # stays bounded (it keeps the first bytes and counts the rest).
        server = max(_children())
        before = rss_kb(server)
        a = answer(
            await s.call_tool(
                "run_sandboxed",
                {"policy": "default", "argv": ["sh", "-c", "yes"], "timeout": 2},
            )
        )
        assert (a["status"], a["meaning"]) == (124, "wall_clock")
        assert a["stdout_truncated"] is True and a["stdout_bytes"] > 20_000_000, a["stdout_bytes"]
        assert rss_kb(server) - before < 20_000

    in_session(body, w, "--max-output", "4096")


def _children() -> list[int]:
    """This process's children (the stdio server the client started)."""
    import os

    mine = str(os.getpid())
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            if stat[stat.rfind(")") + 2 :].split()[1] == mine:
                out.append(int(name))
    return out


def test_twenty_concurrent_calls_without_cross_talk(world: World) -> None:
    world.policy()

    async def body(s: ClientSession) -> None:
        results: dict[int, dict[str, object]] = {}

        async def one(i: int) -> None:
            token = f"token-{i}-" + "x" * i
            argv = ["sh", "-c", f'sleep 0.{i % 5}; cat; echo " {token}"; echo {i} >&2']
            results[i] = answer(
                await s.call_tool(
                    "run_sandboxed", {"policy": "default", "argv": argv, "stdin": f"in-{i}"}
                )
            )

        async with anyio.create_task_group() as tg:
            for i in range(20):
                tg.start_soon(one, i)
        assert len(results) == 20
        for i, a in results.items():
            assert a["stdout"] == f"in-{i} token-{i}-" + "x" * i + "\n", (i, a)
            assert a["stderr"] == f"{i}\n" and a["status"] == 0
        assert len({a["run_id"] for a in results.values()}) == 20

    in_session(body, world)


def test_timeouts_warm_and_traced(rworld: World) -> None:
    rworld.policy()

    async def body(s: ClientSession) -> None:
        sleep = {"policy": "default", "argv": ["sleep", "30"]}
        t0 = anyio.current_time()
        a = answer(await s.call_tool("run_sandboxed", {**sleep, "timeout": 0.5}))
        assert (a["status"], a["meaning"]) == (124, "wall_clock")
        # Traced: a cold cvg-run, which this server stops at the timeout.
        a = answer(await s.call_tool("run_sandboxed", {**sleep, "timeout": 1, "trace": True}))
        assert (a["status"], a["meaning"], a["traced"]) == (143, "signaled", True)
        assert any("timeout" in n for n in a["notes"])
        assert anyio.current_time() - t0 < 20

    in_session(body, rworld)


def test_a_policy_that_may_write_the_policy_directory_is_refused(rworld: World) -> None:
    """With DIR inside the working directory, a policy granting write to ${CWD} would
    let a run drop a policy of its own into DIR and then name it."""
    w = rworld
    w.policy()
    w.policy("writes_cwd", filesystem={"read": ["/usr", "/etc", "${CWD}"], "write": ["${CWD}"],
                                       "execute": ["/usr", "/bin", "/lib", "/lib64"]})  # fmt: skip
    planted = w.policies / "planted.yaml"
    argv = ["cp", str(w.policies / "default.yaml"), str(planted)]
    server = [*w.server_argv()]
    server[server.index("--cwd") + 1] = str(w.root)  # DIR is now beneath ${CWD}

    async def body() -> None:
        async with session(server, w.env(), str(w.root)) as s:
            checked = answer(await s.call_tool("check_policy", {"policy": "writes_cwd"}))
            assert checked["valid"] is True  # a valid policy: refused for where it writes
            for trace in (False, True):
                text = refusal(
                    await s.call_tool(
                        "run_sandboxed", {"policy": "writes_cwd", "argv": argv, "trace": trace}
                    )
                )
                assert "holds the policy directory" in text, text
            assert not planted.exists()
            ok = answer(await s.call_tool("run_sandboxed", {"policy": "default", "argv": ["true"]}))
            assert ok["status"] == 0

    # Oracle: the copy itself works with no sandbox.
    subprocess.run(argv, check=True)
    planted.unlink()
    anyio.run(body)


def test_large_stdin_read_or_ignored(rworld: World) -> None:
    rworld.policy()
    big = "x" * 1_000_000

    async def body(s: ClientSession) -> None:
        args = {"policy": "default", "argv": ["sh", "-c", "wc -c; echo done >&2"]}
        a = answer(await s.call_tool("run_sandboxed", {**args, "stdin": big}))
        assert (a["status"], a["stdout"].strip(), a["stderr"]) == (0, "1000000", "done\n")
        # A tool that never reads its stdin ends the run all the same.
        a = answer(
            await s.call_tool(
                "run_sandboxed", {"policy": "default", "argv": ["true"], "stdin": big}
            )
        )
        assert a["status"] == 0

    in_session(body, rworld)


def test_an_oversized_argv_is_refused_as_too_large(rworld: World) -> None:
    w = rworld
    w.policy()

    async def body(s: ClientSession) -> None:
        big = {"policy": "default", "argv": ["echo", "x" * (10 << 20)]}
        text = refusal(await s.call_tool("run_sandboxed", big))
        assert text.startswith("refused: argv: the request is too large"), text
        assert "131072 bytes" in text and "helper is gone" not in text
        # The server is unharmed: the same policy still runs.
        a = answer(await s.call_tool("run_sandboxed", {"policy": "default", "argv": ["true"]}))
        assert a["status"] == 0

    in_session(body, w)
