"""cvg-generate --syscalls allowlist: the union of the observed calls, each observed
runtime's measured baseline and the calls every program needs; the baseline data; and,
on the real kernel, a generated allow list that runs a python tool with identical output
and refuses (and names) a call outside it, as root and as an unprivileged user."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import workloads as wl

from cvg_generate.allowlist import (
    ALWAYS,
    DATA,
    FAMILIES,
    family,
    load_baselines,
    runtimes_of,
    shipped,
)
from cvg_generate.cli import main
from cvg_generate.generate import Source, generate
from cvg_kernel.libc import machine
from cvg_kernel.seccomp import DEFAULT_DENY, table
from cvg_policy.variables import system_python
from cvg_schema import Observation
from cvg_testing import ensure_unpriv_user

ARCH = machine()
# The system's interpreter, as its real file: the unprivileged user can run it.
PY = system_python()["PYTHON"]


def _obs(syscalls: dict[str, int] | None, **extra: Any) -> Observation:
    data: dict[str, Any] = {
        "kind": "cvg.observation",
        "argv": ["python3", "tool.py"],
        "cwd": "/tmp/work",
        "executables": [
            {
                "path": PY,
                "interpreter": "/lib64/ld-linux-x86-64.so.2",
                "event_id": "e1",
            }
        ],
        "events": [
            {"id": "e1", "op": "execute", "syscall": "execve", "path": PY, "result": "ok"},
            *extra.pop("events", []),
        ],
        **extra,
    }
    if syscalls is not None:
        data["syscalls"] = syscalls
    return Observation.model_validate(data)


def test_denylist_stays_the_default() -> None:
    policy = generate([Source(_obs({"read": 3, "ptrace": 1}), None)]).policy
    assert policy.syscalls.mode == "denylist" and policy.syscalls.allow == []


def test_allowlist_is_observed_plus_baselines_plus_always() -> None:
    obs = _obs({"read": 3, "sched_yield": 1, "ptrace": 1})
    result = generate([Source(obs, None)], syscalls="allowlist")
    allow = result.policy.syscalls.allow
    assert result.policy.syscalls.mode == "allowlist"
    assert allow == sorted(allow)
    files = load_baselines()
    expected = (
        {"read", "sched_yield"}
        | set(ALWAYS)
        | shipped("python3", files, ARCH)
        | shipped("native", files, ARCH)
    )
    expected |= {other for call in expected for other in family(call)}
    assert set(allow) == {n for n in expected if n not in DEFAULT_DENY and n in table(ARCH)}
    # One operation under all its names: a newer C library's choice is not a denial.
    assert {"open", "openat", "openat2", "creat", "fchmod", "fchmodat"} <= set(allow)
    # ptrace was seen, but the deny list keeps it out unless --grant-denied granted it.
    assert "ptrace" not in allow
    assert any("not allowed: ptrace: on the default deny list" in n for n in result.notes)
    reasons = result.policy.reasons
    i = allow.index("sched_yield")
    assert reasons[f"syscalls.allow[{i}]"][0].summary == "sched_yield: called once in this run"
    i = allow.index("exit_group")
    assert any("always allowed" in r.summary for r in reasons[f"syscalls.allow[{i}]"])
    for i in range(len(allow)):
        assert reasons[f"syscalls.allow[{i}]"]  # every entry says why


def test_grant_denied_carries_a_deny_list_call_into_the_allow_list() -> None:
    denied = {
        "id": "e2",
        "op": "other",
        "syscall": "ptrace",
        "result": "EPERM",
        "denied_while_learning": True,
        "denied_by": "seccomp",
    }
    obs = _obs({"ptrace": 1}, events=[denied])
    policy = generate([Source(obs, None)], grant_denied=True, syscalls="allowlist").policy
    assert "ptrace" in policy.syscalls.allow


def test_an_observation_without_the_set_gets_the_baselines_and_a_note() -> None:
    result = generate([Source(_obs(None), None)], syscalls="allowlist")
    assert set(ALWAYS) - set(DEFAULT_DENY) <= set(result.policy.syscalls.allow)
    assert any("does not list the calls it made" in n for n in result.notes)


def test_unknown_names_are_left_out_with_a_note() -> None:
    result = generate([Source(_obs({"frobnicate": 2}), None)], syscalls="allowlist")
    assert "frobnicate" not in result.policy.syscalls.allow
    assert any("not allowed: frobnicate: no such system call" in n for n in result.notes)


def test_families_hold_real_names_and_no_deny_list_call() -> None:
    names = [n for f in FAMILIES for n in f]
    assert len(names) == len(set(names))  # a call is in one family at most
    assert not set(names) & set(DEFAULT_DENY)
    assert all(n in table("x86_64") or n in table("aarch64") for n in names)
    assert family("fchmod") == ("chmod", "fchmod", "fchmodat", "fchmodat2")
    assert family("read") == ("read",)


def test_runtimes_are_found_by_executable() -> None:
    found = runtimes_of(_obs({}))
    assert set(found) == {"python3", "native"} and found["python3"].id == "e1"


def test_cli_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "obs.json"
    path.write_text(_obs({"read": 1}).model_dump_json())
    assert main(["--syscalls", "allowlist", str(path)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["syscalls"]["mode"] == "allowlist" and "read" in data["syscalls"]["allow"]
    assert main(["--syscalls", "nope", str(path)]) == 2
    assert "--syscalls" in capsys.readouterr().err


# ------------------------------------------------------------------- the data files


def test_baseline_files_are_measured_data_this_host_has() -> None:
    files = load_baselines()
    assert {b.runtime for b in files} >= {"python3", "node", "sh", "native"}
    for b in files:
        assert b.libc and b.libc_version and b.host and b.runs > 0
        assert b.file == f"{b.runtime}-{b.libc}-{b.libc_version}-{b.arch}.json"
        # Counted where each call starts: exit_group, which strace -c leaves out, is in
        # every run.
        assert b.syscalls.get("exit_group") == b.runs, b.file
        assert all(n in table(b.arch) for n in b.syscalls), b.file
        assert not set(b.syscalls) & set(DEFAULT_DENY), b.file
    assert (DATA / "python3-glibc-2.36-x86_64.json").is_file()


def test_another_hosts_file_is_one_more_file(tmp_path: Path) -> None:
    for f in DATA.glob("*.json"):
        shutil.copy(f, tmp_path)
    other = json.loads((DATA / "python3-glibc-2.36-x86_64.json").read_text())
    other.update(
        libc_version="2.39", host="Ubuntu 24.04", syscalls={"exit_group": 1, "pkey_alloc": 1}
    )
    (tmp_path / "python3-glibc-2.39-x86_64.json").write_text(json.dumps(other))
    files = load_baselines(tmp_path)
    union = shipped("python3", files, "x86_64")
    assert "pkey_alloc" in union and union >= shipped("python3", load_baselines(), "x86_64")


# ------------------------------------------------------------------- on the real kernel

TOOL = """\
import ctypes, hashlib, json, mmap, os, sys
if sys.argv[1:] == ["mbind"]:
    libc = ctypes.CDLL(None, use_errno=True)
    m = mmap.mmap(-1, 4096)
    a = ctypes.addressof(ctypes.c_char.from_buffer(m))
    r = libc.syscall(MBIND, ctypes.c_void_p(a), 4096, 0, None, 0, 0)
    print("mbind", r, os.strerror(ctypes.get_errno()) if r else "ok")
data = open("input.txt", "rb").read()
print(json.dumps({"sha": hashlib.sha256(data).hexdigest(), "lines": data.count(b"\\n")}))
""".replace("MBIND", str(table(ARCH)["mbind"]))


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_a_generated_allowlist_on_the_kernel(identity: str, shared: Path) -> None:
    _check(shared, identity)


def _check(root: Path, identity: str) -> None:
    place = wl.make_place(root, "tool")
    files = {"tool.py": TOOL, "input.txt": "one\ntwo\nthree\n"}
    plain = wl.Input(files, [PY, "tool.py"])
    asks = wl.Input(files, [PY, "tool.py", "mbind"])
    w = wl.Workload("tool", plain, asks)

    policy = place.root / "p.yaml"
    learned, _notes = wl.learn(place, w, policy)  # observed as root: the learning input
    assert learned.status == 0, learned.stderr
    wl.generate(place, place.root / "obs.json", policy, "--syscalls", "allowlist")
    text = policy.read_text()
    assert "  mode: allowlist" in text and "    - mbind" not in text

    traced = [wl.cvg("cvg-run"), "--trace", "-p", str(policy), "--"]
    if identity == "root":
        bare, boxed = wl.run(place, w, plain, []), wl.run(place, w, plain, wl.sandboxed(policy))
        bare_m = wl.run(place, w, asks, [])
        boxed_m = wl.run(place, w, asks, traced)
    else:
        user = ensure_unpriv_user()
        bare, boxed = (
            wl.run_as(user, place, w, plain, None),
            wl.run_as(user, place, w, plain, policy),
        )
        bare_m = wl.run_as(user, place, w, asks, None)
        boxed_m = _traced_as(user, place, asks, policy)
    assert bare.status == 0 and '"lines": 3' in bare.stdout
    assert (boxed.status, boxed.stdout) == (0, bare.stdout), boxed.stderr
    # The same tool, asked for a call outside the list: fine bare, EPERM boxed, named.
    assert bare_m.stdout.startswith("mbind 0 ok\n")
    assert boxed_m.status == 0, boxed_m.stderr
    assert boxed_m.stdout == bare_m.stdout.replace("mbind 0 ok", "mbind -1 Operation not permitted")
    assert "cvg-run: denied: syscall mbind (not in syscalls.allow)" in boxed_m.stderr.splitlines()


def _traced_as(user: Any, place: wl.Place, inp: wl.Input, policy: Path) -> wl.Outcome:
    place.reset(inp)
    wl.give_to(place, user)
    argv = [*wl.launcher_for(user), "--trace", "-p", str(policy), "--"]
    proc = subprocess.run(
        [*argv, *inp.argv], cwd=place.work, env=place.env(), capture_output=True, text=True,
        timeout=120, user=user.pw_uid, group=user.pw_gid, extra_groups=[],
    )  # fmt: skip
    return wl.Outcome(proc.returncode, proc.stdout, "", proc.stderr)


# ------------------------------------------------------------------- tools/syscall-baselines


def _tool() -> Any:
    import importlib.machinery
    import importlib.util

    path = Path(__file__).resolve().parents[3] / "tools" / "syscall-baselines"
    loader = importlib.machinery.SourceFileLoader("syscall_baselines", str(path))
    spec = importlib.util.spec_from_loader("syscall_baselines", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_check_fails_on_a_missing_call_and_notes_an_extra(
    capsys: pytest.CaptureFixture[str],
) -> None:
    tool = _tool()
    shipped_here = shipped("sh", load_baselines(), ARCH)
    same = {name: 1 for name in shipped_here}
    assert tool.check({"sh": same}, strict=True) == 0
    assert "ok: sh:" in capsys.readouterr().out

    needed = dict(same, pkey_alloc=1)  # a call this host made that no file has
    assert tool.check({"sh": needed}, strict=False) == 1
    assert "FAIL: sh: needed here, missing from sh-glibc-2.36" in capsys.readouterr().out

    fewer = dict(same)
    dropped = sorted(set(fewer) - set(ALWAYS))[0]
    del fewer[dropped]  # in the union, not needed on this host
    assert tool.check({"sh": fewer}, strict=False) == 0
    assert f"note: sh: in the baselines, not needed here: {dropped}" in capsys.readouterr().out
    assert tool.check({"sh": fewer}, strict=True) == 1
    assert f"FAIL: sh: in the baselines, not needed here: {dropped}" in capsys.readouterr().out
