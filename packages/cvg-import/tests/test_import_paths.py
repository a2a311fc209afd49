"""Paths: the overlay becomes ${HOME}/${SCRATCH}, relative paths meet the artifact root."""

from __future__ import annotations

import json
from typing import Any

import pytest
from importhelp import obs, report

from cvg_import.errors import ImportRefused
from cvg_import.importer import import_divergence
from cvg_schema import Event, Observation

OVERLAY = "/tmp/divergence-overlay-29895-1795956902153850204-0"
ROOT = "/srv/divergence/corpus/samples/agent_skill/x/artifact"


def imported(*observations: dict[str, Any], **kw: Any) -> Observation:
    return import_divergence(json.dumps(report(*observations)).encode(), **kw)


def events(*observations: dict[str, Any], **kw: Any) -> list[Event]:
    return imported(*observations, **kw).events


def src(event: Event) -> dict[str, Any]:
    assert event.source is not None
    return event.source


@pytest.mark.parametrize(
    ("target", "policy", "path"),
    [
        (f"{OVERLAY}/home/.cache/x", "${HOME}/.cache/x", f"{OVERLAY}/home/.cache/x"),
        (f"{OVERLAY}/home", "${HOME}", f"{OVERLAY}/home"),
        (f"{OVERLAY}/scratch/out.txt", "${SCRATCH}/out.txt", f"{OVERLAY}/scratch/out.txt"),
        (f"{OVERLAY}/scratch/a/../b", "${SCRATCH}/b", f"{OVERLAY}/scratch/b"),
        ("/tmp/divergence-overlay-1-2-3//scratch//x", "${SCRATCH}/x", None),
        # Escapes by .. are judged where they land, never as beneath the overlay.
        (f"{OVERLAY}/home/../../../etc/hosts", "/etc/hosts", "/etc/hosts"),
        (f"{OVERLAY}/scratch/../home/y", "${HOME}/y", f"{OVERLAY}/home/y"),
        ("/tmp/divergence-overlayX/home/z", None, "/tmp/divergence-overlayX/home/z"),
        ("/tmp/other/home/z", None, "/tmp/other/home/z"),
        ("//usr/bin/../lib/x", None, "/usr/lib/x"),
    ],
)
def test_overlay_becomes_home_and_scratch(
    target: str, policy: str | None, path: str | None
) -> None:
    o = imported(obs("fs_read", target))
    (e,) = o.events
    assert src(e)["target"] == target
    assert src(e)["unresolved"] is None
    assert src(e)["policy_path"] == (policy or path)
    if path is not None:
        assert e.path == path
    if (policy or "").startswith("${"):
        # The observation names the overlay's directories, as cvg-observe names its own.
        base = "/tmp/divergence-overlay-" + target.split("divergence-overlay-")[1].split("/")[0]
        assert (o.home, o.scratch) == (base + "/home", [base + "/scratch"])
        assert e.path is not None and e.path.startswith(base + "/")
    else:
        assert (o.home, o.scratch) == (None, [])


def test_one_overlay_stands_for_all() -> None:
    o = imported(
        obs("fs_read", f"{OVERLAY}/home/a"),
        obs("fs_read", "/tmp/divergence-overlay-7-7-7/scratch/b"),
    )
    assert [e.path for e in o.events] == [f"{OVERLAY}/home/a", f"{OVERLAY}/scratch/b"]
    assert o.home == f"{OVERLAY}/home" and o.scratch == [f"{OVERLAY}/scratch"]


def test_other_overlay_paths_are_unresolved() -> None:
    (e,) = events(obs("fs_write", f"{OVERLAY}/work/x"))
    assert e.path == f"{OVERLAY}/work/x"
    assert "overlay" in src(e)["unresolved"]
    assert src(e)["policy_path"] is None


def test_escape_from_overlay_to_a_secret_is_a_secret() -> None:
    (e,) = events(obs("fs_read", f"{OVERLAY}/scratch/../../../etc/shadow"))
    assert e.path == "/etc/shadow"
    assert src(e)["never_grant"] == "secret"


def test_overlay_secret_by_pattern_whatever_the_capability() -> None:
    cases = [
        (f"{OVERLAY}/home/.aws/config", "fs_read"),  # a secret only once it is ${HOME}/.aws
        (f"{OVERLAY}/home/.kube/config", "fs_read"),
        (f"{OVERLAY}/home/.config/divergence-token", "fs_read"),
        (f"{OVERLAY}/scratch/.env", "fs_write"),
        (f"{OVERLAY}/home/.ssh", "fs_delete"),
        ("/home/alice/.docker/config.json", "fs_read"),
        ("/root/.config/gh/hosts.yml", "fs_read"),
    ]
    for target, capability in cases:
        (e,) = events(obs(capability, target))
        assert src(e)["never_grant"] == "secret", (target, src(e))
    (e,) = events(obs("fs_read", f"{OVERLAY}/home/notes.txt"))
    assert src(e)["never_grant"] is None and src(e)["secret"] is None


def test_secrets_read_capability_is_a_secret_even_unnamed() -> None:
    (e,) = events(obs("secrets_read", "/opt/app/state.db"))
    assert src(e)["never_grant"] == "secret"
    assert "secrets_read" in src(e)["secret"]


def test_relative_without_root_is_flagged_unresolved() -> None:
    o = imported(obs("fs_read", "scripts"), obs("fs_read", "../up.txt"))
    a, b = o.events
    assert a.path == "scripts" and "artifact root" in src(a)["unresolved"]
    assert b.path == "../up.txt" and src(b)["unresolved"]
    assert src(a)["policy_path"] is None and o.cwd is None
    assert any("could not be placed" in n and "--artifact-root" in n for n in o.notes)


def test_relative_with_root_is_resolved_beneath_cwd() -> None:
    o = imported(
        obs("fs_read", "scripts"),
        obs("fs_read", "./a/../manifest.json"),
        obs("fs_read", f"{ROOT}/scripts/x.py"),
        obs("fs_read", "../../outside.txt"),
        root=ROOT,
    )
    assert o.cwd == ROOT
    a, b, c, d = o.events
    assert [e.path for e in o.events] == [
        f"{ROOT}/scripts",
        f"{ROOT}/manifest.json",
        f"{ROOT}/scripts/x.py",
        # Above the root it is resolved to where it lands, outside ${CWD}.
        "/srv/divergence/corpus/samples/agent_skill/outside.txt",
    ]
    assert [src(e)["policy_path"] for e in (a, b, c)] == [
        "${CWD}/scripts",
        "${CWD}/manifest.json",
        "${CWD}/scripts/x.py",
    ]
    assert src(d)["policy_path"] == d.path
    assert all(src(e)["unresolved"] is None for e in (a, b, c, d))


def test_root_is_the_observations_cwd() -> None:
    data = json.dumps(report(obs("fs_read", "x"))).encode()
    assert import_divergence(data, root=ROOT + "/").cwd == ROOT
    assert import_divergence(data, root="//srv/a/../b").cwd == "/srv/b"
    assert import_divergence(data).cwd is None


def test_root_must_be_absolute_and_not_slash() -> None:
    data = json.dumps(report()).encode()
    for bad in ("rel", "/", "//", "/a/${HOME}"):
        with pytest.raises(ImportRefused, match="--artifact-root"):
            import_divergence(data, root=bad)


def _scan(source: str, *observations: dict[str, Any]) -> bytes:
    return json.dumps(
        {
            "version": "1.1.0",
            "targets": [
                {
                    "name": "artifact",
                    "source": source,
                    "dynamic": {"observations": list(observations)},
                }
            ],
        }
    ).encode()


def test_wrapper_source_names_the_artifact_root() -> None:
    source = "corpus/samples/agent_skill/x/artifact"
    data = _scan(
        source,
        obs("fs_read", f"{source}/scripts"),
        obs("fs_read", "scripts/lint.py"),
        obs("fs_read", f"{source}/../elsewhere"),
        obs("fs_read", "../elsewhere"),
        obs("fs_read", "/usr/bin/pip"),
    )
    # The source is relative to wherever the CLI ran: the root is not known.
    o = import_divergence(data)
    assert o.cwd is None
    a, b, c, d, e = o.events
    assert [x.path for x in (a, b, c, d)] == [
        f"{source}/scripts",
        "scripts/lint.py",
        f"{source}/../elsewhere",
        "../elsewhere",
    ]
    assert all(src(x)["unresolved"] for x in (a, b, c, d))
    assert e.path == "/usr/bin/pip" and src(e)["unresolved"] is None
    # Given the root, the same report resolves everything it can.
    o = import_divergence(data, root="/srv/x/artifact")
    a, b, c, d, e = o.events
    assert [a.path, b.path, d.path] == [
        "/srv/x/artifact/scripts",
        "/srv/x/artifact/scripts/lint.py",
        "/srv/x/elsewhere",
    ]
    assert [src(a)["policy_path"], src(b)["policy_path"]] == [
        "${CWD}/scripts",
        "${CWD}/scripts/lint.py",
    ]
    # Beside the artifact in the CLI's directory: which directory is not known.
    assert c.path == f"{source}/../elsewhere" and src(c)["unresolved"]
    # And when the root ends with the source, the CLI's own directory is known too.
    root = "/srv/divergence/" + source
    c = import_divergence(data, root=root).events[2]
    assert c.path == "/srv/divergence/corpus/samples/agent_skill/x/elsewhere"
    assert src(c)["unresolved"] is None


def test_wrapper_absolute_source_is_the_root() -> None:
    data = _scan("/srv/tools/foo", obs("fs_read", "/srv/tools/foo/a"), obs("fs_read", "b"))
    o = import_divergence(data)
    assert [e.path for e in o.events] == ["/srv/tools/foo/a", "/srv/tools/foo/b"]
    assert [src(e)["policy_path"] for e in o.events] == ["${CWD}/a", "${CWD}/b"]
    assert o.cwd == "/srv/tools/foo"


def test_driver_probe_path_is_flagged() -> None:
    (e,) = events(obs("fs_write", f"{OVERLAY}/scratch/probe.txt"))
    assert src(e)["policy_path"] == "${SCRATCH}/probe.txt"
    assert "probe.txt" in src(e)["driver_probe"]
    (e,) = events(obs("fs_write", f"{OVERLAY}/scratch/mine.txt"))
    assert src(e)["driver_probe"] is None


def test_executables_are_listed_only_when_run() -> None:
    data = json.dumps(
        report(
            obs("proc_spawn", "/usr/bin/git"),
            obs("proc_spawn", "/usr/bin/curl", succeeded=False, result=-13),
            obs(
                "proc_spawn",
                "process clone flags 0x4100",
                syscall="clone3",
                result=-38,
                succeeded=False,
            ),
            obs("proc_spawn", "tool.sh"),
        )
    ).encode()
    o = import_divergence(data)
    assert [(x.path, x.event_id) for x in o.executables] == [("/usr/bin/git", "e1")]
    git, curl, clone, rel = o.events
    assert (git.op, curl.op, clone.op, rel.op) == ("execute", "execute", "other", "execute")
    assert curl.result == "EACCES" and clone.result == "ENOSYS" and clone.path is None
    assert src(rel)["unresolved"]
