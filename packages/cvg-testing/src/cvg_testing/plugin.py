"""pytest plugin (entry point pytest11): under CI=true a skip is a failure unless
cvg_testing.ci.skip_is_proven accepts it, so a CI run without strace, root, the
unprivileged user or a kernel feature cannot pass by testing less."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from cvg_testing.ci import in_ci, skip_is_proven


def _reason(longrepr: Any) -> str:
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


def _judge(report: pytest.TestReport | pytest.CollectReport) -> None:
    if not report.skipped or hasattr(report, "wasxfail") or not in_ci():
        return
    reason = _reason(report.longrepr)
    if skip_is_proven(reason):
        return
    report.outcome = "failed"
    report.longrepr = (
        "CI=true: a skip is a failure unless the test names a Landlock ABI this kernel "
        f"lacks ({reason})"
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    _judge(report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    report = yield
    _judge(report)
    return report
