"""Any schema-valid denial, against policies of every shape: explain never fails, every
fix it proposes is a valid policy, and the merged fix grants each fix's rule."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import record_dict
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cvg_explain import explain, plan_fixes
from cvg_policy.load import load_policy
from cvg_schema.run import RunRecord

POLICIES = [
    "version: 1\n",
    "# c\nversion: 1\nfilesystem:\n  read: [/usr]  # r\nnetwork: {tcp_connect: [443]}\n",
    "version: 1\nfilesystem:\n  read:\n  - /usr\n  write:\n  - ${SCRATCH}\nresources:\n"
    "  memory_mb: 300\n  processes: 5\nipc:\n  signal_outside: false\n",
    '{"version": 1, "filesystem": {"read": ["/usr"], "execute": ["/usr/bin"]},\n'
    ' "network": {"udp": false}}\n',
]
MECHANISMS = ["landlock_fs", "landlock_net", "landlock_scope", "seccomp", "rlimit",
              "supervisor", "none"]  # fmt: skip
RIGHTS = {
    "landlock_fs": ["read_file", "read_dir", "write_file", "make_reg", "make_dir", "remove_file",
                    "execute", "truncate", "refer", "make_char", "ioctl_dev", None],
    "landlock_net": ["bind_tcp", "connect_tcp", None],
    "landlock_scope": ["signal", "abstract_unix_socket", None],
    "rlimit": ["as", "nproc", "nofile", "fsize", "cpu", "core", "stack", None],
}  # fmt: skip
RULES = [
    "network.udp",
    "network.unix",
    "resources.processes",
    "filesystem.read",
    "resources.wall_clock_seconds",
]
PATHS = st.sampled_from(
    ["/etc/hostname", "/usr/bin/x", "/work/project/a", "/tmp/cvg-scratch-abc/o", "/",
     "/home/alice/.ssh/id_rsa", "/srv/a b/c", "/srv/ünï/ç"]
) | st.text(min_size=1, max_size=12).map(lambda s: "/x/" + s)  # fmt: skip


@st.composite
def denials(draw: st.DrawFn) -> dict[str, Any]:
    mechanism = draw(st.sampled_from(MECHANISMS))
    d: dict[str, Any] = {
        "syscall": draw(st.sampled_from(["openat", "connect", "bind", "socket", "ptrace",
                                         "clone", "kill", "mmap", "execve", "unshare"])),
        "mechanism": mechanism,
    }  # fmt: skip
    if mechanism in RIGHTS:
        right = draw(st.sampled_from(RIGHTS[mechanism]))
        if right is not None:
            d["right"] = right
    if draw(st.booleans()):
        d["path"] = draw(PATHS)
    if draw(st.booleans()):
        d["port"] = draw(st.integers(0, 65535))
    if draw(st.booleans()):
        d["errno"] = draw(st.sampled_from(["EACCES", "EPERM", "ENOMEM", "EAGAIN", "ENOENT"]))
    if draw(st.booleans()):
        d["rule"] = draw(st.sampled_from(RULES))
    if draw(st.booleans()):
        d["detail"] = draw(st.sampled_from(["socket(AF_UNIX, SOCK_STREAM, 0)",
                                            "socket(0x2, 0x2, 0x0)", "mmap(NULL, 1073741824, 3)",
                                            "its interpreter /bin/sh: x", "x" * 100]))  # fmt: skip
    return d


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(policy=st.sampled_from(POLICIES), items=st.lists(denials(), max_size=6))
def test_explain_never_fails_and_fixes_are_valid(
    tmp_path: Path, policy: str, items: list[dict[str, Any]]
) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(policy)
    record = RunRecord.model_validate(record_dict(items, policy_path=str(path)))
    out = explain(record)
    for e in out.denials:
        assert (e.fix is None) == (e.risk is None)
        if e.fix is not None:
            assert e.fix.startswith("--- p.yaml\n+++ p.yaml\n@@ -")
            assert e.rule is not None
    fixes = plan_fixes(record)
    load_policy(fixes.new_text, filename=str(path))
    assert bool(fixes.changes) == any(e.fix is not None for e in out.denials)
    if policy.startswith("{"):
        import json

        json.loads(fixes.new_text)
