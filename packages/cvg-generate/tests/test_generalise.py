"""Generalisations that carry a policy from one input to the next, each from evidence
the observation holds, each citing it, and none granting a secret beneath it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from cvg_generate import packaged
from cvg_generate.baselines import RESOLVER
from cvg_generate.generate import Source, generate
from cvg_schema import Observation, Policy


def obs(cwd: str, *events: dict[str, Any], **extra: Any) -> Observation:
    evs = [
        {"id": f"e{i}", "syscall": "openat", "result": "ok", **e} for i, e in enumerate(events, 1)
    ]
    data: dict[str, Any] = {
        "kind": "cvg.observation",
        "schema_version": "1.0",
        "argv": ["tool"],
        "cwd": cwd,
        "home": "/nonexistent-home",
        "scratch": ["/nonexistent-scratch"],
        "events": evs,
        **extra,
    }
    return Observation.model_validate(data)


def gen(o: Observation) -> Policy:
    return generate([Source(o)]).policy


def cited(p: Policy, field: str, path: str) -> list[str]:
    i = getattr(p.filesystem, field).index(path)
    return [f"{r.event_id}: {r.summary}" for r in p.reasons[f"filesystem.{field}[{i}]"]]


# ------------------------------------------------------------ sibling programs


def _program(path: Path, mode: int = 0o755) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(mode)


@pytest.fixture
def fake_dpkg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Three packages under tmp_path/root: tools (two programs and a key file in bin),
    suid (a setuid program), ashell (a program listed in the fake /etc/shells)."""
    root = tmp_path / "root"
    info = tmp_path / "info"
    info.mkdir()
    files = {
        "tools": ["usr/bin/tool-a", "usr/bin/tool-b", "usr/libexec/tools/helper",
                  "usr/bin/id_rsa", "usr/share/doc/tools/README"],
        "suid": ["usr/bin/suid-a", "usr/bin/suid-b"],
        "ashell": ["usr/bin/ash-a", "usr/bin/ash-b"],
        "nodejs": ["usr/bin/node", "usr/bin/npm", "usr/bin/npx", "usr/bin/corepack",
                   "usr/share/nodejs/node-gyp/bin/node-gyp", "usr/bin/node-inspect"],
        "git": ["usr/bin/git", "usr/bin/git-daemon", "usr/bin/git-shell",
                "usr/lib/git-core/git-http-backend", "usr/bin/scalar", "usr/bin/git-receive-pack"],
    }  # fmt: skip
    for pkg, names in files.items():
        for n in names:
            _program(root / n)
        listing = [str(root / "usr"), *[str(root / n) for n in names]]
        (info / f"{pkg}.list").write_text("\n".join(listing) + "\n")
    (root / "usr/bin/suid-b").chmod(0o4755)
    shells = tmp_path / "shells"
    shells.write_text(f"# shells\n{root}/usr/bin/ash-b\n")
    monkeypatch.setattr(packaged, "DPKG_INFO", info)
    monkeypatch.setattr(packaged, "SHELLS_FILE", shells)
    return root


def _ran(root: Path, program: str, cwd: Path) -> Observation:
    path = str(root / program)
    return obs(
        str(cwd),
        {"op": "execute", "syscall": "execve", "path": path},
        executables=[{"path": path, "event_id": "e1"}],
    )


def test_a_program_brings_its_package_siblings_citing_the_package(
    fake_dpkg: Path, tmp_path: Path
) -> None:
    p = gen(_ran(fake_dpkg, "usr/bin/tool-a", tmp_path / "work"))
    sibling = str(fake_dpkg / "usr/bin/tool-b")
    assert sibling in p.filesystem.execute
    assert str(fake_dpkg / "usr/libexec/tools/helper") in p.filesystem.execute
    assert str(fake_dpkg / "usr/share/doc/tools/README") not in p.filesystem.execute
    why = " ".join(cited(p, "execute", sibling))
    assert "package tools" in why and "e1:" in why and "tools.list" in why


@pytest.mark.parametrize(
    ("program", "kept", "left_out"),
    [("usr/bin/node", ["usr/bin/node-inspect"],
      ["usr/bin/npm", "usr/bin/npx", "usr/bin/corepack", "usr/share/nodejs/node-gyp/bin/node-gyp"]),
     ("usr/bin/git", ["usr/bin/git-receive-pack"],
      ["usr/bin/git-daemon", "usr/bin/git-shell", "usr/lib/git-core/git-http-backend",
       "usr/bin/scalar"])],
)  # fmt: skip
def test_siblings_of_another_purpose_are_not_granted(
    fake_dpkg: Path, tmp_path: Path, program: str, kept: list[str], left_out: list[str]
) -> None:
    p = gen(_ran(fake_dpkg, program, tmp_path / "work"))
    for path in kept:
        assert str(fake_dpkg / path) in p.filesystem.execute
    for path in left_out:
        assert str(fake_dpkg / path) not in p.filesystem.execute


def test_a_package_manager_that_ran_is_granted(fake_dpkg: Path, tmp_path: Path) -> None:
    p = gen(_ran(fake_dpkg, "usr/bin/npm", tmp_path / "work"))
    assert str(fake_dpkg / "usr/bin/npm") in p.filesystem.execute


def test_a_secret_in_a_package_bin_is_not_granted(fake_dpkg: Path, tmp_path: Path) -> None:
    p = gen(_ran(fake_dpkg, "usr/bin/tool-a", tmp_path / "work"))
    assert str(fake_dpkg / "usr/bin/tool-b") in p.filesystem.execute
    assert not any("id_rsa" in x for x in p.filesystem.execute + p.filesystem.read)


@pytest.mark.parametrize(("program", "other"), [("suid-a", "suid-b"), ("ash-a", "ash-b")])
def test_no_siblings_from_a_package_with_setuid_programs_or_a_shell(
    fake_dpkg: Path, tmp_path: Path, program: str, other: str
) -> None:
    result = generate([Source(_ran(fake_dpkg, f"usr/bin/{program}", tmp_path / "work"))])
    execute = result.policy.filesystem.execute
    assert str(fake_dpkg / f"usr/bin/{program}") in execute
    assert str(fake_dpkg / f"usr/bin/{other}") not in execute
    assert any("not granted" in n and "ships" in n for n in result.notes)


def test_coreutils_on_this_host(tmp_path: Path) -> None:
    sort = shutil.which("sort")
    if sort is None or packaged.index().package_of(sort) is None:
        pytest.skip("sort is not installed by dpkg here")
    p = gen(
        obs(
            str(tmp_path),
            {"op": "execute", "syscall": "execve", "path": sort},
            executables=[{"path": sort, "event_id": "e1"}],
        )
    )
    assert os.path.realpath("/usr/bin/sha256sum") in p.filesystem.execute
    assert "/usr/bin/su" not in p.filesystem.execute


# ------------------------------------------------------------ a writable workspace


def _shell_read_only(cwd: Path) -> Observation:
    return obs(
        str(cwd),
        {"op": "execute", "syscall": "execve", "path": "/bin/sh"},
        {"op": "read", "path": f"{cwd}/in.json"},
        executables=[{"path": "/bin/sh", "event_id": "e1"}],
    )


def test_a_shell_script_that_wrote_nothing_keeps_a_read_only_workspace(tmp_path: Path) -> None:
    g = generate([Source(_shell_read_only(tmp_path))])
    assert "${CWD}" in g.policy.filesystem.read
    assert "${CWD}" not in g.policy.filesystem.write
    assert any("workspace stays read-only" in n for n in g.notes)


@pytest.mark.parametrize(
    "created",
    ["/nonexistent-scratch/out.tgz", "/tmp/cvg-tmpdir-x/out.tgz", "/dev/null"],
    ids=["scratch", "tmpdir", "dev-null"],
)
def test_a_tool_that_wrote_only_outside_the_workspace_keeps_it_read_only(
    tmp_path: Path, created: str
) -> None:
    reads = {"op": "read", "path": f"{tmp_path}/in.json"}
    p = gen(obs(str(tmp_path), reads, {"op": "create", "path": created}))
    assert "${CWD}" in p.filesystem.read
    assert "${CWD}" not in p.filesystem.write


def test_a_write_beneath_the_workspace_makes_it_writable_citing_the_write(tmp_path: Path) -> None:
    reads = {"op": "read", "path": f"{tmp_path}/in.json"}
    p = gen(obs(str(tmp_path), reads, {"op": "create", "path": f"{tmp_path}/out/report.txt"}))
    assert "${CWD}" in p.filesystem.write
    assert any(x.startswith("e2:") for x in cited(p, "write", "${CWD}"))


def _wrote_in(cwd: Path) -> Observation:
    return obs(
        str(cwd),
        {"op": "execute", "syscall": "execve", "path": "/bin/sh"},
        {"op": "create", "path": f"{cwd}/out.txt"},
        executables=[{"path": "/bin/sh", "event_id": "e1"}],
    )


def test_the_home_as_working_directory_is_never_made_writable(tmp_path: Path) -> None:
    o = _wrote_in(tmp_path).model_copy(update={"home": str(tmp_path)})
    assert "${CWD}" not in gen(o).filesystem.write


def test_a_secret_in_the_writable_workspace_stays_denied(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("TOKEN=x\n")
    p = gen(_wrote_in(tmp_path))
    assert "${CWD}" in p.filesystem.write
    assert "${CWD}/.env" in p.filesystem.deny


# ------------------------------------------------------------ the resolver


def _connect(port: int, address: str = "127.0.0.1", **extra: Any) -> dict[str, Any]:
    return {
        "op": "connect",
        "syscall": "connect",
        "family": "inet",
        "sock_type": "stream",
        "port": port,
        "address": address,
        **extra,
    }


def test_a_network_client_gets_the_resolver_citing_its_connect(tmp_path: Path) -> None:
    p = gen(obs(str(tmp_path), {"op": "read", "path": "/usr/share/a"}, _connect(8080)))
    present = [f for f in RESOLVER if os.path.exists(f)]
    assert present, "no resolver file on this host"
    for f in present:
        assert f in p.filesystem.read
        assert any(x.startswith("e2:") and "resolver" in x for x in cited(p, "read", f))


def test_no_resolver_without_a_connect_or_for_a_decoy(tmp_path: Path) -> None:
    decoy = _connect(443, source={"decoy": True})
    reader = obs(str(tmp_path), {"op": "read", "path": "/usr/share/a"})
    for o in (reader, obs(str(tmp_path), decoy)):
        assert not set(RESOLVER) & set(gen(o).filesystem.read)


# ------------------------------------------------------------ servers


def _timed(cwd: Path, *extra: dict[str, Any]) -> Observation:
    return obs(
        str(cwd),
        {"op": "execute", "syscall": "execve", "path": "/usr/bin/python3", "time": 100.0},
        {"op": "read", "path": f"{cwd}/notes/a.txt", "time": 101.0},
        *extra,
    )


_WAIT = {"op": "wait", "syscall": "read", "address": "stdin (pipe)", "time": 102.0}


def test_a_server_gets_no_wall_clock_and_generous_cpu_citing_its_wait(tmp_path: Path) -> None:
    p = gen(_timed(tmp_path, _WAIT))
    assert p.resources.wall_clock_seconds is None
    assert p.resources.cpu_seconds >= 3600
    for key in ("wall_clock_seconds", "cpu_seconds"):
        assert any(r.event_id == "e3" for r in p.reasons[f"resources.{key}"])
    # It only read its workspace: serving is no evidence that it writes there.
    assert "${CWD}" not in p.filesystem.write


def test_a_tool_that_does_not_wait_gets_four_times_its_run(tmp_path: Path) -> None:
    p = gen(_timed(tmp_path, {"op": "read", "path": "/usr/share/a", "time": 110.0}))
    assert p.resources.wall_clock_seconds == 40  # 10 s seen, x4
    assert p.resources.cpu_seconds == 40


def test_one_server_observation_leaves_the_union_unlimited(tmp_path: Path) -> None:
    p = generate([Source(_timed(tmp_path), "a"), Source(_timed(tmp_path, _WAIT), "b")]).policy
    assert p.resources.wall_clock_seconds is None


def test_a_server_workspace_keeps_its_secrets_denied(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "server.key").write_text("k")
    wrote = {"op": "write", "path": f"{tmp_path}/notes/a.txt", "time": 103.0}
    p = gen(_timed(tmp_path, _WAIT, wrote))
    assert "${CWD}" in p.filesystem.write
    assert "${CWD}/notes/server.key" in p.filesystem.deny


# ------------------------------------------------------------ memory


def test_memory_is_sized_from_the_measured_peak_with_headroom(tmp_path: Path) -> None:
    measured = _timed(tmp_path).model_copy(
        update={"peak_rss_kb": 300 * 1024, "tree_rss_kb": 400 * 1024}
    )
    p = gen(measured)
    assert p.resources.memory_mb == 1600  # 400 MiB at once, x4
    why = " ".join(r.summary for r in p.reasons["resources.memory_mb"])
    assert "400 MiB at once" in why and "300 MiB" in why


def test_a_small_peak_still_gets_the_floor_and_unmeasured_keeps_2048(tmp_path: Path) -> None:
    small = _timed(tmp_path).model_copy(update={"peak_rss_kb": 20 * 1024})
    assert gen(small).resources.memory_mb == 512
    assert gen(_timed(tmp_path)).resources.memory_mb == 2048


# ------------------------------------------------------------ a server's settings


def test_variables_the_tool_was_given_are_set_and_secrets_passed(tmp_path: Path) -> None:
    token = "ghp_never_in_a_policy"
    o = _timed(tmp_path).model_copy(
        update={
            "environment": {
                "MEMORY_FILE_PATH": f"{tmp_path}/memory.json",
                "MODE": "fast",
                "GITHUB_TOKEN": None,
            }
        }
    )
    p = gen(o)
    assert p.environment.set["MEMORY_FILE_PATH"] == "${CWD}/memory.json"
    assert p.environment.set["MODE"] == "fast"
    assert "GITHUB_TOKEN" in p.environment.pass_ and "GITHUB_TOKEN" not in p.environment.set
    assert token not in p.model_dump_json()
    assert any(r.event_id == "e1" for r in p.reasons["environment.set.MODE"])
    i = p.environment.pass_.index("GITHUB_TOKEN")
    assert "secret" in p.reasons[f"environment.pass[{i}]"][0].summary


def test_a_secret_named_variable_with_a_value_is_still_only_passed(tmp_path: Path) -> None:
    o = _timed(tmp_path).model_copy(update={"environment": {"API_KEY": "sk-123"}})
    p = gen(o)
    assert "API_KEY" in p.environment.pass_
    assert "sk-123" not in p.model_dump_json()


# ------------------------------------------------------------ listed directories


def test_a_listed_directory_is_a_tree_even_when_gone_by_generation(tmp_path: Path) -> None:
    # Eight directories listed (O_DIRECTORY), empty, and gone by the time the policy is
    # generated: each is a tree, not eight files that widen to their parent.
    dirs = [f"/nonexistent-input/d{i}" for i in range(8)]
    p = gen(
        obs(str(tmp_path / "work"), *({"op": "read", "path": d, "directory": True} for d in dirs))
    )
    assert "/nonexistent-input" not in p.filesystem.read
    for d in dirs:
        assert d in p.filesystem.read
    assert any(x.startswith("e1:") and "walked" in x for x in cited(p, "read", dirs[0]))


def test_a_listed_tree_in_the_home_keeps_its_secrets_denied(tmp_path: Path) -> None:
    home = tmp_path / "home"
    docs = home / "project" / "docs"
    docs.mkdir(parents=True)
    (docs / "a.md").write_text("a")
    (docs / ".env").write_text("TOKEN=x")
    o = obs(
        str(tmp_path / "work"),
        {"op": "read", "path": str(docs), "directory": True},
        {"op": "read", "path": str(docs / "a.md")},
    ).model_copy(update={"home": str(home)})
    p = gen(o)
    assert "${HOME}/project/docs" in p.filesystem.read
    assert "${HOME}/project/docs/.env" in p.filesystem.deny


# ------------------------------------------------------------ ELF programs of a package


def test_an_elf_helper_beside_a_compiler_is_a_sibling_and_a_library_is_not(
    fake_dpkg: Path, tmp_path: Path
) -> None:
    """GCC's collect2 lives in /usr/lib/gcc/<triplet>/<version>, not in a bin."""
    helper_dir = fake_dpkg / "usr/lib/gcc/x86_64-linux-gnu/12"
    helper_dir.mkdir(parents=True)
    for name in ("collect2", "liblto_plugin.so", "liblto_plugin.so.0.0.0", "specs"):
        shutil.copy("/bin/true", helper_dir / name)  # ELF, executable
    (helper_dir / "specs").write_text("not a program\n")
    listing = fake_dpkg.parent / "info" / "tools.list"
    names = [str(helper_dir / n) for n in ("collect2", "liblto_plugin.so",
                                           "liblto_plugin.so.0.0.0", "specs")]  # fmt: skip
    listing.write_text(listing.read_text() + "\n".join(names) + "\n")
    packaged._index.cache_clear()
    try:
        p = gen(_ran(fake_dpkg, "usr/bin/tool-a", tmp_path / "work"))
    finally:
        packaged._index.cache_clear()
    assert str(helper_dir / "collect2") in p.filesystem.execute
    assert not any("liblto" in x or x.endswith("/specs") for x in p.filesystem.execute)


# ------------------------------------------------------------ programs a script names


def _script_run(tmp_path: Path, text: str) -> Observation:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    script = work / "run.sh"
    script.write_text(text)
    return obs(
        str(work),
        {"op": "execute", "syscall": "execve", "path": "/bin/sh", "pid": 10},
        {"op": "read", "path": str(script), "pid": 10},
        executables=[{"path": "/bin/sh", "event_id": "e1"}],
    )


def test_a_program_named_on_a_branch_not_taken_is_granted_citing_the_line(
    tmp_path: Path,
) -> None:
    cat, b64 = shutil.which("cat"), shutil.which("base64")  # base64: no shell baseline
    assert cat and b64, "coreutils are needed"
    text = 'case "$1" in\nA) cat in.txt ;;\nB) x=$(date) ; cat in.txt | base64 -w0 ;;\nesac\n'
    p = gen(_script_run(tmp_path, text))
    target = os.path.realpath(b64)
    assert target in p.filesystem.execute
    why = " ".join(cited(p, "execute", target))
    assert "run.sh names base64 (line 3)" in why and "e2:" in why


@pytest.mark.parametrize(
    ("word", "why"),
    [("bash", "a shell: it runs anything"), ("su", "setuid"), ("passwd", "setuid")],
)
def test_a_script_never_brings_a_shell_or_a_setuid_program(
    tmp_path: Path, word: str, why: str
) -> None:
    found = shutil.which(word)
    if found is None:
        pytest.skip(f"{word} is not installed here")
    p = gen(_script_run(tmp_path, f"{word} -c true\n"))
    assert os.path.realpath(found) not in p.filesystem.execute, why


def test_a_script_never_brings_a_secret(tmp_path: Path) -> None:
    key = tmp_path / "keys" / "id_rsa"
    _program(key)
    p = gen(_script_run(tmp_path, f"{key} --sign x\n"))
    assert str(key) not in p.filesystem.execute


def test_command_words() -> None:
    from cvg_generate.scripts import command_words

    text = (
        "# comment: rm -rf /\n"
        "set -eu; X=1 Y=2 sort -u a >out 2>&1 && uniq b\n"
        "find . -name '*.c' -exec wc -l {} \\; | xargs -0 timeout 5 md5sum\n"
        "jq '.items\n  | map(.name)' f.json  # the filter spans lines\n"
        'echo "$(hostname)" `uname -r`\n'
        'for f in cut paste; do nl "$f"; done\n'
    )
    words = list(command_words(text))
    assert [w for _n, w in words] == [
        "set", "sort", "uniq", "find", "wc", "xargs", "timeout", "md5sum", "jq",
        "hostname", "echo", "uname", "nl",
    ]  # fmt: skip
    assert dict((w, n) for n, w in words)["jq"] == 4 and dict((w, n) for n, w in words)["nl"] == 7


# ------------------------------------------------------------ installed trees


@pytest.fixture
def system(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in for /usr: SYSTEM_TOP moved to tmp_path/usr."""
    from cvg_generate import paths

    top = tmp_path / "usr"
    (top / "share").mkdir(parents=True)
    monkeypatch.setattr(paths, "SYSTEM_TOP", str(top) + "/")
    return top


def _read(tmp_path: Path, *files: Path) -> Observation:
    return obs(
        str(tmp_path / "work"),
        {"op": "execute", "syscall": "execve", "path": "/usr/bin/true"},
        *({"op": "read", "path": str(f)} for f in files),
        executables=[{"path": "/usr/bin/true", "event_id": "e1"}],
    )


def test_a_module_read_brings_its_installed_tree(system: Path, tmp_path: Path) -> None:
    module = system / "share/perl/5.36/List/Util.pm"
    other = system / "share/perl/5.36/JSON/PP.pm"
    for f in (module, other):
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("1;\n")
    p = gen(_read(tmp_path, module))
    tree = str(system / "share/perl")
    assert tree in p.filesystem.read
    assert "installed program's tree" in " ".join(cited(p, "read", tree))


def test_no_tree_with_a_secret_beneath_it(system: Path, tmp_path: Path) -> None:
    module = system / "share/tool/lib/mod.py"
    module.parent.mkdir(parents=True)
    module.write_text("x = 1\n")
    (system / "share/tool/keys").mkdir()
    (system / "share/tool/keys/server.pem").write_text("-----BEGIN PRIVATE KEY-----\n")
    p = gen(_read(tmp_path, module))
    assert str(system / "share/tool") not in p.filesystem.read
    assert str(module) in p.filesystem.read  # the file itself, as before


def test_no_tree_for_a_file_directly_in_a_shared_directory_or_a_link_out(
    system: Path, tmp_path: Path
) -> None:
    lib = system / "lib/x86_64-linux-gnu/libz.so.1"
    lib.parent.mkdir(parents=True)
    lib.write_text("")
    outside = tmp_path / "etc" / "locale.alias"
    outside.parent.mkdir()
    outside.write_text("")
    link = system / "share/locale/locale.alias"
    link.parent.mkdir(parents=True)
    link.symlink_to(outside)
    doc = system / "share/doc/tool/README"
    doc.parent.mkdir(parents=True)
    doc.write_text("")
    p = gen(_read(tmp_path, lib, link, doc))
    assert str(lib.parent) not in p.filesystem.read
    assert str(system / "share/locale") not in p.filesystem.read
    assert str(system / "share/doc") not in p.filesystem.read
    assert str(system / "share/doc/tool") in p.filesystem.read  # one package's part


def test_a_named_python_script_brings_its_interpreter_and_runtime(tmp_path: Path) -> None:
    python = shutil.which("python3", path="/usr/bin:/bin")
    if python is None:
        pytest.skip("no /usr/bin/python3 here")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "yamltool"
    tool.write_text("#!/usr/bin/env python3\nprint(1)\n")
    tool.chmod(0o755)
    o = _script_run(tmp_path, f'[ "$1" = B ] && {tool} x\n')
    p = gen(o)
    real = os.path.realpath(python)
    assert str(tool) in p.filesystem.execute and str(tool) in p.filesystem.read
    assert real in p.filesystem.execute
    assert "#! interpreter of" in " ".join(cited(p, "execute", real))
    stdlib = f"/usr/lib/{os.path.basename(real)}"
    if os.path.isdir(stdlib):
        assert stdlib in p.filesystem.read


# ------------------------------------------------------------ what a build runs


def _built(tmp_path: Path, compiler: str) -> Observation:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return obs(
        str(work),
        {"op": "execute", "syscall": "execve", "path": f"/usr/lib/gcc/x/12/{compiler}"},
        {"op": "create", "path": f"{work}/build/main.o"},
        executables=[{"path": f"/usr/lib/gcc/x/12/{compiler}", "event_id": "e1"}],
    )


def test_a_workspace_the_tool_compiles_in_is_executable(tmp_path: Path) -> None:
    p = gen(_built(tmp_path, "cc1"))
    assert "${CWD}" in p.filesystem.write and "${CWD}" in p.filesystem.execute
    why = " ".join(cited(p, "execute", "${CWD}"))
    assert "builds programs in its workspace" in why and "e1:" in why


def test_a_workspace_is_not_executable_without_a_build(tmp_path: Path) -> None:
    p = gen(_built(tmp_path, "not-a-compiler"))
    assert "${CWD}" in p.filesystem.write and "${CWD}" not in p.filesystem.execute


def test_random_devices_are_a_read_baseline(tmp_path: Path) -> None:
    p = gen(_built(tmp_path, "cc1"))
    assert "/dev/urandom" in p.filesystem.read
    assert "random bytes" in " ".join(cited(p, "read", "/dev/urandom"))


def test_a_makefile_names_the_programs_of_its_other_targets(tmp_path: Path) -> None:
    b64 = shutil.which("base64")
    assert b64, "coreutils are needed"
    work = tmp_path / "work"
    work.mkdir()
    makefile = work / "Makefile"
    makefile.write_text(
        "CC = cc\n"
        "build: main.c\n"
        "\t$(CC) -o build main.c\n"
        "encode: build\n"
        "\t@base64 -w0 build > build.b64\n"
        "base64: not-a-recipe\n"
    )
    make = shutil.which("make") or "/usr/bin/make"
    o = obs(
        str(work),
        {"op": "execute", "syscall": "execve", "path": make, "pid": 20},
        {"op": "read", "path": str(makefile), "pid": 20},
        executables=[{"path": make, "event_id": "e1"}],
    )
    p = gen(o)
    target = os.path.realpath(b64)
    assert target in p.filesystem.execute
    assert "Makefile names base64 (line 5)" in " ".join(cited(p, "execute", target))


def test_a_shebang_through_env_is_not_a_shell(tmp_path: Path) -> None:
    from cvg_generate.baselines import utilities

    server = str(tmp_path / "server.js")
    through_env = obs(
        str(tmp_path),
        {"op": "execute", "syscall": "execve", "path": server},
        executables=[{"path": server, "event_id": "e1", "shebang": ["/usr/bin/env", "node"]}],
    )
    assert utilities(through_env) == []
    through_sh = obs(
        str(tmp_path),
        {"op": "execute", "syscall": "execve", "path": server},
        executables=[{"path": server, "event_id": "e1", "shebang": ["/bin/sh"]}],
    )
    assert any(b.path.endswith("/cp") for b in utilities(through_sh))  # a shell still is
