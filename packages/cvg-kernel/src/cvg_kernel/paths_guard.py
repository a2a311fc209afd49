"""The ``paths`` guards: file calls in the directories a deny keeps without a rule.

Landlock can only allow, so a grant with a denied entry inside is compiled into rules on
the entry's siblings (cvg_policy.expand); the directories on the way to it are *held*:
no rule covers them, nor anything created directly in them later. Landlock alone would
refuse listing them and creating, renaming or removing anything there. The filter hands
every call that names a path (:data:`cvg_kernel.seccomp.PATH_CALLS`) to the supervisor,
and these guards decide:

- a path that no held directory concerns (outside every expanded grant, or beneath a
  sibling that still is the inode its rule was made for) goes on as the tool's own call
  (:data:`~cvg_kernel.guard.CONTINUE`): Landlock decides, and whatever the tool changes
  in its memory afterwards, Landlock's rules never cover a held directory or a denied
  entry. So does anything the guard cannot read or resolve, and a symbolic link met on
  the way (Landlock then judges where it leads);
- any other path is performed by the supervisor itself, relative to a descriptor of the
  grant's root opened before the tool started, with openat2(RESOLVE_BENEATH |
  RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS), on the name it checked: the tool's
  memory is read once, so there is nothing to race. A descriptor it opened is placed in
  the tool's table (SECCOMP_IOCTL_NOTIF_ADDFD).

Refused (EACCES): any access to a denied entry or beneath it, anything but opening a
protected entry to read, list or execute, creating either name, removing or renaming a
denied or protected entry or a held directory, renaming or linking anything onto them,
and anything the grant's rights do not give. An opened file whose (st_dev, st_ino) is
a denied or protected inode recorded before the tool started (a hard link made
beforehand) is refused the same way. Paths are resolved lexically ("." and ".."
against the tool's cwd or the directory descriptor's path), as the supervisor sees them.

Standard library and ctypes only.
"""

from __future__ import annotations

import ctypes
import errno as _errno
import os
import posixpath
import stat
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from . import libc, syscall_table
from .caps import _LINUX_CAPABILITY_VERSION_3 as _CAP_VERSION_3
from .caps import _Data as _CapData
from .caps import _Header as _CapHeader
from .guard import CONTINUE, Guard, Performed, Refused, _signed32, read_memory, take_descriptor
from .landlock import _OpenHow

__all__ = ["PathGuards"]

_NR = syscall_table.TABLES.get(libc.machine(), {})
_AT_FDCWD = -100
_AT_REMOVEDIR = 0x200
_AT_SYMLINK_FOLLOW = 0x400
_AT_EMPTY_PATH = 0x1000
_RENAME_EXCHANGE = 2
_RENAME_WHITEOUT = 4
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08
_RESOLVE_IN_ROOT = 0x10
_RESOLVE = _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS
_CLONE_FS = 0x200
_PATH_MAX = 4096
_PAGE = 4096
# O_TMPFILE includes O_DIRECTORY; the bits on their own tell them apart.
_O_TMPFILE = getattr(os, "O_TMPFILE", 0o20200000)
# What a file of each kind needs to be made (a rename or link makes one).
_MAKE = {
    stat.S_IFREG: "make_reg", stat.S_IFDIR: "make_dir", stat.S_IFLNK: "make_sym",
    stat.S_IFIFO: "make_fifo", stat.S_IFSOCK: "make_sock",
}  # fmt: skip

Inode = tuple[int, int]


# The kernel's CAP_FS_MASK (chown, dac_override, dac_read_search, fowner, fsetid,
# mknod, mac_override) and linux_immutable: what overrides a file's mode or owner.
_CAP_FS_MASK = (
    (1 << 0) | (1 << 1) | (1 << 2) | (1 << 3) | (1 << 4) | (1 << 9) | (1 << 27) | (1 << 32)
)


def _in(path: str, base: str) -> bool:
    return path == base or path.startswith(base.rstrip("/") + "/")


def _failed(err: int) -> Performed:
    # The call itself failed (ENOENT, EEXIST...), as the tool's own call would have: the
    # kernel returns the negative value as that errno, and no refusal is reported.
    return Performed(-err)


class _Tree:
    """One expanded grant: its root (held open), rights, held directories, denied and
    protected entries, and the inodes of the siblings that carry a rule."""

    def __init__(self, spec: Mapping[str, Any], rules: Iterable[str]) -> None:
        self.root = str(spec["path"])
        self.access = frozenset(spec.get("access") or ())
        self.held = frozenset(spec.get("held") or (self.root,)) | {self.root}
        self.denied = tuple(spec.get("denied") or ())
        self.protected = tuple(spec.get("protected") or ())
        self.fd = os.open(self.root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        # The inodes a name must not lead to, whatever it is called now.
        self.secret = _inodes(self.denied)
        self.frozen = _inodes(self.protected)
        # A rule is on the inode it was opened on: a sibling renamed away, or made
        # since, is no longer covered, and is served here instead.
        self.ruled: dict[str, Inode] = {}
        for path in rules:
            if posixpath.dirname(path) in self.held and path not in self.held:
                try:
                    st = os.lstat(path)
                except OSError:
                    continue
                self.ruled[path] = (st.st_dev, st.st_ino)

    def what(self, full: str) -> str:
        if any(_in(full, d) for d in self.denied):
            return "denied"
        if any(_in(full, p) for p in self.protected):
            return "protected"
        return "held" if full in self.held else "plain"

    def covered(self, full: str) -> bool:
        """Whether Landlock's rules decide ``full`` (beneath a ruled sibling)."""
        cur = self.root
        parts = full[len(self.root) :].strip("/").split("/") if full != self.root else []
        for name in parts[:-1]:
            child = posixpath.join(cur, name)
            if child in self.held:
                cur = child
                continue
            inode = self.ruled.get(child)
            if inode is None:
                return False
            try:
                st = os.lstat(child)
            except OSError:
                return False
            return (st.st_dev, st.st_ino) == inode
        return False


def _inodes(paths: Iterable[str], limit: int = 10000) -> set[Inode]:
    out: set[Inode] = set()
    for path in paths:
        try:
            st = os.lstat(path)
        except OSError:
            continue
        out.add((st.st_dev, st.st_ino))
        if stat.S_ISDIR(st.st_mode):
            for top, dirs, files in os.walk(path):
                for name in dirs + files:
                    if len(out) >= limit:
                        return out
                    try:
                        s = os.lstat(os.path.join(top, name))
                    except OSError:
                        continue
                    out.add((s.st_dev, s.st_ino))
    return out


def _refusal(tree: _Tree, full: str, right: str | None = None) -> Refused:
    """EACCES for ``full``, naming what refused it: the denied or protected entry it is
    in, the grant's missing ``right``, or the held directory it is (or is made in)."""
    what = tree.what(full)
    if what in ("denied", "protected"):
        entries = tree.denied if what == "denied" else tree.protected
        return Refused(_errno.EACCES, full, what, next(e for e in entries if _in(full, e)))
    if right is not None and right not in tree.access:
        return Refused(_errno.EACCES, full, "right", tree.root, right)
    return Refused(_errno.EACCES, full, "held", full if what == "held" else posixpath.dirname(full))


class _NoRight(PermissionError):
    """The grant lacks ``right`` for what the call would do."""

    def __init__(self, right: str) -> None:
        super().__init__(_errno.EACCES, f"no {right} right")
        self.right = right


class _Loop(Exception):
    """A symbolic link on the way: the tool's own call goes on, Landlock judges it."""


class _Place:
    """Where a path of the tool's lands: its tree, the path beneath the root, and the
    absolute path (``tree`` None: outside every expanded grant)."""

    def __init__(self, tree: _Tree | None, rel: str, full: str, slash: bool) -> None:
        self.tree, self.rel, self.full, self.slash = tree, rel, full, slash

    @property
    def served(self) -> bool:
        return self.tree is not None and not self.tree.covered(self.full)


class PathGuards:
    """The guards for a plan's ``expansions``; :meth:`close` once the tool is gone."""

    def __init__(self, plan: Mapping[str, Any]) -> None:
        landlock = plan.get("landlock") or {}
        rules = [str(r.get("path", "")) for r in landlock.get("fs_rules") or ()]
        self._trees: list[_Tree] = []
        try:
            for spec in plan.get("expansions") or ():
                self._trees.append(_Tree(spec, rules))
        except OSError:
            self.close()
            raise
        # The deepest root first: a grant nested in another decides its own directory.
        self._trees.sort(key=lambda t: len(t.root), reverse=True)
        self._own_fs: set[int] = set()
        self.guards: dict[str, Guard] = {
            name: guard
            for name, guard in {
                "open": lambda t, a, p: self._open(t, _AT_FDCWD, a[0], a[1], a[2], 0, p),
                "openat": lambda t, a, p: self._open(t, a[0], a[1], a[2], a[3], 0, p),
                "openat2": self._openat2,
                "creat": lambda t, a, p: self._open(
                    t, _AT_FDCWD, a[0], os.O_CREAT | os.O_WRONLY | os.O_TRUNC, a[1], 0, p
                ),
                "mkdir": lambda t, a, p: self._make(t, _AT_FDCWD, a[0], a[1] | stat.S_IFDIR, 0, p),
                "mkdirat": lambda t, a, p: self._make(t, a[0], a[1], a[2] | stat.S_IFDIR, 0, p),
                "mknod": lambda t, a, p: self._make(t, _AT_FDCWD, a[0], a[1], a[2], p),
                "mknodat": lambda t, a, p: self._make(t, a[0], a[1], a[2], a[3], p),
                "unlink": lambda t, a, p: self._remove(t, _AT_FDCWD, a[0], 0, p),
                "unlinkat": lambda t, a, p: self._remove(t, a[0], a[1], a[2], p),
                "rmdir": lambda t, a, p: self._remove(t, _AT_FDCWD, a[0], _AT_REMOVEDIR, p),
                "rename": lambda t, a, p: self._rename(t, _AT_FDCWD, a[0], _AT_FDCWD, a[1], 0, p),
                "renameat": lambda t, a, p: self._rename(t, a[0], a[1], a[2], a[3], 0, p),
                "renameat2": lambda t, a, p: self._rename(t, a[0], a[1], a[2], a[3], a[4], p),
                "link": lambda t, a, p: self._link(t, _AT_FDCWD, a[0], _AT_FDCWD, a[1], 0, p),
                "linkat": lambda t, a, p: self._link(t, a[0], a[1], a[2], a[3], a[4], p),
                "symlink": lambda t, a, p: self._symlink(t, a[0], _AT_FDCWD, a[1], p),
                "symlinkat": lambda t, a, p: self._symlink(t, a[0], a[1], a[2], p),
                "truncate": self._truncate,
            }.items()
        }

    def close(self) -> None:
        for tree in self._trees:
            if tree.fd >= 0:
                os.close(tree.fd)
                tree.fd = -1

    # ------------------------------------------------------------------ where

    def _place(self, tid: int, dirfd: int, address: int, pending: Callable[[], bool]) -> _Place:
        """Where the path at ``address`` lands; OSError (the call goes on) when it
        cannot be read or resolved."""
        raw = _string(tid, address)
        if not raw:
            raise OSError(_errno.ENOENT, "empty path")
        text = os.fsdecode(raw)
        if text.startswith("/"):
            base = "/"
        elif _signed32(dirfd) == _AT_FDCWD:
            base = os.readlink(f"/proc/{tid}/cwd")
        else:
            mine = take_descriptor(tid, _signed32(dirfd), pending)
            try:
                base = os.readlink(f"/proc/self/fd/{mine}")
            finally:
                os.close(mine)
        if not base.startswith("/") or base.endswith(" (deleted)"):
            raise OSError(_errno.ENOENT, "no path for the directory")
        full = posixpath.normpath(posixpath.join(base, text))
        if full.startswith("//"):
            full = "/" + full.lstrip("/")
        slash = text.endswith("/")
        for tree in self._trees:
            if _in(full, tree.root):
                rel = full[len(tree.root) :].strip("/")
                return _Place(tree, rel, full, slash)
        return _Place(None, "", full, slash)

    def _served(self, tid: int, dirfd: int, address: int,
                pending: Callable[[], bool]) -> _Place | None:  # fmt: skip
        """Where the path lands when the supervisor performs its call; None when the
        tool's own call goes on (Landlock decides, or the path could not be read)."""
        try:
            place = self._place(tid, dirfd, address, pending)
        except OSError:
            return None
        return place if place.served else None

    def _beneath(self, tree: _Tree, rel: str, flags: int, mode: int = 0) -> int:
        self._own()
        how = _OpenHow(flags | os.O_CLOEXEC, mode, _RESOLVE)
        try:
            return libc.syscall(
                _NR["openat2"],
                ctypes.c_long(tree.fd),
                ctypes.c_char_p(os.fsencode(rel or ".")),
                ctypes.byref(how),
                ctypes.c_size_t(ctypes.sizeof(how)),
            )
        except OSError as e:
            if e.errno in (_errno.ELOOP, _errno.EXDEV):
                raise _Loop from None
            raise

    def _parent(self, place: _Place) -> tuple[int, str]:
        """A descriptor of ``place``'s directory and its last name (a trailing slash
        kept, as the kernel reads it)."""
        assert place.tree is not None
        parent, name = posixpath.split(place.rel)
        fd = self._beneath(place.tree, parent, os.O_PATH | os.O_DIRECTORY)
        return fd, name + ("/" if place.slash else "")

    def _own(self) -> None:
        """Once per serving thread: its own umask and cwd (unshare CLONE_FS), so the
        tool's umask can be set here alone, and none of the capabilities that override
        file modes and owners (capset acts on the calling thread only), so a supervisor
        run as root meets the file modes the tool meets, having dropped its
        capabilities. The others stay: reading the memory of a tool that changed
        identity (no longer dumpable) needs CAP_SYS_PTRACE."""
        me = threading.get_native_id()
        if me in self._own_fs:
            return
        libc.syscall(_NR["unshare"], ctypes.c_long(_CLONE_FS))
        header = _CapHeader(_CAP_VERSION_3, 0)
        data = (_CapData * 2)()
        libc.syscall(_NR["capget"], ctypes.byref(header), ctypes.byref(data))
        data[0].effective &= ~_CAP_FS_MASK
        data[1].effective &= ~(_CAP_FS_MASK >> 32)
        libc.syscall(_NR["capset"], ctypes.byref(header), ctypes.byref(data))
        self._own_fs.add(me)

    def _as_tool(self, tid: int) -> None:
        """Make what is created here get the tool's umask."""
        self._own()
        os.umask(_umask(tid))

    # ------------------------------------------------------------------ calls

    def _openat2(self, tid: int, args: tuple[int, ...], pending: Callable[[], bool]) -> Any:
        size = args[3]
        if size < ctypes.sizeof(_OpenHow):
            return CONTINUE  # the kernel answers EINVAL
        try:
            how = _OpenHow.from_buffer_copy(read_memory(tid, args[2], ctypes.sizeof(_OpenHow)))
        except (OSError, ValueError):
            return CONTINUE
        return self._open(tid, args[0], args[1], how.flags, how.mode, how.resolve, pending)

    def _open(self, tid: int, dirfd: int, address: int, flags: int, mode: int,
              resolve: int, pending: Callable[[], bool]) -> Any:  # fmt: skip
        place = self._served(tid, dirfd, address, pending)
        tree = place.tree if place is not None else None
        if place is None or tree is None:
            return CONTINUE
        if resolve & (_RESOLVE_BENEATH | _RESOLVE_IN_ROOT):
            return CONTINUE  # resolved from its own dirfd: Landlock decides
        flags &= 0xFFFFFFFF
        what = tree.what(place.full)
        if what == "denied":
            return _refusal(tree, place.full)
        accmode = flags & os.O_ACCMODE
        tmpfile = flags & _O_TMPFILE == _O_TMPFILE
        writes = accmode != os.O_RDONLY or bool(flags & (os.O_CREAT | os.O_TRUNC)) or tmpfile
        if what == "protected" and writes:
            return _refusal(tree, place.full)
        if accmode != os.O_RDONLY and "write_file" not in tree.access:
            return _refusal(tree, place.full, "write_file")
        creating = bool(flags & os.O_CREAT) and not tmpfile
        if tmpfile and "make_reg" not in tree.access:
            return _refusal(tree, place.full, "make_reg")
        keep = flags & ~(os.O_CREAT | os.O_EXCL | os.O_TRUNC | os.O_CLOEXEC)
        rel = place.rel + ("/" if place.slash and place.rel else "")
        try:
            fd, made = self._opened(tid, tree, rel, keep, flags, mode, creating)
        except _Loop:
            return CONTINUE
        except _NoRight as e:
            return _refusal(tree, place.full, e.right)
        except OSError as e:
            return _failed(e.errno or _errno.EIO)
        try:
            st = os.fstat(fd)
            inode = (st.st_dev, st.st_ino)
            if inode in tree.secret:
                return Refused(_errno.EACCES, place.full, "denied")  # a hard link to one
            if writes and inode in tree.frozen:
                return Refused(_errno.EACCES, place.full, "protected")
            if not flags & os.O_PATH and accmode != os.O_WRONLY:
                right = "read_dir" if stat.S_ISDIR(st.st_mode) else "read_file"
                if right not in tree.access:
                    return _refusal(tree, place.full, right)
            cut = flags & os.O_TRUNC and accmode != os.O_RDONLY and not made
            if cut and stat.S_ISREG(st.st_mode):
                if "truncate" not in tree.access:
                    return _refusal(tree, place.full, "truncate")
                os.ftruncate(fd, 0)
            answer = Performed(install=fd, cloexec=bool(flags & os.O_CLOEXEC))
            fd = -1
            return answer
        except OSError as e:
            return _failed(e.errno or _errno.EIO)
        finally:
            if fd >= 0:
                os.close(fd)

    def _opened(self, tid: int, tree: _Tree, rel: str, keep: int, flags: int, mode: int,
                creating: bool) -> tuple[int, bool]:  # fmt: skip
        """The descriptor for an open, and whether this call made the file. O_TRUNC
        waits for the inode check: a hard link to a denied file is never cut."""
        if keep & _O_TMPFILE == _O_TMPFILE:
            self._as_tool(tid)  # an unnamed file: made now, with the tool's mode
            return self._beneath(tree, rel, keep, mode & 0o7777), True
        if not creating:
            return self._beneath(tree, rel, keep), False
        if "make_reg" not in tree.access:
            try:
                return self._beneath(tree, rel, keep), False
            except FileNotFoundError:
                raise _NoRight("make_reg") from None
        self._as_tool(tid)
        for _ in range(8):  # made and removed meanwhile by another thread: try again
            try:
                return self._beneath(tree, rel, keep | os.O_CREAT | os.O_EXCL, mode & 0o7777), True
            except FileExistsError:
                if flags & os.O_EXCL:
                    raise
            try:
                return self._beneath(tree, rel, keep), False
            except FileNotFoundError:
                continue
        raise OSError(_errno.EAGAIN, "the name kept changing")

    def _make(self, tid: int, dirfd: int, address: int, mode: int, dev: int,
              pending: Callable[[], bool]) -> Any:  # fmt: skip
        place = self._served(tid, dirfd, address, pending)
        tree = place.tree if place is not None else None
        if place is None or tree is None:
            return CONTINUE
        kind = stat.S_IFMT(mode) or stat.S_IFREG
        right = _MAKE.get(kind)
        if right is None or right == "make_sym":
            return _errno.EPERM  # device nodes: never, as without the sandbox for the tool
        if tree.what(place.full) != "plain" or right not in tree.access:
            # A held directory's own name exists: EEXIST, as the kernel would say.
            if tree.what(place.full) == "held":
                return _failed(_errno.EEXIST)
            return _refusal(tree, place.full, right)
        if not place.rel:
            return _failed(_errno.EEXIST)
        opened = self._parent_or_answer(place)
        if not isinstance(opened, tuple):
            return opened
        parent, name = opened
        try:
            self._as_tool(tid)
            if kind == stat.S_IFDIR:
                os.mkdir(name, mode & 0o7777, dir_fd=parent)
            else:
                os.mknod(name, (mode & 0o7777) | kind, _signed32(dev), dir_fd=parent)
            return 0
        except OSError as e:
            return _failed(e.errno or _errno.EIO)
        finally:
            os.close(parent)

    def _remove(self, tid: int, dirfd: int, address: int, flags: int,
                pending: Callable[[], bool]) -> Any:  # fmt: skip
        place = self._served(tid, dirfd, address, pending)
        tree = place.tree if place is not None else None
        if place is None or tree is None:
            return CONTINUE
        right = "remove_dir" if flags & _AT_REMOVEDIR else "remove_file"
        if tree.what(place.full) != "plain" or right not in tree.access or not place.rel:
            return _refusal(tree, place.full, right)
        opened = self._parent_or_answer(place)
        if not isinstance(opened, tuple):
            return opened
        parent, name = opened
        try:
            if flags & _AT_REMOVEDIR:
                os.rmdir(name, dir_fd=parent)
            else:
                os.unlink(name, dir_fd=parent)
            return 0
        except OSError as e:
            return _failed(e.errno or _errno.EIO)
        finally:
            os.close(parent)

    def _two(self, tid: int, olddirfd: int, old: int, newdirfd: int, new: int,
             pending: Callable[[], bool]) -> tuple[_Place, _Place] | int:  # fmt: skip
        """Both ends of a rename or link, or the answer when the supervisor does not
        perform it (CONTINUE, EXDEV across grants)."""
        try:
            src = self._place(tid, olddirfd, old, pending)
            dst = self._place(tid, newdirfd, new, pending)
        except OSError:
            return CONTINUE
        if not (src.served or dst.served):
            return CONTINUE
        if src.tree is None or src.tree is not dst.tree:
            # Across grants: a program falls back to copying (mv does), each side
            # then decided on its own.
            return _errno.EXDEV
        return src, dst

    def _parent_or_answer(self, place: _Place) -> tuple[int, str] | Any:
        """:meth:`_parent`, or the call's answer when it cannot be opened."""
        try:
            return self._parent(place)
        except _Loop:
            return CONTINUE
        except OSError as e:
            return _failed(e.errno or _errno.EIO)

    def _parents(self, src: _Place, dst: _Place) -> tuple[int, str, int, str] | Any:
        """The directories of both ends and their last names, or the answer."""
        first = self._parent_or_answer(src)
        if not isinstance(first, tuple):
            return first
        sp, sname = first
        try:
            dp, dname = self._parent(dst)
        except _Loop:
            os.close(sp)
            return CONTINUE
        except OSError as e:
            os.close(sp)
            return _failed(e.errno or _errno.EIO)
        return sp, sname, dp, dname

    def _rename(self, tid: int, olddirfd: int, old: int, newdirfd: int, new: int,
                flags: int, pending: Callable[[], bool]) -> Any:  # fmt: skip
        ends = self._two(tid, olddirfd, old, newdirfd, new, pending)
        if isinstance(ends, int):
            return ends
        src, dst = ends
        tree = src.tree
        assert tree is not None
        if flags & _RENAME_WHITEOUT:
            return _errno.EPERM
        for end in (src, dst):
            if tree.what(end.full) != "plain" or not end.rel:  # not rel: the root itself
                return _refusal(tree, end.full)
        opened = self._parents(src, dst)
        if not isinstance(opened, tuple):
            return opened
        sp, sname, dp, dname = opened
        try:
            moved = [os.stat(sname, dir_fd=sp, follow_symlinks=False)]
            try:
                moved.append(os.stat(dname, dir_fd=dp, follow_symlinks=False))
            except FileNotFoundError:
                pass
            for i, st in enumerate(moved):
                kind = stat.S_IFMT(st.st_mode)
                need = {_MAKE.get(kind, "make_reg")}
                if i == 0 or flags & _RENAME_EXCHANGE:
                    need.add("remove_dir" if kind == stat.S_IFDIR else "remove_file")
                if i == 1:
                    need = {"remove_dir" if kind == stat.S_IFDIR else "remove_file"}
                if not need <= tree.access:
                    return _refusal(tree, (src, dst)[i].full, min(need - tree.access))
            libc.syscall(
                _NR["renameat2"], ctypes.c_long(sp), ctypes.c_char_p(os.fsencode(sname)),
                ctypes.c_long(dp), ctypes.c_char_p(os.fsencode(dname)),
                ctypes.c_long(flags & 0xFFFFFFFF),
            )  # fmt: skip
            return 0
        except OSError as e:
            return _failed(e.errno or _errno.EIO)
        finally:
            os.close(sp)
            os.close(dp)

    def _link(self, tid: int, olddirfd: int, old: int, newdirfd: int, new: int,
              flags: int, pending: Callable[[], bool]) -> Any:  # fmt: skip
        if flags & _AT_EMPTY_PATH:
            # Linking a descriptor (an O_TMPFILE file) into a held directory is not
            # performed here; elsewhere Landlock decides.
            try:
                dst = self._place(tid, newdirfd, new, pending)
            except OSError:
                return CONTINUE
            if dst.served and dst.tree is not None:
                return _refusal(dst.tree, dst.full)
            return CONTINUE
        ends = self._two(tid, olddirfd, old, newdirfd, new, pending)
        if isinstance(ends, int):
            return ends
        src, dst = ends
        tree = src.tree
        assert tree is not None
        for end in (src, dst):
            if tree.what(end.full) != "plain":
                return _refusal(tree, end.full)
        opened = self._parents(src, dst)
        if not isinstance(opened, tuple):
            return opened
        sp, sname, dp, dname = opened
        try:
            st = os.stat(sname, dir_fd=sp, follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode) and flags & _AT_SYMLINK_FOLLOW:
                # What it names is judged where it leads, not here.
                return _refusal(tree, dst.full)
            inode = (st.st_dev, st.st_ino)
            if inode in tree.secret or inode in tree.frozen:
                return Refused(_errno.EACCES, src.full, "denied" if inode in tree.secret
                               else "protected")  # fmt: skip
            right = _MAKE.get(stat.S_IFMT(st.st_mode), "make_reg")
            if right not in tree.access:
                return _refusal(tree, dst.full, right)
            os.link(sname, dname, src_dir_fd=sp, dst_dir_fd=dp, follow_symlinks=False)
            return 0
        except OSError as e:
            return _failed(e.errno or _errno.EIO)
        finally:
            os.close(sp)
            os.close(dp)

    def _symlink(self, tid: int, target: int, newdirfd: int, new: int,
                 pending: Callable[[], bool]) -> Any:  # fmt: skip
        try:
            place = self._place(tid, newdirfd, new, pending)
            # The target is only text: what it names is judged when it is followed.
            text = _string(tid, target)
        except OSError:
            return CONTINUE
        tree = place.tree
        if tree is None or not place.served:
            return CONTINUE
        if tree.what(place.full) != "plain" or "make_sym" not in tree.access:
            return _refusal(tree, place.full, "make_sym")
        opened = self._parent_or_answer(place)
        if not isinstance(opened, tuple):
            return opened
        parent, name = opened
        try:
            os.symlink(text, name, dir_fd=parent)
            return 0
        except OSError as e:
            return _failed(e.errno or _errno.EIO)
        finally:
            os.close(parent)

    def _truncate(self, tid: int, args: tuple[int, ...], pending: Callable[[], bool]) -> Any:
        place = self._served(tid, _AT_FDCWD, args[0], pending)
        tree = place.tree if place is not None else None
        if place is None or tree is None:
            return CONTINUE
        if tree.what(place.full) != "plain" or "truncate" not in tree.access:
            return _refusal(tree, place.full, "truncate")
        try:
            fd = self._beneath(tree, place.rel, os.O_WRONLY)
        except _Loop:
            return CONTINUE
        except OSError as e:
            return _failed(e.errno or _errno.EIO)
        try:
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) in tree.secret | tree.frozen:
                kind = "denied" if (st.st_dev, st.st_ino) in tree.secret else "protected"
                return Refused(_errno.EACCES, place.full, kind)
            os.ftruncate(fd, args[1] & 0xFFFFFFFFFFFFFFFF)
            return 0
        except OSError as e:
            return _failed(e.errno or _errno.EIO)
        finally:
            os.close(fd)


def _string(tid: int, address: int) -> bytes:
    """The NUL-terminated string at ``address`` in the tool's memory, read once (page
    by page: the next page may not be mapped). OSError when it cannot be read."""
    if not address:
        raise OSError(_errno.EFAULT, "NULL path")
    out = b""
    while len(out) < _PATH_MAX:
        at = address + len(out)
        want = min(_PAGE - at % _PAGE, _PATH_MAX - len(out))
        data = read_memory(tid, at, want)
        nul = data.find(b"\0")
        if nul >= 0:
            return out + data[:nul]
        if len(data) < want:
            raise OSError(_errno.EFAULT, "path runs off its mapping")
        out += data
    raise OSError(_errno.ENAMETOOLONG, "path longer than PATH_MAX")


def _umask(tid: int) -> int:
    with open(f"/proc/{tid}/status", "rb") as f:
        for line in f:
            if line.startswith(b"Umask:"):
                return int(line.split()[1], 8)
    return 0o022
