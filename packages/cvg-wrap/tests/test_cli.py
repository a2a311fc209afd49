"""cvg-wrap's command line on client configs, without a client: what is rewritten,
what is kept byte for byte, what is refused and how. The real console script, as a
subprocess; sessions are the wrapped command run directly (test_end_to_end.py drives
real MCP sessions)."""

from __future__ import annotations

import json
import os
import pty
import subprocess
from pathlib import Path

import pytest
from wraphelp import CVG_WRAP, Home, entry, write_config

from cvg_wrap.config import ConfigError, load, write


def _one_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    return lines[0]


@pytest.mark.parametrize("indent", [2, 4, "\t", None], ids=["2", "4", "tab", "one-line"])
def test_learn_keeps_indentation_keys_and_order_and_restore_is_exact(
    home: Home, indent: int | str | None
) -> None:
    config = home.project / "claude_desktop_config.json"
    data = {
        "globalShortcut": "Ctrl+Space",
        "mcpServers": {
            "bare": {"command": "/bin/true", "env": {"A": "1"}, "x-client": {"k": [1, 2]}},
            "full": {"cwd": "/srv", "command": "/bin/cat", "args": ["-"], "disabled": False},
        },
        "zeta": ["é"],
    }
    original = json.dumps(data, indent=indent, ensure_ascii=False) + "\n"
    config.write_text(original)
    done = home.wrap("learn", str(config))
    assert done.returncode == 0, done.stderr
    learned = json.loads(config.read_text())
    assert list(learned) == list(data)
    assert learned["zeta"] == ["é"] and "é" in config.read_text()
    bare = learned["mcpServers"]["bare"]
    # "args" is new: right after "command"; the rest where it was.
    assert list(bare) == ["command", "args", "env", "x-client"]
    assert bare["args"][-2:] == ["--", "/bin/true"]
    full = learned["mcpServers"]["full"]
    assert list(full) == ["cwd", "command", "args", "disabled"]
    assert full["args"][-3:] == ["--", "/bin/cat", "-"]
    assert json.dumps(learned, indent=indent, ensure_ascii=False) + "\n" == config.read_text()
    # The diff printed is the change made.
    assert done.stdout.startswith(f"--- {config}\n+++ {config}\n")
    done = home.wrap("restore", str(config))
    assert done.returncode == 0, done.stderr
    assert config.read_text() == original


def test_learn_twice_changes_nothing_and_restore_twice_too(home: Home) -> None:
    config = write_config(home, "claude-code")
    assert home.wrap("learn", str(config)).returncode == 0
    learned = config.read_bytes()
    state = sorted(p.name for p in home.state.rglob("*"))
    again = home.wrap("learn", str(config))
    assert again.returncode == 0 and again.stdout == ""
    assert "nothing to change" in again.stderr
    assert config.read_bytes() == learned
    assert sorted(p.name for p in home.state.rglob("*")) == state
    assert home.wrap("restore", str(config)).returncode == 0
    restored = config.read_bytes()
    again = home.wrap("restore", str(config))
    assert again.returncode == 0 and again.stdout == "" and config.read_bytes() == restored
    assert "nothing to restore" in again.stderr


def test_learn_keeps_a_backup_of_the_config(home: Home) -> None:
    config = write_config(home, "vscode")
    original = config.read_text()
    done = home.wrap("learn", str(config))
    backups = list(home.state.glob("cvg/wrap/*/.original"))
    assert len(backups) == 1 and backups[0].read_text() == original
    assert str(backups[0]) in done.stderr


def test_only_the_named_server_learns(home: Home) -> None:
    config = home.project / ".mcp.json"
    servers = {n: {"command": "/bin/true"} for n in ("a", "b")}
    config.write_text(json.dumps({"mcpServers": servers}, indent=2) + "\n")
    done = home.wrap("learn", "--server", "b", str(config))
    assert done.returncode == 0, done.stderr
    assert entry(config, "a") == {"command": "/bin/true"}
    assert entry(config, "b")["command"].endswith("/cvg-observe")


def test_a_server_already_under_cvg_is_never_wrapped_twice(home: Home) -> None:
    config = home.project / ".mcp.json"
    hand = {"command": "/usr/local/bin/cvg-run", "args": ["-p", "x", "--", "srv"]}
    config.write_text(json.dumps({"mcpServers": {"s": hand}}) + "\n")
    before = config.read_text()
    done = home.wrap("learn", str(config))
    assert done.returncode == 0
    assert "s: already starts under cvg-run; left as it is" in done.stderr
    assert config.read_text() == before


def test_a_server_edited_after_learn_is_left_alone(home: Home) -> None:
    config = write_config(home, "claude-desktop")
    assert home.wrap("learn", str(config)).returncode == 0
    data = json.loads(config.read_text())
    data["mcpServers"]["notes"]["args"].append("--edited")
    config.write_text(json.dumps(data, indent=2) + "\n")
    edited = config.read_text()
    for command in ("learn", "restore"):
        done = home.wrap(command, str(config))
        assert done.returncode == 0, done.stderr
        assert "notes: changed since cvg-wrap rewrote it; left as it is" in done.stderr
        assert config.read_text() == edited
    status = json.loads(home.wrap("status", "--json", str(config)).stdout)
    assert {r["server"]: r["state"] for r in status["servers"]} == {
        "notes": "changed", "remote": "remote",
    }  # fmt: skip


def test_a_symlinked_config_stays_a_link_and_keeps_its_mode(home: Home) -> None:
    real = write_config(home, "claude-code")
    real.chmod(0o604)
    link = home.root / "linked.json"
    link.symlink_to(real)
    assert home.wrap("learn", str(link)).returncode == 0
    assert link.is_symlink() and entry(real)["command"].endswith("/cvg-observe")
    assert real.stat().st_mode & 0o777 == 0o604


@pytest.mark.parametrize(
    ("text", "says"),
    [("{\"mcpServers\": {\n", "not valid JSON or JSONC (line 2"),
     ("/* unterminated\n{}\n", "not valid JSON or JSONC (line 1, column 1"),
     ("{\"mcpServers\": {\"a\": {\"command\": \"x\"}}} junk\n", "line 1, column 41"),
     ("// a comment, and no servers\n{}\n", "no MCP servers"),
     ("[]\n", "not a JSON object"),
     ("{\"mcpServers\": {}}\n", "no MCP servers"),
     ("{\"servers\": []}\n", "no MCP servers"),
     ("{\"theme\": \"dark\"}\n", "no MCP servers")],
)  # fmt: skip
def test_a_config_that_cannot_be_used_is_one_line_and_exit_1(
    home: Home, text: str, says: str
) -> None:
    config = home.project / "mcp.json"
    config.write_text(text)
    for command in (["learn"], ["enforce", "--yes"], ["restore"], ["status"]):
        done = home.wrap(*command, str(config))
        assert done.returncode == 1, (command, done.stderr)
        line = _one_line(done)
        assert line.startswith(f"cvg-wrap: {config}: ") and says in line, line
        assert done.stdout == "" and config.read_text() == text
    done = home.wrap("learn", str(home.project / "missing.json"))
    assert done.returncode == 1 and "missing.json: cannot read: No such file" in _one_line(done)


def test_an_unknown_server_name_is_a_usage_error(home: Home) -> None:
    config = write_config(home, "claude-code")
    before = config.read_text()
    done = home.wrap("learn", "--server", "nope", str(config))
    assert done.returncode == 2 and "no server named nope" in _one_line(done)
    assert config.read_text() == before


def test_enforce_refuses_without_a_terminal_or_yes(home: Home) -> None:
    config = write_config(home, "claude-code")
    assert home.wrap("learn", str(config)).returncode == 0
    learned = config.read_text()
    done = home.wrap("enforce", str(config))
    assert done.returncode == 2
    assert "stdin is not a terminal: give --yes" in _one_line(done)
    assert config.read_text() == learned and not home.policies.exists()


def test_enforce_leaves_a_server_with_no_observation_as_it_is(home: Home) -> None:
    config = write_config(home, "vscode")
    assert home.wrap("learn", str(config)).returncode == 0
    learned = config.read_text()
    done = home.wrap("enforce", "--yes", str(config))
    assert done.returncode == 0, done.stderr
    assert "notes: no observation yet (no session has ended); left as it is" in done.stderr
    assert done.stdout == "" and config.read_text() == learned
    assert not home.policies.exists()


def _one_session(home: Home, config: Path, server: str) -> None:
    """One session of the learning server, its client closing stdin at once."""
    e = entry(config, server)
    subprocess.run([e["command"], *e["args"]], stdin=subprocess.DEVNULL, env=home.env(),
                   cwd=home.project, capture_output=True, timeout=120, check=True)  # fmt: skip


def _enforce_on_a_terminal(home: Home, config: Path, answer: str) -> tuple[int, str]:
    """enforce with a pseudo-terminal as stdin, answering ``answer``."""
    master, slave = pty.openpty()
    try:
        os.write(master, answer.encode() + b"\n")
        done = subprocess.run([str(CVG_WRAP), "enforce", str(config)], stdin=slave,
                              env=home.env(), capture_output=True, text=True, timeout=300,
                              check=False)  # fmt: skip
    finally:
        os.close(master)
        os.close(slave)
    return done.returncode, done.stderr


def test_enforce_asks_on_a_terminal_and_no_writes_nothing(home: Home) -> None:
    config = home.project / ".mcp.json"
    config.write_text(json.dumps({"mcpServers": {"t": {"command": "/bin/true"}}}) + "\n")
    assert home.wrap("learn", str(config)).returncode == 0
    _one_session(home, config, "t")
    learned = config.read_text()
    code, err = _enforce_on_a_terminal(home, config, "n")
    assert code == 1 and "write these changes?" in err and "nothing written" in err
    assert config.read_text() == learned and not home.policies.exists()
    code, err = _enforce_on_a_terminal(home, config, "y")
    assert code == 0, err
    policy = home.policies / "t.yaml"
    assert policy.is_file() and "/bin/true" in policy.read_text()
    assert entry(config, "t")["args"] == ["--trace", "-p", str(policy), "--", "/bin/true"]
    # The enforced command runs the server under its policy.
    argv = [entry(config, "t")["command"], *entry(config, "t")["args"]]
    done = subprocess.run(argv, env=home.env(), capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr


def test_status_tabulates_every_server(home: Home) -> None:
    config = write_config(home, "claude-desktop")
    done = home.wrap("status", str(config))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["server", "state", "since", "observations", "rules", "runs",
                                "denials", "expected"]  # fmt: skip
    assert lines[2].split()[:2] == ["notes", "untouched"]
    assert lines[3].split()[:2] == ["remote", "remote"]
    home.wrap("learn", str(config))
    rows = json.loads(home.wrap("status", "--json", str(config)).stdout)["servers"]
    assert rows[0]["state"] == "learning" and rows[0]["since"] and rows[0]["observations"] == 0


def test_a_config_changed_while_working_is_not_overwritten(home: Home) -> None:
    path = write_config(home, "claude-code")
    cfg = load(str(path))
    path.write_text(path.read_text().replace("notes", "notes2"))
    with pytest.raises(ConfigError, match="changed while cvg-wrap worked on it"):
        write(cfg, "{}\n")
    assert "notes2" in path.read_text()


JSONC_CONFIG = """{
  // Cursor reads comments and trailing commas
  "mcpServers": {
    "inline": {"command": "/bin/cat", "args": ["-"], "env": {"A": "1"},},
    "spread": {
      "command": "/bin/true",
    },
  },
}
"""


def test_jsonc_learn_keeps_comments_and_restore_is_byte_identical(home: Home) -> None:
    config = home.project / "mcp.json"
    config.write_text(JSONC_CONFIG)
    done = home.wrap("learn", str(config))
    assert done.returncode == 0, done.stderr
    learned = config.read_text()
    assert "// Cursor reads comments and trailing commas" in learned
    assert '"env": {"A": "1"},},' in learned  # the rest of the line as it was
    inline = next(line for line in learned.splitlines() if '"inline"' in line)
    assert '"args": [' in inline and inline.endswith("},},")  # still one line
    done = home.wrap("restore", str(config))
    assert done.returncode == 0, done.stderr
    assert config.read_text() == JSONC_CONFIG


def test_restore_of_a_config_never_wrapped_touches_nothing(home: Home) -> None:
    config = write_config(home, "vscode")
    os.utime(config, (1_000_000_000, 1_000_000_000))
    before = (config.read_bytes(), config.stat().st_mtime_ns)
    done = home.wrap("restore", str(config))
    assert done.returncode == 0, done.stderr
    assert "nothing to restore" in done.stderr and done.stdout == ""
    assert (config.read_bytes(), config.stat().st_mtime_ns) == before
    assert not home.state.exists() or not any(home.state.rglob(".wrap.json"))


def test_claude_code_project_servers_are_wrapped_too(home: Home) -> None:
    config = home.home / ".claude.json"
    data = {
        "numStartups": 3,
        "mcpServers": {"user": {"type": "stdio", "command": "/bin/true", "args": []}},
        "projects": {
            "/work/app": {"allowedTools": [], "mcpServers": {
                "local": {"type": "stdio", "command": "/bin/cat", "args": ["-"]}}},
            "/work/empty": {"mcpServers": {}},
        },
    }  # fmt: skip
    original = json.dumps(data, indent=2) + "\n"
    config.write_text(original)
    done = home.wrap("learn", "--server", "local@/work/app", str(config))
    assert done.returncode == 0, done.stderr
    learned = json.loads(config.read_text())
    local = learned["projects"]["/work/app"]["mcpServers"]["local"]
    assert local["command"].endswith("/cvg-observe") and local["args"][-2:] == ["/bin/cat", "-"]
    assert learned["mcpServers"] == data["mcpServers"]  # only the one named
    rows = json.loads(home.wrap("status", "--json", str(config)).stdout)["servers"]
    assert {r["server"]: r["state"] for r in rows} == {
        "user": "untouched", "local@/work/app": "learning"}  # fmt: skip
    assert home.wrap("restore", str(config)).returncode == 0
    assert config.read_text() == original


def test_enforce_refuses_a_policy_that_fails_its_own_sessions(home: Home) -> None:
    """The server appended to .git/config while learning (a protected path, which no
    learned policy grants): enforce judges each learned call against the new policy,
    names the first it refuses, and leaves the server learning."""
    (home.project / ".git").mkdir()
    (home.project / ".git" / "config").write_text("[core]\n")
    config = home.project / ".mcp.json"
    script = "printf '\\tbare = false\\n' >> .git/config"
    config.write_text(
        json.dumps({"mcpServers": {"gitcfg": {"command": "/bin/sh", "args": ["-c", script]}}})
    )
    assert home.wrap("learn", str(config)).returncode == 0
    _one_session(home, config, "gitcfg")
    learned = config.read_text()
    done = home.wrap("enforce", "--yes", str(config))
    assert done.returncode == 1, done.stderr
    line, nothing = done.stderr.splitlines()
    assert line.startswith("cvg-wrap: gitcfg: the policy refuses 1 calls of its own sessions")
    assert f"{home.project}/.git/config needs write_file" in line and "left as it is" in line
    assert nothing == "cvg-wrap: nothing to change"
    assert config.read_text() == learned and not home.policies.exists()
