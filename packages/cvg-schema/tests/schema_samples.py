"""Sample messages: one full, realistic instance of every kind."""

from __future__ import annotations

from typing import Any

DIGEST_A = "sha256:" + "a" * 64
DIGEST_B = "sha256:" + "b" * 64

FACTS: dict[str, Any] = {
    "kind": "cvg.facts",
    "schema_version": "1.0",
    "kernel": "6.8.0-45-generic",
    "arch": "x86_64",
    "landlock_abi": 4,
    "landlock_abi_cap": None,
    "euid": 1000,
    "features": [
        {
            "name": "landlock.fs.read_file",
            "proven": True,
            "how": "open /etc/hostname in a restricted child: EACCES",
            "error": None,
            "abi": 1,
        },
        {
            "name": "landlock.scope.signal",
            "proven": False,
            "how": "kill(parent, 0) in a scoped child",
            "error": "create_ruleset: E2BIG (ABI 4 has no scopes)",
            "abi": 6,
        },
    ],
    "strace": {"path": "/usr/bin/strace", "version": "6.8"},
    "probed_at": "2025-01-31T12:00:00Z",
    "cached": False,
}

# The documented defaults of `resources` (docs/policy.md).
DEFAULT_RESOURCES: dict[str, int] = {
    "wall_clock_seconds": 60,
    "cpu_seconds": 30,
    "memory_mb": 512,
    "file_size_mb": 64,
    "open_files": 256,
    "processes": 64,
}

POLICY: dict[str, Any] = {
    "kind": "cvg.policy",
    "schema_version": "1.0",
    "version": 1,
    "filesystem": {
        "read": ["/usr", "/etc/ld.so.cache", "${CWD}"],
        "write": ["${SCRATCH}"],
        "execute": ["/usr/bin/python3.11", "/usr/lib64/ld-linux-x86-64.so.2"],
        "deny": ["${HOME}/.ssh"],
    },
    "network": {"tcp_connect": [443], "tcp_bind": [], "udp": False, "unix": False},
    "ipc": {"signal_outside": False},
    "resources": dict(DEFAULT_RESOURCES),
    "environment": {"set": {"PATH": "/usr/bin", "HOME": "${SCRATCH}"}, "pass": ["LANG", "TERM"]},
    "syscalls": {"allow": []},
    "reasons": {
        "filesystem.read[2]": [
            {"event_id": "e7", "summary": "openat ./data.csv", "observation": None}
        ],
        "network.tcp_connect[0]": [
            {"event_id": "e42", "summary": "connect 93.184.216.34:443", "observation": None}
        ],
        "environment.set.HOME": [
            {"event_id": "e3", "summary": "mkdir $HOME/.cache", "observation": None}
        ],
    },
}

PLAN: dict[str, Any] = {
    "kind": "cvg.plan",
    "schema_version": "1.0",
    "arch": "x86_64",
    "landlock": {
        "handled_fs": "all",
        "handled_net": ["bind_tcp", "connect_tcp"],
        "scoped": "all",
        "fs_rules": [
            {"path": "/usr", "access": ["read_file", "read_dir", "execute"]},
            {"path": "${SCRATCH}", "access": ["read_file", "write_file", "make_reg", "truncate"]},
        ],
        "net_rules": [{"port": 443, "access": ["connect_tcp"]}],
        "flags": ["log_same_exec_off"],
        "best_effort": True,
        "required": True,
    },
    "seccomp": {
        "deny": ["ptrace", "mount", "bpf"],
        "deny_errno": "EPERM",
        "enosys": ["clone3"],
        "kill": [],
        "sockets": [
            {"family": "unix", "types": ["stream"], "protocols": None},
            {"family": "inet", "types": ["stream", "dgram"], "protocols": [0, 6, 17]},
            {"family": 40, "types": ["seqpacket", 4], "protocols": None},
        ],
        "clone_namespaces": False,
        "ioctl_deny": ["TIOCSTI", "TIOCLINUX"],
        "memfd_noexec": True,
    },
    "rlimits": {"core": 0, "cpu": 30, "as": [536870912, 1073741824], "nofile": "unlimited"},
    "processes": 64,
    "wall_clock_seconds": 60,
    "capabilities": {"keep": []},
    "environment": {"set": {"PATH": "/usr/bin", "HOME": "${SCRATCH}"}, "pass": ["LANG"]},
    "variables": ["SCRATCH"],
    "degraded": [
        {
            "item": "landlock.scoped: signal",
            "reason": "needs Landlock ABI 6, this kernel has 4",
            "rule": "ipc.signal_outside",
            "abi": 6,
        }
    ],
    "expansions": [
        {
            "rule": "filesystem.read[0]",
            "path": "/home/ann",
            "denied": ["/home/ann/.ssh"],
            "denied_by": ["filesystem.deny[0]"],
            "rules": 7,
            "access": ["read_file", "read_dir"],
            "held": ["/home/ann"],
            "protected": [],
        }
    ],
    "source": {"policy_digest": DIGEST_A, "policy_path": "/srv/p.yaml", "facts_digest": None},
}

OBSERVATION: dict[str, Any] = {
    "kind": "cvg.observation",
    "schema_version": "1.0",
    "argv": ["python3", "tool.py", "--fetch"],
    "cwd": "/home/ann/tool",
    "home": "/home/ann",
    "scratch": ["/tmp/cvg-observe-1234"],
    "strace_version": "6.8",
    "executables": [
        {
            "path": "/usr/bin/python3.12",
            "interpreter": "/lib64/ld-linux-x86-64.so.2",
            "shebang": [],
            "event_id": "e1",
        }
    ],
    "events": [
        {
            "id": "e1",
            "pid": 4242,
            "op": "execute",
            "syscall": "execve",
            "path": "/usr/bin/python3.12",
            "path2": None,
            "port": None,
            "address": None,
            "family": None,
            "sock_type": None,
            "target_pid": None,
            "result": "ok",
            "time": 1738324800.123456,
            "denied_while_learning": False,
            "denied_by": None,
            "source": None,
        },
        {
            "id": "e2",
            "pid": 4242,
            "op": "connect",
            "syscall": "connect",
            "path": None,
            "path2": None,
            "port": 443,
            "address": "93.184.216.34",
            "family": "inet",
            "sock_type": "stream",
            "target_pid": None,
            "result": "EINPROGRESS",
            "time": 1738324800.2,
            "denied_while_learning": True,
            "denied_by": "seccomp",
            "source": None,
        },
    ],
    "exit_status": 0,
    "partial": False,
    "source": None,
    "notes": [],
}

IMPORTED_OBSERVATION: dict[str, Any] = {
    "kind": "cvg.observation",
    "schema_version": "1.0",
    "argv": [],
    "cwd": None,
    "home": "/tmp/divergence-overlay-29895-1795956902153850204-0/home",
    "scratch": ["/tmp/divergence-overlay-29895-1795956902153850204-0/scratch"],
    "partial": True,
    "source": {
        "tool": "divergence-sandbox",
        "runner_version": "1.1.0",
        "schema": "divergence.sandbox/1",
        "report": "mcp-mal-001-note-reader-ssh-exfil.json",
    },
    "notes": ["the runner drops failed operations except credential paths and network"],
    "events": [
        {
            "id": "e1",
            "op": "read",
            "syscall": "openat",
            "path": "/tmp/divergence-overlay-29895-1795956902153850204-0/home/.ssh/id_rsa",
            "result": "ok",
            "source": {
                "capability": "secrets_read",
                "target": "/tmp/divergence-overlay-29895-1795956902153850204-0/home/.ssh/id_rsa",
                "decoy": True,
                "succeeded": True,
                "result": 3,
            },
        },
        {
            "id": "e2",
            "op": "connect",
            "syscall": "connect",
            "address": "127.0.0.1",
            "port": 9,
            "result": "EPERM",
            "source": {"capability": "net_outbound", "target": "127.0.0.1:9", "result": -1},
        },
    ],
}

DENIAL: dict[str, Any] = {
    "id": "d1",
    "pid": 4243,
    "syscall": "openat",
    "op": "read",
    "path": "/home/ann/.ssh/id_rsa",
    "port": None,
    "errno": "EACCES",
    "mechanism": "landlock_fs",
    "right": "read_file",
    "rule": "filesystem.read",
    "time": 1738324801.5,
    "expected": False,
    "detail": 'openat(AT_FDCWD, "/home/ann/.ssh/id_rsa", O_RDONLY) = -1 EACCES',
}

RUN: dict[str, Any] = {
    "kind": "cvg.run",
    "schema_version": "1.0",
    "run_id": "20250131T120000Z-4242",
    "policy_digest": DIGEST_A,
    "policy_path": "/home/ann/tool/p.yaml",
    "plan": PLAN,
    "plan_digest": DIGEST_B,
    "plan_path": None,
    "argv": ["python3", "tool.py"],
    "cwd": "/home/ann/tool",
    "exit": {"status": 137, "meaning": "signaled", "signal": 9, "detail": "killed by SIGKILL"},
    "timings": {"wall_seconds": 1.75, "cpu_seconds": 0.5},
    "peak_rss_kb": 20480,
    "allow_degraded": True,
    "degraded": PLAN["degraded"],
    "traced": True,
    "denials": [DENIAL],
    "scratch": {"path": "/tmp/cvg-run-xyz", "kept": False},
    "started": "2025-01-31T12:00:00Z",
    "ended": "2025-01-31T12:00:01.750000Z",
}

EXPLANATION: dict[str, Any] = {
    "kind": "cvg.explanation",
    "schema_version": "1.0",
    "run_id": "20250131T120000Z-4242",
    "record": "run.json",
    "policy_digest": DIGEST_A,
    "summary": "One read of an SSH key was denied.",
    "denials": [
        {
            "denial": DENIAL,
            "cause": "no filesystem.read grant covers /home/ann/.ssh/id_rsa",
            "rule": "filesystem.read",
            "fix": (
                "--- p.yaml\n+++ p.yaml\n@@\n filesystem:\n   read:\n+  - ${HOME}/.ssh/id_rsa\n"
            ),
            "risk": {"level": "high", "text": "grants reading a private SSH key"},
        }
    ],
}

SAMPLES: dict[str, dict[str, Any]] = {
    "cvg.facts": FACTS,
    "cvg.policy": POLICY,
    "cvg.plan": PLAN,
    "cvg.observation": OBSERVATION,
    "cvg.run": RUN,
    "cvg.explanation": EXPLANATION,
}
