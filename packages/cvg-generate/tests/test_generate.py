"""What becomes a rule, what never does, and the reasons behind each (synthetic
observations, so each case is exact)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from cvg_generate.generate import Source, generate
from cvg_schema import Observation, Policy

CWD = "/tmp/cvg-gen-test/work"
HOME = "/tmp/cvg-gen-test/home"
SCRATCH = "/tmp/cvg-gen-test/scratch"


def obs(*events: dict[str, Any], partial: bool = False, **extra: Any) -> Observation:
    evs = []
    for i, e in enumerate(events, 1):
        evs.append({"id": f"e{i}", "syscall": "openat", "result": "ok", **e})
    data: dict[str, Any] = {"kind": "cvg.observation", "schema_version": "1.0", "events": evs}
    if partial:
        data["partial"] = True
    else:
        data |= {"argv": ["tool"], "cwd": CWD, "home": HOME, "scratch": [SCRATCH]}
    data |= extra
    return Observation.model_validate(data)


def gen(*observations: Observation, **kw: Any) -> Policy:
    several = len(observations) > 1
    return generate(
        [Source(o, f"obs{i}" if several else None) for i, o in enumerate(observations)], **kw
    ).policy


def every_rule_has_reasons(p: Policy) -> None:
    fs = p.filesystem
    for field in ("read", "write", "execute", "deny"):
        for i, _ in enumerate(getattr(fs, field)):
            assert p.reasons.get(f"filesystem.{field}[{i}]"), f"filesystem.{field}[{i}]"
    for field in ("tcp_connect", "tcp_bind"):
        for i, _ in enumerate(getattr(p.network, field)):
            assert p.reasons.get(f"network.{field}[{i}]")
    for key in p.environment.set:
        assert p.reasons.get(f"environment.set.{key}")
    for i, _ in enumerate(p.syscalls.allow):
        assert p.reasons.get(f"syscalls.allow[{i}]")


def test_exact_files_outside_the_workspace_and_the_workspace_whole() -> None:
    p = gen(
        obs(
            {"op": "execute", "syscall": "execve", "path": "/usr/bin/cat"},
            {"op": "read", "path": "/usr/share/misc/magic.mgc"},
            {"op": "read", "path": f"{CWD}/in/a.txt"},
            {"op": "create", "path": f"{CWD}/out/b.txt"},
            {"op": "create", "path": f"{SCRATCH}/tmp123"},
            executables=[{"path": "/usr/bin/cat", "event_id": "e1"}],
        )
    )
    assert "/usr/share/misc/magic.mgc" in p.filesystem.read
    # /dev/null: the output sink every program may write (a baseline, cited).
    assert p.filesystem.write == ["${CWD}", "${SCRATCH}", "/dev/null"]
    assert "${CWD}" not in p.filesystem.read  # write implies read: one rule
    assert os.path.realpath("/usr/bin/cat") in p.filesystem.execute
    every_rule_has_reasons(p)
    assert any(r.event_id == "e3" for r in p.reasons["filesystem.write[0]"])


def test_many_siblings_become_one_directory_rule_with_its_reason() -> None:
    events = [{"op": "read", "path": f"/usr/share/doc/pkg/file{i}"} for i in range(9)]
    p = gen(obs(*events))
    assert "/usr/share/doc/pkg" in p.filesystem.read
    assert not any(r.startswith("/usr/share/doc/pkg/") for r in p.filesystem.read)
    i = p.filesystem.read.index("/usr/share/doc/pkg")
    assert (
        "9 files read directly in this directory" in p.reasons[f"filesystem.read[{i}]"][0].summary
    )


def test_few_siblings_stay_exact() -> None:
    events = [{"op": "read", "path": f"/usr/share/doc/pkg/file{i}"} for i in range(3)]
    p = gen(obs(*events))
    assert "/usr/share/doc/pkg" not in p.filesystem.read
    assert "/usr/share/doc/pkg/file0" in p.filesystem.read


def test_never_write_a_broad_tree_or_the_home_as_a_whole() -> None:
    p = gen(
        obs(
            {
                "op": "create",
                "path": "/etc/newfile",
                "denied_while_learning": True,
                "denied_by": "landlock",
                "result": "EACCES",
            },
            {"op": "create", "path": f"{HOME}/.toolrc"},
            {"op": "create", "path": "/usrfile"},
            {"op": "create", "path": "/tmp/x.lock"},
        ),
        grant_denied=True,
    )
    for broad in ("/", "/etc", "/usr", "/tmp", "${HOME}", HOME):
        assert broad not in p.filesystem.write


def test_secrets_are_never_granted_even_with_grant_denied() -> None:
    secrets = [
        f"{HOME}/.ssh/id_rsa",
        f"{HOME}/.aws/credentials",
        f"{CWD}/.env",
        "/etc/shadow",
        "/srv/app/server.pem",
        "/srv/app/api_token.txt",
    ]
    events = []
    for s in secrets:
        events.append({"op": "read", "path": s})
        events.append(
            {
                "op": "read",
                "path": s,
                "result": "EACCES",
                "denied_while_learning": True,
                "denied_by": "landlock",
            }
        )
        events.append({"op": "write", "path": s})
    for grant_denied in (False, True):
        p = gen(obs(*events), grant_denied=grant_denied)
        granted = p.filesystem.read + p.filesystem.write + p.filesystem.execute
        for s in secrets:
            assert not any(
                s == g or s.startswith(g.rstrip("/") + "/") for g in granted if g.startswith("/")
            ), (s, granted)
        assert "${HOME}/.ssh/id_rsa" not in granted


def test_secrets_beneath_the_workspace_are_denied_by_name(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / ".env").write_text("TOKEN=1\n")
    o = Observation.model_validate(
        {
            "kind": "cvg.observation",
            "schema_version": "1.0",
            "argv": ["t"],
            "cwd": str(work),
            "events": [
                {"id": "e1", "op": "read", "syscall": "openat", "path": f"{work}/a", "result": "ok"}
            ],
        }
    )
    (work / "certs").mkdir()
    (work / "certs" / "server.key").write_text("KEY\n")
    (work / "certs" / "README").write_text("not a secret\n")
    p = generate([Source(o)]).policy
    assert p.filesystem.read == ["${CWD}"]
    assert p.filesystem.deny == ["${CWD}/.env", "${CWD}/certs/server.key"]
    assert p.reasons["filesystem.deny[0]"]


def test_denied_while_learning_is_granted_only_when_asked() -> None:
    e = {
        "op": "read",
        "path": "/usr/share/misc/x",
        "result": "EACCES",
        "denied_while_learning": True,
        "denied_by": "landlock",
    }
    assert "/usr/share/misc/x" not in gen(obs(e)).filesystem.read
    assert "/usr/share/misc/x" in gen(obs(e), grant_denied=True).filesystem.read
    s = {
        "op": "other",
        "syscall": "personality",
        "result": "EPERM",
        "denied_while_learning": True,
        "denied_by": "seccomp",
    }
    assert gen(obs(s)).syscalls.allow == []
    assert gen(obs(s), grant_denied=True).syscalls.allow == ["personality"]


def test_enoent_probes_grant_nothing() -> None:
    p = gen(
        obs(
            {"op": "read", "path": "/etc/tool.conf", "result": "ENOENT"},
            {"op": "stat", "syscall": "newfstatat", "path": "/opt/x", "result": "ENOENT"},
            {
                "op": "execute",
                "syscall": "execve",
                "path": "/usr/local/bin/tool",
                "result": "ENOENT",
            },
            {"op": "create", "path": "/nodir/x", "result": "ENOENT"},
        )
    )
    assert p.filesystem.read == p.filesystem.write == p.filesystem.execute == []


def test_ports_connected_bound_and_refused() -> None:
    p = gen(
        obs(
            {
                "op": "connect",
                "syscall": "connect",
                "family": "inet",
                "sock_type": "stream",
                "port": 443,
                "address": "1.2.3.4",
            },
            {
                "op": "connect",
                "syscall": "connect",
                "family": "inet6",
                "sock_type": "stream",
                "port": 8443,
                "address": "::1",
                "result": "ECONNREFUSED",
            },
            {
                "op": "bind",
                "syscall": "bind",
                "family": "inet",
                "sock_type": "stream",
                "port": 8080,
                "address": "127.0.0.1",
            },
            {
                "op": "connect",
                "syscall": "connect",
                "family": "inet",
                "sock_type": "stream",
                "port": 25,
                "result": "EACCES",
                "denied_while_learning": True,
                "denied_by": "landlock",
            },
        )
    )
    assert p.network.tcp_connect == [443, 8443]
    assert p.network.tcp_bind == [8080]
    assert p.network.udp is False and p.network.unix is False
    every_rule_has_reasons(p)


def test_execute_grants_the_interpreter_and_shebang_chain() -> None:
    p = gen(
        obs(
            {"op": "execute", "syscall": "execve", "path": "/usr/bin/python3"},
            executables=[
                {
                    "path": "/usr/bin/python3",
                    "interpreter": "/lib64/ld-linux-x86-64.so.2",
                    "shebang": ["/usr/bin/env"],
                    "event_id": "e1",
                }
            ],
        )
    )
    ex = p.filesystem.execute
    assert os.path.realpath("/usr/bin/python3") in ex  # symlinks resolved
    assert os.path.realpath("/lib64/ld-linux-x86-64.so.2") in ex
    assert os.path.realpath("/usr/bin/env") in ex
    assert (
        "/usr/bin/python3" not in ex or os.path.realpath("/usr/bin/python3") == "/usr/bin/python3"
    )
    every_rule_has_reasons(p)


def test_partial_observation_never_grants_decoys() -> None:
    p = gen(
        obs(
            {
                "op": "read",
                "path": "/srv/data/report.txt",
                "source": {"tool": "divergence", "decoy": False},
            },
            {
                "op": "read",
                "path": "/srv/data/bait.txt",
                "source": {"tool": "divergence", "decoy": True},
            },
            partial=True,
        )
    )
    assert p.filesystem.read == ["/srv/data/report.txt"]
    every_rule_has_reasons(p)


def test_merging_is_the_union_with_reasons_from_each() -> None:
    a = obs(
        {"op": "read", "path": "/usr/share/a"},
        {
            "op": "connect",
            "syscall": "connect",
            "family": "inet",
            "sock_type": "stream",
            "port": 80,
        },
    )
    b = obs({"op": "read", "path": "/usr/share/a"}, {"op": "read", "path": "/usr/share/b"})
    p = gen(a, b)
    # (the connect also brings the resolver baseline under /etc)
    usr = [r for r in p.filesystem.read if r.startswith("/usr")]
    assert usr == ["/usr/share/a", "/usr/share/b"]
    assert p.network.tcp_connect == [80]
    i = p.filesystem.read.index("/usr/share/a")
    cited = {(r.observation, r.event_id) for r in p.reasons[f"filesystem.read[{i}]"]}
    assert cited == {("obs0", "e1"), ("obs1", "e1")}


def test_resources_sized_from_what_was_seen_with_headroom() -> None:
    events = [
        {"op": "read", "path": "/usr/share/a", "pid": 100 + i % 10, "time": 1000.0 + i}
        for i in range(21)
    ]
    p = gen(obs(*events), headroom=3)
    assert p.resources.wall_clock_seconds == 60  # 20 s seen, x3
    assert p.resources.processes == 30  # 10 processes seen, x3
    assert p.reasons["resources.wall_clock_seconds"]


@pytest.mark.parametrize("target", ["/proc/self/status", "/proc/1234/maps"])
def test_per_process_proc_files_are_not_granted(target: str) -> None:
    assert gen(obs({"op": "read", "path": target})).filesystem.read == []


@pytest.mark.parametrize("mark", ["decoy", "secret", "failed"])
def test_never_grant_from_an_import_is_honoured(mark: str) -> None:
    # cvg-import marks what a generator must never grant in source.never_grant.
    src = {"tool": "divergence", "never_grant": mark, "decoy": False, "secret": None}
    p = gen(
        obs(
            {"op": "read", "path": "/srv/data/kept.txt", "source": {"tool": "divergence"}},
            {"op": "read", "path": "/srv/data/bait.txt", "source": src},
            {
                "op": "connect",
                "syscall": "connect",
                "family": "inet",
                "sock_type": "stream",
                "port": 443,
                "result": "ECONNREFUSED",
                "source": src,
            },
            {
                "op": "bind",
                "syscall": "bind",
                "family": "inet",
                "sock_type": "stream",
                "port": 8080,
                "result": "EADDRINUSE",
                "source": src,
            },
            partial=True,
        ),
        grant_denied=True,
    )
    assert p.filesystem.read == ["/srv/data/kept.txt"]
    assert p.network.tcp_connect == [] and p.network.tcp_bind == []


def test_no_cwd_writes_no_path_relative_to_the_working_directory() -> None:
    # A client started the server in the home: what it read there is the home's, and
    # the same server started from / must still find it.
    events = (
        {"op": "read", "path": f"{HOME}/mcp/notes/server.py"},
        {"op": "create", "path": f"{HOME}/Documents/memory.jsonl"},
        {"op": "read", "path": "/srv/repo/README"},
    )
    home_cwd = {"cwd": HOME}
    learned = gen(obs(*events, **home_cwd), cwd=False)
    paths = [*learned.filesystem.read, *learned.filesystem.write]
    assert not any("${CWD}" in p for p in paths), paths
    assert "${HOME}/mcp/notes/server.py" in learned.filesystem.read
    assert any(w.startswith("${HOME}/Documents") for w in learned.filesystem.write)
    assert "/srv/repo/README" in learned.filesystem.read
    every_rule_has_reasons(learned)
    # By default the working directory is the tool's: the same events name ${CWD}.
    default = gen(obs(*events, cwd="/srv/repo"))
    assert any(p.startswith("${CWD}") for p in default.filesystem.read + default.filesystem.write)


def test_a_refused_bytecode_cache_is_not_written_rather_than_refused_at_every_start() -> None:
    site = "/opt/venv/lib/python3.11/site-packages/pkg"
    refused = {
        "op": "create",
        "syscall": "mkdir",
        "path": f"{site}/__pycache__",
        "result": "EACCES",
        "denied_while_learning": True,
        "denied_by": "landlock",
    }
    start = {"op": "execute", "syscall": "execve", "path": "/usr/bin/python3"}
    learned = gen(obs(start, {"op": "read", "path": f"{site}/__init__.py"}, refused))
    assert learned.environment.set.get("PYTHONDONTWRITEBYTECODE") == "1"
    assert f"{site}/__pycache__" not in learned.filesystem.write
    every_rule_has_reasons(learned)
    # A cache that was written, or one --grant-denied grants, changes nothing.
    written = {**refused, "result": "ok", "denied_while_learning": False}
    del written["denied_by"]
    assert "PYTHONDONTWRITEBYTECODE" not in gen(obs(start, written)).environment.set
    granted = gen(obs(start, refused), grant_denied=True)
    assert "PYTHONDONTWRITEBYTECODE" not in granted.environment.set


def test_no_cwd_a_directory_the_command_line_names_is_a_workspace(tmp_path: Path) -> None:
    """A server told to serve a tree (its repository, its root) gets the tree: read from
    a read beneath it, write from a write beneath it, whatever names another input
    uses there. Never the home, a secret or protected directory, nor what the command
    line names that does not exist."""
    repo, docs, keys = tmp_path / "repo", tmp_path / "docs", tmp_path / ".vscode"
    for d in (repo / ".git", docs / "pkg", keys):
        d.mkdir(parents=True)
    (docs / "pkg" / ".env").write_text("TOKEN=x\n")  # deep in a served tree
    argv = ["/usr/bin/git-server", f"--repository={repo}", str(docs), str(keys),
            HOME, str(tmp_path / "missing")]  # fmt: skip
    events = (
        {"op": "read", "path": f"{repo}/README"},
        {"op": "write", "path": f"{repo}/.git/index"},
        {"op": "read", "path": f"{docs}/a/b.txt"},
        {"op": "read", "path": f"{keys}/settings.json"},
    )
    learned = gen(obs(*events, argv=argv, cwd="/"), cwd=False)
    assert str(repo) in learned.filesystem.write
    assert str(docs) in learned.filesystem.read and str(docs) not in learned.filesystem.write
    assert f"{docs}/pkg/.env" in learned.filesystem.deny
    assert f"{keys}/settings.json" in learned.filesystem.read and str(keys) not in (
        learned.filesystem.read
    )
    assert "${HOME}" not in learned.filesystem.read + learned.filesystem.write
    why = learned.reasons[f"filesystem.write[{learned.filesystem.write.index(str(repo))}]"]
    assert "a directory the command line names" in str(why)
    every_rule_has_reasons(learned)
    # With a working directory that means something, the command line names nothing.
    default = gen(obs(*events, argv=argv, cwd="/"))
    assert str(repo) not in default.filesystem.write
