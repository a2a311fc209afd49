"""The learning plan's cache: a hit is the plan a compile makes, and anything doubtful
(a damaged file, another key, a changed directory, a cache the tool could write) is
compiled anew."""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from cvg_observe import learning
from cvg_observe.learning import LearningPlan, learning_plan


@pytest.fixture
def place(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A home, a working directory holding a .env (so it is split), a scratch directory
    and a cache, outside /tmp: the learning sandbox writes /tmp, so a cache there is
    never used."""
    root = Path(tempfile.mkdtemp(prefix="cvg-plan-cache-", dir="/var/tmp"))
    try:
        for d in ("home/.ssh", "work/src", "scratch", "cache"):
            (root / d).mkdir(parents=True)
        (root / "home" / ".ssh" / "id_rsa").write_text("KEY")
        (root / "work" / ".env").write_text("TOKEN=1")
        monkeypatch.setenv("XDG_CACHE_HOME", str(root / "cache"))
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times the plan was compiled (not read from the cache)."""
    made: list[int] = []
    real = learning._compile

    def counted(*args: Any) -> dict[str, Any]:
        made.append(1)
        return real(*args)

    monkeypatch.setattr(learning, "_compile", counted)
    return made


def plan_in(root: Path) -> LearningPlan:
    return learning_plan(str(root / "work"), str(root / "home"), str(root / "scratch"), env={})


def entries(root: Path) -> list[Path]:
    return sorted((root / "cache" / "cvg" / "observe").glob("*.json"))


def same(a: LearningPlan, b: LearningPlan) -> None:
    assert a.plan == b.plan
    assert (a.notes, a.denied, a.fs_rules) == (b.notes, b.denied, b.fs_rules)


def test_a_hit_is_the_plan_a_compile_makes(
    place: Path, compiles: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    first = plan_in(place)
    assert len(compiles) == 1 and len(entries(place)) == 1
    second = plan_in(place)
    assert len(compiles) == 1  # read back
    same(first, second)
    monkeypatch.setenv("XDG_CACHE_HOME", str(place / "work" / "cache"))  # the tool writes there
    uncached = plan_in(place)
    assert len(compiles) == 2
    # Not the same plan: cvg's cache, denied in every plan, is elsewhere now.
    denied = [d for e in uncached.plan["expansions"] for d in e["denied"]]
    assert str(place / "work" / "cache" / "cvg") in denied
    assert not (place / "work" / "cache").exists()  # neither read nor written there
    [entry] = entries(place)
    assert entry.stat().st_mode & 0o777 == 0o600
    assert entry.parent.stat().st_mode & 0o777 == 0o700


def test_the_scratch_directory_is_bound_per_run(place: Path, compiles: list[int]) -> None:
    plan_in(place)
    # Not where the compile listed (the directories on the way to each secret: a new
    # entry there is rightly a miss), as /tmp is not when no secret lies beneath it.
    other = place / "work" / "src" / "scratch2"
    other.mkdir()
    lp = learning_plan(str(place / "work"), str(place / "home"), str(other), env={})
    assert len(compiles) == 1
    assert any(p == "${SCRATCH}" for p in (r["path"] for r in lp.plan["landlock"]["fs_rules"]))
    assert any(p == str(other) for p, _ in lp.fs_rules)  # the judge's rules name it


def test_a_damaged_or_foreign_entry_is_compiled_anew(place: Path, compiles: list[int]) -> None:
    good = plan_in(place)
    [entry] = entries(place)
    blob = entry.read_bytes()
    entry.write_bytes(blob[:-10] + b"x" + blob[-9:])  # the digest no longer matches
    same(good, plan_in(place))
    assert len(compiles) == 2 and entry.read_bytes() == blob  # rewritten
    entry.write_bytes(b"")
    same(good, plan_in(place))
    assert len(compiles) == 3
    entry.chmod(0o666)  # writable by others: not trusted
    same(good, plan_in(place))
    assert len(compiles) == 4
    # Whole and well formed, but made for another key.
    entry.chmod(0o600)
    data = orjson.loads(entry.read_bytes().partition(b"\n")[2])
    data["key"] = "0" * 64
    payload = orjson.dumps(data)
    entry.write_bytes(hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)
    same(good, plan_in(place))
    assert len(compiles) == 5


def test_a_changed_filesystem_is_a_miss(place: Path, compiles: list[int]) -> None:
    plan_in(place)
    (place / "work" / "new.txt").write_text("")  # a new entry in the split directory
    lp = plan_in(place)
    assert len(compiles) == 2
    assert any(p == str(place / "work" / "new.txt") for p, _ in lp.fs_rules)
    (place / "home" / ".aws").mkdir()  # a secret appears: another key
    lp = plan_in(place)
    assert len(compiles) == 3
    assert str(place / "home" / ".aws") in lp.denied
    plan_in(place)
    assert len(compiles) == 3


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace not installed")
def test_observations_are_the_same_cached_or_not(
    place: Path,
    compiles: list[int],
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    from cvg_observe.cli import main

    monkeypatch.chdir(place / "work")
    monkeypatch.setenv("HOME", str(place / "home"))
    (place / "work" / "src" / "f").write_text("data\n")
    argv = ["--", "sh", "-c", "cat src/f; cat ../home/.ssh/id_rsa; echo x > src/g"]

    def events() -> list[tuple[Any, ...]]:
        assert main(argv) == 0
        out = orjson.loads(capfd.readouterr().out)
        keep = ("op", "syscall", "path", "path2", "result", "denied_by")
        return [tuple(e.get(k) for k in keep) for e in out["events"]]

    cold = events()
    warm = events()
    monkeypatch.setenv("XDG_CACHE_HOME", str(place / "work" / "cache"))
    uncached = events()
    assert len(compiles) == 2  # the warm run read the plan the cold one stored
    assert cold == warm == uncached
    key = str(place / "home" / ".ssh" / "id_rsa")
    assert [e[-1] for e in cold if e[2] == key] == ["landlock"]
