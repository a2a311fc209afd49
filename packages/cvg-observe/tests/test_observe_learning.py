"""The learning sandbox's policy, its plan, and the judge of denied events."""

from __future__ import annotations

import os
import pwd
import shutil
import tempfile
from pathlib import Path

import pytest

from cvg_kernel.plan import prepare
from cvg_observe.learning import Judge, learning_plan, secret_paths
from cvg_policy.expand import inside
from cvg_testing import ensure_unpriv_user, identities
from cvg_testing.fork import attempt_name, in_child
from cvg_trace.events import RawEvent


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path, Path]:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("KEY")
    (home / ".aws").mkdir()
    (home / ".docker").mkdir()
    (home / ".docker" / "config.json").write_text("{}")
    (home / "notes.txt").write_text("fine")
    cwd = tmp_path / "work"
    cwd.mkdir()
    (cwd / ".env").write_text("TOKEN=1")
    (cwd / ".env.local").write_text("TOKEN=2")
    (cwd / "code.py").write_text("")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    return home, cwd, scratch


def test_secret_paths_are_those_that_exist(layout: tuple[Path, Path, Path]) -> None:
    home, cwd, _ = layout
    found = secret_paths(str(cwd), str(home), euid=0)
    assert str(home / ".ssh") in found
    assert str(home / ".aws") in found
    assert str(home / ".docker" / "config.json") in found
    assert str(home / ".docker") not in found  # only the config, not the whole directory
    assert str(home / ".kube") not in found  # does not exist
    assert str(cwd / ".env") in found and str(cwd / ".env.local") in found
    assert str(cwd / "code.py") not in found
    if os.path.exists("/etc/shadow"):
        assert "/etc/shadow" in found
    assert "/root" not in found  # as root, /root is the caller's own home


def test_root_is_denied_when_it_is_someone_elses_home(layout: tuple[Path, Path, Path]) -> None:
    home, cwd, _ = layout
    found = secret_paths(str(cwd), str(home), euid=1000)
    assert ("/root" in found) == os.path.lexists("/root")
    assert "/root" not in secret_paths(str(cwd), "/root", euid=1000)


def test_learning_plan(layout: tuple[Path, Path, Path]) -> None:
    home, cwd, scratch = layout
    lp = learning_plan(str(cwd), str(home), str(scratch))
    plan = lp.plan
    assert plan["kind"] == "cvg.plan"
    assert plan["landlock"]["handled_net"] == [] and plan["landlock"]["net_rules"] == []
    # cvg-run's default limits, and signals kept inside the tool's tree: by Landlock's
    # scope from ABI 6, below it by the supervisor (the learning plan hands it no listen).
    assert plan["rlimits"] == {
        "cpu": 300, "data": 4096 << 20, "fsize": 1024 << 20, "nofile": 1024, "core": 0
    }  # fmt: skip
    assert plan["processes"] == 256
    if "signal" in plan["landlock"].get("scoped", []):
        assert "supervise" not in plan["seccomp"]
    else:
        assert plan["seccomp"]["supervise"] == ["signal"]
    assert "ptrace" in plan["seccomp"]["deny"]
    assert {s["family"] for s in plan["seccomp"]["sockets"]} == {"inet", "inet6"}
    assert plan["environment"]["set"] == {}
    assert "PATH" in plan["environment"]["pass"]
    rules = lp.fs_rules

    def can(path: Path | str, right: str) -> bool:
        p = os.path.realpath(path)
        return any(right in access and inside(p, rp) for rp, access in rules)

    assert not can(home / ".ssh" / "id_rsa", "read_file")
    assert not can(home / ".docker" / "config.json", "read_file")
    assert not can(cwd / ".env", "read_file")
    assert can(home / "notes.txt", "read_file")
    assert can(cwd / "code.py", "write_file")
    assert can(scratch / "new", "make_reg") or can(scratch, "make_reg")
    assert can("/usr/bin/env", "execute")
    assert not can("/etc/passwd", "write_file")
    assert not can("/usr/new-file", "make_reg")
    assert can(home / "notes.txt", "write_file")  # the test's home is under /tmp
    assert lp.denied == secret_paths(str(cwd), str(home))


def test_judge(layout: tuple[Path, Path, Path]) -> None:
    home, cwd, scratch = layout
    judge = Judge(learning_plan(str(cwd), str(home), str(scratch)))

    def e(op: str, result: str, path: str | None = None, **kw: object) -> RawEvent:
        return RawEvent(1, op, kw.pop("syscall", "openat"), result, 1.0, path=path, **kw)  # type: ignore[arg-type]

    key = str(home / ".ssh" / "id_rsa")
    assert judge(e("read", "EACCES", key)) == "landlock"
    assert judge(e("read", "ok", key)) is None
    assert judge(e("read", "ENOENT", key)) is None
    assert judge(e("read", "EACCES", str(home / "notes.txt"))) is None  # granted: not ours
    assert judge(e("write", "EACCES", "/etc/passwd")) == "landlock"
    assert judge(e("create", "EACCES", "/usr/new.txt")) == "landlock"
    # cwd holds .env, so it was split; a rule on cwd itself keeps creating possible
    assert judge(e("create", "EACCES", str(cwd / "new.txt"))) is None
    assert judge(e("read", "EACCES", str(cwd / ".env"))) == "landlock"
    assert judge(e("create", "EACCES", str(scratch / "new.txt"))) is None
    assert judge(e("remove", "EACCES", "/etc/hostname", syscall="unlink")) == "landlock"
    assert judge(e("stat", "EACCES", key, syscall="newfstatat")) is None  # stat: not Landlock
    assert judge(e("other", "EPERM", syscall="unshare")) == "seccomp"
    assert judge(e("other", "EPERM", syscall="ptrace")) == "seccomp"
    assert judge(e("socket", "EAFNOSUPPORT", syscall="socket", family="unix")) == "seccomp"
    assert judge(e("socket", "EAFNOSUPPORT", syscall="socket", family="inet")) is None
    assert judge(e("connect", "ECONNREFUSED", syscall="connect", port=5)) is None


@pytest.fixture(params=identities())
def identity(request: pytest.FixtureRequest) -> pwd.struct_passwd | None:
    return ensure_unpriv_user() if request.param == "unpriv" else None


def test_a_home_workspace_on_the_kernel(identity: pwd.struct_passwd | None) -> None:
    """The learning plan for a tool started in its home, applied in a forked child (as
    root and as the unprivileged user): the home's existing folder is writable, its
    dot-files and new entries directly in it are not. Each write is first proven to
    work with no sandbox, and the files are the oracle."""
    root = Path(tempfile.mkdtemp(prefix="cvg-learn-home-", dir="/var/tmp"))  # not /tmp
    try:
        home, scratch = root / "home", root / "scratch"
        (home / "notes").mkdir(parents=True)
        scratch.mkdir()
        targets = {
            "bashrc": home / ".bashrc",
            "profile": home / ".profile",
            "new": home / "new.txt",
            "notes": home / "notes" / "today",
        }
        if identity is not None:
            for p in (root, home, home / "notes", scratch):
                os.chown(p, identity.pw_uid, identity.pw_gid)

        def writes(confined: bool) -> dict[str, str]:
            if confined:  # made as the user, as cvg-observe makes it
                lp = learning_plan(str(home), str(home), str(scratch), env={})
                prepare(lp.plan, {"SCRATCH": str(scratch), "CWD": str(home)}).apply()
            return {
                name: attempt_name(lambda p=path: p.open("a").write("evil\n"))
                for name, path in targets.items()
            }

        bare = in_child(lambda: writes(False), user=identity)
        assert bare.error is None and bare.value == dict.fromkeys(targets, "OK"), bare
        for path in targets.values():
            path.unlink()
        confined = in_child(lambda: writes(True), user=identity)
        assert confined.error is None, confined.error
        assert confined.value == {
            "bashrc": "EACCES", "profile": "EACCES", "new": "EACCES", "notes": "OK"
        }  # fmt: skip
        assert [p.exists() for p in targets.values()] == [False, False, False, True]
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_learning_limits_are_cvg_runs_defaults() -> None:
    """The rlimits a tool meets while learning are those it meets when run."""
    import yaml

    from cvg_observe.learning import RUN_RESOURCES

    default = Path(__file__).parents[2] / "cvg-run/src/cvg_run/default_policy.yaml"
    resources = yaml.safe_load(default.read_text())["resources"]
    resources.pop("wall_clock_seconds")  # the observation's own: --timeout
    assert {k: v for k, v in RUN_RESOURCES.items() if k != "wall_clock_seconds"} == resources
