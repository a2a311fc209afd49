"""explain(): each mechanism's denial to its cause, rule, exact fix and risk.

Records are hand-made to the cvg.run schema; each fix is judged by applying its diff
with patch(1) and reading the result back with the policy loader.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import MakeRecord

from cvg_explain import ExplainError, explain, plan_fixes
from cvg_policy.load import load_policy
from cvg_schema import Explanation, Policy
from cvg_schema.explanation import ExplainedDenial

POLICY = """\
version: 1
filesystem:
  read:
    - /usr            # e1: the interpreter
    - /etc/ld.so.cache
    - "${CWD}"
  write:
    - "${SCRATCH}"
  execute: [/usr/bin/python3.11]
  deny: ["${HOME}/.ssh"]
network:
  tcp_connect: [443]
resources: {memory_mb: 256, processes: 8}
"""


def _write(tmp_path: Path, text: str = POLICY, name: str = "p.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _one(
    make_record: MakeRecord, tmp_path: Path, denial: dict[str, Any], text: str = POLICY
) -> ExplainedDenial:
    record = make_record([denial], policy_path=_write(tmp_path, text))
    out = explain(record)
    Explanation.model_validate(out.model_dump())
    assert len(out.denials) == 1
    return out.denials[0]


def _applied(tmp_path: Path, e: ExplainedDenial, text: str = POLICY) -> Policy:
    """The policy after ``patch -p0`` applies the fix in a fresh directory."""
    assert e.fix is not None
    d = tmp_path / "patched"
    d.mkdir(exist_ok=True)
    (d / "p.yaml").write_text(text)
    subprocess.run(
        ["patch", "-p0", "--quiet", "--no-backup-if-mismatch"],
        input=e.fix.encode(),
        cwd=d,
        check=True,
    )
    return load_policy((d / "p.yaml").read_text(), filename="p.yaml").policy


def test_file_read_grants_the_exact_file(make_record: MakeRecord, tmp_path: Path) -> None:
    e = _one(
        make_record,
        tmp_path,
        {"syscall": "openat", "path": "/etc/hostname", "mechanism": "landlock_fs",
         "right": "read_file", "errno": "EACCES", "op": "read"},
    )  # fmt: skip
    assert e.rule == "filesystem.read"
    assert "/etc/hostname" in e.cause and "no filesystem.read grant" in e.cause
    assert e.risk is not None and e.risk.level == "low"
    assert _applied(tmp_path, e).filesystem.read[-1] == "/etc/hostname"
    # The comment on the first grant is still there, and only one line was added.
    assert e.fix is not None
    assert [ln for ln in e.fix.splitlines() if ln[:1] in "+-" and ln[:3] not in ("+++", "---")] == [
        "+    - /etc/hostname"
    ]
    # Line 7 is new: three lines of context either side.
    assert "\n@@ -4,6 +4,7 @@\n" in e.fix


def test_path_under_cwd_uses_the_variable(make_record: MakeRecord, tmp_path: Path) -> None:
    text = "version: 1\nfilesystem:\n  read: [/usr]\n"
    e = _one(
        make_record,
        tmp_path,
        {"syscall": "openat", "path": "/work/project/data/in.csv", "mechanism": "landlock_fs",
         "right": "read_file", "errno": "EACCES"},
        text,
    )  # fmt: skip
    assert _applied(tmp_path, e, text).filesystem.read == ["/usr", "${CWD}/data/in.csv"]


def test_scratch_and_home_forms(make_record: MakeRecord, tmp_path: Path) -> None:
    text = "version: 1\nfilesystem:\n  read: [/usr]\n"
    e = _one(
        make_record,
        tmp_path,
        {"syscall": "openat", "path": "/tmp/cvg-scratch-abc/out.txt", "mechanism": "landlock_fs",
         "right": "write_file", "errno": "EACCES"},
        text,
    )  # fmt: skip
    assert _applied(tmp_path, e, text).filesystem.write == ["${SCRATCH}/out.txt"]
    e = _one(
        make_record,
        tmp_path,
        {"syscall": "openat", "path": "/home/alice/.cache/tool/x", "mechanism": "landlock_fs",
         "right": "read_file", "errno": "EACCES"},
        text,
    )  # fmt: skip
    assert _applied(tmp_path, e, text).filesystem.read[-1] == "${HOME}/.cache/tool/x"


def test_write_in_a_read_only_tree_names_the_read_grant(
    make_record: MakeRecord, tmp_path: Path
) -> None:
    e = _one(
        make_record,
        tmp_path,
        {"syscall": "openat", "path": "/work/project/out.txt", "mechanism": "landlock_fs",
         "right": "write_file", "errno": "EACCES", "op": "write"},
    )  # fmt: skip
    assert e.rule == "filesystem.write"
    assert "filesystem.read[2] (${CWD})" in e.cause
    assert _applied(tmp_path, e).filesystem.write == ["${SCRATCH}", "${CWD}/out.txt"]


def test_creating_a_file_grants_its_directory(make_record: MakeRecord, tmp_path: Path) -> None:
    e = _one(
        make_record,
        tmp_path,
        {"syscall": "openat", "path": "/work/project/build/new.o", "mechanism": "landlock_fs",
         "right": "make_reg", "errno": "EACCES", "op": "create"},
    )  # fmt: skip
    assert "creating" in e.cause and "the directory that holds" in e.cause
    assert _applied(tmp_path, e).filesystem.write[-1] == "${CWD}/build"


def test_write_to_a_system_tree_is_high(make_record: MakeRecord, tmp_path: Path) -> None:
    e = _one(
        make_record,
        tmp_path,
        {"syscall": "openat", "path": "/etc/motd", "mechanism": "landlock_fs",
         "right": "write_file", "errno": "EACCES"},
    )  # fmt: skip
    assert e.risk is not None and e.risk.level == "high" and "system tree" in e.risk.text


def test_reading_a_secret_is_high(make_record: MakeRecord, tmp_path: Path) -> None:
    e = _one(
        make_record,
        tmp_path,
        {"syscall": "openat", "path": "/home/alice/.aws/credentials", "mechanism": "landlock_fs",
         "right": "read_file", "errno": "EACCES"},
    )  # fmt: skip
    assert e.risk is not None and e.risk.level == "high" and "secret" in e.risk.text
    assert _applied(tmp_path, e).filesystem.read[-1] == "${HOME}/.aws/credentials"


def test_denied_by_a_deny_rule_has_no_fix(make_record: MakeRecord, tmp_path: Path) -> None:
    e = _one(
        make_record,
        tmp_path,
        {"syscall": "openat", "path": "/home/alice/.ssh/id_ed25519", "mechanism": "landlock_fs",
         "right": "read_file", "errno": "EACCES"},
    )  # fmt: skip
    assert e.rule == "filesystem.deny[0]" and e.fix is None and e.risk is None


@pytest.mark.parametrize(
    "path", ["/proc/self/cgroup", "/proc/self/maps", "/proc/4242/status", "/proc/thread-self/comm"]
)
def test_the_processs_own_proc_files_get_no_impossible_fix(
    make_record: MakeRecord, tmp_path: Path, path: str
) -> None:
    e = _one(
        make_record,
        tmp_path,
        {"syscall": "openat", "path": path, "mechanism": "landlock_fs", "right": "read_file",
         "errno": "EACCES", "op": "read"},
    )  # fmt: skip
    assert e.fix is None and e.risk is None
    assert "own /proc entry" in e.cause and "no policy change fixes it" in e.cause


def test_execute_grants_the_exact_file_and_write_plus_exec_is_high(
    make_record: MakeRecord, tmp_path: Path
) -> None:
    e = _one(
        make_record,
        tmp_path,
        {"syscall": "execve", "path": "/usr/bin/git", "mechanism": "landlock_fs",
         "right": "execute", "errno": "EACCES", "op": "execute"},
    )  # fmt: skip
    assert e.rule == "filesystem.execute"
    assert e.risk is not None and e.risk.level == "low"
    assert _applied(tmp_path, e).filesystem.execute == ["/usr/bin/python3.11", "/usr/bin/git"]
    e = _one(
        make_record,
        tmp_path,
        {"syscall": "execve", "path": "/tmp/cvg-scratch-abc/a.out", "mechanism": "landlock_fs",
         "right": "execute", "errno": "EACCES"},
    )  # fmt: skip
    assert e.risk is not None and e.risk.level == "high" and "write plus execute" in e.risk.text
    assert _applied(tmp_path, e).filesystem.execute[-1] == "${SCRATCH}/a.out"


@pytest.mark.parametrize(
    ("right", "field", "syscall"), [("connect_tcp", "tcp_connect", "connect"),
                                     ("bind_tcp", "tcp_bind", "bind")]
)  # fmt: skip
def test_tcp_port_is_exact_and_high(
    make_record: MakeRecord, tmp_path: Path, right: str, field: str, syscall: str
) -> None:
    e = _one(
        make_record,
        tmp_path,
        {"syscall": syscall, "port": 8080, "mechanism": "landlock_net", "right": right,
         "errno": "EACCES"},
    )  # fmt: skip
    assert e.rule == f"network.{field}"
    assert e.risk is not None and e.risk.level == "high"
    got = getattr(_applied(tmp_path, e).network, field)
    assert got == ([443, 8080] if field == "tcp_connect" else [8080])


@pytest.mark.parametrize(
    ("detail", "rule"),
    [
        ("socket(AF_INET, SOCK_DGRAM|SOCK_CLOEXEC, IPPROTO_IP) = -1 EPERM", "network.udp"),
        ("socket(2, 524290, 0)", "network.udp"),
        ("socket(AF_UNIX, SOCK_STREAM, 0) = -1 EPERM", "network.unix"),
        ("socket(1, 1, 0)", "network.unix"),
    ],
)
def test_udp_and_unix_sockets(
    make_record: MakeRecord, tmp_path: Path, detail: str, rule: str
) -> None:
    e = _one(
        make_record,
        tmp_path,
        {"syscall": "socket", "mechanism": "seccomp", "errno": "EPERM", "detail": detail},
    )
    assert e.rule == rule
    assert e.risk is not None and e.risk.level == "high"
    network = _applied(tmp_path, e).network
    assert getattr(network, rule.split(".")[1]) is True


def test_raw_and_netlink_sockets_have_no_fix(make_record: MakeRecord, tmp_path: Path) -> None:
    for detail in ("socket(AF_NETLINK, SOCK_RAW, 0)", "socket(2, 3, 1)", "socket(17, 3, 0)"):
        e = _one(
            make_record,
            tmp_path,
            {"syscall": "socket", "mechanism": "seccomp", "errno": "EAFNOSUPPORT",
             "detail": detail},
        )  # fmt: skip
        assert e.fix is None and "no policy can allow it" in e.cause


def test_tcp_socket_with_no_port_granted_names_the_rule_but_writes_no_port(
    make_record: MakeRecord, tmp_path: Path
) -> None:
    from cvg_explain.render import render_text

    record = make_record(
        [{"syscall": "socket", "mechanism": "seccomp", "errno": "EAFNOSUPPORT",
          "rule": "network.tcp_connect", "detail": "socket(AF_INET, SOCK_STREAM, 0)"}],
        policy_path=_write(tmp_path, "version: 1\nfilesystem:\n  read: [/usr]\n"),
    )  # fmt: skip
    out = explain(record)
    (e,) = out.denials
    assert e.rule == "network.tcp_connect" and e.fix is None
    assert "needing a value only you know" in (out.summary or "")
    text = render_text(out)
    assert "not written: network.tcp_connect needs a value" in text
    assert "no policy change allows" not in text


def test_deny_listed_call_is_fixable_but_high(make_record: MakeRecord, tmp_path: Path) -> None:
    e = _one(make_record, tmp_path, {"syscall": "ptrace", "mechanism": "seccomp", "errno": "EPERM"})
    assert e.rule == "syscalls.allow"
    assert e.risk is not None and e.risk.level == "high" and "no policy should" in e.risk.text
    assert _applied(tmp_path, e).syscalls.allow == ["ptrace"]


@pytest.mark.parametrize("syscall", ["clone", "clone3", "ioctl", "memfd_create", "sendto"])
def test_argument_checks_no_policy_can_lift(
    make_record: MakeRecord, tmp_path: Path, syscall: str
) -> None:
    e = _one(make_record, tmp_path, {"syscall": syscall, "mechanism": "seccomp", "errno": "EPERM"})
    assert e.fix is None and e.risk is None
    assert "no policy can allow it" in e.cause


def test_signal_outside(make_record: MakeRecord, tmp_path: Path) -> None:
    e = _one(
        make_record,
        tmp_path,
        {"syscall": "kill", "mechanism": "landlock_scope", "right": "signal", "errno": "EPERM"},
    )
    assert e.rule == "ipc.signal_outside"
    assert e.risk is not None and e.risk.level == "medium"
    assert _applied(tmp_path, e).ipc.signal_outside is True


def test_abstract_socket_has_no_fix(make_record: MakeRecord, tmp_path: Path) -> None:
    e = _one(
        make_record,
        tmp_path,
        {"syscall": "connect", "mechanism": "landlock_scope", "right": "abstract_unix_socket",
         "errno": "EPERM"},
    )  # fmt: skip
    assert e.fix is None and "no policy can allow it" in e.cause


def test_memory_limit_raised_to_fit_the_request(make_record: MakeRecord, tmp_path: Path) -> None:
    e = _one(
        make_record,
        tmp_path,
        {"syscall": "mmap", "mechanism": "rlimit", "right": "as", "errno": "ENOMEM",
         "detail": "mmap(NULL, 536875008, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0)"},
    )  # fmt: skip
    assert e.rule == "resources.memory_mb"
    # 256 MiB now, 512 MiB more asked for: 768 rounded up to 64 MiB steps is 832.
    assert _applied(tmp_path, e).resources.memory_mb == 832
    assert e.risk is not None and e.risk.level == "low"
    # The flow mapping is edited in place.
    assert e.fix is not None and "+resources: {memory_mb: 832, processes: 8}" in e.fix


def test_processes(make_record: MakeRecord, tmp_path: Path) -> None:
    for denial in (
        {"syscall": "clone", "mechanism": "rlimit", "right": "nproc", "errno": "EAGAIN"},
        {"syscall": "clone", "mechanism": "supervisor", "rule": "resources.processes"},
    ):
        e = _one(make_record, tmp_path, denial)
        assert e.rule == "resources.processes"
        assert _applied(tmp_path, e).resources.processes == 16


def test_a_wall_clock_denial_under_a_policy_with_none_now_has_no_fix(
    make_record: MakeRecord, tmp_path: Path
) -> None:
    text = "version: 1\nresources:\n  wall_clock_seconds: null\n"
    denial = {"syscall": "wait4", "mechanism": "supervisor", "rule": "resources.wall_clock_seconds"}
    e = _one(make_record, tmp_path, denial, text)
    assert e.fix is None and "no limit" in e.cause


def test_large_limits_are_medium(make_record: MakeRecord, tmp_path: Path) -> None:
    text = "version: 1\nresources:\n  memory_mb: 4000\n"
    e = _one(
        make_record,
        tmp_path,
        {"syscall": "mmap", "mechanism": "rlimit", "right": "as", "errno": "ENOMEM"},
        text,
    )
    assert e.risk is not None and e.risk.level == "medium"
    assert _applied(tmp_path, e, text).resources.memory_mb == 8000


def test_the_tools_own_failure(make_record: MakeRecord, tmp_path: Path) -> None:
    e = _one(make_record, tmp_path, {"syscall": "read", "mechanism": "none", "errno": "EBADF"})
    assert e.fix is None and e.rule is None
    assert e.cause.startswith("the tool's own failure, not cvg")


def test_needing_root_has_no_fix(make_record: MakeRecord, tmp_path: Path) -> None:
    e = _one(make_record, tmp_path, {"syscall": "setuid", "mechanism": "none", "errno": "EPERM"})
    assert e.fix is None and "root" in e.cause and "no policy can grant" in e.cause
    e = _one(
        make_record,
        tmp_path,
        {"syscall": "mknodat", "path": "/work/project/dev0", "mechanism": "landlock_fs",
         "right": "make_char", "errno": "EACCES"},
    )  # fmt: skip
    assert e.fix is None and "no policy grants" in e.cause


def test_enoent_is_noise(make_record: MakeRecord, tmp_path: Path) -> None:
    record = make_record(
        [
            {"syscall": "openat", "path": "/usr/lib/x.so", "mechanism": "none", "errno": "ENOENT"},
            {"syscall": "ptrace", "mechanism": "seccomp", "errno": "EPERM"},
        ],
        policy_path=_write(tmp_path),
    )
    out = explain(record)
    assert [e.denial.id for e in out.denials] == ["d2"]
    assert out.summary is not None and "1 ENOENT" in out.summary


def test_default_policy_when_the_record_names_none(make_record: MakeRecord) -> None:
    record = make_record(
        [
            {"syscall": "openat", "path": "/srv/data.txt", "mechanism": "landlock_fs",
             "right": "read_file", "errno": "EACCES"},
            {"syscall": "openat", "path": "/etc/hostname", "mechanism": "landlock_fs",
             "right": "read_file", "errno": "EACCES"},
        ]
    )  # fmt: skip
    out = explain(record)
    first, second = out.denials
    assert first.fix is not None and first.fix.startswith("--- default-policy.yaml\n")
    assert "+    - /srv/data.txt" in first.fix
    # /etc is granted by the default policy: a denial there is not a missing grant.
    assert second.fix is None and "filesystem.read[1] (/etc)" in second.cause


def test_policy_text_overrides_the_file(make_record: MakeRecord, tmp_path: Path) -> None:
    record = make_record(
        [{"syscall": "ptrace", "mechanism": "seccomp", "errno": "EPERM"}],
        policy_path=str(tmp_path / "missing.yaml"),
    )
    with pytest.raises(ExplainError, match=r"missing\.yaml: cannot read the policy"):
        explain(record)
    out = explain(record, policy_text="version: 1\n")
    assert out.denials[0].fix is not None and "+syscalls:" in out.denials[0].fix


def test_bad_policy_names_file_and_line(make_record: MakeRecord, tmp_path: Path) -> None:
    path = _write(tmp_path, "version: 1\nfilesystem:\n  read: [usr]\n")
    record = make_record([], policy_path=path)
    with pytest.raises(ExplainError) as info:
        explain(record)
    assert str(info.value).startswith(f"{path}:3: filesystem.read[0]:")


def test_merged_fixes_are_consistent(make_record: MakeRecord, tmp_path: Path) -> None:
    record = make_record(
        [
            {"syscall": "openat", "path": "/srv/a", "mechanism": "landlock_fs",
             "right": "read_file", "errno": "EACCES"},
            {"syscall": "openat", "path": "/srv/a", "mechanism": "landlock_fs",
             "right": "read_file", "errno": "EACCES"},
            {"syscall": "connect", "port": 80, "mechanism": "landlock_net",
             "right": "connect_tcp", "errno": "EACCES"},
            {"syscall": "connect", "port": 80, "mechanism": "landlock_net",
             "right": "connect_tcp", "errno": "EACCES"},
            {"syscall": "mmap", "mechanism": "rlimit", "right": "as", "errno": "ENOMEM"},
            {"syscall": "mmap", "mechanism": "rlimit", "right": "as", "errno": "ENOMEM",
             "detail": "mmap(NULL, 2147483648, ...)"},
            {"syscall": "kill", "mechanism": "landlock_scope", "right": "signal"},
        ],
        policy_path=_write(tmp_path),
    )  # fmt: skip
    out = explain(record)
    assert all(e.fix is not None for e in out.denials)
    fixes = plan_fixes(record)
    policy = load_policy(fixes.new_text, filename="p.yaml").policy
    assert policy.filesystem.read.count("/srv/a") == 1
    assert policy.network.tcp_connect == [443, 80]
    assert policy.resources.memory_mb == 2304  # the larger of 512 and 256+2048
    assert policy.ipc.signal_outside is True
    assert fixes.highest == "high"
    assert len(fixes.changes) == 4


def test_tcp_socket_refused_for_want_of_any_tcp_grant(
    make_record: MakeRecord, tmp_path: Path
) -> None:
    denial = {
        "syscall": "socket",
        "mechanism": "seccomp",
        "errno": "EAFNOSUPPORT",
        "detail": "seccomp: socket(0x2, 0x80001, 0x6, 0x0, 0x0, 0x0) = -1 EAFNOSUPPORT",
    }
    e = _one(make_record, tmp_path, denial, "version: 1\n")
    assert e.rule == "network.tcp_connect" and e.fix is None
    assert "grants no TCP port" in e.cause
    # With some TCP grant, a refused stream socket is MPTCP or SCTP: no policy allows it.
    e = _one(make_record, tmp_path, denial, "version: 1\nnetwork:\n  tcp_connect: [443]\n")
    assert e.rule is None and e.fix is None and "no policy can allow it" in e.cause


HOSTS_POLICY = """\
version: 1
network:
  hosts:
    - host: api.github.com   # e4: CONNECT api.github.com:443
      ports: [443]
"""


def _conn(host: str | None, port: int | None, verdict: str = "refused") -> dict[str, Any]:
    return {"time": 1.0, "protocol": "http-connect", "host": host, "port": port,
            "verdict": verdict, "reason": "no network.hosts rule grants it"}  # fmt: skip


def test_refused_proxy_connections(make_record: MakeRecord, tmp_path: Path) -> None:
    path = _write(tmp_path, HOSTS_POLICY)
    data = make_record([], policy_path=path).model_dump(mode="json")
    data["connections"] = [
        _conn("api.github.com", 443, "allowed"),
        _conn("api.github.com", 22),
        _conn("pypi.org", 443),
        _conn("PyPI.org", 443),  # the same host again: one explanation
        _conn(None, None),
    ]
    from cvg_schema.run import RunRecord

    record = RunRecord.model_validate(data)
    out = explain(record)
    assert [e.denial.id for e in out.denials] == ["c1", "c2", "c3"]
    port, host, unreadable = out.denials
    assert port.rule == "network.hosts" and "grants api.github.com but not port 22" in port.cause
    assert port.risk is not None and port.risk.level == "medium"
    assert _applied(tmp_path, port, HOSTS_POLICY).network.hosts[0].ports == [443, 22]
    assert host.fix is not None and "+    - {host: pypi.org, ports: [443]}" in host.fix
    hosts = _applied(tmp_path, host, HOSTS_POLICY).network.hosts
    assert [(h.host, h.ports) for h in hosts] == [("api.github.com", [443]), ("pypi.org", [443])]
    assert unreadable.fix is None
    merged = load_policy(plan_fixes(record).new_text, filename="p.yaml").policy.network.hosts
    assert [(h.host, h.ports) for h in merged] == [
        ("api.github.com", [443, 22]),
        ("pypi.org", [443]),
    ]


def test_nscd_probe_is_named_as_such(make_record: MakeRecord, tmp_path: Path) -> None:
    for detail, nscd in (
        ("seccomp: socket(0x1, 0x80801, 0x0, 0x0, 0x0, 0x0) = -1 EAFNOSUPPORT", True),
        ("socket(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC|SOCK_NONBLOCK, 0) = -1 EAFNOSUPPORT", True),
        ("seccomp: socket(0x1, 0x1, 0x0, 0x0, 0x0, 0x0) = -1 EAFNOSUPPORT", False),
    ):
        e = _one(
            make_record,
            tmp_path,
            {
                "syscall": "socket",
                "mechanism": "seccomp",
                "errno": "EAFNOSUPPORT",
                "detail": detail,
            },
        )
        assert e.rule == "network.unix" and e.fix is not None
        assert ("nscd" in e.cause) is nscd, e.cause


def test_script_interpreter_is_granted_when_the_script_is(
    make_record: MakeRecord, tmp_path: Path
) -> None:
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh -e\necho hi\n")
    text = f"version: 1\nfilesystem:\n  execute: [{script}]\n"
    denial = {"syscall": "execve", "path": str(script), "mechanism": "landlock_fs",
              "right": "execute", "errno": "EACCES"}  # fmt: skip
    e = _one(make_record, tmp_path, denial, text)
    assert "its interpreter /bin/sh" in e.cause
    assert _applied(tmp_path, e, text).filesystem.execute == [str(script), "/bin/sh"]
    # The tracer's own note wins over reading the file.
    denial["detail"] = "its interpreter /usr/bin/env: no filesystem.execute grant covers it"
    e = _one(make_record, tmp_path, denial, text)
    assert _applied(tmp_path, e, text).filesystem.execute[-1] == "/usr/bin/env"


@pytest.mark.parametrize(
    ("denial", "field", "value"),
    [
        ({"syscall": "openat", "mechanism": "rlimit", "right": "nofile", "errno": "EMFILE"},
         "open_files", 512),
        ({"syscall": "write", "mechanism": "rlimit", "right": "fsize", "errno": "EFBIG"},
         "file_size_mb", 128),
        ({"syscall": "run", "mechanism": "rlimit", "right": "cpu"}, "cpu_seconds", 60),
        ({"syscall": "exit", "mechanism": "supervisor", "rule": "resources.wall_clock_seconds"},
         "wall_clock_seconds", 120),
        ({"syscall": "exit", "mechanism": "supervisor", "rule": "resources.cpu_seconds"},
         "cpu_seconds", 60),
        ({"syscall": "exit", "mechanism": "supervisor", "rule": "resources.memory_mb",
          "detail": "the tool's processes held 300 MiB resident at once, more than memory_mb=256"},
         "memory_mb", 512),
        ({"syscall": "exit", "mechanism": "supervisor", "rule": "resources.memory_mb",
          "detail": "the tool's processes held 900 MiB resident at once, more than memory_mb=256"},
         "memory_mb", 1152),
        # No right recorded: inferred from the errno.
        ({"syscall": "openat", "mechanism": "rlimit", "errno": "EMFILE"}, "open_files", 512),
    ],
)  # fmt: skip
def test_other_limits_are_doubled(
    make_record: MakeRecord, tmp_path: Path, denial: dict[str, Any], field: str, value: int
) -> None:
    text = "version: 1\nresources:\n  memory_mb: 256\n"
    e = _one(make_record, tmp_path, denial, text)
    assert e.rule == f"resources.{field}"
    assert getattr(_applied(tmp_path, e, text).resources, field) == value
    assert e.risk is not None and e.risk.level == "low"


def test_core_dumps_have_no_fix(make_record: MakeRecord, tmp_path: Path) -> None:
    e = _one(make_record, tmp_path, {"syscall": "run", "mechanism": "rlimit", "right": "core"})
    assert e.fix is None and "core dumps" in e.cause
