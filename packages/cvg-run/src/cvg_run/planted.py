"""Protected paths created during a run: noted absent before the tool starts, moved
aside once its processes are gone.

Landlock binds a rule to an inode that exists when the sandbox starts, so a write grant
on a directory covers every name made beneath it later. A protected path
(:mod:`cvg_policy.protected`: ``.git/hooks``, ``~/.config/autostart``, ``~/.bashrc``...)
that does not exist yet beneath a write grant, in a directory that may not exist yet
either, can be created by the tool, and no rule can say otherwise. So :func:`watch`
notes, before the tool starts, which of the table's entries beneath the plan's write
grants are absent (a few lstat calls), holding a descriptor of each grant's root; once
the tool's whole tree is gone (cvg-run kills the daemons it left too, so nothing of the
tool runs after), :meth:`Watch.sweep` looks again from those descriptors, one name at a
time, never following a link, and moves what it finds aside.

Moved aside means renamed in its own directory to ``NAME.cvg-moved-RUNID``, with
renameat2(RENAME_NOREPLACE): atomic, never over an existing name, never across
filesystems, and a symbolic link is moved as the link. None of the programs the table
names reads that name. What stands in the way of a watched name is moved the same way
when it was not there at the start, or was something else then: a link (``.git`` made a
link to a directory holding ``hooks/``) or a file (a ``.git`` file naming another git
directory). What was on the way at the start, unchanged, is the user's own (a worktree's
``.git`` file, a dotfile manager's link) and is left alone; names beneath it are not
watched. A new repository's ``.git/config`` and ``.git/hooks`` as git itself makes
them run nothing and are left in place (:mod:`.inert`).
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat

TYPE_CHECKING = False  # not typing's: cvg-run's cold start
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

# The rights that make a name: a root granting none of them cannot hold a new one.
_MAKE = frozenset(
    {"make_reg", "make_dir", "make_sym", "make_fifo", "make_sock", "make_char", "make_block"}
)
_RENAME_NOREPLACE = 1
EXIT_PROTECTED_CREATED = 122
"""cvg-run's status when a protected path was created during the run."""
_DIR = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
SUFFIX = ".cvg-moved-"


def write_roots(plan: Mapping[str, Any]) -> list[str]:
    """The outermost paths the plan lets the tool make names beneath: its Landlock rules
    and expansions (a held directory's root) with a right to make one. ${SCRATCH} is the
    run's own, made fresh, and is left out."""
    found: set[str] = set()
    landlock = plan.get("landlock") or {}
    for item in [*(landlock.get("fs_rules") or ()), *(plan.get("expansions") or ())]:
        path = str(item.get("path") or "")
        if path.startswith("/") and "${" not in path and _MAKE & set(item.get("access") or ()):
            found.add(posixpath.normpath(path))
    roots: list[str] = []
    for path in sorted(found, key=len):
        if not any(_inside(path, r) for r in roots):
            roots.append(path)
    return roots


def _inside(path: str, parent: str) -> bool:
    return parent == "/" or path == parent or path.startswith(parent + "/")


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISDIR(mode):
        return "directory"
    return "file" if stat.S_ISREG(mode) else "other"


class _Name:
    """One absent protected path: its root's descriptor, the names from there, and what
    stood in the way at the start ((index, dev, ino) of a non-directory), if anything."""

    def __init__(self, root: int, base: str, parts: list[str], path: str, reason: str,
                 blocked: tuple[int, int, int] | None) -> None:  # fmt: skip
        self.root, self.base, self.parts, self.path = root, base, parts, path
        self.reason, self.blocked = reason, blocked


class Watch:
    """The absent protected paths of one run; :meth:`sweep` once the tool is gone, then
    :meth:`close`."""

    def __init__(self) -> None:
        self.names: list[_Name] = []
        self._fds: list[int] = []

    def close(self) -> None:
        for fd in self._fds:
            os.close(fd)
        self._fds = []

    def sweep(self, run_id: str) -> list[dict[str, Any]]:
        """Each watched path that exists now, or what now stands in its way, moved
        aside: the ``protected_created`` entries of the run record."""
        out: list[dict[str, Any]] = []
        seen: set[str] = set()
        for name in self.names:
            found = _walk(name, self._fds)
            if found is None:
                continue
            where, fd, entry, kind = found
            from .inert import inert  # only once something was found: re costs a cold start

            if fd is not None and where == name.path and inert(fd, entry, where):
                os.close(fd)  # a new repository's own: git runs nothing from it
                continue
            if where in seen:  # the same thing in the way of two names, left where it was
                if fd is not None:
                    os.close(fd)
                continue
            seen.add(where)
            item: dict[str, Any] = {"path": where, "kind": kind, "protects": name.path,
                                    "reason": name.reason}  # fmt: skip
            if fd is None:
                item["error"] = entry
            else:
                try:
                    item["moved_to"] = posixpath.join(posixpath.dirname(where),
                                                      _move_aside(fd, entry, run_id))  # fmt: skip
                except OSError as e:
                    item["error"] = e.strerror or str(e)
            out.append(item)
        return out


def _walk(name: _Name, fds: list[int]) -> tuple[str, int | None, str, str] | None:
    """What stands at ``name`` now when it should not: (its path, a descriptor of its
    directory for the move, its name there, its kind); (its path, None, why, "other")
    when it cannot be looked at; None when the name is absent or only the start's own
    is in the way."""
    cur, here = fds[name.root], name.base
    opened: list[int] = []
    try:
        for i, part in enumerate(name.parts):
            path = posixpath.join(here, part)
            try:
                st = _lstat(cur, part)
            except FileNotFoundError:
                return None
            except OSError as e:
                return path, None, f"cannot look at it: {e.strerror}", "other"
            last = i == len(name.parts) - 1
            if not last and stat.S_ISDIR(st.st_mode):
                cur, here = os.open(part, _DIR, dir_fd=cur), path
                opened.append(cur)
                continue
            if not last and name.blocked == (i, st.st_dev, st.st_ino):
                return None  # the user's own link or file, there before the run
            return path, os.dup(cur), part, _kind(st.st_mode)
        return None
    finally:
        for fd in opened:
            os.close(fd)


def _lstat(dir_fd: int, part: str) -> os.stat_result:
    """lstat beneath ``dir_fd``; a directory the tool made unsearchable (chmod is not
    Landlock's) is opened up for its owner first, as the tool could have."""
    try:
        return os.stat(part, dir_fd=dir_fd, follow_symlinks=False)
    except PermissionError:
        _open_up(dir_fd)
        return os.stat(part, dir_fd=dir_fd, follow_symlinks=False)


def _open_up(dir_fd: int) -> None:
    st = os.fstat(dir_fd)
    if st.st_uid != os.geteuid():
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
    # An O_PATH descriptor takes no fchmod; its /proc link names the very inode.
    os.chmod(f"/proc/self/fd/{dir_fd}", stat.S_IMODE(st.st_mode) | stat.S_IRWXU)


def _move_aside(dir_fd: int, entry: str, run_id: str) -> str:
    """Rename ``entry`` in ``dir_fd`` to a free ``entry.cvg-moved-RUN_ID[-N]``: the new
    name."""
    try:
        return _rename_free(dir_fd, entry, run_id)
    except PermissionError:
        _open_up(dir_fd)
        return _rename_free(dir_fd, entry, run_id)
    finally:
        os.close(dir_fd)


def _rename_free(dir_fd: int, entry: str, run_id: str) -> str:
    import ctypes

    from cvg_kernel import libc, syscall_table

    nr = syscall_table.TABLES[libc.machine()]["renameat2"]
    for n in range(100):
        target = f"{entry}{SUFFIX}{run_id}" + (f"-{n}" if n else "")
        try:
            libc.syscall(nr, ctypes.c_long(dir_fd), ctypes.c_char_p(os.fsencode(entry)),
                         ctypes.c_long(dir_fd), ctypes.c_char_p(os.fsencode(target)),
                         ctypes.c_long(_RENAME_NOREPLACE))  # fmt: skip
            return target
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free name to move it to")


def detail(created: list[dict[str, Any]], status: int, meaning: str) -> str:
    """The record's exit detail once a run created protected paths: which, and how the
    tool itself ended."""
    names = ", ".join(str(item["path"]) for item in created)
    return (f"created during the run and moved aside: {names} (the tool's status was "
            f"{status}, {meaning})")  # fmt: skip


def watch(
    plan: Mapping[str, Any], cwd: str, home: str, env: Mapping[str, str] | None = None
) -> Watch | None:
    """The protected paths beneath the plan's write grants that are absent now (None
    when the plan grants no write outside ${SCRATCH}): the working directory's and the
    home's entries, and the workspace entries of each grant's root. Repositories deeper
    inside a grant are not looked for."""
    roots = write_roots(plan)
    if not roots:
        return None
    from cvg_kernel.seal import own_dirs
    from cvg_policy.protected import protected_paths

    real_cwd, real_home = os.path.realpath(cwd), os.path.realpath(home)
    # The directories cvg itself writes (a run's record among them) are denied by name
    # in every plan: the supervisor refuses making them, and cvg-run may make them now.
    own = {os.path.realpath(d) for d in own_dirs(env, home)}
    candidates = [c for c in protected_paths(real_cwd, real_home, env) if c[0] not in own]
    for root in roots:
        candidates += [c for c in protected_paths(root, None) if c[1].where == "workspace"]
    out = Watch()
    try:
        fds: dict[str, int] = {}
        for path, entry in dict(candidates).items():
            base = next((r for r in roots if _inside(path, r) and path != r), None)
            if base is None:
                continue
            if base not in fds:
                try:
                    fds[base] = os.open(base, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
                except OSError:
                    continue  # a file, or gone: nothing is made beneath it
                out._fds.append(fds[base])
            parts = path[len(base) :].strip("/").split("/")
            absent, blocked = _absent(fds[base], parts)
            if absent:
                reason = f"{entry.group}: {entry.reason}"
                index = out._fds.index(fds[base])
                out.names.append(_Name(index, base, parts, path, reason, blocked))
    except BaseException:
        out.close()
        raise
    if out.names:
        return out
    out.close()
    return None


def _absent(root: int, parts: list[str]) -> tuple[bool, tuple[int, int, int] | None]:
    """Whether the path is absent (not when it exists or cannot be looked at), and what
    stands in its way now: a non-directory, as (index, dev, ino)."""
    cur, opened = root, []
    try:
        for i, part in enumerate(parts):
            try:
                st = os.stat(part, dir_fd=cur, follow_symlinks=False)
            except FileNotFoundError:
                return True, None
            except OSError:
                return False, None
            if i == len(parts) - 1:
                return False, None
            if not stat.S_ISDIR(st.st_mode):
                return True, (i, st.st_dev, st.st_ino)
            cur = os.open(part, _DIR, dir_fd=cur)
            opened.append(cur)
        return False, None
    finally:
        for fd in opened:
            os.close(fd)
