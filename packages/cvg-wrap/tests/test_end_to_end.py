"""A client's real config, end to end, for each client's format: learn, a real session
(the official SDK client through the rewritten command), enforce, a second session
under cvg-run, status, restore.

The server (fixtures/notes_server.py, FastMCP over stdio) keeps notes in its working
directory and reads files on request. The oracle for "confined": the enforced server
is refused ``~/.ssh/id_rsa`` (a canary in a private HOME) where the same server,
restored to its original command, reads it; and cvg-run's run record of the session
names the policy and the denial.
"""

from __future__ import annotations

import json

import anyio
import pytest
from mcp import ClientSession
from wraphelp import CANARY, FORMATS, Home, client_session, entry, text, write_config

from cvg_wrap.config import argv_of


@pytest.mark.parametrize("fmt", FORMATS)
def test_learn_enforce_restore_with_a_real_client(home: Home, fmt: str) -> None:
    config = write_config(home, fmt)
    original_text = config.read_text()
    original = entry(config)

    done = home.wrap("learn", str(config))
    assert done.returncode == 0, done.stderr
    learning = entry(config)
    assert learning["command"].endswith("/cvg-observe")
    assert learning["args"][-len(argv_of(original)) :] == argv_of(original)
    assert {k: v for k, v in learning.items() if k not in ("command", "args")} == {
        k: v for k, v in original.items() if k not in ("command", "args")
    }
    assert "remote: not a server the client starts as a process" in done.stderr
    assert home.wrap("learn", str(config)).stdout == ""  # twice changes nothing
    learned_text = config.read_text()

    async def notes_work(s: ClientSession, name: str, note: str) -> None:
        r = await s.call_tool("write_note", {"name": name, "text": note})
        assert text(r) == "written", r
        r = await s.call_tool("read_file", {"path": str(home.project / "notes" / "first")})
        assert text(r) == "one", r

    async def learning_session() -> None:
        async with client_session(home, config) as s:
            await notes_work(s, "first", "one")

    anyio.run(learning_session)
    assert config.read_text() == learned_text
    status = json.loads(home.wrap("status", "--json", str(config)).stdout)
    rows = {r["server"]: r for r in status["servers"]}
    assert rows["notes"]["state"] == "learning" and rows["notes"]["observations"] == 1
    assert rows["remote"]["state"] == "remote"

    done = home.wrap("enforce", str(config))
    assert done.returncode == 2 and "not a terminal" in done.stderr
    assert config.read_text() == learned_text
    done = home.wrap("enforce", "--yes", "--diff", str(config))
    assert done.returncode == 0, done.stderr
    policy = home.policies / "notes.yaml"
    assert f"--- /dev/null\n+++ {policy}\n" in done.stdout
    assert f"--- {config}\n+++ {config}\n" in done.stdout
    # The summary: the policy's path and its rules by kind, without the diffs' bulk.
    assert f"cvg-wrap: notes: 1 observations -> {policy}" in done.stderr
    assert "cvg-wrap:   rules: read " in done.stderr
    assert len(done.stderr.splitlines()) <= 10, done.stderr
    # A server lives as long as its client: no wall clock (it waited on its stdin).
    assert "wall_clock_seconds: null" in policy.read_text()
    enforced = entry(config)
    assert enforced["command"].endswith("/cvg-run")
    assert enforced["args"] == ["--trace", "-p", str(policy), "--", *argv_of(original)]

    async def enforced_session() -> None:
        async with client_session(home, config) as s:
            await notes_work(s, "second", "two")
            r = await s.call_tool("read_file", {"path": "~/.ssh/id_rsa"})
            assert r.isError and "Permission denied" in text(r), r
            assert CANARY not in text(r)
            # The env the client sets for the server still reaches it.
            r = await s.call_tool("getenv", {"name": "NOTES_TOKEN"})
            assert text(r) == original["env"]["NOTES_TOKEN"], r

    anyio.run(enforced_session)
    assert (home.project / "notes" / "second").read_text() == "two"
    status = json.loads(home.wrap("status", "--json", str(config)).stdout)
    notes = next(r for r in status["servers"] if r["server"] == "notes")
    assert notes["state"] == "enforced" and notes["policy"] == str(policy)
    assert notes["rules"] > 0 and notes["runs"] == 1 and notes["denials"] >= 1, notes
    # The run record names the policy and the refused read of the key.
    records = [json.loads(p.read_text()) for p in (home.state / "cvg" / "runs").glob("*.json")]
    assert [r["policy_path"] for r in records] == [str(policy)]
    refused = [d for d in records[0]["denials"] if d.get("path", "").endswith("/.ssh/id_rsa")]
    assert refused and refused[0]["mechanism"] == "landlock_fs", records[0]["denials"]

    done = home.wrap("restore", str(config))
    assert done.returncode == 0, done.stderr
    assert config.read_text() == original_text

    async def restored_session() -> None:
        async with client_session(home, config) as s:
            r = await s.call_tool("read_file", {"path": "~/.ssh/id_rsa"})
            assert text(r) == CANARY, r

    anyio.run(restored_session)
