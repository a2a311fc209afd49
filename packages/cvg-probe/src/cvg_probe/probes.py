"""The live probes: every feature proven by using it in a throwaway child.

Reading a version number proves nothing, so each feature is exercised in a
forked child and watched to bite: a Landlock right must turn an operation
that works into EACCES (EXDEV for refer), a seccomp rule must return its errno
or kill, an rlimit must fail the call that crosses it. Wherever it matters, a
control shows the same operation succeeding without the restriction, so the
denial is known to come from the feature and not from something else.

Children are grouped so that one fork does every check that can share a
process, and all groups run at once (see :mod:`cvg_probe._fork`). Each group
lives in the module named after what it proves (``_landlock_fs``,
``_landlock_net``, ``_landlock_flags``, ``_seccomp``, ``_process``, ``_rlimit``,
``_cgroup``;
strace runs beside them, ``_strace``); this module runs them all and puts the
features in order. Everything a child uses is imported by this module and
allocated before any fork.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from cvg_kernel import landlock, seccomp
from cvg_schema import Facts, Feature

from . import _fork
from ._cgroup import CGROUP, CgroupGroup
from ._fork import Outcome
from ._group import Group, ProbeError, Spec
from ._landlock import LandlockState, landlock_state
from ._landlock_flags import FLAG_SPECS, LandlockFlagGroup
from ._landlock_fs import FS_CHECKS, FS_SPECS, LANDLOCK_ABI, LandlockFsGroup
from ._landlock_net import (
    NET_BIND,
    NET_CONNECT,
    SCOPE_ABSTRACT,
    SCOPE_SIGNAL,
    LandlockNetGroup,
    LandlockScopeGroup,
)
from ._process import CAPS, CLOSE_RANGE, NNP, PIDFD, SUBREAPER, ProcessGroup, ReaperGroup
from ._rlimit import RLIMIT_SPECS, RlimitGroup
from ._seccomp import (
    SECCOMP_ARCH,
    SECCOMP_ERRNO,
    SECCOMP_FILTER,
    SECCOMP_SOCKETS,
    SeccompGroup,
)
from ._strace import STRACE, StraceRun

__all__ = [
    "DEFAULT_TIMEOUT",
    "FEATURES",
    "ProbeError",
    "run_probes",
]

DEFAULT_TIMEOUT = 5.0
"""Seconds a probe child may take before it is killed and reported as timed out."""

FEATURES: tuple[str, ...] = (
    LANDLOCK_ABI.name,
    *(s.name for s in FS_SPECS.values()),
    NET_CONNECT.name,
    NET_BIND.name,
    SCOPE_SIGNAL.name,
    SCOPE_ABSTRACT.name,
    *(s.name for s in FLAG_SPECS.values()),
    SECCOMP_FILTER.name,
    SECCOMP_ERRNO.name,
    SECCOMP_SOCKETS.name,
    SECCOMP_ARCH.name,
    NNP.name,
    CAPS.name,
    *(s.name for s in RLIMIT_SPECS.values()),
    SUBREAPER.name,
    PIDFD.name,
    CLOSE_RANGE.name,
    CGROUP.name,
    STRACE.name,
)
"""Every feature name cvg-probe reports, in report order."""

_SPECS: dict[str, Spec] = {
    s.name: s
    for s in (
        LANDLOCK_ABI, *FS_SPECS.values(), NET_CONNECT, NET_BIND, SCOPE_SIGNAL, SCOPE_ABSTRACT,
        *FLAG_SPECS.values(), SECCOMP_FILTER, SECCOMP_ERRNO, SECCOMP_SOCKETS, SECCOMP_ARCH,
        NNP, CAPS, *RLIMIT_SPECS.values(), SUBREAPER, PIDFD, CLOSE_RANGE, CGROUP, STRACE,
    )
}  # fmt: skip
assert tuple(_SPECS) == FEATURES


def scratch_parents() -> list[str]:
    """Where the probe's scratch directory may go, best first: ``$TMPDIR`` when set,
    else a tmpfs (``$XDG_RUNTIME_DIR``, ``/dev/shm``: directory operations on a disk
    filesystem can cost milliseconds each), else the system temporary directory."""
    tmpdir = os.environ.get("TMPDIR", "")
    if tmpdir:
        return [tmpdir, tempfile.gettempdir()]
    return [os.environ.get("XDG_RUNTIME_DIR", ""), "/dev/shm", tempfile.gettempdir()]


def _base_dir() -> str:
    """A private scratch directory, on a filesystem that allows exec if there is one."""
    for parent in scratch_parents():
        if not parent or not os.path.isdir(parent) or not os.access(parent, os.W_OK | os.X_OK):
            continue
        try:
            if os.statvfs(parent).f_flag & os.ST_NOEXEC:
                continue
            return tempfile.mkdtemp(prefix="cvg-probe-", dir=parent)
        except OSError:
            continue
    return tempfile.mkdtemp(prefix="cvg-probe-")


@dataclass
class RunDetail:
    """Everything a run saw, for tests and diagnostics: features plus raw outcomes."""

    facts: Facts
    outcomes: dict[str, Outcome]


def _build_groups(
    state: LandlockState, base: str, arch: str, nr: Mapping[str, int]
) -> tuple[list[Group], list[Feature]]:
    """The groups to fork, and the features decided without a child (missing ABI,
    a setup that failed)."""
    groups: list[Group] = []
    static: list[Feature] = []

    def add(specs: Iterable[Spec], make: Callable[[], Group]) -> None:
        try:
            groups.append(make())
        except (OSError, landlock.LandlockError, seccomp.SeccompError, ValueError) as e:
            why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            static.extend(s.failed(f"setup failed: {type(e).__name__}: {why}") for s in specs)

    lacks_landlock = state.lacks(1)
    if lacks_landlock is not None:
        static.append(LANDLOCK_ABI.failed(lacks_landlock))
    for c in FS_CHECKS:
        why = state.lacks(landlock.FS_RIGHTS[c.right].abi)
        if why is not None:
            static.append(FS_SPECS[c.right].failed(why))
    if lacks_landlock is None:
        fs_specs = [LANDLOCK_ABI] + [
            FS_SPECS[c.right]
            for c in FS_CHECKS
            if state.lacks(landlock.FS_RIGHTS[c.right].abi) is None
        ]
        add(fs_specs, lambda: LandlockFsGroup(state, base))
    for specs, abi, make in (
        ((NET_CONNECT, NET_BIND), 4, lambda: LandlockNetGroup(state)),
        ((SCOPE_SIGNAL, SCOPE_ABSTRACT), 6, lambda: LandlockScopeGroup(state)),
    ):
        why = state.lacks(abi)
        if why is not None:
            static.extend(s.failed(why) for s in specs)
        else:
            add(specs, make)
    flag_specs = []
    for name, spec in FLAG_SPECS.items():
        why = state.lacks(landlock.FLAGS[name].abi)
        if why is not None:
            static.append(spec.failed(why))
        else:
            flag_specs.append(spec)
    if flag_specs:
        add(flag_specs, lambda: LandlockFlagGroup(state, base))
    add(SeccompGroup.specs, lambda: SeccompGroup(arch, nr))
    add(ProcessGroup.specs, lambda: ProcessGroup(nr))
    add(RlimitGroup.specs, lambda: RlimitGroup(base))
    add(ReaperGroup.specs, ReaperGroup)
    add(CgroupGroup.specs, CgroupGroup)
    return groups, static


def run_detailed(*, timeout: float = DEFAULT_TIMEOUT, extra: Sequence[Group] = ()) -> RunDetail:
    """:func:`run_probes`, also returning each child's raw outcome.

    ``extra`` adds groups to the run (tests use it to check the timeout and
    cleanup machinery with a child that hangs).
    """
    arch = os.uname().machine
    arch = {"arm64": "aarch64"}.get(arch, arch)
    try:
        nr = seccomp.table(arch)
    except seccomp.SeccompError as e:
        raise ProbeError(f"cannot probe this machine: {e}") from None
    state = landlock_state()
    started = datetime.now(UTC)
    try:
        base = _base_dir()
    except OSError as e:
        raise ProbeError(f"cannot create a scratch directory: {e}") from None
    groups: list[Group] = []
    strace: StraceRun | None = None
    try:
        strace = StraceRun.start(base)  # the slowest probe: runs while the children do
        groups, static = _build_groups(state, base, arch, nr)
        groups.extend(extra)
        deadline = time.monotonic() + timeout
        try:
            outcomes = _fork.run([(g.name, g.body) for g in groups], timeout)
        except OSError as e:
            raise ProbeError(f"cannot start the probe children: {e}") from None
        features = list(static)
        for g in groups:
            features.extend(g.results(outcomes[g.name]))
        strace_feature, strace_info = strace.finish(deadline)
        features.append(strace_feature)
    finally:
        if strace is not None:
            strace.abort()
        for g in groups:
            with contextlib.suppress(OSError):
                g.close()
        shutil.rmtree(base, ignore_errors=True)
    order = {name: i for i, name in enumerate(FEATURES)}
    features.sort(key=lambda f: order.get(f.name, len(order)))
    facts = Facts(
        kernel=os.uname().release,
        arch=arch,
        landlock_abi=min(state.kernel, 255),
        landlock_abi_cap=None if state.cap is None else min(state.cap, 255),
        euid=os.geteuid(),
        features=features,
        strace=strace_info,
        probed_at=started,
    )
    return RunDetail(facts, outcomes)


def run_probes(*, timeout: float = DEFAULT_TIMEOUT) -> Facts:
    """Probe every feature live, now, without the cache. Raises ProbeError only when
    the probe itself cannot run; a feature the kernel lacks is ``proven: false``."""
    return run_detailed(timeout=timeout).facts
