"""cvg's own state against a tool that may write near it: the plan cache, the key that
seals it and the run records.

Each attack is first shown to work with no sandbox, or against the weaker mechanism it
was written for (a record's temporary file with a name), judged by an outside oracle: a
canary the next run prints, a file it writes outside its grants, the record's own
content and cvg-run's status. Then the same attack, by a confined tool whose policy
grants write on the directory around cvg's state, is contained.
"""

from __future__ import annotations

import json
import marshal
import os
import pwd
from pathlib import Path

import pytest
from runhelp import PY, Box, bare_stdout, load_record, make_policy, run_main, token

Identity = pwd.struct_passwd | None

# Plants a plan: the MAC under the key when the key can be read, else the sha256 header
# an unkeyed cache checked.
PLANT_PLAN = r"""
import hashlib, hmac, sys
entry, key_path, forged = sys.argv[1:]
payload = open(forged, "rb").read()
try:
    head = hmac.digest(open(key_path, "rb").read(), payload, "sha256")
    print("key read")
except OSError as e:
    head = hashlib.sha256(payload).digest()
    print("key:", type(e).__name__)
try:
    open(entry, "wb").write(head + payload)
    print("entry written")
except OSError as e:
    print("entry:", type(e).__name__)
"""


def _own(identity: Identity, *paths: Path) -> None:
    for p in paths:
        if identity is not None:
            os.chown(p, identity.pw_uid, identity.pw_gid)


@pytest.mark.parametrize("attacker", ["bare", "confined"])
def test_a_tool_with_write_on_the_cache_cannot_plant_the_next_plan(
    identity: Identity, box: Box, attacker: str
) -> None:
    """The tool can write ${HOME}/.cache, where cvg's plan cache is. It writes a plan
    that grants the next default-policy run the share: read its canary, write beside it."""
    cache = box.home / ".cache"
    other = cache / "other"
    other.mkdir(parents=True)
    _own(identity, cache, other)
    env = {"XDG_CACHE_HOME": str(cache)}
    secret = token()
    canary = box.share / "canary.txt"
    canary.write_text(secret + "\n")
    canary.chmod(0o644)
    planted = box.share / "planted"
    # Made before the first run: the working directory's names are part of the default
    # policy's cache entry.
    script = box.cwd / "plant.py"
    script.write_text(PLANT_PLAN)
    forged = box.cwd / "forged.bin"
    forged.write_bytes(b"")
    for p in (script, forged):
        p.chmod(0o644)

    ran = run_main(["--", "true"], box=box, user=identity, env=env)
    assert ran.rc == 0, ran.err
    [entry] = sorted((cache / "cvg" / "plans").glob("*.plan"))
    payload = marshal.loads(entry.read_bytes()[32:])
    payload["plan"]["landlock"]["fs_rules"].append(
        {"path": str(box.share), "access": ["read_file", "read_dir", "write_file", "make_reg"]}
    )
    forged.write_bytes(marshal.dumps(payload))
    key = box.state / "cvg" / "key" / "seal"
    argv = [PY, str(script), str(entry), str(key), str(forged)]

    if attacker == "bare":
        said = bare_stdout(identity, box, argv)
        assert "entry written" in said, said
    else:
        policy = make_policy(
            box.share,
            filesystem={"write": ["${SCRATCH}", "/dev/null", "${HOME}/.cache"]},
        )
        probe = f"; echo ok > {other}/written && echo grant works"
        ran = run_main(["-p", str(policy), "--", "sh", "-c", " ".join(argv) + probe],
                       box=box, user=identity, env=env)  # fmt: skip
        assert ran.rc == 0, ran.err
        said = ran.out

    ran = run_main(["-v", "--", "sh", "-c", f"cat {canary}; echo x > {planted}; true"],
                   box=box, user=identity, env=env)  # fmt: skip
    assert ran.rc == 0, ran.err
    escaped = secret in ran.out or planted.exists()
    assert escaped == (attacker == "bare"), (ran.out, ran.err, said)
    if attacker == "confined":
        assert "(cache)" in ran.err, ran.err  # cvg's own entry, untouched
        # The grant on ~/.cache is real; cvg's directory inside it is not reachable.
        assert "grant works" in said, said
        assert "key: PermissionError" in said and "entry: PermissionError" in said, said


def test_an_entry_without_the_mac_is_a_miss(identity: Identity, box: Box) -> None:
    """What an unkeyed cache accepted (the sha256 of the payload at its head) is
    compiled again, never used."""
    import hashlib

    ran = run_main(["--", "true"], box=box, user=identity)
    assert ran.rc == 0, ran.err
    [entry] = sorted((box.cache / "cvg" / "plans").glob("*.plan"))
    payload = marshal.loads(entry.read_bytes()[32:])
    payload["plan"]["wall_clock_seconds"] = 7
    raw = marshal.dumps(payload)
    entry.write_bytes(hashlib.sha256(raw).digest() + raw)
    ran = run_main(["-v", "--", "true"], box=box, user=identity)
    assert ran.rc == 0 and "(compiled)" in ran.err, ran.err
    [path] = [p for p in box.records() if load_record(p)[1].plan is not None][-1:]
    assert load_record(path)[0]["plan"]["wall_clock_seconds"] != 7


@pytest.mark.parametrize(
    "grant", ["${HOME}", "${HOME}/.cache", "${HOME}/.local", "${HOME}/.config"]
)
def test_no_grant_reaches_cvgs_own_directories(identity: Identity, box: Box, grant: str) -> None:
    """Under write on the home or one of its XDG trees, cvg's config, cache and state
    (and the key in it) can be neither read nor written; bare, every step works."""
    xdg = {
        "XDG_CONFIG_HOME": str(box.home / ".config"),
        "XDG_CACHE_HOME": str(box.home / ".cache"),
        "XDG_STATE_HOME": str(box.home / ".local" / "state"),
    }
    run_main(["--", "true"], box=box, user=identity, env=xdg)  # makes the key and a plan
    policies = box.home / ".config" / "cvg" / "policies"
    policies.mkdir(parents=True)
    (policies / "p.yaml").write_text("version: 1\n")
    _own(identity, box.home / ".config", policies.parent, policies, policies / "p.yaml")
    key = box.home / ".local" / "state" / "cvg" / "key" / "seal"
    targets = {
        "read key": f"cat {key} >/dev/null",
        "read config": f"cat {policies}/p.yaml >/dev/null",
        "write config": f"echo x >> {policies}/p.yaml",
        "write cache": f"echo x > {box.home}/.cache/cvg/plans/new.plan",
        "write state": f"echo x > {box.home}/.local/state/cvg/runs/new.json",
    }
    script = "; ".join(f"{cmd} 2>/dev/null && echo '{what}'" for what, cmd in targets.items())
    bare = bare_stdout(identity, box, ["sh", "-c", script + "; true"])
    assert bare.splitlines() == [w for w in targets if w != "read key" or key.exists()], bare
    policy = make_policy(box.share, filesystem={"write": ["${SCRATCH}", "/dev/null", grant]})
    ran = run_main(["-p", str(policy), "--", "sh", "-c", script + "; true"], box=box,
                   user=identity, env=xdg)  # fmt: skip
    assert ran.rc == 0, ran.err
    assert ran.out == "", ran.out
    assert key.exists()  # cvg-run made it: the read above was refused, not missing


# Replaces every temporary file beside the record (a name cvg-run made before the run) by a
# record that says the tool exited 0, then exits 3.
SWAP_RECORD = r"""
import os, sys
d, name, forged = sys.argv[1:]
hits = [n for n in os.listdir(d) if n.startswith("." + name + ".")]
for n in hits:
    tmp = os.path.join(d, "x" + n)
    with open(tmp, "w") as f:
        f.write(open(forged).read())
    os.rename(tmp, os.path.join(d, n))
print(len(hits))
sys.exit(3)
"""


def _forged_record(box: Box) -> Path:
    forged = box.share / "forged.json"
    forged.write_text(json.dumps({"kind": "cvg.run", "exit": {"status": 0}, "forged": True}))
    forged.chmod(0o644)
    return forged


def _swap(box: Box) -> tuple[Path, Path, list[str]]:
    rec_dir = box.share / "rec"
    rec_dir.mkdir()
    rec_dir.chmod(0o777)
    script = box.share / "swap.py"
    script.write_text(SWAP_RECORD)
    script.chmod(0o644)
    target = rec_dir / "run.json"
    policy = make_policy(box.share, filesystem={"write": ["${SCRATCH}", "/dev/null", str(rec_dir)],
                                                "read": ["/usr", "/etc", "/lib", "/lib64", "/bin",
                                                         str(box.share)]})  # fmt: skip
    argv = ["-p", str(policy), "--record", str(target), "--", PY, str(script), str(rec_dir),
            "run.json", str(_forged_record(box))]  # fmt: skip
    return target, rec_dir, argv


def test_a_named_temporary_record_is_swapped_bare(identity: Identity, box: Box) -> None:
    """The attack works on what it targets: a temporary record with a name, beside the
    record, is replaced by the forged one."""
    _, rec_dir, argv = _swap(box)
    decoy = rec_dir / ".run.json.0123456789ab"
    decoy.write_text("cvg-run's\n")
    decoy.chmod(0o666)
    said = bare_stdout(identity, box, argv[argv.index("--") + 1 :])
    assert said == "1\n"
    assert json.loads(decoy.read_text())["forged"] is True


def test_the_record_has_no_name_to_swap_during_the_run(identity: Identity, box: Box) -> None:
    target, _, argv = _swap(box)
    ran = run_main(argv, box=box, user=identity)
    assert ran.rc == 3, ran.err
    assert ran.out == "0\n"  # nothing found to replace
    raw, rec = load_record(target)
    assert rec.exit.status == 3 and "forged" not in raw
    assert rec.seal is not None


def test_a_swapped_temporary_record_is_refused(identity: Identity, box: Box) -> None:
    """Where O_TMPFILE is not supported, the temporary file has a name: the tool that
    replaces it is caught (the inode is not the one written), and cvg-run says so with
    its own status, never the tool's, and leaves no forged record."""
    target, _, argv = _swap(box)

    def no_tmpfile() -> None:
        os.O_TMPFILE = os.O_DIRECTORY  # open(dir, O_WRONLY|O_DIRECTORY) fails: EISDIR

    ran = run_main(argv, box=box, user=identity, before=no_tmpfile)
    assert ran.out == "1\n", ran.err  # the tool found it and replaced it
    assert ran.rc == 123, ran.err
    assert ran.err.count("\n") == 1 and "temporary file was replaced" in ran.err, ran.err
    assert not target.exists()


@pytest.mark.parametrize("made", ["directory", "symlink"])
def test_a_record_path_made_by_the_tool_is_refused(identity: Identity, box: Box, made: str) -> None:
    rec_dir = box.share / "rec"
    rec_dir.mkdir()
    rec_dir.chmod(0o777)
    target = rec_dir / "run.json"
    policy = make_policy(box.share, filesystem={"write": ["${SCRATCH}", "/dev/null",
                                                          str(rec_dir)]})  # fmt: skip
    make = f"mkdir {target}" if made == "directory" else f"ln -s /dev/null {target}"
    ran = run_main(["-p", str(policy), "--record", str(target), "--", "sh", "-c", make],
                   box=box, user=identity)  # fmt: skip
    # The oracle: the tool did make it (the attack ran), and its status 0 is not the answer.
    assert target.is_symlink() if made == "symlink" else target.is_dir()
    assert ran.rc == 123, ran.err
    assert ran.err.count("\n") == 1, ran.err
    assert f"a {'directory' if made == 'directory' else 'symbolic link'}, not a regular file" in (
        ran.err
    )
    assert "the tool's status was 0" in ran.err


def test_a_record_path_that_is_a_directory_is_refused_before_the_run(
    identity: Identity, box: Box
) -> None:
    target = box.share / "run.json"
    target.mkdir()
    marker = box.share / "ran"
    ran = run_main(["--record", str(target), "--", "sh", "-c", f"touch {marker}"],
                   box=box, user=identity)  # fmt: skip
    assert ran.rc == 2 and not marker.exists()
    assert ran.err == f"cvg-run: --record {target}: not a regular file\n"


def test_a_records_directory_a_tool_made_read_only_is_reset(identity: Identity, box: Box) -> None:
    """A file's mode is outside Landlock: a confined tool can chmod cvg's run records
    directory to 0500. Proven first: a user then cannot make a file in it (root can: the
    attack is proven only as the unprivileged user). The next cvg-run gives it back
    mode 0700 and writes its record; the tool's own run could not hide its record either."""
    assert run_main(["--", "true"], box=box, user=identity).rc == 0
    runs = box.runs
    assert runs.is_dir() and len(box.records()) == 1
    probe = ["sh", "-c", f"chmod 500 {runs} && touch {runs}/x; echo $?; chmod 700 {runs}"]
    blocked = bare_stdout(identity, box, probe).strip() != "0"
    assert blocked == (identity is not None), "the attack must be proven as the user"

    ran = run_main(["--", "chmod", "500", str(runs)], box=box, user=identity)
    assert runs.stat().st_mode & 0o777 == 0o500  # the oracle: the confined tool did it
    if identity is not None:  # its own record could not be linked: not the tool's 0
        assert ran.rc == 123 and "the tool's status was 0" in ran.err, ran.err
    later = run_main(["--", "sh", "-c", "exit 7"], box=box, user=identity)
    assert later.rc == 7, later.err
    assert f"{runs}: mode 500 reset to 700 (a tool may have changed it)" in later.err
    assert runs.stat().st_mode & 0o777 == 0o700
    statuses = [load_record(p)[0]["exit"]["status"] for p in box.records()]
    assert 7 in statuses


READ = """
import sys
try:
    print(open(sys.argv[1]).read())
except OSError as e:
    print(type(e).__name__)
"""


def test_under_trace_a_refused_read_of_cvg_s_state_is_named(identity: Identity, box: Box) -> None:
    """A grant around cvg's state directory: the supervisor refuses the tool's read of
    it, and the record names cvg's own state as what keeps it out."""
    local = box.home / ".local"
    state = local / "state"
    (state / "cvg").mkdir(parents=True)
    _own(identity, local, state, state / "cvg")
    canary = state / "cvg" / "canary.txt"
    secret = token()
    canary.write_text(secret)
    canary.chmod(0o644)
    argv = [PY, "-c", READ, str(canary)]
    assert secret in bare_stdout(identity, box, argv)

    policy = make_policy(box.share, filesystem={"write": ["${SCRATCH}", "/dev/null", str(local)]})
    record = box.share / "run.json"
    ran = run_main(["--trace", "--record", str(record), "-p", str(policy), "--", *argv],
                   box=box, user=identity, env={"XDG_STATE_HOME": str(state)},
                   timeout=120)  # fmt: skip
    assert ran.rc == 0, ran.err
    assert secret not in ran.out and "PermissionError" in ran.out
    denials = [d for d in load_record(record)[0]["denials"] if d.get("path") == str(canary)]
    assert [(d["mechanism"], d["op"], d["errno"], d.get("rule")) for d in denials] == [
        ("supervisor", "read", "EACCES", None)
    ], denials
    assert "cvg's own state" in denials[0]["detail"]
    assert f"cvg-run: denied: open {canary} for read ({canary.parent} is cvg's own state" in ran.err
