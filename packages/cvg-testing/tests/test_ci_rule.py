"""The CI skip rule, on inner pytest runs: a skip fails under CI=true unless
cvg_testing's kernel helpers raised it and the kernel (asked again through cvg_kernel)
still lacks the feature; its message proves nothing. xfails are strict."""

from __future__ import annotations

import pwd

import pytest

from cvg_kernel.landlock import kernel_abi
from cvg_testing import ensure_unpriv_user, stage, unpriv_python

K = kernel_abi()

BODY = f"""
import shutil, pytest
from cvg_testing import needs_abi, below_abi, require_abi

def test_no_tool():
    pytest.skip("needs strace")

@needs_abi({K + 1})
def test_newer_abi():
    pass

@below_abi({K})
def test_older_kernel():
    pass

def test_forged_reason():
    pytest.skip("needs Landlock ABI {K + 1}; but this kernel offers it")

def test_in_body():
    require_abi({K + 1})

@needs_abi({K})
def test_runs():
    pass
"""


def _run(pytester: pytest.Pytester, ci: str | None, body: str) -> pytest.RunResult:
    if ci is None:
        pytester._monkeypatch.delenv("CI", raising=False)
    else:
        pytester._monkeypatch.setenv("CI", ci)
    pytester.makepyfile(body)
    return pytester.runpytest_inprocess("-p", "no:cacheprovider")


def _outcomes(pytester: pytest.Pytester, ci: str | None) -> dict[str, str]:
    result = _run(pytester, ci, BODY)
    return {r.nodeid.split("::")[1]: r.outcome for r in result.reprec.getreports()
            if r.when == "call" or r.outcome != "passed"}  # fmt: skip


def test_outside_ci_a_skip_stays_a_skip(pytester: pytest.Pytester) -> None:
    got = _outcomes(pytester, None)
    assert got == {
        "test_no_tool": "skipped", "test_newer_abi": "skipped", "test_older_kernel": "skipped",
        "test_forged_reason": "skipped", "test_in_body": "skipped", "test_runs": "passed",
    }  # fmt: skip


def test_under_ci_only_an_abi_the_kernel_lacks_may_skip(pytester: pytest.Pytester) -> None:
    got = _outcomes(pytester, "true")
    assert got == {
        "test_no_tool": "failed", "test_newer_abi": "skipped", "test_older_kernel": "skipped",
        # The reason names an ABI the kernel lacks, in the helpers' words, but a plain
        # pytest.skip is not the helpers' exception: only a KernelLacks is judged.
        "test_forged_reason": "failed", "test_in_body": "skipped", "test_runs": "passed",
    }  # fmt: skip


def test_a_reason_naming_an_abi_the_kernel_has_fails_under_ci(pytester: pytest.Pytester) -> None:
    pytester._monkeypatch.setenv("CI", "true")
    pytester.makepyfile(f"""
import pytest
def test_lies():
    pytest.skip("needs Landlock ABI {K}; this kernel offers 0")
def test_module_skip_is_judged_too():
    pass
""")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["*CI=true: a skip is a failure unless*"])


def test_a_module_level_skip_fails_under_ci(pytester: pytest.Pytester) -> None:
    pytester._monkeypatch.setenv("CI", "1")
    pytester.makepyfile("""
import pytest
pytest.importorskip("no_such_module_here")
def test_x():
    pass
""")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*CI=true: a skip is a failure*no_such_module_here*"])


@pytest.mark.parametrize("value", ["", "0", "false", "no"])
def test_ci_off_values(pytester: pytest.Pytester, value: str) -> None:
    pytester._monkeypatch.setenv("CI", value)
    pytester.makepyfile("import pytest\ndef test_x():\n    pytest.skip('needs root')\n")
    pytester.runpytest_inprocess("-p", "no:cacheprovider").assert_outcomes(skipped=1)


def test_staged_modules_import_as_the_unprivileged_user() -> None:
    import subprocess

    user: pwd.struct_passwd = ensure_unpriv_user()
    path = stage("cvg-kernel", "cvg-testing")
    python = unpriv_python(user)
    r = subprocess.run(
        [python, "-I", "-c",
         "import sys; sys.path.insert(0, sys.argv[1]); import cvg_kernel.landlock, "
         "cvg_testing.ci; print(cvg_kernel.landlock.__file__.startswith(sys.argv[1]))", path],
        user=user.pw_uid, group=user.pw_gid, extra_groups=[], cwd="/",
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert (r.returncode, r.stdout) == (0, "True\n"), r.stderr


def test_a_yama_skip_is_judged_by_the_kernel(pytester: pytest.Pytester) -> None:
    """require_yama's skip passes under CI only where Yama is really absent; the same
    words on a kernel with Yama, or a forged reason, fail."""
    import os

    from cvg_testing.ci import YAMA_SCOPE

    pytester._monkeypatch.setenv("CI", "true")
    pytester.makepyfile(f"""
import pytest
from cvg_testing import require_yama
def test_in_body():
    require_yama()
def test_forged():
    pytest.skip("needs Yama; this kernel has none ({YAMA_SCOPE} is absent)")
""")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    if os.path.exists(YAMA_SCOPE):  # runs past the skip
        result.assert_outcomes(passed=1, failed=1)
    else:
        result.assert_outcomes(skipped=1, failed=1)


def test_a_kernel_skip_whose_probe_no_longer_holds_fails(pytester: pytest.Pytester) -> None:
    """The probe is asked again when the skip is judged, not only when it was raised."""
    pytester._monkeypatch.setenv("CI", "true")
    pytester.makepyfile("""
from cvg_testing import KernelLacks
def test_stale():
    raise KernelLacks("needs a feature", lambda: False)
def test_holds():
    raise KernelLacks("needs a feature", lambda: True)
""")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(skipped=1, failed=1)
    result.stdout.fnmatch_lines(["*CI=true: a skip is a failure unless*needs a feature*"])


XFAILS = """
import pytest
@pytest.mark.xfail(reason="known")
def test_fails_as_expected():
    assert False
@pytest.mark.xfail(reason="known", strict=False)
def test_passes_anyway():
    pass
def test_stops_early():
    pytest.xfail("not today")
    assert False
"""


@pytest.mark.parametrize("ci", [None, "true"])
def test_xfails_are_strict_and_an_early_xfail_fails_under_ci(
    pytester: pytest.Pytester, ci: str | None
) -> None:
    result = _run(pytester, ci, XFAILS)
    if ci is None:  # pytest's own rules: a non-strict xpass passes
        result.assert_outcomes(xfailed=2, xpassed=1)
    else:
        result.assert_outcomes(xfailed=1, failed=2)


def test_every_test_group_loads_the_rule() -> None:
    """The plugin loads wherever cvg-testing is installed: each distribution's test
    group (what `nox -s tests` installs) names it."""
    import tomllib
    from pathlib import Path

    packages = Path(__file__).resolve().parents[2]
    missing = []
    for pyproject in sorted(packages.glob("*/pyproject.toml")):
        data = tomllib.loads(pyproject.read_text())
        if data["project"]["name"] == "cvg-testing":
            continue
        group = data.get("dependency-groups", {}).get("test", [])
        if "cvg-testing" not in group:
            missing.append(data["project"]["name"])
    assert not missing, f"test groups without cvg-testing: {missing}"
