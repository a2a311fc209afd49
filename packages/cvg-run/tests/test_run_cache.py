"""The plan cache: a hit for the same policy, a miss for a changed one, and a
damaged entry ignored (recompiled), never trusted. An entry is the HMAC-SHA256 of its
payload under the user's key (cvg_kernel.seal), then the payload in marshal's format
(the plan, its digests, the hosts, the assembled seccomp program)."""

from __future__ import annotations

import hmac
import json
import marshal
import pwd
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from runhelp import Box, load_record, make_policy, run_main, token

Identity = pwd.struct_passwd | None
PLAN_LINE = re.compile(r"^cvg-run: plan (sha256:[0-9a-f]+) \((cache|compiled)\) for ", re.M)


def _source(err: str) -> str:
    m = PLAN_LINE.search(err)
    assert m, err
    return m.group(2)


def _entries(box: Box) -> list[Path]:
    return sorted((box.cache / "cvg" / "plans").glob("*.plan"))


def _run(box: Box, identity: Identity, policy: Path | None) -> tuple[str, str]:
    argv = ["-v", "--", "sh", "-c", "echo ran"]
    if policy is not None:
        argv = ["-p", str(policy), *argv]
    ran = run_main(argv, box=box, user=identity)
    assert (ran.rc, ran.out) == (0, "ran\n"), ran.err
    return _source(ran.err), ran.err


@pytest.mark.parametrize("which", ["file", "default"])
def test_second_run_hits_the_cache(identity: Identity, box: Box, which: str) -> None:
    policy = make_policy(box.share) if which == "file" else None
    assert _run(box, identity, policy)[0] == "compiled"
    assert len(_entries(box)) == 1
    assert _run(box, identity, policy)[0] == "cache"
    assert _run(box, identity, policy)[0] == "cache"
    # The cached plan is the plan: both records carry the same digest and plan.
    recs = [load_record(p) for p in box.records()]
    assert len({r.plan_digest for _, r in recs}) == 1
    assert len({json.dumps(raw["plan"], sort_keys=True) for raw, _ in recs}) == 1


def test_changed_policy_misses(identity: Identity, box: Box) -> None:
    policy = make_policy(box.share, resources={"wall_clock_seconds": 30})
    assert _run(box, identity, policy)[0] == "compiled"
    assert _run(box, identity, policy)[0] == "cache"
    make_policy(box.share, resources={"wall_clock_seconds": 31})  # same path, new bytes
    assert _run(box, identity, policy)[0] == "compiled"
    assert len(_entries(box)) == 2
    plans = [load_record(p)[0]["plan"] for p in box.records()]
    assert sorted({p["wall_clock_seconds"] for p in plans}) == [30, 31]


def test_other_kernel_abi_misses(identity: Identity, box: Box) -> None:
    """The plan depends on the kernel: a capped ABI is another kernel."""
    policy = make_policy(box.share, filesystem={"read": ["/usr", "/etc", "/bin", "/lib",
                                                        "/lib64", "${CWD}"]})  # fmt: skip
    assert _run(box, identity, policy)[0] == "compiled"
    ran = run_main(["-v", "-p", str(policy), "--", "true"], box=box, user=identity,
                   env={"CVG_LANDLOCK_ABI_MAX": "6"})  # fmt: skip
    assert ran.rc == 0, ran.err
    assert _source(ran.err) == "compiled"


def _payload(data: bytes) -> dict[str, Any]:
    entry: dict[str, Any] = marshal.loads(data[32:])
    return entry


def _key(box: Box) -> bytes:
    return (box.state / "cvg" / "key" / "seal").read_bytes()


def _mac(key: bytes, raw: bytes) -> bytes:
    return hmac.digest(key, raw, "sha256")


def _sealed(payload: object, key: bytes) -> bytes:
    """An entry whose MAC matches (as cvg would write it): damage the MAC alone cannot
    see."""
    raw = marshal.dumps(payload)
    return _mac(key, raw) + raw


def _changed(**parts: Any) -> Callable[[bytes, bytes], bytes]:
    return lambda data, key: _sealed({**_payload(data), **parts}, key)


CORRUPTIONS: dict[str, Callable[[bytes, bytes], bytes]] = {
    "truncated": lambda data, key: data[: len(data) // 2],
    "garbage": lambda data, key: b"\x00\xff not an entry \x00",
    "empty": lambda data, key: b"",
    "only-a-digest": lambda data, key: data[:32],
    "not-marshal": lambda data, key: _mac(key, b"{}") + b"{}",
    "not-an-object": lambda data, key: _sealed([], key),
    "plan-not-an-object": _changed(plan=1),
    "digest-not-a-string": _changed(plan_digest=None),
    "hosts-not-a-list": _changed(hosts={}),
    "filter-not-an-object": _changed(filter=[1]),
    "plan-tampered": lambda data, key: (
        data[:32]
        + marshal.dumps(
            {**_payload(data), "plan": {**_payload(data)["plan"], "wall_clock_seconds": 1}}
        )
    ),
}


@pytest.mark.parametrize("damage", sorted(CORRUPTIONS))
def test_corrupted_entry_is_ignored(identity: Identity, box: Box, damage: str) -> None:
    policy = make_policy(box.share, resources={"wall_clock_seconds": 30})
    assert _run(box, identity, policy)[0] == "compiled"
    [entry] = _entries(box)
    entry.write_bytes(CORRUPTIONS[damage](entry.read_bytes(), _key(box)))
    source, err = _run(box, identity, policy)
    assert source == "compiled", err
    assert "internal error" not in err
    # ... and the rewritten entry is good again.
    assert _run(box, identity, policy)[0] == "cache"
    plans = [load_record(p)[0]["plan"] for p in box.records()]
    assert {p["wall_clock_seconds"] for p in plans} == {30}


def test_unwritable_cache_only_costs_speed(identity: Identity, box: Box) -> None:
    blocker = box.root / "cache-is-a-file"
    blocker.write_text("")
    env = {"XDG_CACHE_HOME": str(blocker)}
    for _ in range(2):
        ran = run_main(["-v", "--", "true"], box=box, user=identity, env=env)
        assert ran.rc == 0, ran.err
        assert _source(ran.err) == "compiled"


def test_changed_compiler_misses(identity: Identity, box: Box) -> None:
    """A plan made by other compiler code (an upgrade, an edited checkout) is not
    reused: the key covers cvg-kernel's and cvg-policy's source files."""
    import os

    import cvg_kernel.seccomp

    policy = make_policy(box.share)
    assert _run(box, identity, policy)[0] == "compiled"
    assert _run(box, identity, policy)[0] == "cache"
    source = cvg_kernel.seccomp.__file__
    st = os.stat(source)
    try:
        os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
        assert _run(box, identity, policy)[0] == "compiled"
    finally:
        os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert _run(box, identity, policy)[0] == "cache"


def test_the_cached_filter_is_the_plans(identity: Identity, box: Box) -> None:
    """The entry's seccomp program is what the plan assembles to; one that is not a
    program is assembled again from the plan, and still denies."""
    from cvg_kernel.plan import compile_filter

    assert _run(box, identity, None)[0] == "compiled"
    [entry] = _entries(box)
    payload = _payload(entry.read_bytes())
    assert payload["filter"] == compile_filter(payload["plan"]).data()
    entry.write_bytes(
        _sealed({**payload, "filter": {"arch": "x86_64", "annotated": []}}, _key(box))
    )
    # unshare is on the default deny list: refused with the plan's errno.
    ran = run_main(["-v", "--", "unshare", "-U", "true"], box=box, user=identity)
    assert _source(ran.err) == "cache", ran.err
    assert ran.rc != 0 and "Operation not permitted" in ran.err, ran.err


def _read_in_cwd(box: Box, identity: Identity, names: list[str]) -> tuple[str, str]:
    """The default policy's plan source and what ``cat`` printed of ``names``."""
    script = "; ".join(f"cat {n} 2>/dev/null" for n in names) + "; true"
    ran = run_main(["-v", "--", "sh", "-c", script], box=box, user=identity)
    assert ran.rc == 0, ran.err
    return _source(ran.err), ran.out


def _plant(box: Box, identity: Identity, name: str, text: str) -> None:
    import os

    path = box.cwd / name
    path.write_text(text + "\n")
    if identity is not None:
        os.chown(path, identity.pw_uid, identity.pw_gid)


def test_a_new_file_in_the_working_directory_keeps_the_default_plan(
    identity: Identity, box: Box
) -> None:
    """A tool that writes new files to its working directory (or a run in /tmp) still
    hits the cache: nothing there was denied, so the directory is granted whole and
    its names are in no rule. The new file reads, from the cached plan."""
    _plant(box, identity, "first.txt", "one")
    assert _read_in_cwd(box, identity, ["first.txt"]) == ("compiled", "one\n")
    _plant(box, identity, "second.txt", "two")
    assert _read_in_cwd(box, identity, ["first.txt", "second.txt"]) == ("cache", "one\ntwo\n")
    assert _read_in_cwd(box, identity, ["second.txt"]) == ("cache", "two\n")
    assert len(_entries(box)) == 1


def test_a_new_secret_in_the_working_directory_is_a_compile_that_denies_it(
    identity: Identity, box: Box
) -> None:
    _plant(box, identity, "notes.txt", "public")
    assert _read_in_cwd(box, identity, ["notes.txt"])[0] == "compiled"
    secret = token()
    _plant(box, identity, ".env", secret)
    source, out = _read_in_cwd(box, identity, ["notes.txt", ".env"])
    assert source == "compiled"
    assert out == "public\n" and secret not in out
    # With a secret denied, the directory's other entries are granted one by one:
    # then any new name is a compile, and the new file reads.
    _plant(box, identity, "later.txt", "later")
    assert _read_in_cwd(box, identity, ["later.txt", ".env"]) == ("compiled", "later\n")


def test_another_system_python_misses(identity: Identity, box: Box) -> None:
    """A policy naming ${PYTHON_STDLIB} is compiled again when the system's python3 is
    another (an upgrade moves both variables), and the plan grants the new one."""
    import cvg_policy.variables as variables

    real = variables.system_python()
    if "PYTHON_STDLIB" not in real:
        pytest.fail(f"no system python3 with its standard library here: {real}")
    read = ["/usr", "/etc", "/bin", "/lib", "/lib64", "${CWD}", "${PYTHON_STDLIB}"]
    policy = make_policy(box.share, filesystem={"read": read})
    stdlib = box.share / "python9.9"
    stdlib.mkdir()
    other = {"PYTHON": real["PYTHON"], "PYTHON_STDLIB": str(stdlib)}

    def as_other() -> None:
        variables.system_python = lambda: dict(other)  # type: ignore[assignment]

    def ran(before: Callable[[], None] | None) -> str:
        argv = ["-p", str(policy), "-v", "--", "sh", "-c", "echo ran"]
        done = run_main(argv, box=box, user=identity, before=before)
        assert (done.rc, done.out) == (0, "ran\n"), done.err
        return _source(done.err)

    assert ran(None) == "compiled"
    assert ran(None) == "cache"
    assert ran(as_other) == "compiled"
    assert ran(None) == "cache"
    # Record names are second-resolution plus random bytes, so order by start time.
    records = sorted((load_record(p)[0] for p in box.records()), key=lambda r: r["started"])
    plans = [r["plan"] for r in records]
    assert len(plans) == 4
    granted = [json.dumps(p, sort_keys=True) for p in plans]
    assert str(stdlib) in granted[2] and str(stdlib) not in granted[0]
