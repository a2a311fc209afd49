"""pytest plugin (entry point pytest11): under CI=true a skip is a failure unless it is
a cvg_testing.ci.KernelLacks whose probe still holds, so a CI run without strace, root,
the unprivileged user or a kernel feature cannot pass by testing less. An xfail
passes under CI=true only when the test ran and failed (an xfail mark), never when
``pytest.xfail()`` stopped it early, and an xfail mark is strict: a test that passes
fails."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from cvg_testing.ci import MARK, apply_marks, in_ci, skip_is_proven


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARK}(abi=N | below_abi=N): skip unless the kernel offers (or lacks) "
        "Landlock ABI N; written by cvg_testing.needs_abi and below_abi",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    apply_marks(item)


def _reason(longrepr: Any) -> str:
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


def _fail(report: pytest.TestReport | pytest.CollectReport, why: str) -> None:
    report.outcome = "failed"
    report.longrepr = f"CI=true: {why}"
    if hasattr(report, "wasxfail"):
        del report.wasxfail


def _judge(report: pytest.TestReport, exc: BaseException | None) -> None:
    if not in_ci():
        return
    if hasattr(report, "wasxfail"):
        if report.passed:
            _fail(report, f"an xfail that passed is a failure ({report.wasxfail})")
        elif report.skipped and isinstance(exc, pytest.xfail.Exception):
            _fail(report, f"pytest.xfail() stopped the test before it ran ({report.wasxfail})")
        return
    if report.skipped and not skip_is_proven(exc):
        _fail(
            report,
            "a skip is a failure unless cvg_testing's helpers raised it and the kernel "
            f"still lacks the feature ({_reason(report.longrepr)})",
        )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    _judge(report, call.excinfo.value if call.excinfo is not None else None)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    # A skip while collecting (pytest.skip(allow_module_level=True), importorskip) leaves
    # no exception to judge: under CI=true it always fails. Kernel skips are marks.
    report = yield
    if in_ci() and report.skipped:
        _fail(report, f"a skip is a failure while collecting ({_reason(report.longrepr)})")
    return report
