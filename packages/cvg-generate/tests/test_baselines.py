"""Runtime baselines, measured: a second input that uses more of the runtime than the
learning run did (another header, another time zone) works under the generated policy,
and fails under the same policy with the baseline rule removed (the control)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import workloads as wl

HELLO = '#include <stdio.h>\nint main(void) { printf("hi\\n"); return 0; }\n'
MORE = (
    "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
    'int main(void) { char *s = malloc(8); strcpy(s, "more"); puts(s); return 0; }\n'
)
CLOCK = "import time; print(time.strftime('%Z %H:%M', time.localtime(0)))"


def _without(policy: Path, rule: str, tmp: Path) -> Path:
    """The policy with one list item (``    - rule``) taken out."""
    text = policy.read_text()
    line = f"    - {rule}\n"
    assert line in text
    out = tmp / "without.yaml"
    out.write_text(text.replace(line, ""))
    return out


def _reasons_of(policy: Path, rule: str) -> str:
    m = re.search(r"((?:    # .*\n)+)    - " + re.escape(rule) + "\n", policy.read_text())
    assert m is not None
    return m.group(1)


@pytest.mark.parametrize(
    ("first", "second", "env2", "rule", "why"),
    [
        (
            wl.Input({"a.c": HELLO}, ["sh", "-c", "cc -o a a.c && ./a"]),
            wl.Input({"src/b.c": MORE}, ["sh", "-c", "cc -o src/b src/b.c && ./src/b"]),
            {},
            "/usr/include",
            "C compiler baseline",
        ),
        (
            wl.Input({}, [wl.PYTHON, "-c", CLOCK]),
            wl.Input({}, [wl.PYTHON, "-c", CLOCK]),
            {"TZ": "Europe/Paris"},
            "/usr/share/zoneinfo",
            "C library baseline",
        ),
        (
            wl.Input({"a.txt": "x\n"}, ["sh", "-c", "cat a.txt"]),
            wl.Input({"sub/b.txt": "y\n"}, ["sh", "-c", "echo sub/b.txt | xargs cat"]),
            {},
            os.path.realpath("/usr/bin/xargs"),
            "shell baseline",
        ),
    ],
    ids=["cc-another-header", "python-another-time-zone", "sh-another-utility"],
)
def test_a_baseline_carries_a_second_input(
    tmp_path: Path,
    first: wl.Input,
    second: wl.Input,
    env2: dict[str, str],
    rule: str,
    why: str,
) -> None:
    place = wl.make_place(tmp_path, "baseline")
    w = wl.Workload("baseline", first, second)
    policy = place.root / "p.yaml"
    observed, _ = wl.learn(place, w, policy)
    assert observed.status == 0, observed.stderr
    assert why in _reasons_of(policy, rule)

    bare = wl.run(place, w, second, [], extra_env=env2)
    assert bare.status == 0, bare.stderr
    boxed = wl.run(place, w, second, wl.sandboxed(policy), extra_env=env2)
    assert (boxed.status, boxed.stdout) == (bare.status, bare.stdout), boxed.stderr

    # The control: without the baseline rule the second input does not run the same.
    without = _without(policy, rule, tmp_path)
    control = wl.run(place, w, second, wl.sandboxed(without), extra_env=env2)
    assert (control.status, control.stdout) != (bare.status, bare.stdout)
