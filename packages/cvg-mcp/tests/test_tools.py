"""check_policy, observe, generate_policy and explain_denials through the SDK client."""

from __future__ import annotations

import subprocess

import anyio
from mcp import ClientSession
from mcphelp import World, answer, in_session, refusal


def test_check_policy_valid_and_invalid(rworld: World) -> None:
    w = rworld
    w.policy()
    (w.policies / "broken.yaml").write_text("version: 1\nfilesystem:\n  read: [usr]\n")

    async def body(s: ClientSession) -> None:
        a = answer(await s.call_tool("check_policy", {"policy": "default"}))
        assert a["valid"] is True and a["errors"] == []
        enforcement = a["enforcement"]
        assert enforcement["landlock_abi"] >= 1
        rules = {r["address"]: r for r in enforcement["rules"]}
        assert rules["filesystem.read[0]"]["status"] == "enforced"
        a = answer(await s.call_tool("check_policy", {"policy": "broken"}))
        assert a["valid"] is False
        # One line naming the file, the line and the key.
        assert a["errors"][0].startswith("broken:3: filesystem.read[0]"), a["errors"]
        assert "unknown policy" in refusal(await s.call_tool("check_policy", {"policy": "missing"}))

    in_session(body, w)


def test_observe_exists_only_with_the_flag(rworld: World) -> None:
    w = rworld
    w.policy()

    async def body(s: ClientSession) -> None:
        names = {t.name for t in (await s.list_tools()).tools}
        assert "observe" not in names
        r = await s.call_tool("observe", {"argv": ["true"]})
        assert r.isError and "observe" in r.content[0].text  # type: ignore[union-attr]

    in_session(body, w)


def test_observe_then_generate_then_run(rworld: World) -> None:
    """The learning loop through MCP: observe a command, generate its policy, and
    the policy (put in place by the operator) runs the command."""
    w = rworld
    w.policy()
    (w.cwd / "data.txt").write_text("observed data\n")
    argv = ["/usr/bin/cat", "data.txt"]
    # Oracle: the command itself works unconfined.
    assert subprocess.run(argv, cwd=w.cwd, capture_output=True).stdout == b"observed data\n"

    async def body(s: ClientSession) -> None:
        assert "observe" in {t.name for t in (await s.list_tools()).tools}
        a = answer(await s.call_tool("observe", {"argv": argv}))
        assert a["status"] == 0, a
        observation = a["observation"]
        assert observation["kind"] == "cvg.observation"
        paths = {e.get("path") for e in observation["events"]}
        assert str(w.cwd / "data.txt") in paths
        g = answer(await s.call_tool("generate_policy", {"observation": observation}))
        policy = g["policy"]
        assert policy["kind"] == "cvg.policy"
        import json

        (w.policies / "learned.json").write_text(json.dumps(policy))
        r = answer(await s.call_tool("run_sandboxed", {"policy": "learned", "argv": argv}))
        assert (r["status"], r["stdout"]) == (0, "observed data\n"), r
        bad = refusal(await s.call_tool("generate_policy", {"observation": {"kind": "x"}}))
        assert "cvg.observation" in bad

    in_session(body, w, "--allow-observe")


def test_explain_denials(world: World) -> None:
    world.policy()
    secret = world.root / "outside" / "secret.txt"
    secret.write_text("canary\n")
    world.own(secret)
    plain = subprocess.run(world.as_user(["cat", str(secret)]), capture_output=True)
    assert plain.stdout == b"canary\n"

    async def body(s: ClientSession) -> None:
        run = answer(
            await s.call_tool(
                "run_sandboxed",
                {"policy": "default", "argv": ["cat", str(secret)], "trace": True},
            )
        )
        e = answer(await s.call_tool("explain_denials", {"run_id": run["run_id"]}))
        assert e["kind"] == "cvg.explanation" and e["run_id"] == run["run_id"]
        mine = [d for d in e["denials"] if d["denial"].get("path") == str(secret)]
        assert mine and mine[0]["rule"] == "filesystem.read"
        assert str(secret) in mine[0]["fix"] and mine[0]["risk"]["level"] in (
            "low",
            "medium",
            "high",
        )
        # Its record is where cvg-explain --run ID looks.
        assert (world.runs / f"{run['run_id']}.json").exists() or await _eventually(
            lambda: (world.runs / f"{run['run_id']}.json").exists()
        )
        assert "not a run made through this server" in refusal(
            await s.call_tool("explain_denials", {"run_id": "20200101T000000Z-00000000"})
        )
        assert "not a run id" in refusal(
            await s.call_tool("explain_denials", {"run_id": "../../etc/passwd"})
        )

    in_session(body, world)


async def _eventually(predicate: object, seconds: float = 5.0) -> bool:
    assert callable(predicate)
    for _ in range(int(seconds / 0.05)):
        if predicate():
            return True
        await anyio.sleep(0.05)
    return bool(predicate())
