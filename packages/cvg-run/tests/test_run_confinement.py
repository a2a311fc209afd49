"""What the tool is given: no capabilities, bounded memory and file size, an
environment from the policy alone, no inherited descriptors, a private scratch
directory. Each test first shows the same thing getting through without
cvg-run (or with the limit raised)."""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import stat
import subprocess
from pathlib import Path

from runhelp import (
    Box,
    make_policy,
    only_record,
    run_main,
    start,
    uid_of,
)

from cvg_testing import ensure_unpriv_user, needs_abi

Identity = pwd.struct_passwd | None
CAP_FIELDS = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")


def _status_fields(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        out[key] = value.strip()
    return out


def _plain(argv: list[str], identity: Identity, before: object = None) -> tuple[int, str]:
    """Run ``argv`` without cvg-run, as ``identity``: (exit status, stdout)."""

    def child() -> None:
        if callable(before):
            before()
        os.execv(argv[0], argv)

    ran = start(child, user=identity).finish(30)
    assert ran.status is not None
    return os.waitstatus_to_exitcode(ran.status), ran.out


# --- 5. capabilities ----------------------------------------------------------------------


def _proc_policy(box: Box) -> Path:
    # /proc is granted whole because /proc/self cannot be: a policy path is opened
    # (symlinks resolved) when the plan is prepared, so /proc/self would name the
    # supervisor's own /proc/<pid>, not the tool's. Tests only.
    return make_policy(
        box.share,
        filesystem={"read": ["/usr", "/etc", "/bin", "/lib", "/lib64", "/proc", "${CWD}"]},
    )


@needs_abi(3)  # below it every read grant is degraded (truncate), so refused
def test_root_tool_holds_no_capabilities(as_root: None, box: Box) -> None:
    status, out = _plain(["/bin/cat", "/proc/self/status"], None)
    plain = _status_fields(out)
    assert status == 0
    assert int(plain["CapEff"], 16) != 0 and int(plain["CapBnd"], 16) != 0  # root has them

    ran = run_main(["-p", str(_proc_policy(box)), "--", "cat", "/proc/self/status"], box=box)
    assert ran.rc == 0, ran.err
    confined = _status_fields(ran.out)
    assert confined["Uid"].split()[0] == "0"  # still root, but powerless
    for name in CAP_FIELDS:
        assert int(confined[name], 16) == 0, (name, confined[name])
    assert confined["NoNewPrivs"] == "1"
    assert confined["Seccomp"] == "2"


@needs_abi(3)  # below it every read grant is degraded (truncate), so refused
def test_unprivileged_tool_holds_no_capabilities(as_root: None, box: Box) -> None:
    identity = ensure_unpriv_user()
    ran = run_main(
        ["-p", str(_proc_policy(box)), "--", "cat", "/proc/self/status"], box=box, user=identity
    )
    assert ran.rc == 0, ran.err
    confined = _status_fields(ran.out)
    assert confined["Uid"].split()[0] == str(identity.pw_uid)
    for name in ("CapInh", "CapPrm", "CapEff", "CapAmb"):
        assert int(confined[name], 16) == 0, (name, confined[name])
    # The bounding set needs CAP_SETPCAP to shrink; no_new_privs is what keeps an
    # unprivileged tool from gaining anything on exec.
    assert confined["NoNewPrivs"] == "1"
    assert confined["Seccomp"] == "2"


# --- 6. memory and file size --------------------------------------------------------------

ALLOCATE = "b = bytearray(200 * 1024 * 1024); print('allocated', len(b) >> 20)"


@needs_abi(3)  # below it every read grant is degraded (truncate), so refused
def test_memory_limit_bites(identity: Identity, box: Box) -> None:
    roomy = make_policy(box.share, name="roomy.json", resources={"memory_mb": 1024})
    ran = run_main(["-p", str(roomy), "--", "python3", "-c", ALLOCATE], box=box, user=identity)
    assert (ran.rc, ran.out) == (0, "allocated 200\n"), ran.err

    tight = make_policy(box.share, name="tight.json", resources={"memory_mb": 64})
    ran = run_main(["-p", str(tight), "--", "python3", "-c", ALLOCATE], box=box, user=identity)
    assert ran.rc != 0
    assert ran.out == ""
    assert "MemoryError" in ran.err


WRITE_5MB = 'exec dd if=/dev/zero of="$TMPDIR/big" bs=1048576 count=5 status=none'


@needs_abi(3)  # below it every read grant is degraded (truncate), so refused
def test_file_size_limit_bites(identity: Identity, box: Box) -> None:
    roomy = make_policy(box.share, name="roomy.json", resources={"file_size_mb": 64})
    ran = run_main(["-p", str(roomy), "--keep-scratch", "--", "sh", "-c", WRITE_5MB],
                   box=box, user=identity)  # fmt: skip
    assert ran.rc == 0, ran.err
    _, rec = only_record(box)
    assert rec.scratch is not None and rec.scratch.kept
    big = Path(rec.scratch.path) / "big"
    assert big.stat().st_size == 5 * 1024 * 1024
    for p in box.records():
        p.unlink()

    tight = make_policy(box.share, name="tight.json", resources={"file_size_mb": 1})
    ran = run_main(["-p", str(tight), "--keep-scratch", "--", "sh", "-c", WRITE_5MB],
                   box=box, user=identity)  # fmt: skip
    # dd (the tool's first process, via exec) is killed by SIGXFSZ.
    assert ran.rc == 128 + signal.SIGXFSZ, ran.err
    _, rec = only_record(box)
    assert (rec.exit.meaning, rec.exit.signal) == ("signaled", signal.SIGXFSZ)
    assert rec.scratch is not None
    assert (Path(rec.scratch.path) / "big").stat().st_size == 1024 * 1024


@needs_abi(3)  # below it every read grant is degraded (truncate), so refused
def test_file_size_limit_in_python_is_efbig(identity: Identity, box: Box) -> None:
    """Python ignores SIGXFSZ itself; then the write fails with EFBIG."""
    code = (
        "import os\n"
        "try:\n"
        "    open(os.environ['TMPDIR'] + '/big', 'wb').write(bytes(5 << 20))\n"
        "except OSError as e:\n"
        "    print(e.errno == 27)\n"
    )
    tight = make_policy(box.share, resources={"file_size_mb": 1})
    ran = run_main(["-p", str(tight), "--", "python3", "-c", code], box=box, user=identity)
    assert (ran.rc, ran.out) == (0, "True\n"), ran.err


# --- 7. the environment -------------------------------------------------------------------


def test_caller_secret_does_not_reach_the_tool(identity: Identity, box: Box) -> None:
    secret = "hunter2-cvg-" + os.urandom(4).hex()

    def with_secret() -> None:
        os.environ["CVG_TEST_SECRET"] = secret
        os.environ["LD_PRELOAD"] = "/nonexistent-preload.so"

    status, out = _plain(["/usr/bin/env"], identity, before=with_secret)
    assert status == 0 and f"CVG_TEST_SECRET={secret}" in out  # the control leaks it

    ran = run_main(["--", "env"], box=box, user=identity, before=with_secret)
    assert ran.rc == 0, ran.err
    assert secret not in ran.out
    names = {line.split("=", 1)[0] for line in ran.out.splitlines()}
    # The default policy sets PATH, HOME and TMPDIR and passes a few locale names.
    assert names <= {"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ"}
    assert "LD_PRELOAD" not in names
    env = dict(line.split("=", 1) for line in ran.out.splitlines())
    _, rec = only_record(box)
    assert rec.scratch is not None
    assert env["HOME"] == env["TMPDIR"] == rec.scratch.path != str(box.home)


# --- 8. inherited descriptors -------------------------------------------------------------


@needs_abi(3)  # below it every read grant is degraded (truncate), so refused
def test_inherited_descriptor_5_is_closed(identity: Identity, box: Box) -> None:
    secret_file = box.share / "fd5-secret"
    secret = "fd-five-" + os.urandom(4).hex()
    secret_file.write_text(secret)
    secret_file.chmod(0o644)

    def open_fd5() -> None:
        fd = os.open(secret_file, os.O_RDONLY)
        os.dup2(fd, 5, inheritable=True)
        os.close(fd)

    status, out = _plain(["/bin/sh", "-c", "cat <&5"], identity, before=open_fd5)
    assert (status, out) == (0, secret)  # the control reads it

    def check_still_open(rc: int) -> bool:
        return os.get_inheritable(5)  # cvg-run did not close the caller's own fd 5

    ran = run_main(["--", "sh", "-c", "cat <&5"], box=box, user=identity, before=open_fd5,
                   after=check_still_open)  # fmt: skip
    assert ran.rc != 0
    assert secret not in ran.out
    assert "Bad file descriptor" in ran.err or "bad file descriptor" in ran.err.lower()
    assert ran.after is True

    # Nothing else came through either: the tool's descriptors are 0, 1, 2 and
    # the one ls opens to list them.
    policy = _proc_policy(box)
    ran = run_main(["-p", str(policy), "--", "ls", "/proc/self/fd"], box=box, user=identity,
                   before=open_fd5)  # fmt: skip
    assert ran.rc == 0, ran.err
    assert sorted(ran.out.split()) == ["0", "1", "2", "3"]


# --- 9. ${SCRATCH} ---------------------------------------------------------------------------

SHOW_SCRATCH = 'echo "$TMPDIR"; stat -c "%a %u" "$TMPDIR"; echo hi > "$TMPDIR/f"'


def test_scratch_is_private_and_removed(identity: Identity, box: Box) -> None:
    ran = run_main(["--", "sh", "-c", SHOW_SCRATCH], box=box, user=identity)
    assert ran.rc == 0, ran.err
    path, perms = ran.out.splitlines()
    assert perms == f"700 {uid_of(identity)}"
    assert not os.path.exists(path)
    _, rec = only_record(box)
    assert rec.scratch is not None
    assert (rec.scratch.path, rec.scratch.kept) == (path, False)


def test_scratch_kept_on_request(identity: Identity, box: Box) -> None:
    ran = run_main(["--keep-scratch", "--", "sh", "-c", SHOW_SCRATCH], box=box, user=identity)
    assert ran.rc == 0, ran.err
    path, perms = ran.out.splitlines()
    assert perms == f"700 {uid_of(identity)}"
    st = os.stat(path)
    assert stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == uid_of(identity)
    assert Path(path, "f").read_text() == "hi\n"
    assert Path(path).parent == box.tmp  # made in the caller's TMPDIR
    _, rec = only_record(box)
    assert rec.scratch is not None
    assert (rec.scratch.path, rec.scratch.kept) == (path, True)


def test_scratch_removed_even_when_the_tool_locks_it(identity: Identity, box: Box) -> None:
    """chmod is outside Landlock: a tool can make a directory in ${SCRATCH} that
    its own user cannot empty. It is removed all the same."""
    lock = 'cd "$TMPDIR" && mkdir -p d/e && touch d/e/f d/g && chmod 0 d/e && chmod 500 d; pwd'
    ran = run_main(["--", "sh", "-c", lock], box=box, user=identity)
    assert ran.rc == 0, ran.err
    path = ran.out.strip()
    assert path
    exists = os.path.exists(path)
    if exists:
        subprocess.run(["chmod", "-R", "u+rwx", path], check=False)
        shutil.rmtree(path)
    assert not exists
