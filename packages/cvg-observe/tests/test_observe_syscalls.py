"""The observation's `syscalls`: every call the command made, counted where it starts,
from the command's exec on; checked against strace's own count of a bare run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import observe_lines
from test_observe_cli import observation, run, work  # noqa: F401  (work is a fixture)

pytestmark = pytest.mark.skipif(shutil.which("strace") is None, reason="strace not installed")

# A call Python's start-up never makes, then a normal exit: both must be in the set.
TOOL = "import os; os.sched_yield(); os.getppid(); print('done')"


def test_counts_from_the_exec_on_and_calls_that_never_return() -> None:
    lines = [
        '100 1.0 execve("/usr/bin/python3", ["python3"], 0x7ffc /* 3 vars */) = 0',
        "100 1.1 brk(NULL) = 0x55d0",
        '100 1.1 execve("/usr/bin/tool", ["tool"], 0x7ffc /* 3 vars */) = 0',
        "100 1.2 read(0x3, 0x7ffc, 0x340) = 0x340",
        "100 1.3 futex(0x7f, FUTEX_WAIT, 2, NULL <unfinished ...>",
        "101 1.3 read(0x4, 0x7ffc, 0x10) = 0x10",
        "100 1.4 <... futex resumed>) = 0",
        "101 1.5 exit_group(0 <unfinished ...>",
        "100 1.5 syscall_0x1c8(0, 0) = -1 ENOSYS (Function not implemented)",
        "100 1.6 exit_group(0) = ?",
        "100 1.6 +++ exited with 0 +++",
    ]
    obs = observe_lines(lines, skip_execs=1)
    # The launcher's brk before the tool's exec is not the tool's; the unnamed number is
    # left out; the futex split in two halves counts once; both exit_groups count.
    assert obs["syscalls"] == {"execve": 1, "exit_group": 2, "futex": 1, "read": 2}


def _strace_count(argv: list[str], tmp: Path) -> set[str]:
    """The calls strace -f -c counts in a bare run (exit_group is never in it)."""
    out = tmp / "count.txt"
    subprocess.run(
        ["strace", "-f", "-c", "-U", "name", "-o", str(out), *argv],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    names = set()
    for line in out.read_text().splitlines()[2:]:
        name = line.strip()
        if name and not name.startswith(("-", "total")):
            names.add(name)
    return names


@pytest.mark.parametrize("confined", [True, False])
def test_the_whole_set_of_a_real_run(
    work: Path,  # noqa: F811
    capfd: pytest.CaptureFixture[str],
    tmp_path: Path,
    confined: bool,
) -> None:
    argv = [sys.executable, "-c", TOOL]
    flags = [] if confined else ["--unconfined"]
    code, out, err = run(capfd, *flags, "--", *argv)
    assert code == 0, err
    seen = observation(out).syscalls
    assert seen is not None
    assert {"sched_yield", "getppid", "exit_group", "execve", "write"} <= set(seen)
    bare = _strace_count(argv, tmp_path)
    assert "exit_group" not in bare and "sched_yield" in bare  # the -c blind spot is real
    missing = bare - set(seen)
    assert not missing, f"strace -c saw calls the observation lacks: {sorted(missing)}"
    # Confining the held process is not the tool's.
    assert not {"landlock_create_ruleset", "landlock_restrict_self", "seccomp"} & set(seen)
    assert os.getcwd() == str(work)
