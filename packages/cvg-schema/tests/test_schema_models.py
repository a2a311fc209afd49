"""The models: round trips, defaults, and the checks each kind makes."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any, get_args

import orjson
import pytest
from schema_samples import (
    DEFAULT_RESOURCES,
    DENIAL,
    EXPLANATION,
    FACTS,
    IMPORTED_OBSERVATION,
    OBSERVATION,
    PLAN,
    POLICY,
    RUN,
    SAMPLES,
)

import cvg_schema as cs
from cvg_schema import (
    Explanation,
    Facts,
    Observation,
    Plan,
    Policy,
    RunRecord,
    SchemaError,
    digest,
    dumps,
    load_dict,
    load_policy_dict,
    loads,
)

PLAN_FORMAT = Path(__file__).resolve().parents[3] / "docs" / "plan-format.md"


def err(data: Any) -> str:
    with pytest.raises(SchemaError) as info:
        load_dict(data)
    return str(info.value)


def with_(base: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of ``base`` with the dotted ``path`` (digits index lists) set to ``value``."""
    data = copy.deepcopy(base)
    parts: list[Any] = [int(p) if p.isdigit() else p for p in path.split(".")]
    cur: Any = data
    for p in parts[:-1]:
        cur = cur[p]
    cur[parts[-1]] = value
    return data


# --- round trips -----------------------------------------------------------------------


def test_every_kind_has_a_full_sample() -> None:
    assert set(SAMPLES) == set(cs.KINDS) == set(cs.KIND_NAMES)


def test_round_trip_is_exact(sample: dict[str, Any]) -> None:
    """Every field of the samples is written out, so the dump must equal the input."""
    msg = loads(orjson.dumps(sample))
    assert msg.kind == sample["kind"]
    assert isinstance(msg, cs.KINDS[sample["kind"]])
    assert orjson.loads(dumps(msg)) == sample
    assert loads(dumps(msg, pretty=True)) == msg


def test_round_trip_from_defaults_fills_every_field() -> None:
    msg = loads(b'{"kind": "cvg.plan", "schema_version": "1.0"}')
    full = orjson.loads(dumps(msg))
    assert set(full) == {
        "kind",
        "schema_version",
        "arch",
        "landlock",
        "seccomp",
        "rlimits",
        "processes",
        "wall_clock_seconds",
        "capabilities",
        "environment",
        "variables",
        "degraded",
        "expansions",
        "source",
    }
    assert load_dict(full) == msg


def test_imported_observation_round_trip() -> None:
    msg = load_dict(IMPORTED_OBSERVATION)
    assert isinstance(msg, Observation)
    assert msg.partial
    assert msg.events[0].source is not None
    assert msg.events[0].source["decoy"] is True
    assert msg.events[0].pid is None and msg.events[0].time is None
    assert load_dict(orjson.loads(dumps(msg))) == msg


def test_python_construction_sets_kind_and_version() -> None:
    plan = Plan()
    assert (plan.kind, plan.schema_version) == ("cvg.plan", "1.0")
    policy = Policy(version=1)
    assert policy.kind == "cvg.policy"
    assert orjson.loads(dumps(policy))["environment"] == {"set": {}, "pass": []}


# --- plan ------------------------------------------------------------------------------


def test_minimal_plan_from_the_docs_gets_the_documented_defaults() -> None:
    plan = loads(
        b"""{
          "kind": "cvg.plan",
          "schema_version": "1.0",
          "landlock": {"fs_rules": [{"path": "/usr",
                                     "access": ["read_file", "read_dir", "execute"]}]}
        }"""
    )
    assert isinstance(plan, Plan)
    assert plan.arch is None  # the running one
    ll = plan.landlock
    assert [(r.path, r.access) for r in ll.fs_rules] == [
        ("/usr", ["read_file", "read_dir", "execute"])
    ]
    assert (ll.handled_fs, ll.handled_net, ll.scoped) == ("all", "all", "all")
    assert (ll.net_rules, ll.flags, ll.best_effort, ll.required) == ([], [], False, True)
    sc = plan.seccomp
    assert sc.deny is None  # the kernel's DEFAULT_DENY
    assert sc.deny_errno == "EPERM"
    assert sc.enosys == ["clone3"]
    assert sc.kill == []
    assert [(s.family, s.types, s.protocols) for s in sc.sockets] == [
        ("unix", ["stream", "dgram", "seqpacket"], None),
        ("inet", ["stream", "dgram"], None),
        ("inet6", ["stream", "dgram"], None),
    ]
    assert sc.clone_namespaces is False
    assert sc.ioctl_deny == ["TIOCSTI", "TIOCLINUX"]
    assert sc.memfd_noexec is True
    assert plan.rlimits == {"core": 0}
    assert plan.processes is None
    assert plan.capabilities.keep == []
    assert (plan.environment.set, plan.environment.pass_) == ({}, [])
    assert plan.variables == []
    assert plan.degraded == []
    assert plan.source is None


def test_default_lists_are_not_shared() -> None:
    a, b = Plan(), Plan()
    a.seccomp.enosys.append("ptrace")
    a.rlimits["cpu"] = 1
    assert b.seccomp.enosys == ["clone3"]
    assert b.rlimits == {"core": 0}


@pytest.mark.skipif(not PLAN_FORMAT.exists(), reason="docs/plan-format.md not in this tree")
def test_right_names_match_docs_plan_format() -> None:
    doc = PLAN_FORMAT.read_text()
    rights_par = doc[doc.index("Filesystem rights (the ABI") : doc.index("A rule whose path")]
    assert set(re.findall(r"`([a-z_]+)`", rights_par)) == set(get_args(cs.FsRight))
    for name, abi in cs.ABI_OF_FS_RIGHT.items():
        assert re.search(rf"`{name}`[^()]*\({abi}\)", rights_par), name
    rlimit_par = doc[doc.index("Keys are the lower-case") : doc.index("A value is an int")]
    assert set(re.findall(r"`([a-z]+)`", rlimit_par)) == set(get_args(cs.RlimitName))
    for word in get_args(cs.LandlockFlag) + get_args(cs.Scope) + get_args(cs.NetRight):
        assert f"`{word}`" in doc
    for word in get_args(cs.SocketFamilyName) + get_args(cs.SocketTypeName):
        assert f"`{word}`" in doc


def test_plan_union_fields() -> None:
    plan = load_dict(
        with_(PLAN, "landlock.handled_fs", ["read_file", "write_file"]),
    )
    assert isinstance(plan, Plan)
    assert plan.landlock.handled_fs == ["read_file", "write_file"]
    assert "expected 'all' or an array, got 'none'" in err(
        with_(PLAN, "landlock.handled_fs", "none")
    )


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ([5, 3], "$.rlimits.cpu: soft limit 5 is above hard limit 3"),
        ([1, 2, 3], "$.rlimits.cpu: expected at most 2 items, got an array"),
        (["unlimited", 5], "$.rlimits.cpu: soft limit unlimited is above hard limit 5"),
        (-1, "$.rlimits.cpu: expected at least 0, got -1"),
        (2**64, "$.rlimits.cpu: expected"),
        ("10", "$.rlimits.cpu: expected an integer or 'unlimited' or an array, got '10'"),
        (1.5, "$.rlimits.cpu: expected an integer"),
    ],
)
def test_rlimit_values_refused(value: Any, problem: str) -> None:
    assert err(with_(PLAN, "rlimits.cpu", value)).startswith(problem)


def test_rlimit_values_accepted() -> None:
    for value in (0, 2**63 - 1, "unlimited", [0, 0], [1, 2], [1, "unlimited"]):
        plan = load_dict(with_(PLAN, "rlimits.cpu", value))
        assert isinstance(plan, Plan)
        assert plan.rlimits["cpu"] == value


def test_rlimit_unknown_name() -> None:
    e = err(with_(PLAN, "rlimits", {"bogus": 1}))
    assert e.startswith("$.rlimits.bogus: 'bogus' is not one of 'cpu', 'fsize'")


def test_plan_variables_must_be_declared() -> None:
    bad = with_(PLAN, "variables", [])
    assert err(bad).startswith(
        "$.landlock.fs_rules[1].path: unknown variable ${SCRATCH} in a path (known: none)"
    )
    bad = with_(PLAN, "landlock.fs_rules", [])
    bad["variables"] = []
    assert err(bad).startswith("$.environment.set.HOME: unknown variable ${SCRATCH} in a value")
    bad = with_(PLAN, "landlock.fs_rules.0.path", "${SCRATCH")
    assert err(bad) == "$.landlock.fs_rules[0].path: unterminated ${ in a path"
    plan = load_dict(PLAN)
    assert isinstance(plan, Plan)
    assert plan.uses_variables() == {"SCRATCH"}


@pytest.mark.parametrize(
    ("path", "value", "problem"),
    [
        ("landlock.fs_rules.0.access", [], "expected at least 1 item"),
        ("landlock.fs_rules.0.path", "", "expected at least 1 character"),
        ("landlock.fs_rules.0.path", "/a\x00b", "a path cannot contain a NUL byte"),
        ("landlock.net_rules.0.port", 65536, "expected at most 65535, got 65536"),
        ("landlock.net_rules.0.access", ["connect_udp"], "'connect_udp' is not one of"),
        ("landlock.flags", ["tsync", "quiet"], "'quiet' is not one of"),
        ("landlock.scoped", ["signals"], "'signals' is not one of"),
        ("landlock.best_effort", "false", "expected true or false, got 'false'"),
        ("seccomp.deny", ["PTRACE"], "expected a string matching"),
        ("seccomp.deny_errno", "eperm", "expected a string matching"),
        ("seccomp.sockets.0.family", "bluetooth", "expected"),
        ("seccomp.sockets.0.family", 2**32, "expected"),
        ("seccomp.sockets.0.types", ["rdm"], "or an integer, got 'rdm'"),
        ("seccomp.sockets.0.types", [16], "expected at most 15, got 16"),
        ("seccomp.sockets.0.types", None, "expected an array, got null"),
        ("seccomp.ioctl_deny", ["FIONREAD"], "'FIONREAD' is not one of 'TIOCSTI' or 'TIOCLINUX'"),
        ("seccomp.kill", ["ptrace"], "'ptrace' is in both deny and kill"),
        ("seccomp.enosys", ["mount"], "'mount' is in both deny and enosys"),
        ("seccomp.enosys", [], "clone3 must be in enosys, deny or kill"),
        ("seccomp.sockets.0.protocols", [-1], "expected at least 0, got -1"),
        ("arch", "i386", "'i386' is not one of 'x86_64' or 'aarch64'"),
        ("processes", 0, "expected at least 1, got 0"),
        ("environment.set", {"BAD NAME": "x"}, "expected a string matching"),
        ("source.policy_digest", "sha256:abc", "expected a string matching"),
        ("degraded.0.item", "", "expected at least 1 character"),
    ],
)
def test_plan_field_checks(path: str, value: Any, problem: str) -> None:
    message = err(with_(PLAN, path, value))
    assert problem in message
    top = path.split(".")[0]
    assert message.startswith(f"$.{top}")


# --- policy ----------------------------------------------------------------------------


def test_bare_policy_defaults_deny_everything() -> None:
    policy = load_policy_dict({"version": 1})
    assert (policy.kind, policy.schema_version) == ("cvg.policy", "1.0")
    fs = policy.filesystem
    assert (fs.read, fs.write, fs.execute, fs.deny) == ([], [], [], [])
    net = policy.network
    assert (net.tcp_connect, net.tcp_bind, net.udp, net.unix) == ([], [], False, False)
    assert policy.ipc.signal_outside is False
    assert policy.resources.model_dump() == DEFAULT_RESOURCES
    assert (policy.environment.set, policy.environment.pass_) == ({}, [])
    assert policy.syscalls.allow == []
    assert policy.reasons == {}


def test_load_policy_dict_accepts_the_message_form_too() -> None:
    msg = load_policy_dict(copy.deepcopy(POLICY))
    bare = {k: v for k, v in POLICY.items() if k not in ("kind", "schema_version")}
    assert load_policy_dict(bare) == msg
    assert msg.rule("filesystem.read[2]") == "${CWD}"


def test_load_policy_dict_refusals() -> None:
    with pytest.raises(SchemaError, match=r"^\$: expected a policy \(a mapping\), got an array"):
        load_policy_dict([])
    with pytest.raises(SchemaError, match=r"^\$.kind: expected cvg.policy, got cvg.plan$"):
        load_policy_dict({"kind": "cvg.plan", "schema_version": "1.0"})
    with pytest.raises(SchemaError, match=r"^\$.schema_version: required field is missing"):
        load_policy_dict({"kind": "cvg.policy", "version": 1})
    with pytest.raises(SchemaError, match=r"^\$.version: required field is missing$"):
        load_policy_dict({})
    with pytest.raises(SchemaError, match=r"^\$.version: 2 is not one of 1$"):
        load_policy_dict({"version": 2})
    with pytest.raises(SchemaError, match=r"^\$.filesystme: unknown field \(did you mean "):
        load_policy_dict({"version": 1, "filesystme": {}})


@pytest.mark.parametrize(
    ("path", "value", "problem"),
    [
        ("filesystem.read.0", "usr", "'usr' is not absolute"),
        ("filesystem.read.0", "", "expected at least 1 character"),
        ("filesystem.write.0", "${TMP}/x", "unknown variable ${TMP} in a path"),
        ("filesystem.execute.0", "${CWD", "unterminated ${ in a path"),
        ("network.tcp_connect.0", 0, "expected at least 1, got 0"),
        ("network.tcp_connect.0", 65536, "expected at most 65535, got 65536"),
        ("network.tcp_connect.0", "443", "expected an integer, got '443'"),
        ("network.tcp_connect.0", 443.0, "expected an integer, got 443.0"),
        ("network.udp", 0, "expected true or false, got 0"),
        ("resources.memory_mb", 0, "expected at least 1, got 0"),
        ("resources.memory_mb", 2**40, "expected at most 16777216"),
        ("resources.wall_clock_seconds", 10**12, "expected at most 604800"),
        ("resources.open_files", 2**63, "expected at most 1048576"),
        ("resources.processes", -5, "expected at least 1"),
        ("resources.cpu_seconds", None, "expected an integer, got null"),
        ("environment.set.HOME", "${NOPE}", "unknown variable ${NOPE} in an environment value"),
        ("environment.pass", ["LANG", "1BAD"], "expected a string matching"),
        ("syscalls.allow", ["ptrace()"], "expected a string matching"),
    ],
)
def test_policy_field_checks(path: str, value: Any, problem: str) -> None:
    message = err(with_(POLICY, path, value))
    assert problem in message, message


def test_policy_huge_number_is_refused_not_wrapped() -> None:
    e = err(with_(POLICY, "resources.memory_mb", 2**64 + 512))
    assert e.startswith("$.resources.memory_mb: expected")


@pytest.mark.parametrize(
    ("address", "problem"),
    [
        ("filesystem.read[3]", "filesystem.read has 3 entries"),
        ("filesystem.reed[0]", "filesystem has no field 'reed' (fields: read, write, execute"),
        ("files.read[0]", "no policy section 'files' (sections: filesystem, network, ipc"),
        ("network.udp[0]", "network.udp is not a list"),
        ("environment.set.LANG", "environment.set has no entry 'LANG'"),
        ("environment.pass.LANG", "environment.pass is not a mapping"),
    ],
)
def test_policy_reasons_must_name_existing_rules(address: str, problem: str) -> None:
    data = copy.deepcopy(POLICY)
    data["reasons"][address] = [{"event_id": "e1", "summary": "x"}]
    assert err(data).startswith(f'$.reasons["{address}"]: {problem}')


def test_policy_reasons_shape() -> None:
    data = copy.deepcopy(POLICY)
    data["reasons"]["network.udp"] = []
    assert err(data).startswith('$.reasons["network.udp"]: expected at least 1 item')
    data["reasons"]["network.udp"] = [{"event_id": "e 1", "summary": "x"}]
    assert err(data).startswith('$.reasons["network.udp"][0].event_id: expected a string')
    data = copy.deepcopy(POLICY)
    data["reasons"]["not an address"] = [{"event_id": "e1", "summary": "x"}]
    assert err(data).startswith('$.reasons["not an address"]: expected a string matching')
    data = copy.deepcopy(POLICY)
    data["reasons"]["resources.memory_mb"] = [{"event_id": "e9", "summary": "mmap 300M"}]
    policy = load_dict(data)
    assert isinstance(policy, Policy)
    assert policy.rule("resources.memory_mb") == 512
    assert policy.rule("network.tcp_connect") == [443]
    assert policy.rule("environment.set.HOME") == "${SCRATCH}"
    with pytest.raises(KeyError):
        policy.rule("filesystem.read[9]")


# --- observation -----------------------------------------------------------------------


def test_observation_checks() -> None:
    assert err(with_(OBSERVATION, "argv", [])) == (
        "$.argv: argv is empty (allowed only when partial is true)"
    )
    assert err(with_(OBSERVATION, "cwd", None)) == (
        "$.cwd: cwd is missing (allowed only when partial is true)"
    )
    assert err(with_(OBSERVATION, "events.1.id", "e1")) == (
        "$.events[1].id: event id 'e1' is used twice"
    )
    assert err(with_(OBSERVATION, "executables.0.event_id", "e9")) == (
        "$.executables[0].event_id: 'e9' names no event"
    )
    assert err(with_(OBSERVATION, "events.0.op", "open")).startswith(
        "$.events[0].op: 'open' is not one of 'read', 'write'"
    )
    assert err(with_(OBSERVATION, "events.0.result", "-13")).startswith(
        "$.events[0].result: expected a string matching"
    )
    assert err(with_(OBSERVATION, "events.1.port", 70000)).startswith("$.events[1].port:")
    assert err(with_(OBSERVATION, "events.1.sock_type", "rdm")).startswith("$.events[1].sock_type:")
    obs = load_dict(OBSERVATION)
    assert isinstance(obs, Observation)
    assert obs.event("e2").port == 443
    with pytest.raises(KeyError):
        obs.event("e3")


def test_observation_source_holds_any_json() -> None:
    data = with_(OBSERVATION, "events.0.source", {"a": [1, 2.5, None, True, {"b": "c"}]})
    obs = load_dict(data)
    assert isinstance(obs, Observation)
    assert obs.events[0].source == {"a": [1, 2.5, None, True, {"b": "c"}]}


# --- facts -----------------------------------------------------------------------------


def test_facts_checks() -> None:
    facts = load_dict(FACTS)
    assert isinstance(facts, Facts)
    assert facts.effective_landlock_abi == 4
    assert facts.proven("landlock.fs.read_file")
    assert not facts.proven("landlock.scope.signal")
    assert not facts.proven("no.such.feature")
    capped = load_dict(with_(FACTS, "landlock_abi_cap", 2))
    assert isinstance(capped, Facts)
    assert capped.effective_landlock_abi == 2
    assert err(with_(FACTS, "features.1.name", "landlock.fs.read_file")) == (
        "$.features[1].name: feature 'landlock.fs.read_file' is listed twice"
    )
    assert err(with_(FACTS, "probed_at", "2025-01-31T12:00:00")).startswith(
        "$.probed_at: expected a date-time with a time zone"
    )
    assert err(with_(FACTS, "probed_at", "yesterday")).startswith("$.probed_at: expected")
    assert err(with_(FACTS, "landlock_abi", -1)) == "$.landlock_abi: expected at least 0, got -1"
    assert err(with_(FACTS, "features.0.proven", "yes")) == (
        "$.features[0].proven: expected true or false, got 'yes'"
    )


# --- run record ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("exit_info", "problem"),
    [
        ({"status": 1, "meaning": "wall_clock"}, "$.exit.status: meaning wall_clock has exit"),
        ({"status": 0, "meaning": "not_started"}, "$.exit.status: meaning not_started has"),
        ({"status": 127, "meaning": "not_executable"}, "$.exit.status: meaning not_executable"),
        ({"status": 126, "meaning": "not_found"}, "$.exit.status: meaning not_found has exit"),
        ({"status": 137, "meaning": "signaled"}, "$.exit.signal: meaning signaled needs"),
        ({"status": 137, "meaning": "signaled", "signal": 15}, "$.exit.status: signal 15 gives"),
        ({"status": 0, "meaning": "exited", "signal": 9}, "$.exit.signal: signal is only set"),
        ({"status": 256, "meaning": "exited"}, "$.exit.status: expected at most 255"),
        ({"status": 0, "meaning": "crashed"}, "$.exit.meaning: 'crashed' is not one of"),
    ],
)
def test_run_exit_status_matches_meaning(exit_info: dict[str, Any], problem: str) -> None:
    assert err(with_(RUN, "exit", exit_info)).startswith(problem)


@pytest.mark.parametrize(
    "exit_info",
    [
        {"status": 0, "meaning": "exited"},
        {"status": 124, "meaning": "exited"},
        {"status": 124, "meaning": "wall_clock"},
        {"status": 125, "meaning": "not_started", "detail": "policy refused: needs ABI 6"},
        {"status": 126, "meaning": "not_executable"},
        {"status": 127, "meaning": "not_found"},
        {"status": 143, "meaning": "signaled", "signal": 15},
        {"status": 125, "meaning": "limit", "detail": "more than 64 processes"},
    ],
)
def test_run_exit_status_accepted(exit_info: dict[str, Any]) -> None:
    record = load_dict(with_(RUN, "exit", exit_info))
    assert isinstance(record, RunRecord)
    assert record.exit.meaning == exit_info["meaning"]


def test_run_record_checks() -> None:
    assert err(with_(RUN, "ended", "2025-01-31T11:59:59Z")) == ("$.ended: ended is before started")
    assert err(with_(RUN, "plan_digest", None) | {"plan_path": "/x"}) == (
        "$.plan_digest: plan_path needs plan_digest"
    )
    assert err(with_(RUN, "denials", [DENIAL, DENIAL])) == (
        "$.denials[1].id: denial id 'd1' is used twice"
    )
    assert err(with_(RUN, "denials.0.right", "connect_tcp")).startswith(
        "$.denials[0].right: 'connect_tcp' is not a landlock_fs right"
    )
    assert err(with_(RUN, "denials.0.mechanism", "apparmor")).startswith(
        "$.denials[0].mechanism: 'apparmor' is not one of 'landlock_fs'"
    )
    assert err(with_(RUN, "argv", [])) == "$.argv: expected at least 1 item, got an array"
    assert err(with_(RUN, "policy_digest", "abc")).startswith("$.policy_digest: expected")
    assert err(with_(RUN, "plan.landlock.fs_rules.0.access.0", "read")).startswith(
        "$.plan.landlock.fs_rules[0].access[0]: 'read' is not one of"
    )
    # The right may be any name for mechanisms without a right vocabulary.
    ok = load_dict(
        with_(RUN, "denials.0", DENIAL | {"mechanism": "seccomp", "right": None, "errno": "EPERM"})
    )
    assert isinstance(ok, RunRecord)
    rl = load_dict(with_(RUN, "denials.0", DENIAL | {"mechanism": "rlimit", "right": "nproc"}))
    assert isinstance(rl, RunRecord)
    assert rl.denial("d1").right == "nproc"
    with pytest.raises(KeyError):
        rl.denial("d2")


def test_run_record_without_plan() -> None:
    data = with_(RUN, "plan", None)
    data["exit"] = {"status": 125, "meaning": "not_started", "detail": "bad policy"}
    record = load_dict(data)
    assert isinstance(record, RunRecord)
    assert record.plan is None


# --- explanation -----------------------------------------------------------------------


def test_explanation_checks() -> None:
    assert err(with_(EXPLANATION, "denials.0.risk", None)) == (
        "$.denials[0].risk: a fix needs its risk"
    )
    no_fix = with_(EXPLANATION, "denials.0.fix", None)
    no_fix["denials"][0]["risk"] = None
    assert isinstance(load_dict(no_fix), Explanation)
    assert err(with_(EXPLANATION, "denials.0.risk.level", "severe")) == (
        "$.denials[0].risk.level: 'severe' is not one of 'low', 'medium' or 'high'"
    )


# --- strictness and digests ------------------------------------------------------------


def test_models_are_strict() -> None:
    assert err(with_(POLICY, "resources.memory_mb", "512")).endswith("got '512'")
    assert err(with_(POLICY, "resources.memory_mb", 512.0)).endswith("got 512.0")
    assert err(with_(POLICY, "network.unix", "true")).endswith("got 'true'")
    assert err(with_(PLAN, "landlock.required", 1)).endswith("got 1")


def test_digest_is_canonical() -> None:
    a = load_dict(PLAN)
    b = loads(dumps(a, pretty=True))
    assert digest(a) == digest(b)
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", digest(a))
    c = load_dict(with_(PLAN, "processes", 65))
    assert digest(c) != digest(a)
    # Omitted defaults and written-out defaults are the same message.
    assert digest(loads(b'{"kind":"cvg.plan","schema_version":"1.0"}')) == digest(Plan())
    assert cs.digest_bytes(b"") == (
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    )
