"""A grant nested in a write grant cannot be redirected by a link the tool planted.

Run 1 replaces ``work/data`` (granted read inside the write grant ``work``) with a
symlink to a directory outside every grant that holds a secret; run 2, under the same
policy and the same plan cache, tries to read the secret through it. Without the rule
the kernel opens each rule path through links, and run 2 prints the secret (shown bare
by running the read bare). With it, run 2 is refused before the tool starts (exit 125).
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from pathlib import Path

from runhelp import Box, make_policy, run_main, token

from cvg_kernel.landlock import LandlockError, Ruleset

Identity = pwd.struct_passwd | None

PLANT = (
    "import os, shutil; shutil.rmtree('work/data'); os.symlink({target!r}, 'work/data'); "
    "print('planted')"
)
READ = "print(open('work/data/secret').read())"


def _setup(box: Box) -> tuple[Path, str]:
    (box.cwd / "work" / "data").mkdir(parents=True)
    (box.cwd / "work" / "data" / "ok").write_text("fine\n")
    outside = box.root / "outside"
    outside.mkdir()
    secret = token()
    (outside / "secret").write_text(secret)
    for d in (box.cwd / "work", box.cwd / "work" / "data", outside):
        d.chmod(0o777)
    (outside / "secret").chmod(0o644)
    return outside, secret


def _policy(box: Box) -> Path:
    return make_policy(
        box.share,
        filesystem={
            "read": ["/usr", "/etc", "/lib", "/lib64", "/bin", "${CWD}/work/data"],
            "write": ["${CWD}/work", "${SCRATCH}"],
            "execute": ["/usr", "/bin", "/lib", "/lib64"],
        },
    )


def test_a_planted_link_is_refused_on_the_next_run(identity: Identity, box: Box) -> None:
    outside, secret = _setup(box)
    policy = _policy(box)
    python = shutil.which("python3", path="/usr/bin:/bin") or "/usr/bin/python3"
    first = run_main(
        ["-p", str(policy), "--", python, "-c", PLANT.format(target=str(outside))],
        box=box,
        user=identity,
    )
    assert first.rc == 0 and "planted" in first.out, first.err
    assert os.path.islink(box.cwd / "work" / "data")
    # Bare, the planted link now leads the same read to the secret.
    bare = subprocess.run([python, "-c", READ], cwd=box.cwd, capture_output=True, text=True)
    assert secret in bare.stdout, bare
    second = run_main(["-p", str(policy), "--", python, "-c", READ], box=box, user=identity)
    assert secret not in second.out
    assert second.rc == 125, (second.rc, second.out, second.err)
    assert "symbolic link" in second.err, second.err
    # A fresh compile (no cached plan) refuses it too, before any plan carries the target.
    shutil.rmtree(box.cache / "cvg")
    third = run_main(["-p", str(policy), "--", python, "-c", READ], box=box, user=identity)
    assert secret not in third.out
    assert third.rc == 125 and "beneath the write grant" in third.err, third.err


def test_the_kernel_layer_refuses_a_link_beneath_a_rule_that_may_make_links(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", work / "data")
    rules = [
        (str(work), ["read_file", "read_dir", "make_sym"]),
        (str(work / "data"), ["read_file"]),
    ]
    try:
        Ruleset.build(fs_rules=rules).close()
    except LandlockError as e:
        assert "symbolic link" in str(e)
    else:
        raise AssertionError("a rule through a link beneath a make_sym grant was opened")
    # Without make_sym above it, the same link is followed (/lib -> usr/lib must work).
    Ruleset.build(
        fs_rules=[(str(work), ["read_file"]), (str(work / "data"), ["read_file"])]
    ).close()
