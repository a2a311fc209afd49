# ruff: noqa: SIM115  (attacks keep files open on purpose: short, one-shot scripts)
"""Grants that move under the tool: a read grant nested inside a write grant that the
tool replaces with a symbolic link for the next run, and files of a read-only grant
linked or renamed into a write grant."""

import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _lib import attack, main, out

NESTED = {"nested": True, "runs": 2}


def _redirect(a, target):
    data = os.path.join(a["ws"], "data")
    shutil.rmtree(data)
    os.symlink(target, data)


@attack("links", "secret", policy="nested", extra=NESTED)
def symlink_nested_grant_redirect(a):
    """Policy: write ws, read ws/data. Run 1 replaces ws/data with a symlink to an
    outside directory; run 2 (same policy, same plan cache) reads the secret through
    ws/data. Should be stopped by the compiler refusing (or not following) a grant
    that resolves through a symlink the tool can write."""
    if a["run"] == 1:
        _redirect(a, a["outside"])
    else:
        out(open(os.path.join(a["ws"], "data", "secret.txt")).read())


@attack("links", "exec", policy="nested", extra=NESTED)
def symlink_nested_grant_redirect_execute(a):
    """Policy: write ws, execute ws/data. Run 1 replaces ws/data with a symlink to an
    outside directory of programs; run 2 runs one through ws/data. Should be stopped
    like symlink_nested_grant_redirect."""
    if a["run"] == 1:
        _redirect(a, os.path.join(a["outside"], "exec"))
    else:
        subprocess.run([os.path.join(a["ws"], "data", "marker")], check=False)


@attack("links", "canary", policy="rorw", extra={"ro": True})
def link_readonly_into_write_grant(a):
    """Policy: read ro, write ws. link() ro/canary.txt into ws, then open the new name
    for writing: the same inode, now under a write grant. Should be stopped by Landlock
    (a cross-directory link needs refer on both ends; ro has none)."""
    dst = os.path.join(a["ws"], "c")
    os.link(os.path.join(a["work"], "ro", "canary.txt"), dst)
    with open(dst, "r+") as f:
        f.write("PWNED")


@attack("links", "canary", policy="rorw", extra={"ro": True})
def rename_readonly_into_write_grant(a):
    """Policy: read ro, write ws. rename() ro/canary.txt into ws (removing it from the
    read-only grant) and write it there. Should be stopped by Landlock (remove_file and
    refer on ro)."""
    dst = os.path.join(a["ws"], "c")
    os.rename(os.path.join(a["work"], "ro", "canary.txt"), dst)
    with open(dst, "r+") as f:
        f.write("PWNED")


if __name__ == "__main__":
    main(globals())
