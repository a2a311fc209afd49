"""Landlock through ctypes: negotiate against the running ABI, build, restrict.

Landlock only ever removes rights from the process that asks, so it needs no
privilege, and a domain can never be undone: the ruleset is built in the
parent (allocation, path lookups and every fallible step happen there) and the
forked child only calls ``landlock_restrict_self``.

Each kernel knows a prefix of the rights listed here. Asking an older kernel
to handle a right it does not know fails the whole ruleset (EINVAL, or E2BIG
for a non-zero field it cannot see), so requests are first negotiated down to
the ABI on offer, the way rust-landlock's ``compat.rs`` does in best-effort
mode, and everything given up is reported as a :class:`Dropped` entry. Setting
``CVG_LANDLOCK_ABI_MAX`` caps the ABI used, which is how older kernels are
simulated on a new one.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat

# collections.abc is this module, behind the collections package: its imports cost
# every cold start milliseconds.
from _collections_abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType

from . import libc
from .record import Record
from .syscall_table import TABLES

__all__ = [
    "ABI_ENV",
    "FILE_RIGHTS",
    "FLAGS",
    "FS_RIGHTS",
    "KNOWN_ABI",
    "NET_RIGHTS",
    "SCOPES",
    "Dropped",
    "LandlockError",
    "LandlockUnavailable",
    "Negotiation",
    "Right",
    "Ruleset",
    "effective_abi",
    "kernel_abi",
    "mask_names",
    "negotiate",
]

ABI_ENV = "CVG_LANDLOCK_ABI_MAX"
KNOWN_ABI = 9
"""The newest ABI whose rights this module knows; a newer kernel is used at this level."""

_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_RULE_NET_PORT = 2


class LandlockError(ValueError):
    """A request Landlock cannot honour, or an error returned by the kernel.

    A ValueError because most of these are a bad request (an unknown right, a
    right the kernel is too old for); kernel failures carry the errno name.
    """


class LandlockUnavailable(LandlockError):
    """The kernel offers no Landlock at all (ABI 0: absent, disabled, or capped to 0)."""


class Right(Record):
    """One Landlock access right, scope or flag: its bit and the ABI that introduced it."""

    name: str
    bit: int
    abi: int

    @property
    def mask(self) -> int:
        return 1 << self.bit


def _table(*rights: Right) -> Mapping[str, Right]:
    return {r.name: r for r in rights}


FS_RIGHTS: Mapping[str, Right] = _table(
    Right("execute", 0, 1),
    Right("write_file", 1, 1),
    Right("read_file", 2, 1),
    Right("read_dir", 3, 1),
    Right("remove_dir", 4, 1),
    Right("remove_file", 5, 1),
    Right("make_char", 6, 1),
    Right("make_dir", 7, 1),
    Right("make_reg", 8, 1),
    Right("make_sock", 9, 1),
    Right("make_fifo", 10, 1),
    Right("make_block", 11, 1),
    Right("make_sym", 12, 1),
    Right("refer", 13, 2),
    Right("truncate", 14, 3),
    Right("ioctl_dev", 15, 5),
    Right("resolve_unix", 16, 9),
)
NET_RIGHTS: Mapping[str, Right] = _table(
    Right("bind_tcp", 0, 4),
    Right("connect_tcp", 1, 4),
)
SCOPES: Mapping[str, Right] = _table(
    Right("abstract_unix_socket", 0, 6),
    Right("signal", 1, 6),
)
FLAGS: Mapping[str, Right] = _table(
    Right("log_same_exec_off", 0, 7),
    Right("log_new_exec_on", 1, 7),
    Right("log_subdomains_off", 2, 7),
    Right("tsync", 3, 8),
)

FILE_RIGHTS: frozenset[str] = frozenset(
    {"execute", "write_file", "read_file", "truncate", "ioctl_dev", "resolve_unix"}
)
"""The only rights a rule on a non-directory may carry; anything else there is EINVAL."""

_FILE_MASK = sum(FS_RIGHTS[n].mask for n in FILE_RIGHTS)


def mask_names(table: Mapping[str, Right], mask: int) -> list[str]:
    """The names of the bits set in ``mask``, in bit order (for reports and errors)."""
    return [r.name for r in sorted(table.values(), key=lambda r: r.bit) if mask & r.mask]


def _errname(code: int) -> str:
    return errno.errorcode.get(code, str(code))


def _kernel_error(call: str, code: int) -> LandlockError:
    return LandlockError(f"{call}: {_errname(code)} ({os.strerror(code)})")


def _nr(name: str) -> int:
    return TABLES[libc.machine()][name]


# --------------------------------------------------------------------------- ABI


def kernel_abi() -> int:
    """The Landlock ABI the running kernel offers, 0 if it has none.

    ENOSYS means the kernel was built without Landlock; EOPNOTSUPP means it
    was built with it but the LSM is not enabled at boot. Both mean "none".
    """
    try:
        return libc.syscall(
            _nr("landlock_create_ruleset"),
            ctypes.c_void_p(None),
            ctypes.c_size_t(0),
            ctypes.c_long(_CREATE_RULESET_VERSION),
        )
    except OSError as e:
        if e.errno in (errno.ENOSYS, errno.EOPNOTSUPP):
            return 0
        raise _kernel_error("landlock_create_ruleset(VERSION)", e.errno or 0) from None


def _abi_cap() -> int | None:
    raw = os.environ.get(ABI_ENV)
    # An empty value counts as unset, so `CVG_LANDLOCK_ABI_MAX= cmd` clears a cap.
    if raw is None or raw == "":
        return None
    # fullmatch on digits rather than int(): int() would take "+4", " 4 " and "4_0".
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 4):
        raise LandlockError(
            f"{ABI_ENV}={raw!r} is not a valid Landlock ABI: use a non-negative integer "
            f"such as 4 (or unset it to use the kernel's ABI)"
        )
    return int(raw)


def _abi_state() -> tuple[int, int, int | None]:
    """(kernel ABI, effective ABI, cap from the environment)."""
    cap = _abi_cap()
    kernel = kernel_abi()
    return kernel, kernel if cap is None else min(kernel, cap), cap


def _cap_note(kernel: int, cap: int | None) -> str:
    return f"capped by {ABI_ENV}={cap}" if cap is not None and cap < kernel else ""


def effective_abi() -> tuple[int, str]:
    """The ABI to use (the kernel's, capped by ``CVG_LANDLOCK_ABI_MAX``) and why."""
    kernel, eff, cap = _abi_state()
    offer = f"kernel offers ABI {kernel}" if kernel else "kernel offers no Landlock (ABI 0)"
    if cap is None:
        return eff, offer
    if cap < kernel:
        return eff, f"{offer}, capped to {cap} by {ABI_ENV}={cap}"
    return eff, f"{offer}; {ABI_ENV}={cap} does not lower it"


# --------------------------------------------------------------------- negotiation


class Dropped(Record):
    """Something requested that is not enforced, and why (e.g. ``fs.ioctl_dev``)."""

    item: str
    reason: str


class Negotiation(Record):
    """What a request becomes at one ABI. Masks are ready for the kernel."""

    abi: int
    handled_fs: int
    handled_net: int
    scoped: int
    flags: int
    fs_rules: tuple[tuple[str, int], ...]
    net_rules: tuple[tuple[int, int], ...]
    dropped: tuple[Dropped, ...]
    skipped: tuple[Dropped, ...]

    @property
    def enforced(self) -> bool:
        """False when nothing is left to handle (the kernel refuses that with ENOMSG)."""
        return bool(self.handled_fs or self.handled_net or self.scoped)


Names = str | Sequence[str]
"""``"all"`` or a list of names."""

_PREFIX = {"fs": "filesystem right", "net": "network right", "scope": "scope", "flag": "flag"}
# Why losing a right matters when it is not simply "that access stays unrestricted".
_CONSEQUENCE = {
    "fs.refer": "; without it the ruleset cannot handle refer, so renaming or linking a file "
    "into another directory is always denied (more restrictive, not less)",
}


def _known(table: Mapping[str, Right], abi: int) -> int:
    return sum(r.mask for r in table.values() if r.abi <= min(abi, KNOWN_ABI))


def _names_mask(table: Mapping[str, Right], names: Iterable[str], kind: str, where: str) -> int:
    mask = 0
    for name in names:
        right = table.get(name)
        if right is None:
            raise LandlockError(
                f"unknown {_PREFIX[kind]} {name!r}{where}; known: {', '.join(table)}"
            )
        mask |= right.mask
    return mask


def _as_names(value: Names, what: str) -> list[str] | None:
    """None for "all"; else the list. A bare string other than "all" is refused,
    since iterating it would silently ask for one-letter rights."""
    if isinstance(value, str):
        if value == "all":
            return None
        raise LandlockError(f'{what}: expected "all" or a list of names, got {value!r}')
    return list(value)


def negotiate(
    abi: int,
    *,
    handled_fs: Names = "all",
    handled_net: Names = "all",
    scoped: Names = "all",
    fs_rules: Sequence[tuple[str, Sequence[str]]] = (),
    net_rules: Sequence[tuple[int, Sequence[str]]] = (),
    flags: Sequence[str] = (),
    best_effort: bool = False,
    abi_note: str = "",
) -> Negotiation:
    """Fit a request to Landlock ABI ``abi`` without touching the kernel.

    ``"all"`` means every right this ABI knows and never drops anything. An
    explicitly named right, scope or flag the ABI lacks is dropped and
    reported; with ``best_effort`` False any such drop raises instead, since
    the caller asked for a guarantee this kernel cannot give. A rule right
    outside the final handled set is removed quietly: that access is not
    restricted, so granting it changes nothing. A rule left with no rights is
    skipped (the kernel would refuse it with ENOMSG) and listed in ``skipped``.
    ``abi_note`` explains where ``abi`` came from, e.g. an environment cap.
    """
    if abi < 0:
        raise LandlockError(f"Landlock ABI {abi} is negative")
    note = f" ({abi_note})" if abi_note else ""
    fs_mask, fs_dropped = _fit_handled(FS_RIGHTS, "fs", handled_fs, "handled_fs", abi, note)
    net_mask, net_dropped = _fit_handled(NET_RIGHTS, "net", handled_net, "handled_net", abi, note)
    scope_mask, scope_dropped = _fit_handled(SCOPES, "scope", scoped, "scoped", abi, note)
    flag_mask, flag_dropped = _fit_flags(flags, abi, note)
    dropped = [*fs_dropped, *net_dropped, *scope_dropped, *flag_dropped]
    fs_kept, fs_skipped = _fit_fs_rules(fs_rules, fs_mask, abi, note)
    net_kept, net_skipped = _fit_net_rules(net_rules, net_mask, abi, note)

    if not (fs_mask or net_mask or scope_mask):
        dropped.extend(_unenforced(abi, note, flag_mask))
        flag_mask, fs_kept, net_kept = 0, (), ()
    if dropped and not best_effort:
        raise LandlockError(
            "cannot honour: "
            + "; ".join(f"{d.item} ({d.reason})" for d in dropped)
            + ". Ask for less, or set best_effort to drop these and continue"
        )
    return Negotiation(
        abi=abi,
        handled_fs=fs_mask,
        handled_net=net_mask,
        scoped=scope_mask,
        flags=flag_mask,
        fs_rules=fs_kept,
        net_rules=net_kept,
        dropped=tuple(dropped),
        skipped=(*fs_skipped, *net_skipped),
    )


def _fit(
    table: Mapping[str, Right], kind: str, requested: int, abi: int, note: str
) -> tuple[int, list[Dropped]]:
    """The part of ``requested`` that ABI ``abi`` knows, and what it does not."""
    known = _known(table, abi)
    dropped = [
        Dropped(
            f"{kind}.{right.name}",
            f"needs Landlock ABI {right.abi}; this kernel offers {abi}{note}"
            + _CONSEQUENCE.get(f"{kind}.{right.name}", ""),
        )
        for right in sorted(table.values(), key=lambda r: r.bit)
        if requested & right.mask and not known & right.mask
    ]
    return requested & known, dropped


def _fit_handled(
    table: Mapping[str, Right], kind: str, value: Names, what: str, abi: int, note: str
) -> tuple[int, list[Dropped]]:
    """The rights (or scopes) to handle at ``abi``; ``"all"`` never drops any."""
    names = _as_names(value, what)
    if names is None:
        return _known(table, abi), []
    return _fit(table, kind, _names_mask(table, names, kind, ""), abi, note)


def _fit_flags(flags: Sequence[str], abi: int, note: str) -> tuple[int, list[Dropped]]:
    """The restrict_self flags ``abi`` knows; flags are only ever named, never "all"."""
    if isinstance(flags, str):
        raise LandlockError(f"flags: expected a list of names, got {flags!r}")
    return _fit(FLAGS, "flag", _names_mask(FLAGS, flags, "flag", ""), abi, note)


# typing only for the type checker: importing it (and contextlib and warnings with it)
# costs every cold cvg-run several milliseconds.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeVar

    _Target = TypeVar("_Target", str, int)


def _fit_rules(
    rules: Sequence[tuple[_Target, Sequence[str]]],
    table: Mapping[str, Right],
    kind: str,
    handled: int,
    abi: int,
    note: str,
    where: Callable[[_Target], str],
) -> tuple[tuple[tuple[_Target, int], ...], list[Dropped]]:
    """Each rule cut to the handled rights, and the rules left granting nothing."""
    kept: list[tuple[_Target, int]] = []
    skipped: list[Dropped] = []
    for target, access in rules:
        if isinstance(access, str):
            raise LandlockError(f"rule for {where(target)}: access must be a list of names")
        allowed = handled & _names_mask(table, access, kind, f" in the rule for {where(target)}")
        if allowed:
            kept.append((target, allowed))
        else:
            skipped.append(_grants_nothing(f"{kind}_rule {target}", access, abi, note))
    return tuple(kept), skipped


def _fit_fs_rules(
    rules: Sequence[tuple[str, Sequence[str]]], handled: int, abi: int, note: str
) -> tuple[tuple[tuple[str, int], ...], list[Dropped]]:
    """Each path rule cut to the handled rights, and the rules left granting nothing."""
    return _fit_rules(rules, FS_RIGHTS, "fs", handled, abi, note, repr)


def _fit_net_rules(
    rules: Sequence[tuple[int, Sequence[str]]], handled: int, abi: int, note: str
) -> tuple[tuple[tuple[int, int], ...], list[Dropped]]:
    """Each port rule cut to the handled rights, and the rules left granting nothing."""
    for port, _ in rules:
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 0xFFFF:
            raise LandlockError(f"net rule port {port!r} is not an integer 0..65535")
    return _fit_rules(rules, NET_RIGHTS, "net", handled, abi, note, lambda port: f"port {port}")


def _grants_nothing(item: str, access: Sequence[str], abi: int, note: str) -> Dropped:
    return Dropped(
        item,
        f"none of its rights ({', '.join(access) or 'none'}) are handled "
        f"at ABI {abi}{note}, so the rule would grant nothing",
    )


def _unenforced(abi: int, note: str, flags: int) -> list[Dropped]:
    """What is lost when nothing is left to handle: Landlock itself, and every flag."""
    # Restricting nothing is not a ruleset the kernel accepts; it must be
    # visible, because the caller gets no confinement at all from Landlock.
    gone = Dropped(
        "landlock",
        f"nothing is left to restrict at ABI {abi}{note}; Landlock is not enforced",
    )
    return [
        gone,
        *(
            Dropped(f"flag.{n}", "no Landlock domain is created, so it has no effect")
            for n in mask_names(FLAGS, flags)
        ),
    ]


# --------------------------------------------------------------------------- kernel


class _RulesetAttr(ctypes.Structure):
    # Always allocated at full size: the size passed to the kernel is what
    # tells it which fields exist, and a zero tail beyond it is never read.
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    # The kernel declares this struct __attribute__((packed)): 12 bytes, not 16.
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _NetPortAttr(ctypes.Structure):
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


def _attr_size(abi: int) -> int:
    if abi >= 6:
        return 24
    if abi >= 4:
        return 16
    return 8


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_MAKE_SYM = 1 << 12


def _within(path: str, outer: str) -> bool:
    return path != outer and (outer == "/" or path.startswith(outer + "/"))


def _planting_anchor(path: str, makers: Sequence[str]) -> str | None:
    """The outermost other rule that lets the tool make symbolic links above ``path``.

    A tool that may make links there may also have replaced a directory on the way to
    ``path`` with a link to anywhere, in an earlier run, so that a rule meant for its
    own ``work/data`` would grant what the link points at. Outside every such rule,
    nothing the tool did can have changed what the path names."""
    path = os.path.normpath(path)
    anchors = [p for p in makers if _within(path, p)]
    return min(anchors, key=len) if anchors else None


def _open_rule_path(path: str, anchor: str | None = None) -> int | None:
    """An O_PATH fd for ``path`` (symlinks followed, as /lib -> usr/lib needs), or
    None if it does not exist. Skipping a missing allow rule can only deny more.

    With ``anchor`` (see :func:`_planting_anchor`), the part of ``path`` beneath it is
    resolved with RESOLVE_NO_SYMLINKS: a link there is refused, never followed."""
    try:
        if anchor is None:
            return os.open(path, os.O_PATH | os.O_CLOEXEC)
        base = os.open(anchor, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            rest = os.path.normpath(path)[len(anchor) :].lstrip("/")
            how = _OpenHow(
                os.O_PATH | os.O_CLOEXEC, 0, _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS
            )
            return libc.syscall(
                _nr("openat2"),
                ctypes.c_long(base),
                ctypes.c_char_p(os.fsencode(rest)),
                ctypes.byref(how),
                ctypes.c_size_t(ctypes.sizeof(how)),
            )
        finally:
            os.close(base)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        if anchor is not None and e.errno == errno.ELOOP:
            raise LandlockError(
                f"{path}: a symbolic link beneath {anchor}, where the tool may make links; "
                "a rule nested in such a grant is never opened through one (it could have "
                "been planted to redirect the rule)"
            ) from None
        raise LandlockError(
            f"open({path!r}, O_PATH) for a Landlock rule: {_errname(e.errno or 0)} ({e.strerror})"
        ) from None


class Ruleset:
    """A Landlock ruleset built in the parent, to be enforced in a forked child.

    Use :meth:`build`. Attributes: ``fd`` (-1 if nothing is enforced), ``abi``,
    ``abi_note`` (why that ABI), the masks ``handled_fs``, ``handled_net``,
    ``scoped`` and ``flags`` actually used, ``fs_rules``/``net_rules`` as
    added, ``dropped`` (requested but not enforceable here) and ``skipped``
    (rules not added: missing paths, rules left with no rights).
    """

    def __init__(
        self,
        *,
        fd: int,
        abi: int,
        abi_note: str,
        negotiation: Negotiation,
        fs_rules: list[tuple[str, int]],
        skipped: list[Dropped],
    ) -> None:
        self.fd = fd
        self.abi = abi
        self.abi_note = abi_note
        self.handled_fs = negotiation.handled_fs
        self.handled_net = negotiation.handled_net
        self.scoped = negotiation.scoped
        self.flags = negotiation.flags
        self.fs_rules = fs_rules
        self.net_rules = list(negotiation.net_rules)
        self.dropped = list(negotiation.dropped)
        self.skipped = skipped
        self._closed = False
        # restrict_self runs between fork and exec, possibly after privileges
        # are gone: prepare its exact arguments now so it only makes the call.
        self._restrict_args = (
            ctypes.c_long(_nr("landlock_restrict_self")),
            ctypes.c_long(fd),
            ctypes.c_long(negotiation.flags),
        )

    @classmethod
    def build(
        cls,
        *,
        handled_fs: Names = "all",
        handled_net: Names = "all",
        scoped: Names = "all",
        fs_rules: Sequence[tuple[str, Sequence[str]]] = (),
        net_rules: Sequence[tuple[int, Sequence[str]]] = (),
        flags: Sequence[str] = (),
        best_effort: bool = False,
        abi: int | None = None,
    ) -> Ruleset:
        """Negotiate the request (see :func:`negotiate`) and create the ruleset.

        ``abi`` pins the ABI instead of asking the kernel and the environment
        (for a caller that already called :func:`effective_abi`); a value above
        the kernel's makes the kernel refuse the ruleset. A rule on a
        non-directory keeps only :data:`FILE_RIGHTS`, because the kernel
        rejects the whole rule otherwise; a rule that keeps nothing, or whose
        path does not exist, is listed in ``skipped``.
        Raises LandlockUnavailable at ABI 0 and LandlockError for anything else.
        """
        if abi is None:
            kernel, eff, cap = _abi_state()
            note = _cap_note(kernel, cap)
        else:
            eff, note = abi, f"ABI pinned to {abi} by the caller"
        if eff <= 0:
            why = f"; {note}" if note else ""
            raise LandlockUnavailable(f"this kernel offers no Landlock (ABI 0{why})")
        neg = negotiate(
            eff,
            handled_fs=handled_fs,
            handled_net=handled_net,
            scoped=scoped,
            fs_rules=fs_rules,
            net_rules=net_rules,
            flags=flags,
            best_effort=best_effort,
            abi_note=note,
        )
        skipped = list(neg.skipped)
        if not neg.enforced:
            return cls(fd=-1, abi=eff, abi_note=note, negotiation=neg, fs_rules=[], skipped=skipped)

        attr = _RulesetAttr(neg.handled_fs, neg.handled_net, neg.scoped)
        try:
            fd = libc.syscall(
                _nr("landlock_create_ruleset"),
                ctypes.byref(attr),
                ctypes.c_size_t(_attr_size(eff)),
                ctypes.c_long(0),
            )
        except OSError as e:
            raise _kernel_error(
                f"landlock_create_ruleset(fs={'|'.join(mask_names(FS_RIGHTS, neg.handled_fs))}"
                f", net={'|'.join(mask_names(NET_RIGHTS, neg.handled_net))}"
                f", scoped={'|'.join(mask_names(SCOPES, neg.scoped))}, ABI {eff})",
                e.errno or 0,
            ) from None
        added: list[tuple[str, int]] = []
        try:
            makers = [os.path.normpath(p) for p, a in neg.fs_rules if a & _MAKE_SYM]
            for path, allowed in neg.fs_rules:
                anchor = _planting_anchor(path, makers)
                rule = _add_path_rule(fd, path, allowed, anchor)
                if isinstance(rule, Dropped):
                    skipped.append(rule)
                else:
                    added.append((path, rule))
            for port, allowed in neg.net_rules:
                _add_net_rule(fd, port, allowed)
        except BaseException:
            os.close(fd)
            raise
        return cls(fd=fd, abi=eff, abi_note=note, negotiation=neg, fs_rules=added, skipped=skipped)

    @classmethod
    def inherited(cls, fd: int, flags: int) -> Ruleset:
        """A ruleset another process built (:meth:`build`) and this one inherited as
        descriptor ``fd``, to :meth:`restrict_self` with ``flags``. It knows nothing
        else of its rules: what they are was reported where it was built."""
        if not isinstance(fd, int) or not isinstance(flags, int) or fd < 0 or flags < 0:
            raise LandlockError(f"not an inherited ruleset: fd={fd!r}, flags={flags!r}")
        neg = Negotiation(abi=0, handled_fs=0, handled_net=0, scoped=0, flags=flags,
                          fs_rules=(), net_rules=(), dropped=(), skipped=())  # fmt: skip
        return cls(fd=fd, abi=0, abi_note="inherited", negotiation=neg, fs_rules=[], skipped=[])

    @property
    def enforced(self) -> bool:
        """False when negotiation left nothing to restrict and restrict_self is a no-op."""
        return self.fd >= 0

    def restrict_self(self) -> None:
        """Enforce the ruleset on the calling thread. Irreversible: call it in the child.

        The caller must have set no_new_privs first (or hold CAP_SYS_ADMIN),
        or the kernel answers EPERM; it is not set here because the order of
        confinement steps belongs to the caller. Before ABI 8, or without the
        ``tsync`` flag, only the calling thread is confined, so call it in a
        single-threaded child before exec. The ruleset fd is close-on-exec
        (the kernel always creates it so) and does not leak into the program.
        """
        if self._closed:
            raise LandlockError("landlock_restrict_self: the ruleset is already closed")
        if self.fd < 0:
            return
        ret = int(libc._syscall(*self._restrict_args))
        if ret < 0:
            raise _kernel_error(
                f"landlock_restrict_self(flags={'|'.join(mask_names(FLAGS, self.flags)) or 0})",
                ctypes.get_errno(),
            )

    def close(self) -> None:
        if not self._closed and self.fd >= 0:
            os.close(self.fd)
        self._closed = True

    def __enter__(self) -> Ruleset:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"Ruleset(fd={self.fd}, abi={self.abi}, "
            f"fs={mask_names(FS_RIGHTS, self.handled_fs)}, "
            f"net={mask_names(NET_RIGHTS, self.handled_net)}, "
            f"scoped={mask_names(SCOPES, self.scoped)}, flags={mask_names(FLAGS, self.flags)}, "
            f"rules={len(self.fs_rules)}+{len(self.net_rules)})"
        )


def _add_path_rule(
    ruleset_fd: int, path: str, allowed: int, anchor: str | None = None
) -> int | Dropped:
    """Add one path_beneath rule; return the rights granted, or why it was skipped."""
    pfd = _open_rule_path(path, anchor)
    if pfd is None:
        return Dropped(f"fs_rule {path}", "path does not exist; nothing is granted there")
    try:
        if not stat.S_ISDIR(os.fstat(pfd).st_mode):
            # The kernel refuses directory-only rights on a non-directory with
            # EINVAL for the whole rule; keeping the file rights is what was meant.
            allowed &= _FILE_MASK
            if not allowed:
                return Dropped(
                    f"fs_rule {path}",
                    "not a directory, and none of its rights apply to a file "
                    f"(a file accepts only {', '.join(sorted(FILE_RIGHTS))})",
                )
        _add_rule(
            ruleset_fd,
            _RULE_PATH_BENEATH,
            _PathBeneathAttr(allowed, pfd),
            lambda: f"{path!r}, {'|'.join(mask_names(FS_RIGHTS, allowed))}",
        )
        return allowed
    finally:
        os.close(pfd)


def _add_net_rule(ruleset_fd: int, port: int, allowed: int) -> None:
    _add_rule(
        ruleset_fd,
        _RULE_NET_PORT,
        _NetPortAttr(allowed, port),  # host byte order, as the kernel expects
        lambda: f"port {port}, {'|'.join(mask_names(NET_RIGHTS, allowed))}",
    )


def _add_rule(
    ruleset_fd: int, rule_type: int, attr: ctypes.Structure, what: Callable[[], str]
) -> None:
    """landlock_add_rule; a refusal raises the kernel error naming the call with
    ``what()``, built only then: a plan may add a few hundred rules per run."""
    try:
        libc.syscall(
            _nr("landlock_add_rule"),
            ctypes.c_long(ruleset_fd),
            ctypes.c_long(rule_type),
            ctypes.byref(attr),
            ctypes.c_long(0),
        )
    except OSError as e:
        raise _kernel_error(f"landlock_add_rule({what()})", e.errno or 0) from None
