"""Measured: which probes of a missing path Landlock turns from ENOENT into EACCES.

Interpreters treat PermissionError unlike FileNotFoundError (Python's import system,
a config loader's fallbacks), so a policy must keep a missing path's answer ENOENT.
Each probe below gets ENOENT with no sandbox (the oracle). Under a policy that grants
nothing for the probed directory, and under the policy cvg-generate writes from an
observation of the probes, every one of them still gets ENOENT on this kernel: Landlock
checks access after the path walk, which fails first. So cvg-generate grants nothing
for an ENOENT event. (Creating a name in a directory that exists gives EACCES, but that
probe succeeds with no sandbox: it is not an ENOENT probe, and its grant is the write
on the directory.)
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import workloads as wl

PROBE = r"""
import errno, json, os, sys
base = sys.argv[1]
def run(f):
    try:
        f()
        return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]
def m(name):  # a missing name in a directory that exists
    return os.path.join(base, "exists", name)
def mm(name):  # a missing name in a directory that does not exist
    return os.path.join(base, "nodir", name)
def no_access(p):
    if not os.access(p, os.R_OK):
        raise FileNotFoundError(errno.ENOENT, p)
probes = {
    "open O_RDONLY": lambda: os.open(m("a"), os.O_RDONLY),
    "open O_WRONLY": lambda: os.open(m("b"), os.O_WRONLY),
    "open O_CREAT, missing parent": lambda: os.open(mm("c"), os.O_WRONLY | os.O_CREAT, 0o600),
    "open O_CREAT|O_EXCL, missing parent":
        lambda: os.open(mm("d"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600),
    "open O_TMPFILE, missing dir":
        lambda: os.open(os.path.join(base, "nodir"), os.O_WRONLY | os.O_TMPFILE, 0o600),
    "open O_DIRECTORY": lambda: os.open(m("e"), os.O_RDONLY | os.O_DIRECTORY),
    "mkdir, missing parent": lambda: os.mkdir(mm("f")),
    "execve": lambda: os.execv(m("g"), [m("g")]),
    "execve, missing parent": lambda: os.execv(mm("h"), [mm("h")]),
    "read-dir": lambda: os.listdir(m("i")),
    "read-dir, missing parent": lambda: os.listdir(mm("j")),
    "unlink": lambda: os.unlink(m("k")),
    "rmdir": lambda: os.rmdir(m("l")),
    "rename": lambda: os.rename(m("n"), m("n2")),
    "rename into a missing parent": lambda: os.rename(m("o"), mm("o")),
    "link": lambda: os.link(m("p"), m("p2")),
    "symlink, missing parent": lambda: os.symlink("x", mm("q")),
    "mkfifo, missing parent": lambda: os.mkfifo(mm("r")),
    "stat": lambda: os.stat(m("s")),
    "access": lambda: no_access(m("t")),
    "truncate": lambda: os.truncate(m("u"), 0),
    "chdir": lambda: os.chdir(m("v")),
    "readlink": lambda: os.readlink(m("w")),
}
print(json.dumps({k: run(f) for k, f in probes.items()}, sort_keys=True))
"""

EMPTY_GRANT = """\
version: 1
filesystem:
  read: [/usr, /etc, "${CWD}"]
  execute: [/usr/bin, /usr/lib, /usr/lib64]
environment:
  set: {PATH: /usr/bin:/bin}
"""


@pytest.fixture
def setup(tmp_path: Path) -> tuple[wl.Place, Path, wl.Input]:
    place = wl.make_place(tmp_path, "enoent")
    outside = place.root / "outside"
    (outside / "exists").mkdir(parents=True)
    inp = wl.Input({"probe.py": PROBE}, [wl.PYTHON, "probe.py", str(outside)])
    return place, outside, inp


def _results(out: wl.Outcome) -> dict[str, str]:
    assert out.status == 0, out.stderr
    return dict(json.loads(out.stdout))


def test_missing_paths_stay_enoent_under_landlock(setup: tuple[wl.Place, Path, wl.Input]) -> None:
    place, outside, inp = setup
    w = wl.Workload("enoent", inp, inp)
    bare = _results(wl.run(place, w, inp, []))
    assert set(bare.values()) == {"ENOENT"}, bare  # the oracle: every probe is ENOENT
    assert not any((outside / "exists").iterdir())

    # Nothing granted for the probed directory: what Landlock itself answers.
    empty = place.root / "empty.yaml"
    empty.write_text(EMPTY_GRANT)
    assert _results(wl.run(place, w, inp, wl.sandboxed(empty))) == bare

    # The generated policy (nothing granted for the probes either) keeps them ENOENT.
    policy = place.root / "p.yaml"
    wl.learn(place, w, policy)
    text = policy.read_text()
    assert str(outside) not in text.replace(f"python3 probe.py {outside}", "")
    boxed = _results(wl.run(place, w, inp, wl.sandboxed(policy)))
    assert boxed == bare
    abi4 = wl.run(
        place, w, inp, wl.sandboxed(policy, abi4=True), extra_env={"CVG_LANDLOCK_ABI_MAX": "4"}
    )
    assert _results(abi4) == bare


def test_a_create_where_the_directory_exists_is_eacces_not_enoent(tmp_path: Path) -> None:
    # The control: the same harness does see Landlock refuse, where it refuses.
    place = wl.make_place(tmp_path, "control")
    outside = place.root / "outside"
    outside.mkdir()
    code = f"import os; os.open({str(outside / 'new')!r}, os.O_WRONLY | os.O_CREAT, 0o600)"
    inp = wl.Input({}, [wl.PYTHON, "-c", code])
    w = wl.Workload("control", inp, inp)
    empty = place.root / "empty.yaml"
    empty.write_text(EMPTY_GRANT)
    out = wl.run(place, w, inp, wl.sandboxed(empty))
    assert out.status == 1 and "PermissionError" in out.stderr
    assert not (outside / "new").exists()
    bare = subprocess.run([wl.PYTHON, "-c", code], env=place.env(), capture_output=True)
    assert bare.returncode == 0 and (outside / "new").exists()
