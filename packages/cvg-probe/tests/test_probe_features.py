"""Every feature, probed on this machine's real kernel (run as whoever runs pytest)."""

from __future__ import annotations

import glob
import os
import re
import resource
import shutil
import signal
import subprocess
import tempfile
import time
from datetime import UTC, datetime, timedelta

import pytest
from probe_expect import ARCH, KERNEL_ABI, assert_feature

from cvg_kernel.process import descendants
from cvg_probe import FEATURES, run_probes
from cvg_probe._libc import get_subreaper
from cvg_probe.probes import RunDetail, run_detailed, scratch_parents
from cvg_schema import Facts, dumps, loads_as


@pytest.mark.parametrize("name", FEATURES)
def test_feature(here: RunDetail, name: str) -> None:
    assert_feature(here.facts, name)


def test_every_feature_reported_once_in_order(here: RunDetail) -> None:
    assert [f.name for f in here.facts.features] == list(FEATURES)


def test_feature_list_covers_the_issue() -> None:
    must = {
        "landlock.abi", "landlock.fs.read_file", "landlock.fs.refer", "landlock.fs.truncate",
        "landlock.fs.ioctl_dev", "landlock.fs.resolve_unix", "landlock.net.connect_tcp",
        "landlock.net.bind_tcp", "landlock.scope.signal", "landlock.scope.abstract_unix_socket",
        "landlock.flag.log_same_exec_off", "landlock.flag.tsync", "seccomp.filter",
        "seccomp.errno", "seccomp.arch_trap", "seccomp.socket_family", "no_new_privs",
        "rlimit.cpu", "rlimit.as", "rlimit.data", "rlimit.fsize", "rlimit.nofile", "rlimit.nproc",
        "rlimit.core", "subreaper", "pidfd", "close_range", "caps.drop", "strace",
    }  # fmt: skip
    assert must <= set(FEATURES)
    assert len(FEATURES) == len(set(FEATURES))


def test_facts_describe_this_machine(here: RunDetail) -> None:
    facts = here.facts
    assert facts.kind == "cvg.facts"
    assert facts.kernel == os.uname().release
    assert facts.arch == ARCH
    assert facts.landlock_abi == KERNEL_ABI
    assert facts.landlock_abi_cap is None
    assert facts.euid == os.geteuid()
    assert facts.cached is False
    assert datetime.now(UTC) - facts.probed_at < timedelta(minutes=10)
    # The message round-trips through the schema.
    assert loads_as(Facts, dumps(facts)) == facts


def test_strace_recorded(here: RunDetail) -> None:
    path = shutil.which("strace")
    if path is None:
        assert here.facts.strace is None
        return
    assert here.facts.strace is not None
    assert here.facts.strace.path == path
    out = subprocess.run([path, "-V"], capture_output=True, text=True, check=True).stdout
    version = re.search(r"version\s+(\S+)", out)
    assert version is not None
    assert here.facts.strace.version == version.group(1)


def test_children_import_nothing_after_fork(here: RunDetail) -> None:
    assert here.outcomes, "no probe children ran"
    for name, outcome in here.outcomes.items():
        assert outcome.imported == [], name
        assert not outcome.timed_out, name


def test_arch_trap_child_left_no_core(here: RunDetail) -> None:
    outcome = here.outcomes["seccomp"]
    if ARCH == "x86_64":
        assert outcome.signal == 31, outcome.ending()  # SIGSYS
    assert outcome.status is not None
    assert not os.WCOREDUMP(outcome.status)


def test_proven_iff_no_error(here: RunDetail) -> None:
    for f in here.facts.features:
        assert f.how
        assert (f.error is None) == f.proven, f.name


def test_probe_is_fast_and_leaves_nothing_behind() -> None:
    def leftovers() -> set[str]:
        return {p for d in {*scratch_parents(), tempfile.gettempdir()} if d
                for p in glob.glob(os.path.join(d, "cvg-probe-*"))}  # fmt: skip

    scratch = leftovers()
    before = descendants(os.getpid())
    start = time.monotonic()
    facts = run_probes()
    elapsed = time.monotonic() - start
    assert elapsed < 1.0, f"the probe took {elapsed:.3f} s"
    assert facts.features
    assert descendants(os.getpid()) == before
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # nothing left to reap either
    assert leftovers() <= scratch


def test_the_prober_itself_is_left_unconfined() -> None:
    def state() -> dict[str, object]:
        with open("/proc/self/status") as f:
            status = dict(line.split(":", 1) for line in f if ":" in line)
        limits = {n: resource.getrlimit(getattr(resource, n)) for n in dir(resource)
                  if n.startswith("RLIMIT_")}  # fmt: skip
        keys = ("NoNewPrivs", "Seccomp", "CapEff", "CapPrm", "CapBnd", "Uid")
        return {
            **{k: status[k].strip() for k in keys},
            "limits": limits,
            "subreaper": get_subreaper(),
            "sigxfsz": signal.getsignal(signal.SIGXFSZ),
        }

    before = state()
    run_detailed()
    assert state() == before
