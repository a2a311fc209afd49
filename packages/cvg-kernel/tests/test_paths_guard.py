"""The ``paths`` guards on the real kernel, for both kinds of entry an expansion keeps
out: a denied one (no right at all) and a protected one (read, never changed).

The tool runs in a forked child, as root and as the unprivileged user, under a plan
whose Landlock rules cover the system and the siblings in ``proj``, with ``proj`` held
and served by :class:`cvg_kernel.paths_guard.PathGuards`. Bare, every step succeeds
(the premise); the oracle afterwards is the files on disk.
"""

from __future__ import annotations

import errno
import os
import pwd
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_guard_answers import serve_with
from test_notify import run_tool

from cvg_kernel.paths_guard import PathGuards
from cvg_testing import shared_dir

WRITE = ["execute", "write_file", "read_file", "read_dir", "remove_dir", "remove_file",
         "make_dir", "make_reg", "make_sym", "truncate", "refer"]  # fmt: skip
SYSTEM = ("/usr", "/lib", "/lib64", "/etc", "/proc", "/dev")


@pytest.fixture
def proj() -> Iterator[Path]:
    with shared_dir("cvg-paths-") as d:
        p = d / "proj"
        p.mkdir()
        p.chmod(0o777)
        for name, text in (("a.txt", "a"), (".env", "SECRET"), ("config", "[core]")):
            (p / name).write_text(text)
            (p / name).chmod(0o666)
        yield p


def plan_for(proj: Path) -> dict[str, Any]:
    rules = [{"path": p, "access": ["read_file", "read_dir", "execute"]}
             for p in SYSTEM if os.path.exists(p)]  # fmt: skip
    rules.append({"path": str(proj / "a.txt"), "access": ["write_file", "read_file", "truncate"]})
    rules.append({"path": str(proj / "config"), "access": ["read_file", "execute"]})
    return {
        "kind": "cvg.plan",
        "schema_version": "1.0",
        "landlock": {"fs_rules": rules},
        "seccomp": {"supervise": ["paths"]},
        "expansions": [
            {
                "path": str(proj),
                "rules": 2,
                "access": WRITE,
                "held": [str(proj)],
                "denied": [str(proj / ".env")],
                "protected": [str(proj / "config")],
            },
        ],
    }


def steps(proj: Path) -> Any:
    def tool() -> dict[str, Any]:
        out: dict[str, Any] = {}

        def step(name: str, fn: Any) -> None:
            try:
                out[name] = fn()
            except OSError as e:
                out[name] = errno.errorcode[e.errno or 0]

        def read(p: Path) -> str:
            return p.read_text()

        step("list", lambda: sorted(os.listdir(proj)))
        step("read config", lambda: read(proj / "config"))
        step("write config", lambda: (proj / "config").write_text("[core] fsmonitor=x"))
        step("append config", lambda: open(proj / "config", "a").close())
        step("rename config", lambda: os.rename(proj / "config", proj / "c2"))
        step("rename over config", lambda: os.rename(proj / "a.txt", proj / "config"))
        step("unlink config", lambda: os.unlink(proj / "config"))
        step("create", lambda: (proj / "new").write_text("n"))
        step("read new", lambda: read(proj / "new"))
        step("read .env", lambda: read(proj / ".env"))
        step("O_PATH .env", lambda: os.close(os.open(proj / ".env", os.O_PATH)))
        return out

    return tool


def test_denied_and_protected_entries_in_a_served_directory(
    identity: pwd.struct_passwd | None, proj: Path, request: pytest.FixtureRequest
) -> None:
    bare = run_tool(steps(proj), identity, "bare")
    assert bare.value["read .env"] == "SECRET" and bare.value["unlink config"] is None
    # Bare changed things: start again from the same files.
    (proj / "config").write_text("[core]")
    (proj / "a.txt").write_text("a")
    for name in ("new", "c2"):
        (proj / name).unlink(missing_ok=True)
    for name in ("config", "a.txt"):
        (proj / name).chmod(0o666)

    plan = plan_for(proj)
    guards = PathGuards(plan)
    try:
        run = run_tool(steps(proj), identity, "notify", plan=plan,
                       supervisor=serve_with(plan, "paths", guards.guards, []))  # fmt: skip
    finally:
        guards.close()
    got = run.value
    assert got["list"] == [".env", "a.txt", "config"]
    assert got["read config"] == "[core]"  # protected: read stays
    for name in ("write config", "append config", "rename config", "rename over config",
                 "unlink config", "read .env", "O_PATH .env"):  # fmt: skip
        assert got[name] == "EACCES", (name, got)
    assert got["create"] == 1 and got["read new"] == "n"
    assert (proj / "config").read_text() == "[core]" and (proj / "a.txt").read_text() == "a"
    assert (proj / ".env").read_text() == "SECRET"
