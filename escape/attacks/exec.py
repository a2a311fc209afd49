"""Execute: ungranted binaries, memfd, execveat and the dynamic-loader trick.

The target is a tiny ELF (made by the runner) in `outside/exec/` that prints a random
token: the exec oracle fires only if that token reaches the output.
"""

# ruff: noqa: SIM115  (attacks keep files open on purpose: short, one-shot scripts)

import ctypes
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _lib import attack, main, sys_call

MFD_CLOEXEC = 1
AT_EMPTY_PATH = 0x1000


def _execveat_in_child(fd):
    """execveat(fd, "", AT_EMPTY_PATH) in a forked child; the parent waits for it."""
    pid = os.fork()
    if pid == 0:
        argv = (ctypes.c_char_p * 2)(b"m", None)
        envp = (ctypes.c_char_p * 1)(None)
        empty = ctypes.create_string_buffer(b"")
        sys_call(
            322,
            fd,
            ctypes.addressof(empty),
            ctypes.addressof(argv),
            ctypes.addressof(envp),
            AT_EMPTY_PATH,
        )
        os._exit(99)
    os.waitpid(pid, 0)


def _spawn(argv):
    pid = os.fork()
    if pid == 0:
        try:
            os.execv(argv[0], argv)
        finally:
            os._exit(99)
    os.waitpid(pid, 0)


@attack("exec", "exec")
def exec_ungranted_elf(a):
    """execve an ELF outside the execute grants. Stopped by Landlock execute."""
    _spawn([a["marker"]])


@attack("exec", "exec")
def exec_ungranted_script(a):
    """execve a #! script outside the execute grants. Stopped by Landlock execute
    on the script itself."""
    _spawn([a["marker_sh"]])


@attack("exec", "exec")
def exec_copy_in_workspace(a):
    """Copy the ELF into the writable workspace, chmod +x and run it. Stopped by
    Landlock: write does not imply execute."""
    dst = os.path.join(a["ws"], "m")
    shutil.copy(a["marker"], dst)
    os.chmod(dst, 0o755)
    _spawn([dst])


@attack("exec", "exec", policy="default")
def exec_copy_in_scratch_default_policy(a):
    """Under the default policy, copy the ELF into $TMPDIR (${SCRATCH}) and run it.
    Stopped by Landlock execute."""
    import tempfile

    dst = os.path.join(tempfile.mkdtemp(), "m")
    shutil.copy(a["marker"], dst)
    os.chmod(dst, 0o755)
    _spawn([dst])


def _memfd(a, flags):
    name = ctypes.create_string_buffer(b"x")
    fd = sys_call(319, ctypes.addressof(name), flags)
    os.write(fd, open(a["marker"], "rb").read())
    return fd


@attack("exec", "exec")
def memfd_exec_via_proc_self_fd(a):
    """memfd_create without MFD_NOEXEC_SEAL, write the ELF, exec /proc/self/fd/N.
    Stopped by seccomp (memfd must be created noexec)."""
    fd = _memfd(a, 0)
    pid = os.fork()
    if pid == 0:
        os.execv(f"/proc/self/fd/{fd}", ["m"])
    os.waitpid(pid, 0)


@attack("exec", "exec")
def memfd_execveat_empty_path(a):
    """memfd with the ELF, then execveat(fd, "", AT_EMPTY_PATH). Stopped by seccomp
    (memfd_noexec, execveat denied)."""
    fd = _memfd(a, 0)
    _execveat_in_child(fd)


@attack("exec", "exec")
def execveat_ungranted_file_fd(a):
    """Open the ungranted ELF and execveat its descriptor. Stopped by seccomp
    (execveat) and Landlock execute."""
    fd = os.open(a["marker"], os.O_RDONLY)
    _execveat_in_child(fd)


@attack("exec", "exec", limit="loader")
def dynamic_loader_runs_readable_elf(a):
    """Run the ungranted (but readable) ELF through ld-linux-x86-64.so.2, which is
    granted. Not stopped: Landlock's execute only gates execve (documented limit)."""
    _spawn(["/lib64/ld-linux-x86-64.so.2", a["marker"]])


if __name__ == "__main__":
    main(globals())
