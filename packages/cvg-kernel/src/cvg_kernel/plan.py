"""Apply a compiled plan (docs/plan-format.md) to the calling process.

``prepare`` runs before fork and does all the work that can fail slowly or
allocate: it checks the plan, expands late-bound variables, opens the rule
paths, builds the Landlock ruleset and the seccomp program. ``Prepared.apply``
runs between fork and exec and only issues the syscalls that confine.
"""

from __future__ import annotations

# The C module the signal module wraps: its enums bring in enum, functools and
# collections, milliseconds of every cold start.
import _signal as signal
import errno
import os

# collections.abc is this module, behind the collections package: its imports cost
# every cold start milliseconds.
from _collections_abc import Mapping, Sequence

from . import landlock, seccomp
from .caps import CapabilityDrop, CapabilityError
from .libc import machine
from .process import (
    RlimitError,
    apply_rlimits,
    cloexec_from,
    count_user_processes,
    prepare_rlimits,
    set_no_new_privs,
)
from .record import Factory, Record

# typing only for the type checker: importing it costs every cold start.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NoReturn

    from .notify import Handover

KIND = "cvg.plan"
MAJOR = 1
MINOR = 0
_TOP_KEYS = frozenset(
    {
        "kind", "schema_version", "arch", "landlock", "seccomp", "rlimits", "processes",
        "capabilities", "environment", "variables", "degraded", "source",
        "wall_clock_seconds", "expansions", "unix", "implied",
    }
)  # fmt: skip
_LANDLOCK_KEYS = frozenset(
    {"handled_fs", "handled_net", "scoped", "fs_rules", "net_rules", "flags", "best_effort",
     "required"}
)  # fmt: skip
_SECCOMP_KEYS = frozenset(
    {"deny", "deny_errno", "enosys", "kill", "sockets", "clone_namespaces", "ioctl_deny",
     "listen", "supervise", "memfd_noexec", "allow", "on_violation"}
)  # fmt: skip
_RESTORE_SIGNALS = (signal.SIGPIPE, signal.SIGXFSZ)

# Exit statuses shared with cvg-run (docs/design.md, "Exit statuses").
EXIT_NOT_STARTED = 125
EXIT_NOT_EXECUTABLE = 126
EXIT_NOT_FOUND = 127


def reset_signals() -> None:
    """Give the tool default signal handling.

    CPython ignores SIGPIPE and SIGXFSZ, and ignored dispositions survive exec:
    without this, `yes | head` and the file-size limit misbehave in the tool.
    """
    for sig in _RESTORE_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, ())


def exec_status(error: OSError) -> int:
    """127 when the command was not found, 126 when it could not be executed."""
    return EXIT_NOT_FOUND if error.errno in (errno.ENOENT, errno.ENOTDIR) else EXIT_NOT_EXECUTABLE


def exec_failure(command: str, error: OSError) -> str:
    hint = ""
    if error.errno == errno.EACCES:
        hint = " (is execute granted for it and for its ELF interpreter?)"
    return f"{command}: {error.strerror}{hint}"


def child_exit(err_fd: int, status: int, message: str) -> NoReturn:
    """The end of a forked child that did not exec: ``STATUS message`` on ``err_fd``
    for its supervisor (or, with -1, ``cvg-run: message`` on stderr), then exit with
    that status. Imports nothing, allocates one string."""
    try:
        if err_fd >= 0:
            os.write(err_fd, f"{status} {message}".encode()[:4000])
        else:
            os.write(2, f"cvg-run: {message}\n".encode())
    finally:
        os._exit(status)


def child_exec(prepared: Prepared, argv: Sequence[str], path: str | None, err_fd: int) -> NoReturn:
    """Exec ``argv`` in a child confined by ``prepared`` (see ``Prepared.execve``), or
    report why not on ``err_fd`` with 126 or 127 (see :func:`child_exit`)."""
    try:
        prepared.execve(argv, path)
    except OSError as e:
        child_exit(err_fd, exec_status(e), exec_failure(argv[0], e))
    except BaseException as e:  # noqa: BLE001 - a forked child never returns into the caller's code
        child_exit(err_fd, EXIT_NOT_STARTED, f"exec failed: {e}")


class PlanError(ValueError):
    """The plan is malformed or cannot be applied on this kernel."""


class Note(Record):
    """Something the plan asked for that preparation dropped or skipped, and why."""

    item: str
    reason: str
    skipped: bool = False  # a missing path, harmless: skipping an allow rule only denies more

    def __str__(self) -> str:
        return f"{self.item}: {self.reason}"


def loads(data: bytes | str) -> dict[str, Any]:
    """Parse and check a plan's envelope; the sections are checked by ``prepare``."""
    import json  # here, not at the top: cvg-run's cold start never parses a plan text

    try:
        plan = json.loads(data)
    except ValueError as e:
        raise PlanError(f"plan is not valid JSON: {e}") from None
    check_envelope(plan)
    return plan  # type: ignore[no-any-return]


def check_envelope(plan: object) -> None:
    if not isinstance(plan, dict):
        raise PlanError("plan must be a JSON object")
    if plan.get("kind") != KIND:
        raise PlanError(f"$.kind: expected {KIND!r}, got {plan.get('kind')!r}")
    version = plan.get("schema_version")
    # str methods, not re: importing re costs every cold start.
    head, dot, tail = version.partition(".") if isinstance(version, str) else ("", "", "")
    if not (dot and _digits(head) and _digits(tail)):
        raise PlanError(f"$.schema_version: expected 'MAJOR.MINOR', got {version!r}")
    major, minor = int(head), int(tail)
    if major != MAJOR:
        raise PlanError(
            f"cvg.plan schema_version {version} is not supported"
            f" (this reader understands {MAJOR}.x)"
        )
    if minor <= MINOR:  # a newer minor may add keys this reader ignores
        _no_extra(plan, _TOP_KEYS, "$")
        for key, allowed in (("landlock", _LANDLOCK_KEYS), ("seccomp", _SECCOMP_KEYS)):
            if isinstance(plan.get(key), dict):
                _no_extra(plan[key], allowed, f"$.{key}")


def _no_extra(obj: Mapping[str, object], allowed: frozenset[str], where: str) -> None:
    extra = sorted(set(obj) - allowed)
    if extra:
        raise PlanError(f"{where}.{extra[0]}: unknown key")


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def expand(value: str, variables: Mapping[str, str], where: str) -> str:
    """Replace each ``${NAME}`` with its value; an unknown name is a PlanError."""
    out: list[str] = []
    rest = value
    while True:
        start = rest.find("${")
        if start < 0:
            out.append(rest)
            return "".join(out)
        end = rest.find("}", start + 2)
        if end < 0:
            raise PlanError(f"{where}: unterminated ${{ in {value!r}")
        name = rest[start + 2 : end]
        if name not in variables:
            known = ", ".join(sorted(variables)) or "none supplied"
            raise PlanError(f"{where}: unknown variable ${{{name}}} (supplied: {known})")
        out.append(rest[:start])
        out.append(variables[name])
        rest = rest[end + 1 :]


def _section(plan: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = plan.get(key) or {}
    if not isinstance(value, dict):
        raise PlanError(f"$.{key}: must be an object")
    return value


def _str_list(value: object, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PlanError(f"{where}: must be a list of strings")
    return list(value)


class Prepared(Record, frozen=False):
    """A plan made ready to apply: everything allocated, nothing yet enforced."""

    ruleset: landlock.Ruleset | None
    filter: seccomp.Filter
    rlimits: list[tuple[int, int, int]]
    caps: CapabilityDrop
    env: dict[str, str]
    notes: list[Note] = Factory(list)  # type: ignore[assignment]
    handover: Handover | None = None  # where the seccomp listener goes (notify_sock)

    def apply(self) -> None:
        """Confine the calling process. Irreversible; call it in the child.

        Order matters: capabilities go while CAP_SETPCAP still works; Landlock
        and seccomp both need no_new_privs; descriptors are marked rather than
        closed so a supervisor's error pipe survives until exec, and so does the
        notify socket until the listener has gone down it (then both are closed).
        """
        apply_rlimits(self.rlimits)
        self.caps.apply()
        set_no_new_privs()
        if self.ruleset is not None:
            self.ruleset.restrict_self()
        cloexec_from(3)
        if self.filter.supervised and self.handover is None:
            # Nobody would answer the supervised calls (they would get ENOSYS): refuse
            # to start rather than run a tool whose listen() cannot work.
            raise PlanError(
                "$.seccomp.supervise: the plan has calls a supervisor decides "
                "(cvg_kernel.guard); prepare it with notify_sock and serve the listener"
            )
        if self.handover is not None:
            self.handover.ready()
        listener = self.filter.install()
        if self.handover is not None:
            self.handover.send(listener)

    def execve(self, argv: Sequence[str], path: str | None = None) -> NoReturn:
        """Replace this process with ``argv`` in the plan's environment; raises
        OSError when the exec fails. ``path`` is the program when the caller has
        already resolved it; otherwise argv[0] is searched in the plan's PATH.

        Not os.execvpe: it imports ``warnings`` on the way, and after
        confinement the interpreter's own library may no longer be readable.
        Nothing here may import.
        """
        reset_signals()
        args = list(argv)
        if path is not None or "/" in args[0]:
            os.execve(path or args[0], args, self.env)
        saved: OSError | None = None
        last: OSError = FileNotFoundError(2, "No such file or directory", args[0])
        for directory in (self.env.get("PATH") or os.defpath).split(":"):
            try:
                os.execve(os.path.join(directory or ".", args[0]), args, self.env)
            except (FileNotFoundError, NotADirectoryError) as e:
                last = e
            except OSError as e:  # e.g. EACCES: remembered, as execvp(3) does
                last = e
                saved = saved or e
        raise saved or last

    def exec(self, argv: Sequence[str]) -> NoReturn:
        """``execve``, exiting with 126 or 127 (the statuses docs/design.md gives) and a
        one-line reason on stderr if it fails."""
        try:
            self.execve(argv)
        except OSError as e:
            os.write(2, f"cvg-exec: {exec_failure(argv[0], e)}\n".encode())
            os._exit(exec_status(e))

    def close(self) -> None:
        if self.ruleset is not None:
            self.ruleset.close()

    @property
    def inherited_fds(self) -> list[int]:
        """The descriptors a process given :meth:`handoff` must inherit."""
        return [self.ruleset.fd] if self.ruleset is not None and self.ruleset.fd >= 0 else []

    def handoff(self) -> dict[str, Any]:
        """This prepared plan as plain data (marshal can carry it) for a process this
        one starts to apply with :func:`adopt`: the rules are opened and the filter
        assembled once, here, not again in that process. The Landlock ruleset goes by
        descriptor (:attr:`inherited_fds`): the caller makes the receiver inherit it at
        the same number. A listener is the receiver's choice
        (``adopt(notify_sock=...)``)."""
        ruleset = None
        if self.ruleset is not None and self.ruleset.fd >= 0:
            ruleset = (self.ruleset.fd, self.ruleset.flags)
        return {
            "ruleset": ruleset,
            "filter": self.filter.data(),
            "rlimits": [tuple(r) for r in self.rlimits],
            "keep": self.caps.names(),
            "env": dict(self.env),
        }


def adopt(data: Mapping[str, Any], *, notify_sock: int | None = None) -> Prepared:
    """The :class:`Prepared` that :meth:`Prepared.handoff` described, in the process
    that inherited its ruleset descriptor; ``notify_sock`` as for :func:`prepare`.
    Raises PlanError when ``data`` is not such a description."""
    try:
        flt = seccomp.Filter.from_data(data["filter"])
        ruleset = data["ruleset"]
        adopted = None if ruleset is None else landlock.Ruleset.inherited(*ruleset)
        rlimits = [(int(r), int(soft), int(hard)) for r, soft, hard in data["rlimits"]]
        caps = CapabilityDrop(data["keep"])
        env = {str(k): str(v) for k, v in data["env"].items()}
    except (KeyError, TypeError, ValueError, seccomp.SeccompError, CapabilityError) as e:
        raise PlanError(f"not a prepared plan's handoff: {e}") from None
    handover = None
    if notify_sock is not None:
        from .notify import Handover

        handover = Handover(notify_sock)
        flt = flt.with_listener()
    return Prepared(adopted, flt, rlimits, caps, env, [], handover)


def prepare(
    plan: Mapping[str, Any],
    variables: Mapping[str, str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    notify_sock: int | None = None,
    compiled: seccomp.Filter | None = None,
) -> Prepared:
    """Check ``plan`` and build everything ``apply`` needs. Raises PlanError.

    ``compiled`` is the plan's filter from :func:`compile_filter`, for a process
    that prepares the same plan many times (the filter depends on no variable).

    With ``notify_sock`` (an inherited AF_UNIX socket), ``apply`` installs the
    seccomp filter with its denials turned into user notifications and sends the
    listener down that socket, then closes both; the supervisor at the other end
    answers them (:mod:`cvg_kernel.notify`). Raises OSError if it is not a socket,
    ValueError if it is 0, 1 or 2.
    """
    check_envelope(plan)
    handover = None
    if notify_sock is not None:
        # Imported here, not at the top: only this path pays for socket and threading.
        from .notify import Handover

        handover = Handover(notify_sock)
    variables = dict(variables or {})
    environ = os.environ if environ is None else environ
    notes: list[Note] = []

    arch = plan.get("arch") or machine()
    if arch != machine():
        raise PlanError(f"$.arch: plan is for {arch}, this machine is {machine()}")

    ruleset = _prepare_landlock(_section(plan, "landlock"), variables, notes)
    try:
        flt = (
            compiled if compiled is not None else _prepare_seccomp(_section(plan, "seccomp"), arch)
        )
        if handover is not None:
            flt = flt.with_listener()
        rlimit_spec = dict(_section(plan, "rlimits") or {"core": 0})
        rlimit_spec.setdefault("core", 0)
        processes = plan.get("processes")
        if processes is not None:
            if isinstance(processes, bool) or not isinstance(processes, int) or processes < 1:
                raise PlanError("$.processes: must be a positive integer")
            uid = os.getuid()
            # The kernel never applies RLIMIT_NPROC to root's own user (INIT_USER):
            # counting root's processes would only cost time. The supervisor's count
            # of the tree is what binds there.
            if uid != 0:
                rlimit_spec["nproc"] = count_user_processes(uid) + processes
        try:
            rlimits = prepare_rlimits(rlimit_spec)
        except RlimitError as e:
            raise PlanError(f"$.rlimits: {e}") from None
        caps_spec = _section(plan, "capabilities")
        try:
            caps = CapabilityDrop(_str_list(caps_spec.get("keep", []), "$.capabilities.keep"))
        except CapabilityError as e:
            raise PlanError(f"$.capabilities.keep: {e}") from None
        env = _prepare_env(_section(plan, "environment"), variables, environ)
    except BaseException:
        if ruleset is not None:
            ruleset.close()
        raise
    return Prepared(ruleset, flt, rlimits, caps, env, notes, handover)


def compile_filter(plan: Mapping[str, Any]) -> seccomp.Filter:
    """The plan's seccomp filter, assembled once; see ``prepare(compiled=...)``.
    Raises PlanError."""
    check_envelope(plan)
    return _prepare_seccomp(_section(plan, "seccomp"), plan.get("arch") or machine())


def _prepare_landlock(
    spec: Mapping[str, Any], variables: Mapping[str, str], notes: list[Note]
) -> landlock.Ruleset | None:
    fs_rules: list[tuple[str, list[str]]] = []
    for i, rule in enumerate(spec.get("fs_rules", [])):
        where = f"$.landlock.fs_rules[{i}]"
        if not isinstance(rule, dict) or not isinstance(rule.get("path"), str):
            raise PlanError(f"{where}: must be an object with a string 'path'")
        path = expand(rule["path"], variables, f"{where}.path")
        if not os.path.isabs(path):
            raise PlanError(f"{where}.path: {path!r} is not absolute")
        fs_rules.append((path, _str_list(rule.get("access"), f"{where}.access")))
    net_rules: list[tuple[int, list[str]]] = []
    for i, rule in enumerate(spec.get("net_rules", [])):
        where = f"$.landlock.net_rules[{i}]"
        port = rule.get("port") if isinstance(rule, dict) else None
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise PlanError(f"{where}.port: must be an integer 0..65535")
        net_rules.append((port, _str_list(rule.get("access"), f"{where}.access")))

    def rights(key: str) -> str | list[str]:
        value = spec.get(key, "all")
        return "all" if value == "all" else _str_list(value, f"$.landlock.{key}")

    required = spec.get("required", True)
    try:
        ruleset = landlock.Ruleset.build(
            handled_fs=rights("handled_fs"),
            handled_net=rights("handled_net"),
            scoped=rights("scoped"),
            fs_rules=fs_rules,
            net_rules=net_rules,
            flags=_str_list(spec.get("flags", []), "$.landlock.flags"),
            best_effort=bool(spec.get("best_effort", False)),
        )
    except landlock.LandlockUnavailable as e:
        if required:
            raise PlanError(f"landlock: {e}") from None
        notes.append(Note("landlock", f"not enforced: {e}"))
        return None
    except landlock.LandlockError as e:
        raise PlanError(f"landlock: {e}") from None
    notes.extend(Note(d.item, d.reason) for d in ruleset.dropped)
    notes.extend(Note(d.item, d.reason, skipped=True) for d in ruleset.skipped)
    return ruleset


def _prepare_seccomp(spec: Mapping[str, Any], arch: str) -> seccomp.Filter:
    kwargs: dict[str, Any] = {}
    for key in ("deny", "enosys", "kill", "ioctl_deny", "supervise"):
        if key in spec:
            kwargs[key] = tuple(_str_list(spec[key], f"$.seccomp.{key}"))
    if "deny_errno" in spec:
        kwargs["deny_errno"] = spec["deny_errno"]
    # null and absent alike mean no allow list; [] would allow nothing at all.
    if spec.get("allow") is not None:
        kwargs["allow"] = tuple(_str_list(spec["allow"], "$.seccomp.allow"))
    if "on_violation" in spec:
        kwargs["on_violation"] = spec["on_violation"]
    if "sockets" in spec:
        if not isinstance(spec["sockets"], list):
            raise PlanError("$.seccomp.sockets: must be a list")
        kwargs["sockets"] = tuple(spec["sockets"])
    for key in ("clone_namespaces", "memfd_noexec", "listen"):
        if key in spec:
            if not isinstance(spec[key], bool):
                raise PlanError(f"$.seccomp.{key}: must be true or false")
            kwargs[key] = spec[key]
    try:
        return seccomp.Filter.build(arch, **kwargs)
    except (seccomp.SeccompError, ValueError) as e:
        raise PlanError(f"seccomp: {e}") from None


def _prepare_env(
    spec: Mapping[str, Any], variables: Mapping[str, str], environ: Mapping[str, str]
) -> dict[str, str]:
    env: dict[str, str] = {}
    set_ = spec.get("set", {})
    if not isinstance(set_, dict):
        raise PlanError("$.environment.set: must be an object")
    for name, value in set_.items():
        if not isinstance(value, str) or "=" in name or not name:
            raise PlanError(f"$.environment.set.{name}: must be a string under a valid name")
        env[name] = expand(value, variables, f"$.environment.set.{name}")
    for name in _str_list(spec.get("pass", []), "$.environment.pass"):
        if name in environ and name not in env:
            env[name] = environ[name]
    return env
