"""The ``unix`` group's guards: connect() and the send calls, decided by path and
performed by the supervisor (the plan's ``unix`` section says what may be reached).

Below Landlock ABI 9 the kernel does not check connect() to a pathname UNIX socket.
The filter sends connect, sendto, sendmsg and sendmmsg here whole, and the guard acts
on the supervisor's own copy of the tool's socket (``pidfd_getfd``), never letting the
tool's call go on where a descriptor or a pointer could change under the check:

- The address is read from the tool's memory once. A pathname is resolved from the
  tool's working directory (an O_PATH descriptor of ``/proc/TID/cwd``) with
  ``openat2(O_PATH, RESOLVE_NO_MAGICLINKS)``; the path the descriptor resolved to is
  what is checked against the plan, it must be a socket, and the supervisor connects
  (or sends) to ``/proc/self/fd/N`` of that very descriptor. A symlink swapped after
  the check changes nothing, and no 108-byte ``sun_path`` limit applies.
- Abstract addresses (and autobind's unnamed ones) are refused (EPERM): no file names
  them, so nothing tells one made inside the sandbox from the D-Bus bus's.
- connect() on a socket of another family is performed too, not continued: between a
  check and the tool's own call another thread could put a UNIX socket at that
  number. A TCP connect meets the plan's Landlock port rules here, as the tool's own
  would (EACCES otherwise).
- sendto() without an address goes on as the tool's own call: its registers say so,
  and no address means no new peer. MSG_FASTOPEN is refused (EPERM), as the filter
  does for these calls when they are not supervised.
- sendto() with an address, and sendmsg()/sendmmsg() on a datagram socket, are
  performed: the data, the address and the ancillary data are read once. Ancillary
  data other than SCM_RIGHTS is refused (EPERM); SCM_RIGHTS descriptors are taken from
  the tool and sent as the supervisor's copies.
- sendmsg()/sendmmsg() on a stream or seqpacket socket go on as the tool's own call
  (a stream socket ignores or refuses an address). Known limit: a thread that swaps a
  datagram socket in at that number between the check and the call sends to an
  address this guard did not see; only datagram servers can be reached that way.

What is performed here is done by the supervisor: a server's SO_PEERCRED names the
supervisor's pid (the uid and gid are the same user's). A blocking connect or send
waits here, and holds the tool's other supervised calls meanwhile; a non-blocking
socket stays non-blocking (the flag is on the open file both share).

Standard library and ctypes only.
"""

from __future__ import annotations

import _socket as socket
import ctypes
import errno as _errno
import os
import stat
import struct
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from . import libc, syscall_table
from .guard import (
    CONTINUE,
    Guard,
    Performed,
    Refused,
    _signed32,
    _sockopt,
    read_memory,
    take_descriptor,
)
from .seccomp import MSG_FASTOPEN

_NR = syscall_table.TABLES.get(libc.machine(), {})
AF_UNIX = socket.AF_UNIX
_SUN_PATH = 2  # offsetof(struct sockaddr_un, sun_path)
_MAX_ADDR = 128  # sizeof(struct sockaddr_storage)
_MAX_IOV = 1024  # UIO_MAXIOV
_MAX_DATA = 1 << 24
_MSGHDR = struct.Struct("=QI4xQQQQi4x")  # name, namelen, iov, iovlen, control, controllen, flags
_IOVEC = struct.Struct("=QQ")
_CMSGHDR = struct.Struct("=Qii")
_MMSGHDR = _MSGHDR.size + 8  # struct mmsghdr: msghdr, msg_len and padding
SCM_RIGHTS = 1
RESOLVE_NO_MAGICLINKS = 0x02


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64),
                ("resolve", ctypes.c_uint64)]  # fmt: skip


class Reach:
    """The UNIX socket paths a plan lets the tool reach: exact paths and trees."""

    def __init__(self, exact: Sequence[str], trees: Sequence[str]) -> None:
        self.exact = frozenset(os.path.realpath(p) for p in exact)
        self.trees = tuple(os.path.realpath(p).rstrip("/") + "/" for p in trees)

    def allows(self, path: str) -> bool:
        return path in self.exact or any(path.startswith(t) or path + "/" == t
                                         for t in self.trees)  # fmt: skip


def _read_exact(tid: int, address: int, size: int) -> bytes:
    if size == 0:
        return b""
    data = read_memory(tid, address, size)
    if len(data) != size:
        raise OSError(_errno.EFAULT, "short read of the caller's memory")
    return data


class _NotNamed(PermissionError):
    """A socket path the plan's ``unix`` section does not name."""

    def __init__(self, path: str) -> None:
        super().__init__(_errno.EACCES, f"{path} is not a socket the plan names")
        self.path = path


def _open_target(tid: int, path: bytes, reach: Reach) -> int:
    """An O_PATH descriptor of the socket ``path`` names for thread ``tid``, once the
    path it resolved to is one ``reach`` allows; OSError with the tool's errno."""
    cwd = os.open(f"/proc/{tid}/cwd", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        how = _OpenHow(os.O_PATH | os.O_CLOEXEC, 0, RESOLVE_NO_MAGICLINKS)
        fd = libc.syscall(_NR["openat2"], ctypes.c_long(cwd), ctypes.c_char_p(path),
                          ctypes.byref(how), ctypes.c_size_t(ctypes.sizeof(how)))  # fmt: skip
    finally:
        os.close(cwd)
    try:
        resolved = os.readlink(f"/proc/self/fd/{fd}")
        if not reach.allows(resolved):
            raise _NotNamed(resolved)
        if not stat.S_ISSOCK(os.fstat(fd).st_mode):
            raise ConnectionRefusedError(_errno.ECONNREFUSED, f"{resolved} is not a socket")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _target_address(tid: int, raw: bytes, reach: Reach) -> tuple[bytes, int | None]:
    """The address to use in the supervisor for the tool's AF_UNIX ``raw`` one, and
    the O_PATH descriptor it names (None when it is not a pathname)."""
    body = raw[_SUN_PATH:]
    if len(raw) < _SUN_PATH or struct.unpack_from("=H", raw)[0] != AF_UNIX:
        return raw, None  # not an AF_UNIX address: the kernel refuses it as it is
    if not body or body[0] == 0:
        raise PermissionError(_errno.EPERM, "abstract and unnamed UNIX addresses are refused")
    path = body.split(b"\0", 1)[0]
    fd = _open_target(tid, path, reach)
    return struct.pack("=H", AF_UNIX) + f"/proc/self/fd/{fd}".encode() + b"\0", fd


def _tcp_port_allowed(mine: int, raw: bytes, ports: frozenset[int] | None) -> bool:
    if ports is None or len(raw) < 4 or _sockopt(mine, socket.SO_TYPE) != socket.SOCK_STREAM:
        return True
    family, port = struct.unpack_from("=H", raw)[0], struct.unpack_from("!H", raw, 2)[0]
    return family not in (socket.AF_INET, socket.AF_INET6) or port in ports


def _sys(name: str, *args: object) -> int:
    return libc.syscall(_NR[name], *args)


def make_guards(section: Mapping[str, Any], variables: Mapping[str, str],
                landlock: Mapping[str, Any] | None = None) -> dict[str, Guard]:  # fmt: skip
    """The guards for a plan's ``unix`` section (``{"reach": [{"path", "beneath"}]}``),
    its late-bound variables expanded; ``landlock`` is the plan's section, whose TCP
    connect rules a performed TCP connect meets. Raises PlanError."""
    from .plan import PlanError, expand

    exact: list[str] = []
    trees: list[str] = []
    entries = section.get("reach") or []
    if not isinstance(entries, list):
        raise PlanError("$.unix.reach: must be a list")
    for i, entry in enumerate(entries):
        where = f"$.unix.reach[{i}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            raise PlanError(f"{where}: must be an object with a string 'path'")
        path = expand(entry["path"], variables, f"{where}.path")
        if not os.path.isabs(path):
            raise PlanError(f"{where}.path: {path!r} is not absolute")
        (trees if entry.get("beneath") else exact).append(path)
    ports: frozenset[int] | None = None
    handled = (landlock or {}).get("handled_net", "all")  # a plan's default: every right
    if landlock is not None and (handled == "all" or "connect_tcp" in (handled or ())):
        rules = landlock.get("net_rules") or ()
        ports = frozenset(r["port"] for r in rules if "connect_tcp" in r.get("access", ()))
    guards = _Guards(Reach(exact, trees), ports)
    return {"connect": guards.connect, "sendto": guards.sendto, "sendmsg": guards.sendmsg,
            "sendmmsg": guards.sendmmsg}  # fmt: skip


class _Guards:
    def __init__(self, reach: Reach, ports: frozenset[int] | None) -> None:
        self.reach = reach
        self.ports = ports  # None: TCP connect is not checked by port

    def connect(self, tid: int, args: tuple[int, ...], pending: Callable[[], bool]
                ) -> int | Performed | Refused:  # fmt: skip
        size = _signed32(args[2])
        if not 0 <= size <= _MAX_ADDR:
            return _errno.EINVAL
        try:
            raw = _read_exact(tid, args[1], size)
        except OSError:
            return _errno.EFAULT

        def act(mine: int, address: bytes) -> int:
            if _sockopt(mine, socket.SO_DOMAIN) != AF_UNIX and not _tcp_port_allowed(
                mine, address, self.ports
            ):
                return _errno.EACCES
            buf = ctypes.create_string_buffer(address, len(address))
            _sys("connect", ctypes.c_long(mine), buf, ctypes.c_long(len(address)))
            return 0

        return self._on_socket(tid, args[0], pending, raw, act)

    def _on_socket(self, tid: int, fd_word: int, pending: Callable[[], bool], raw: bytes,
                   act: Callable[[int, bytes], int | Performed | Refused]
                   ) -> int | Performed | Refused:  # fmt: skip
        """``act`` on the supervisor's copy of the tool's socket, with a UNIX pathname
        address replaced by /proc/self/fd/N of the socket file it was checked as."""
        try:
            mine = take_descriptor(tid, _signed32(fd_word), pending)
        except OSError as e:
            return e.errno or _errno.EPERM
        target = None
        try:
            if raw and _sockopt(mine, socket.SO_DOMAIN) == AF_UNIX:
                raw, target = _target_address(tid, raw, self.reach)
            return act(mine, raw)
        except _NotNamed as e:
            return Refused(_errno.EACCES, e.path, "unix", e.path)
        except OSError as e:
            return e.errno or _errno.EPERM
        finally:
            os.close(mine)
            if target is not None:
                os.close(target)

    def sendto(self, tid: int, args: tuple[int, ...], pending: Callable[[], bool]
               ) -> int | Performed | Refused:  # fmt: skip
        flags = args[3] & 0xFFFFFFFF
        if flags & MSG_FASTOPEN:
            return _errno.EPERM
        if args[4] == 0:
            return CONTINUE  # no address in the register: no new peer, whatever else changes
        size, length = _signed32(args[5]), args[2]
        if not 0 <= size <= _MAX_ADDR:
            return _errno.EINVAL
        if length > _MAX_DATA:
            return _errno.EMSGSIZE
        try:
            data = _read_exact(tid, args[1], length)
            raw = _read_exact(tid, args[4], size)
        except OSError:
            return _errno.EFAULT
        return self._send(tid, args[0], pending, ([data], raw, b""), flags)

    def _send(self, tid: int, fd_word: int, pending: Callable[[], bool],
              message: tuple[list[bytes], bytes, bytes], flags: int
              ) -> int | Performed | Refused:  # fmt: skip
        chunks, raw, control = message
        return self._on_socket(
            tid, fd_word, pending, raw,
            lambda mine, address: Performed(_sendmsg(mine, chunks, address, control, flags)),
        )  # fmt: skip

    def sendmsg(self, tid: int, args: tuple[int, ...], pending: Callable[[], bool]
                ) -> int | Performed | Refused:  # fmt: skip
        flags = args[2] & 0xFFFFFFFF
        early = _not_performed(tid, args[0], pending, flags)
        if early is not None:
            return early
        return self._send_message(tid, args[0], args[1], pending, flags)

    def _send_message(self, tid: int, fd_word: int, address: int, pending: Callable[[], bool],
                      flags: int) -> int | Performed | Refused:  # fmt: skip
        try:
            chunks, raw, control = _message(tid, address)
            control = _translate(tid, control, pending)
        except OSError as e:
            return e.errno or _errno.EFAULT
        try:
            return self._send(tid, fd_word, pending, (chunks, raw, control), flags)
        finally:
            _close_translated(control)

    def sendmmsg(self, tid: int, args: tuple[int, ...], pending: Callable[[], bool]
                 ) -> int | Performed | Refused:  # fmt: skip
        flags = args[3] & 0xFFFFFFFF
        early = _not_performed(tid, args[0], pending, flags)
        if early is not None:
            return early
        sent = 0
        for i in range(min(args[2] & 0xFFFFFFFF, _MAX_IOV)):
            at = args[1] + i * _MMSGHDR
            done = self._send_message(tid, args[0], at, pending, flags)
            if not isinstance(done, Performed):
                return Performed(sent) if sent else done  # as the kernel: the count so far
            try:  # msg_len, which the kernel writes for each message sent
                _write_u32(tid, at + _MSGHDR.size, done.value)
            except OSError:
                pass
            sent += 1
        return Performed(sent)


def _message(tid: int, address: int) -> tuple[list[bytes], bytes, bytes]:
    """The data, address and ancillary data of the tool's ``struct msghdr``, read once."""
    name, namelen, iov, iovlen, control, controllen, _ = _MSGHDR.unpack(
        _read_exact(tid, address, _MSGHDR.size))  # fmt: skip
    if namelen > _MAX_ADDR or iovlen > _MAX_IOV or controllen > 65536:
        raise OSError(_errno.EINVAL, "message too large")
    chunks: list[bytes] = []
    total = 0
    table = _read_exact(tid, iov, iovlen * _IOVEC.size) if iovlen else b""
    for base, length in _IOVEC.iter_unpack(table):
        total += length
        if total > _MAX_DATA:
            raise OSError(_errno.EMSGSIZE, "message too large")
        chunks.append(_read_exact(tid, base, length))
    raw = _read_exact(tid, name, namelen) if name else b""
    return chunks, raw, _read_exact(tid, control, controllen) if control else b""


def _not_performed(tid: int, fd_word: int, pending: Callable[[], bool], flags: int) -> int | None:
    """sendmsg/sendmmsg's answer when it is not performed here: EPERM for
    MSG_FASTOPEN, CONTINUE on a socket that is not a datagram one, or an errno."""
    if flags & MSG_FASTOPEN:
        return _errno.EPERM
    kind = _datagram(tid, fd_word, pending)
    if kind is True:
        return None
    return CONTINUE if kind is False else int(kind)


def _datagram(tid: int, fd_word: int, pending: Callable[[], bool]) -> bool | int:
    """Whether the tool's descriptor is a datagram socket; an errno when it cannot say."""
    try:
        mine = take_descriptor(tid, _signed32(fd_word), pending)
    except OSError as e:
        return e.errno or _errno.EPERM
    try:
        return _sockopt(mine, socket.SO_TYPE) == socket.SOCK_DGRAM
    except OSError as e:
        return e.errno or _errno.ENOTSOCK
    finally:
        os.close(mine)


def _write_u32(tid: int, address: int, value: int) -> None:
    fd = os.open(f"/proc/{tid}/mem", os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.pwrite(fd, struct.pack("=I", value), address)
    finally:
        os.close(fd)


def _translate(tid: int, control: bytes, pending: Callable[[], bool]) -> bytes:
    """The tool's ancillary data with each SCM_RIGHTS descriptor replaced by the
    supervisor's copy; anything else is refused (EPERM)."""
    out = bytearray()
    pos = 0
    while pos + _CMSGHDR.size <= len(control):
        length, level, kind = _CMSGHDR.unpack_from(control, pos)
        if length < _CMSGHDR.size or pos + length > len(control):
            raise OSError(_errno.EINVAL, "malformed ancillary data")
        if level != socket.SOL_SOCKET or kind != SCM_RIGHTS:
            _close_translated(bytes(out))
            raise PermissionError(_errno.EPERM, "only SCM_RIGHTS ancillary data is sent")
        body = control[pos + _CMSGHDR.size : pos + length]
        fds: list[int] = []
        try:
            for (fd,) in struct.iter_unpack("=i", body[: len(body) - len(body) % 4]):
                fds.append(take_descriptor(tid, fd, pending))
        except OSError:
            for fd in fds:
                os.close(fd)
            _close_translated(bytes(out))
            raise
        out += _CMSGHDR.pack(length, level, kind) + struct.pack(f"={len(fds)}i", *fds)
        out += b"\0" * ((-len(out)) % 8)
        pos += (length + 7) & ~7
    return bytes(out)


def _close_translated(control: bytes) -> None:
    pos = 0
    while pos + _CMSGHDR.size <= len(control):
        length, _, _ = _CMSGHDR.unpack_from(control, pos)
        body = control[pos + _CMSGHDR.size : pos + length]
        for (fd,) in struct.iter_unpack("=i", body[: len(body) - len(body) % 4]):
            try:
                os.close(fd)
            except OSError:
                pass
        pos += (max(length, _CMSGHDR.size) + 7) & ~7


def _sendmsg(fd: int, chunks: list[bytes], raw: bytes, control: bytes, flags: int) -> int:
    bufs = [ctypes.create_string_buffer(c, len(c)) for c in chunks]
    iov = (ctypes.c_uint64 * (2 * len(bufs) or 2))()
    for i, b in enumerate(bufs):
        iov[2 * i], iov[2 * i + 1] = ctypes.addressof(b), len(chunks[i])
    name = ctypes.create_string_buffer(raw, len(raw)) if raw else None
    ctl = ctypes.create_string_buffer(control, len(control)) if control else None
    hdr = ctypes.create_string_buffer(_MSGHDR.pack(
        ctypes.addressof(name) if name else 0, len(raw), ctypes.addressof(iov), len(bufs),
        ctypes.addressof(ctl) if ctl else 0, len(control), 0))  # fmt: skip
    return _sys("sendmsg", ctypes.c_long(fd), hdr, ctypes.c_long(flags))
