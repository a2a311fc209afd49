"""memory_mb counts what the kernel holds for the tool; processes is exact.

A tool under RLIMIT_DATA can park memory where no mapping shows it: data
written to a socketpair nobody reads, pipe buffers, files on a tmpfs
${SCRATCH}. Each case first parks the memory with no sandbox, judged by the
machine's MemAvailable sampled from outside, then runs under memory_mb: 64
and must end with the memory status (137, ``limit``) before MemAvailable
has fallen by twice the limit. As root the run's memory cgroup charges all
of it; an unprivileged user without a delegated cgroup is held by the
supervisor's sampling (sock_diag for sockets, the scratch directory's
blocks), and pipes by the kernel's per-user pipe limit.

The process count: a storm of 300 children living 3 s each under
processes: 32 never has more than 32 live, by the process table sampled
from outside.
"""

from __future__ import annotations

import os
import pwd
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from runhelp import (
    PY,
    Box,
    load_record,
    make_policy,
    procs_with,
    run_main,
    start,
    token,
    wait_for,
)

from cvg_kernel import cgroup

Identity = pwd.struct_passwd | None
MIB = 1 << 20
LIMIT_MB = 64
# What the bare runs park; the confined ones must stop before MemAvailable falls
# by 2 * LIMIT_MB.
PARK_MB = 400
# A bare run must park more than a confined one may (MemAvailable moves with
# the rest of a busy machine too, so the bare runs park far more than that).
BARE_MIN = 2 * LIMIT_MB * MIB

# argv: total MiB, processes, kind (sockets or pipes). Each process parks its
# share, says so, and holds it for a while.
PARK = r"""
import fcntl, os, socket, sys, time
total, procs, kind = int(sys.argv[1]) << 20, int(sys.argv[2]), sys.argv[3]
share = total // procs
def channel():
    if kind == "sockets":
        a, b = socket.socketpair()
        a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 << 20)
        a.setblocking(False)
        return (a, b), a.send
    r, w = os.pipe()
    try:
        fcntl.fcntl(w, 1031, 1 << 20)  # F_SETPIPE_SZ
    except OSError:
        pass
    os.set_blocking(w, False)
    return (r, w), lambda data: os.write(w, data)
def park():
    held, n = [], 0
    chunk = b"x" * 65536
    while n < share:
        try:
            ends, send = channel()
        except OSError:
            break  # out of descriptors: pipes past the per-user bound hold a page each
        held.append(ends)
        try:
            while n < share:
                n += send(chunk)
        except BlockingIOError:
            pass
    print(f"parked {n >> 20} in {len(held)}", flush=True)
    time.sleep(2.5)
kids = []
for _ in range(procs - 1):
    pid = os.fork()
    if pid == 0:
        park(); os._exit(0)
    kids.append(pid)
park()
for k in kids:
    os.waitpid(k, 0)
"""

# argv: directory, MiB. A linked file, written, and held while the run lasts.
FILL = r"""
import os, sys, time
path = os.path.join(sys.argv[1] or os.environ["HOME"], "fill")
with open(path, "wb") as f:
    for _ in range(int(sys.argv[2])):
        f.write(b"x" * (1 << 20))
print("filled", flush=True)
time.sleep(2.5)
"""

# argv: token. 300 children living 3 s each; a failed fork is retried a little later.
STORM = r"""
import os, sys, time
started = failed = 0
while started < 300 and failed < 2000:
    try:
        pid = os.fork()
    except OSError:
        failed += 1; time.sleep(0.005); continue
    if pid == 0:
        time.sleep(3); os._exit(0)
    started += 1
print("started", started, "refused", failed, flush=True)
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
"""


def _available() -> int:
    with open("/proc/meminfo", "rb") as f:
        for line in f:
            if line.startswith(b"MemAvailable:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no MemAvailable in /proc/meminfo")


class Sampler:
    """Samples something from outside the run, in a thread, while it lasts."""

    def __init__(self, read: Callable[[], int], every: float = 0.005) -> None:
        self.read, self.every = read, every
        self.values: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.values.append(self.read())
            time.sleep(self.every)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _bare(identity: Identity, argv: list[str], env: dict[str, str] | None = None) -> Any:
    """``argv`` as ``identity`` with no sandbox."""
    return start(lambda: os.execv(argv[0], argv), user=identity, env=env).finish(60)


def _drop(run: Callable[[], Any]) -> tuple[Any, int]:
    """Run ``run``; how far MemAvailable fell below where it was, at worst."""
    before = _available()
    with Sampler(_available) as s:
        result = run()
    return result, before - min(s.values, default=before)


def _policy(box: Box, name: str, **resources: int) -> Path:
    return make_policy(box.share, name=name,
                       filesystem={"read": [str(box.share)], "write": ["${SCRATCH}"]},
                       resources={"wall_clock_seconds": 60, **resources})  # fmt: skip


def _confined(box: Box, identity: Identity, code: str, *args: str, **env: str) -> Any:
    (box.share / "tool.py").write_text(code)
    (box.share / "tool.py").chmod(0o644)
    policy = _policy(box, "tight.json", memory_mb=LIMIT_MB)
    argv = ["-p", str(policy), "--", PY, str(box.share / "tool.py"), *args]
    return run_main(argv, box=box, user=identity, env=env or None)


def _ended_at_memory(ran: Any, drop: int, box: Box, identity: Identity) -> None:
    assert ran.rc == 137, (ran.out, ran.err)
    assert f"memory_mb={LIMIT_MB}" in ran.err, ran.err
    assert drop < 2 * LIMIT_MB * MIB, f"MemAvailable fell by {drop >> 20} MiB: {ran.err}"
    (_, record), *_ = (load_record(p) for p in box.records())
    assert record.exit.meaning == "limit"
    assert record.limits_by == _expected_mechanism(identity)


def _expected_mechanism(identity: Identity) -> str:
    """What a run as ``identity`` gets: asked as that identity."""
    found = start(cgroup.available, user=identity).finish(30)
    assert found.error is None, found.error
    return found.value or "sampled"


@pytest.mark.parametrize("procs", [1, 4], ids=["one-process", "four-processes"])
def test_socket_buffers_count_against_memory_mb(identity: Identity, box: Box, procs: int) -> None:
    args = [str(PARK_MB), str(procs), "sockets"]
    bare, parked = _drop(lambda: _bare(identity, [PY, "-c", PARK, *args]))
    assert bare.status == 0, bare.stderr
    assert bare.stdout.count(b"parked") == procs
    assert parked > BARE_MIN, f"bare: only {parked >> 20} MiB parked"

    ran, drop = _drop(lambda: _confined(box, identity, PARK, *args))
    _ended_at_memory(ran, drop, box, identity)


@pytest.fixture
def shm_tmp() -> Iterator[Path]:
    """A TMPDIR on tmpfs (/dev/shm) every identity can write to."""
    if not os.path.isdir("/dev/shm"):
        pytest.fail("no /dev/shm to put a tmpfs TMPDIR on")
    path = Path(tempfile.mkdtemp(prefix="cvg-shm-", dir="/dev/shm"))
    path.chmod(0o1777)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def test_files_in_a_tmpfs_scratch_count_against_memory_mb(
    identity: Identity, box: Box, shm_tmp: Path
) -> None:
    size = PARK_MB
    bare, filled = _drop(lambda: _bare(identity, [PY, "-c", FILL, str(shm_tmp), str(size)]))
    assert bare.stdout == b"filled\n", bare.stderr
    assert filled > BARE_MIN, f"bare: only {filled >> 20} MiB on tmpfs"
    (shm_tmp / "fill").unlink()

    ran, drop = _drop(lambda: _confined(box, identity, FILL, "", str(size), TMPDIR=str(shm_tmp)))
    _ended_at_memory(ran, drop, box, identity)


def test_pipe_buffers_stay_within_a_bound(identity: Identity, box: Box) -> None:
    """Root with CAP_SYS_RESOURCE parks it all bare (F_SETPIPE_SZ grows each
    pipe to 1 MiB). Without it, bare or confined (where root has no
    capabilities either), once the user's pipes hold pipe-user-pages-soft no
    pipe grows and each new one holds two pages: the rest is bounded by how
    many pipes the descriptors allow."""
    args = [str(PARK_MB), "1", "pipes"]
    bare, parked = _drop(lambda: _bare(identity, [PY, "-c", PARK, *args]))
    assert bare.status == 0, bare.stderr
    soft = int(Path("/proc/sys/fs/pipe-user-pages-soft").read_text()) * os.sysconf("SC_PAGE_SIZE")
    assert 0 < soft <= LIMIT_MB * MIB, "the per-user pipe bound is off or above the limit"
    if identity is None:
        assert parked > BARE_MIN, f"bare: only {parked >> 20} MiB parked"
    else:
        # What the kernel accepted into the pipes (and holds: nothing reads them),
        # as the tool counted it: MemAvailable moves with the rest of a busy machine.
        # Past the soft limit each new pipe still holds two pages.
        _, mib, _, pipes = bare.stdout.split()
        bound = soft + int(pipes) * 2 * os.sysconf("SC_PAGE_SIZE") + 16 * MIB
        assert int(mib) * MIB < bound, f"bare: {mib} MiB in {pipes} pipes, past the bound"
    ran, drop = _drop(lambda: _confined(box, identity, PARK, *args))
    assert ran.rc in (0, 137), ran.err
    assert drop < 2 * LIMIT_MB * MIB, f"MemAvailable fell by {drop >> 20} MiB: {ran.err}"


def test_a_fork_storm_never_passes_processes(identity: Identity, box: Box) -> None:
    limit = 32
    tok = token()

    def live() -> int:
        return len(procs_with(tok))

    with Sampler(live, every=0.01) as bare_count:
        bare = _bare(identity, [PY, "-c", STORM, tok])
    assert bare.status == 0, bare.stderr
    assert max(bare_count.values) > limit, "the bare storm never passed the limit"
    # RLIMIT_NPROC counts every process of the user: the bare storm's children
    # must be gone before the confined run's limit is set from that count.
    wait_for(lambda: live() == 0, what="the bare storm's children to exit")

    (box.share / "storm.py").write_text(STORM)
    (box.share / "storm.py").chmod(0o644)
    policy = _policy(box, "storm.json", processes=limit)
    argv = ["-p", str(policy), "--", PY, str(box.share / "storm.py"), tok]
    with Sampler(live, every=0.01) as count:
        ran = run_main(argv, box=box, user=identity)
    assert ran.rc in (0, 137), ran.err
    assert len(count.values) >= 5, "too few samples of the process table"
    (_, record), *_ = (load_record(p) for p in box.records())
    assert record.limits_by == _expected_mechanism(identity)
    if record.limits_by == "sampled" and record.exit.meaning == "limit":
        # Without a cgroup, RLIMIT_NPROC binds the user's count: when other
        # processes of the user exit meanwhile, the supervisor's count ends the run.
        assert f"processes={limit}" in ran.err
    else:
        assert max(count.values) <= limit, f"{max(count.values)} live against processes={limit}"


def _usable(version: str) -> bool:
    """Whether this root process can give a run a cgroup of ``version``, judged from
    the mounts alone: v1 when the memory and pids hierarchies are mounted, v2 when
    the cgroup2 root offers both controllers (a real-kernel VM's guest)."""
    if version == "v1":
        with open("/proc/self/cgroup") as f:
            controllers = {c for line in f for c in line.split(":")[1].split(",")}
        return {"memory", "pids"} <= controllers
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4] for line in f if " - cgroup2 " in line]
    if not points:
        return False
    with open(f"{points[0]}/cgroup.controllers") as f:
        return {"memory", "pids"} <= set(f.read().split())


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_each_cgroup_version_or_sampling_ends_the_run(
    as_root: None, box: Box, version: str
) -> None:
    """With CVG_CGROUP naming one version, the run gets that version's cgroup where
    the mounts offer it, and is sampled where they do not; either way the 400 MiB
    socketpair case ends at the memory limit. This host has cgroup v1; the v2
    path runs in the real-kernel VMs (nox -s kernels), whose guest mounts cgroup2."""
    args = [str(PARK_MB), "1", "sockets"]
    ran, drop = _drop(lambda: _confined(box, None, PARK, *args, CVG_CGROUP=version))
    assert ran.rc == 137, (ran.out, ran.err)
    assert drop < 2 * LIMIT_MB * MIB, f"MemAvailable fell by {drop >> 20} MiB: {ran.err}"
    (_, record), *_ = (load_record(p) for p in box.records())
    want = f"cgroup{version[1:]}" if _usable(version) else "sampled"
    assert record.limits_by == want


def test_the_sandbox_api_holds_the_same_limits(box: Box) -> None:
    """Sandbox's pre-forked runners put the waiting tool in the run's cgroup
    before it is told to exec (in this process's identity)."""
    from cvg_run import Sandbox

    (box.share / "tool.py").write_text(PARK)
    (box.share / "tool.py").chmod(0o644)
    policy = _policy(box, "api.json", memory_mb=LIMIT_MB, processes=32)
    with Sandbox(policy, cwd=str(box.cwd)) as sandbox:
        result, drop = _drop(
            lambda: sandbox.run([PY, str(box.share / "tool.py"), str(PARK_MB), "1", "sockets"])
        )
        assert (result.status, result.meaning) == (137, "limit"), result.stderr
        assert drop < 2 * LIMIT_MB * MIB, f"MemAvailable fell by {drop >> 20} MiB"
        assert result.record["limits_by"] == _expected_mechanism(None)
