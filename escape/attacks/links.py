# ruff: noqa: SIM115  (attacks keep files open on purpose: short, one-shot scripts)
"""Symbolic links, magic links through /proc, and hard links to files outside the grants."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _lib import attack, main, out


def _write_through(make_link, target, link):
    """Make ``link`` to ``target`` and write through it."""
    make_link(target, link)
    with open(link, "w") as f:
        f.write("PWNED")


@attack("links", "canary")
def symlink_in_workspace_write_through(a):
    """Make a workspace symlink to a canary and write through it. Landlock checks
    the file the link resolves to."""
    _write_through(os.symlink, a["canary"], os.path.join(a["ws"], "l"))


@attack("links", "secret")
def symlink_in_workspace_read_through(a):
    """Make a workspace symlink to the secret and read through it. Stopped by Landlock."""
    link = os.path.join(a["ws"], "l")
    os.symlink(a["secret_path"], link)
    out(open(link).read())


@attack("links", "canary")
def proc_self_fd_reopen_o_path_for_write(a):
    """Open a canary with O_PATH (not checked by Landlock), then reopen the magic link
    /proc/self/fd/N for writing. The reopen is checked like any open."""
    fd = os.open(a["canary"], os.O_PATH)
    with open(f"/proc/self/fd/{fd}", "w") as f:
        f.write("PWNED")


@attack("links", "secret")
def proc_self_fd_reopen_o_path_for_read(a):
    """O_PATH the secret, then read it by reopening /proc/self/fd/N. Stopped by Landlock."""
    fd = os.open(a["secret_path"], os.O_PATH)
    out(open(f"/proc/self/fd/{fd}").read())


@attack("links", "secret")
def proc_pid1_root_read(a):
    """Read the secret through /proc/1/root (init's root magic link). Stopped by the
    ptrace check on /proc/1 and by Landlock on the file."""
    out(open("/proc/1/root" + a["secret_path"]).read())


@attack("links", "canary")
def hardlink_canary_into_workspace_then_write(a):
    """Hard-link a canary into the workspace and write the link. Stopped by Landlock
    (linking into another directory needs refer, never granted)."""
    _write_through(os.link, a["canary"], os.path.join(a["ws"], "h"))


@attack("links", "secret")
def hardlink_secret_into_workspace_then_read(a):
    """Hard-link the secret into the readable workspace and read it. Stopped by
    Landlock (no refer) and by protected_hardlinks for other users' files."""
    link = os.path.join(a["ws"], "h")
    os.link(a["secret_path"], link)
    out(open(link).read())


@attack("links", "canary")
def linkat_empty_path_o_path(a):
    """linkat(fd, "", ws/x, AT_EMPTY_PATH) from an O_PATH descriptor of a canary, then
    write the new name. Stopped by Landlock refer (and CAP_DAC_READ_SEARCH for users)."""
    import ctypes

    from _lib import sys_call

    fd = os.open(a["canary"], os.O_PATH)
    dst = ctypes.create_string_buffer(os.path.join(a["ws"], "x").encode())
    empty = ctypes.create_string_buffer(b"")
    sys_call(265, fd, ctypes.addressof(empty), -100, ctypes.addressof(dst), 0x1000)
    with open(os.path.join(a["ws"], "x"), "w") as f:
        f.write("PWNED")


if __name__ == "__main__":
    main(globals())
