"""Deny inside allow, as a pure function over a filesystem listing (tmp trees)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cvg_policy.errors import PolicyError
from cvg_policy.expand import Deny, DictView, Grant, OsView, apply_denies, inside

READ = frozenset({"read_file", "read_dir"})
WRITE = READ | {"write_file", "make_reg", "remove_file", "truncate"}


def tree(root: Path, *paths: str) -> str:
    """Create files (and their parents); a path ending in / is a directory."""
    for p in paths:
        full = root / p
        if p.endswith("/"):
            full.mkdir(parents=True, exist_ok=True)
        else:
            full.parent.mkdir(parents=True, exist_ok=True)
            full.write_text(p)
    return os.path.realpath(root)


def rules(result) -> dict[str, frozenset[str]]:  # type: ignore[no-untyped-def]
    return {g.path: g.access for g in result.grants}


def test_inside() -> None:
    assert inside("/a/b", "/a")
    assert inside("/a", "/a")
    assert inside("/anything", "/")
    assert not inside("/ab", "/a")
    assert not inside("/a", "/a/b")


def test_nested_deny_expands_down_to_the_parent(tmp_path: Path) -> None:
    h = tree(
        tmp_path,
        "notes.txt",
        "docs/a.txt",
        "a/y.txt",
        "a/b/other/",
        "a/b/secret/key",
        "a/b/z.txt",
    )
    g = Grant(h, READ, ("filesystem.read[0]",))
    res = apply_denies([g], [Deny(f"{h}/a/b/secret", "filesystem.deny[0]")])
    got = rules(res)
    assert set(got) == {
        f"{h}/notes.txt",
        f"{h}/docs",
        f"{h}/a/y.txt",
        f"{h}/a/b/other",
        f"{h}/a/b/z.txt",
    }
    # Files keep only file rights (read_dir on a file is EINVAL in the kernel).
    assert got[f"{h}/notes.txt"] == {"read_file"}
    assert got[f"{h}/docs"] == READ
    # Nothing on the chain toward the denied path, nothing beneath it.
    for p in got:
        assert not inside(p, f"{h}/a/b/secret")
        assert p not in (h, f"{h}/a", f"{h}/a/b")
    (e,) = res.expansions
    assert (e.rule, e.path, e.denied, e.rules) == (
        "filesystem.read[0]",
        h,
        [f"{h}/a/b/secret"],
        5,
    )
    assert res.effect == {"filesystem.deny[0]": ["filesystem.read[0]"]}
    assert all(g.addresses == ("filesystem.read[0]",) for g in res.grants)


def test_multiple_denies_in_one_grant(tmp_path: Path) -> None:
    h = tree(tmp_path, "x.txt", ".ssh/id_rsa", ".gnupg/k", "p/.git/config", "p/src/m.py")
    res = apply_denies(
        [Grant(h, WRITE, ("filesystem.write[0]",))],
        [
            Deny(f"{h}/.ssh", "filesystem.deny[0]"),
            Deny(f"{h}/.gnupg", "filesystem.deny[1]"),
            Deny(f"{h}/p/.git", "filesystem.deny[2]"),
        ],
    )
    assert set(rules(res)) == {f"{h}/x.txt", f"{h}/p/src"}
    (e,) = res.expansions
    assert sorted(e.denied) == sorted([f"{h}/.ssh", f"{h}/.gnupg", f"{h}/p/.git"])
    assert e.rules == 2
    assert not res.findings


def test_denies_across_several_grants(tmp_path: Path) -> None:
    h = tree(tmp_path, "r/keep", "r/no/x", "w/keep", "w/no/x", "other/f")
    res = apply_denies(
        [
            Grant(f"{h}/r", READ, ("filesystem.read[0]",)),
            Grant(f"{h}/w", WRITE, ("filesystem.write[0]",)),
            Grant(f"{h}/other", READ, ("filesystem.read[1]",)),
        ],
        [Deny(f"{h}/r/no", "filesystem.deny[0]"), Deny(f"{h}/w/no", "filesystem.deny[1]")],
    )
    got = rules(res)
    assert set(got) == {f"{h}/r/keep", f"{h}/w/keep", f"{h}/other"}
    assert got[f"{h}/w/keep"] == WRITE & {"read_file", "write_file", "truncate"}
    assert got[f"{h}/other"] == READ  # untouched grants stay as they were
    assert [e.path for e in res.expansions] == [f"{h}/r", f"{h}/w"]


def test_deny_equal_to_grant_removes_it(tmp_path: Path) -> None:
    h = tree(tmp_path, "s/k", "t/f")
    res = apply_denies(
        [
            Grant(f"{h}/s", READ, ("filesystem.read[0]",)),
            Grant(f"{h}/t", READ, ("filesystem.read[1]",)),
        ],
        [Deny(f"{h}/s", "filesystem.deny[0]")],
    )
    assert set(rules(res)) == {f"{h}/t"}
    assert not res.expansions
    assert res.effect["filesystem.deny[0]"] == ["filesystem.read[0]"]
    (f,) = res.findings
    assert f.address == "filesystem.read[0]" and "removed" in f.message


def test_grant_inside_deny_is_removed(tmp_path: Path) -> None:
    h = tree(tmp_path, ".ssh/known_hosts", "ok")
    res = apply_denies(
        [
            Grant(f"{h}/.ssh/known_hosts", frozenset({"read_file"}), ("filesystem.read[1]",)),
            Grant(f"{h}/ok", frozenset({"read_file"}), ("filesystem.read[2]",)),
        ],
        [Deny(f"{h}/.ssh", "filesystem.deny[0]")],
    )
    assert set(rules(res)) == {f"{h}/ok"}


def test_deny_outside_any_grant_is_a_noop_with_a_warning(tmp_path: Path) -> None:
    h = tree(tmp_path, "g/f", "elsewhere/secret")
    grants = [Grant(f"{h}/g", READ, ("filesystem.read[0]",))]
    res = apply_denies(grants, [Deny(f"{h}/elsewhere/secret", "filesystem.deny[0]")])
    assert res.grants == grants
    assert not res.expansions
    assert res.effect == {"filesystem.deny[0]": []}
    (f,) = res.findings
    assert f.severity == "warning"
    assert f.address == "filesystem.deny[0]"
    assert "inside no grant" in f.message


def test_bound_exceeded_names_the_directory_and_count(tmp_path: Path) -> None:
    h = tree(tmp_path, *(f"f{i}" for i in range(30)), "deny/x")
    g = Grant(h, READ, ("filesystem.read[0]",))
    d = Deny(f"{h}/deny", "filesystem.deny[0]")
    # 30 siblings: exactly at the bound is fine, one less is refused.
    assert len(apply_denies([g], [d], max_rules=30).grants) == 30
    with pytest.raises(PolicyError) as e:
        apply_denies([g], [d], max_rules=29)
    assert e.value.address == "filesystem.read[0]"
    assert h in e.value.message
    assert "30 rules" in e.value.message
    assert "29" in e.value.message


def test_bound_counts_the_other_rules(tmp_path: Path) -> None:
    h = tree(tmp_path, "a/f1", "a/f2", "a/deny/x", "b/")
    grants = [
        Grant(f"{h}/b", READ, ("filesystem.read[0]",)),
        Grant(f"{h}/a", READ, ("filesystem.read[1]",)),
    ]
    d = Deny(f"{h}/a/deny", "filesystem.deny[0]")
    assert len(apply_denies(grants, [d], max_rules=3).grants) == 3
    with pytest.raises(PolicyError, match=r"2 rules.*with the 1 other rules"):
        apply_denies(grants, [d], max_rules=2)


def test_symlink_child_into_denied_dir_is_not_granted(tmp_path: Path) -> None:
    h = tree(tmp_path, ".ssh/id_rsa", "notes.txt", "docs/a.txt")
    os.symlink(".ssh", f"{h}/sshlink")  # the denied directory by another name
    os.symlink(".ssh/id_rsa", f"{h}/keylink")  # a file inside it
    os.symlink("/", f"{h}/rootlink")  # an ancestor of the denied path
    os.symlink("docs", f"{h}/docslink")  # inside the grant, away from the deny
    os.symlink("/etc", f"{h}/etclink")  # outside the grant altogether
    res = apply_denies(
        [Grant(h, READ, ("filesystem.read[0]",))], [Deny(f"{h}/.ssh", "filesystem.deny[0]")]
    )
    got = rules(res)
    assert set(got) == {f"{h}/notes.txt", f"{h}/docs"}
    # A rule on a link lands on its target: none may reach the denied path (or cover it,
    # as / would), and none may widen the grant to /etc. docs stays reachable through
    # its own rule.
    warned = {f.message.split()[1] for f in res.findings}
    assert warned == {f"{h}/sshlink", f"{h}/keylink", f"{h}/rootlink"}
    assert all(f.address == "filesystem.read[0]" for f in res.findings)


def test_missing_denied_path_still_expands_its_parent(tmp_path: Path) -> None:
    # ~/.ssh does not exist yet: the grant is narrowed anyway, so creating it later is
    # not covered either.
    h = tree(tmp_path, "a", "b/")
    res = apply_denies(
        [Grant(h, READ, ("filesystem.read[0]",))], [Deny(f"{h}/.ssh", "filesystem.deny[0]")]
    )
    assert set(rules(res)) == {f"{h}/a", f"{h}/b"}
    assert res.expansions[0].rules == 2


def test_late_bound_grant_is_kept() -> None:
    g = Grant("${SCRATCH}", WRITE, ("filesystem.write[0]",), late_bound=True)
    res = apply_denies(
        [g], [Deny("/tmp/x", "filesystem.deny[0]")], view=DictView({"/tmp/x": "file"})
    )
    assert res.grants == [g]


def test_file_grant_with_a_deny_beneath_is_kept() -> None:
    view = DictView({"/etc/hosts": "file"})
    g = Grant("/etc/hosts", frozenset({"read_file"}), ("filesystem.read[0]",))
    res = apply_denies([g], [Deny("/etc/hosts/x", "filesystem.deny[0]")], view=view)
    assert res.grants == [g]


def test_dict_view_expansion_is_pure() -> None:
    view = DictView(
        {
            "/h/a": "file",
            "/h/d/e": "file",
            "/h/.ssh/id": "file",
            "/h/l": "-> /h/.ssh",
            "/h/m": "-> d",
        }
    )
    assert view.realpath("/h/l/id") == "/h/.ssh/id"
    assert view.realpath("/h/m/e") == "/h/d/e"
    assert view.kind("/h/l") == "symlink"
    assert view.kind("/h/d") == "dir"
    assert view.kind("/nope") == "missing"
    res = apply_denies(
        [Grant("/h", READ, ("filesystem.read[0]",))],
        [Deny("/h/.ssh", "filesystem.deny[0]")],
        view=view,
    )
    assert rules(res) == {"/h/a": {"read_file"}, "/h/d": READ}


def test_unlistable_directory_is_an_error() -> None:
    class Locked(DictView):
        def listdir(self, path: str) -> list[str]:
            if path == "/h/a":
                raise PermissionError(13, "Permission denied")
            return super().listdir(path)

    view = Locked({"/h/a/deny/x": "file", "/h/b": "file"})
    with pytest.raises(PolicyError, match=r"cannot list /h/a to narrow /h .*Permission denied"):
        apply_denies(
            [Grant("/h", READ, ("filesystem.read[0]",))],
            [Deny("/h/a/deny", "filesystem.deny[0]")],
            view=view,
        )


def test_os_view_kinds(tmp_path: Path) -> None:
    h = tree(tmp_path, "f", "d/")
    os.symlink("f", f"{h}/l")
    v = OsView()
    assert [v.kind(f"{h}/{n}") for n in ("f", "d", "l", "x")] == [
        "file",
        "dir",
        "symlink",
        "missing",
    ]
    assert v.realpath(f"{h}/l") == f"{h}/f"


def test_a_protected_entry_keeps_read_and_loses_every_right_to_change_it(tmp_path: Path) -> None:
    root = tree(tmp_path, "proj/.git/config", "proj/.git/HEAD", "proj/src/a.py")
    proj = f"{root}/proj"
    result = apply_denies(
        [Grant(proj, WRITE | {"execute"}, ("filesystem.write[0]",))],
        [Deny(f"{proj}/.git/config", "protected[0]", mode="protect")],
    )
    got = rules(result)
    assert got[f"{proj}/.git/config"] == {"read_file", "execute"}
    assert got[f"{proj}/.git/HEAD"] == {"read_file", "write_file", "truncate", "execute"}
    assert got[f"{proj}/src"] == WRITE | {"execute"}
    assert result.effect["protected[0]"] == ["filesystem.write[0]"]


def test_a_grant_on_a_protected_path_is_narrowed_not_removed(tmp_path: Path) -> None:
    root = tree(tmp_path, "proj/.vscode/settings.json")
    vscode = f"{root}/proj/.vscode"
    result = apply_denies(
        [Grant(vscode, WRITE, ("filesystem.write[0]",))],
        [Deny(vscode, "protected[0]", mode="protect")],
    )
    assert rules(result) == {vscode: READ}


def test_a_hard_link_of_a_denied_file_gets_no_rule(tmp_path: Path) -> None:
    h = tree(tmp_path, "proj/.env", "proj/a.txt")
    os.link(f"{h}/proj/.env", f"{h}/proj/envlink")
    res = apply_denies(
        [Grant(f"{h}/proj", WRITE, ("filesystem.write[0]",))],
        [Deny(f"{h}/proj/.env", "filesystem.deny[0]")],
    )
    # A rule is on the inode: one on envlink would grant .env by every name.
    assert set(rules(res)) == {f"{h}/proj/a.txt"}
    (e,) = res.expansions
    assert e.held == [f"{h}/proj"] and e.denied == [f"{h}/proj/.env"]
    assert "has 2 hard links" in res.findings[0].message
