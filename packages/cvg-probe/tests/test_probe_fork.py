"""The child machinery: timeouts, failures, imports after fork, no leftovers."""

from __future__ import annotations

import importlib
import os
import sys
import time
from collections.abc import Mapping
from typing import Any

import pytest

from cvg_kernel.process import descendants
from cvg_probe import _fork
from cvg_probe._fork import Outcome, Send
from cvg_probe.probes import Group, Spec, run_detailed

UNIMPORTED = "colorsys"


def _state(pid: int) -> str | None:
    """The process state letter, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    return stat[stat.rindex(b")") + 2 :].split()[0].decode()


def _gone(pid: int, within: float = 3.0) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        if _state(pid) in (None, "Z", "X"):
            return True
        time.sleep(0.01)
    return False


class Hang(Group):
    """A child that starts a setsid() grandchild, reports it, and then hangs."""

    name = "test.hang"
    specs = (Spec("test.hang", "sleeps forever"),)

    def body(self, send: Send) -> Mapping[str, Any]:
        pid = os.fork()
        if pid == 0:
            os.setsid()
            time.sleep(60)
            os._exit(0)
        send({"grandchild": pid})
        time.sleep(60)
        return {}

    def interpret(self, outcome: Outcome) -> list[Any]:
        raise AssertionError("a timed-out group is never interpreted")


def test_hung_child_is_killed_with_its_descendants_and_reported() -> None:
    hang = Hang()
    start = time.monotonic()
    detail = run_detailed(timeout=1.0, extra=[hang])
    elapsed = time.monotonic() - start
    assert 1.0 <= elapsed < 3.0
    f = detail.facts.feature("test.hang")
    assert f is not None and not f.proven and f.error == "timed out"
    outcome = detail.outcomes["test.hang"]
    assert outcome.timed_out
    grandchild = outcome.report["grandchild"]
    assert _gone(grandchild), f"grandchild {grandchild} survived: {_state(grandchild)}"
    assert descendants(os.getpid()) == []
    # The real probes were unaffected by their hung sibling.
    assert detail.facts.proven("seccomp.filter")
    assert detail.facts.proven("no_new_privs")


def test_body_exception_is_reported() -> None:
    def boom(send: Send) -> Mapping[str, Any]:
        raise RuntimeError("boom")

    out = _fork.run([("boom", boom)], 5.0)["boom"]
    assert out.exitcode == _fork.EXIT_BODY_FAILED
    assert out.failure() == "the probe child failed: RuntimeError: boom"


def test_silent_death_is_reported() -> None:
    def vanish(send: Send) -> Mapping[str, Any]:
        os._exit(3)

    out = _fork.run([("vanish", vanish)], 5.0)["vanish"]
    assert out.exitcode == 3
    assert out.failure() == "the probe child sent no report (exited 3)"


def test_import_after_fork_is_caught() -> None:
    assert UNIMPORTED not in sys.modules, "pick a module nothing has imported"

    def importer(send: Send) -> Mapping[str, Any]:
        importlib.import_module(UNIMPORTED)
        return {"ok": True}

    out = _fork.run([("importer", importer)], 5.0)["importer"]
    assert out.imported == [UNIMPORTED]
    failure = out.failure()
    assert failure is not None and "imported after fork" in failure
    assert UNIMPORTED not in sys.modules  # it happened in the child only


def test_partial_report_survives_a_killed_child() -> None:
    def report_then_die(send: Send) -> Mapping[str, Any]:
        send({"said": "first"})
        os.kill(os.getpid(), 9)
        return {"said": "never"}

    out = _fork.run([("die", report_then_die)], 5.0)["die"]
    assert out.report["said"] == "first"
    assert out.signal == 9
    assert out.ending() == "killed by SIGKILL"
    assert out.failure() is None


def test_children_run_in_parallel() -> None:
    def nap(send: Send) -> Mapping[str, Any]:
        time.sleep(0.3)
        return {"ok": True}

    start = time.monotonic()
    outs = _fork.run([(f"nap{i}", nap) for i in range(5)], 5.0)
    assert time.monotonic() - start < 1.0
    assert all(o.report.get("ok") for o in outs.values())


def test_timeout_without_grandchildren() -> None:
    def sleeper(send: Send) -> Mapping[str, Any]:
        time.sleep(30)
        return {}

    out = _fork.run([("sleeper", sleeper)], 0.2)["sleeper"]
    assert out.timed_out and out.status is None
    assert out.failure() == "timed out"
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)
