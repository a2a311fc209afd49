"""render_yaml / render_json: reasons as comments above their rules, and a lossless round trip."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cvg_kernel.syscall_table import TABLES
from cvg_policy.load import load_policy
from cvg_policy.render import SECTION_ORDER, render_json, render_yaml, yaml_scalar
from cvg_schema import Policy, load_policy_dict, loads
from cvg_schema.policy import Resources

GENERATED: dict[str, Any] = {
    "kind": "cvg.policy",
    "schema_version": "1.0",
    "version": 1,
    "filesystem": {
        "read": ["/usr/lib/python3.11", "/etc/ld.so.cache", "${CWD}"],
        "write": ["${SCRATCH}"],
        "execute": ["/usr/bin/python3.11"],
    },
    "network": {"tcp_connect": [443], "udp": True},
    "environment": {"set": {"PATH": "/usr/bin", "HOME": "${SCRATCH}"}, "pass": ["LANG"]},
    "reasons": {
        "filesystem.read[0]": [
            {"event_id": "e12", "summary": "openat /usr/lib/python3.11/os.py (read)"},
            {"event_id": "e13", "summary": "openat /usr/lib/python3.11/re.py (read)"},
        ],
        "filesystem.read[2]": [{"event_id": "e40", "summary": "openat ./data.csv (read)"}],
        "filesystem.execute[0]": [
            {"event_id": "e1", "summary": "execve /usr/bin/python3.11", "observation": "obs.json"}
        ],
        "network.tcp_connect[0]": [{"event_id": "e77", "summary": "connect 1.2.3.4:443"}],
        "network.udp": [{"event_id": "e78", "summary": "socket AF_INET SOCK_DGRAM"}],
        "environment.set.HOME": [{"event_id": "e2", "summary": "getenv HOME"}],
        "filesystem.write": [{"event_id": "e90", "summary": "the whole write list"}],
    },
}


def strip_reasons(policy: Policy) -> Policy:
    return policy.model_copy(update={"reasons": {}})


def comments_above(text: str) -> dict[str, list[str]]:
    """For each non-comment line, the comment lines directly above it."""
    out: dict[str, list[str]] = {}
    pending: list[str] = []
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            pending.append(line)
        else:
            if pending:
                out[line] = pending
            pending = []
    return out


def test_reasons_become_comments_directly_above_their_rules() -> None:
    policy = load_policy_dict(GENERATED)
    text = render_yaml(policy)
    above = comments_above(text)
    assert above["    - /usr/lib/python3.11"] == [
        "    # e12: openat /usr/lib/python3.11/os.py (read)",
        "    # e13: openat /usr/lib/python3.11/re.py (read)",
    ]
    assert above["    - ${CWD}"] == ["    # e40: openat ./data.csv (read)"]
    assert above["    - /usr/bin/python3.11"] == [
        "    # e1 in obs.json: execve /usr/bin/python3.11"
    ]
    assert above["    - 443"] == ["    # e77: connect 1.2.3.4:443"]
    assert above["  udp: true"] == ["  # e78: socket AF_INET SOCK_DGRAM"]
    assert above["    HOME: ${SCRATCH}"] == ["    # e2: getenv HOME"]
    assert above["  write:"] == ["  # e90: the whole write list"]
    # Rules without reasons have no comment above them.
    assert "    - /etc/ld.so.cache" not in above
    assert "  unix: false" not in above


def test_sections_and_keys_follow_the_design_order() -> None:
    text = render_yaml(load_policy_dict(GENERATED))
    top = [line.split(":")[0] for line in text.splitlines() if line and line[0].isalpha()]
    assert top == ["version", *(section for section, _ in SECTION_ORDER)]
    keys = [
        line.strip().split(":")[0]
        for line in text.splitlines()
        if line.startswith("  ")
        and not line.startswith("   ")
        and ":" in line
        and not line.strip().startswith("#")
    ]
    assert keys == [key for _, section_keys in SECTION_ORDER for key in section_keys]


def test_the_yaml_re_loads_to_an_equal_policy() -> None:
    policy = load_policy_dict(GENERATED)
    again = load_policy(render_yaml(policy)).policy
    assert again == strip_reasons(policy)
    assert again.reasons == {}


def test_the_json_is_a_policy_message_with_reasons() -> None:
    policy = load_policy_dict(GENERATED)
    message = loads(render_json(policy))
    assert message == policy
    assert json.loads(render_json(policy))["kind"] == "cvg.policy"


def test_a_summary_cannot_inject_yaml() -> None:
    data = {
        "version": 1,
        "network": {"udp": False},
        "reasons": {
            "network.udp": [{"event_id": "e1", "summary": "x\nnetwork:\n  udp: true\r\x85\u2028y"}]
        },
    }
    policy = load_policy_dict(data)
    text = render_yaml(policy)
    assert "  # e1: x network: udp: true y" in text
    assert load_policy(text).policy.network.udp is False


def test_an_empty_policy_renders_every_key() -> None:
    text = render_yaml(load_policy_dict({"version": 1}))
    assert "  read: []\n" in text
    assert "  set: {}\n" in text
    assert "  udp: false\n" in text
    assert "  memory_mb: 512\n" in text
    assert not text.startswith("#")


TRICKY = [
    "yes",
    "No",
    "on",
    "null",
    "~",
    "123",
    "0x1f",
    "1e3",
    ".inf",
    "2024-01-01",
    "",
    " leading",
    "trailing ",
    "a: b",
    "#comment",
    "a #b",
    "- item",
    "[x]",
    "{x}",
    "&anchor",
    "*alias",
    "!tag",
    "%directive",
    "@at",
    "`tick",
    "'single'",
    '"double"',
    "back\\slash",
    "tab\there",
    "new\nline",
    "nel\x85",
    "ls\u2028ps\u2029",
    "bell\x07del\x7f",
    "bom\ufeff",
    "non-char\ufffe",
    "${CWD}/x: y",
    "caf\u00e9 \U0001f600",
    "---",
    "...",
    "? q",
    "|",
    ">",
]


@pytest.mark.parametrize("value", TRICKY)
def test_yaml_scalar_reads_back_as_the_same_string(value: str) -> None:
    text = yaml_scalar(value)
    assert "\n" not in text
    assert yaml.safe_load(f"k: {text}\n") == {"k": value}
    assert yaml.safe_load(f"- {text}\n") == [value]
    assert yaml.safe_load(f"{text}: v\n") == {value: "v"}


@pytest.mark.parametrize("value", [0, 1, 65535, 10**12, True, False, None])
def test_yaml_scalar_other_types(value: object) -> None:
    assert yaml.safe_load(f"k: {yaml_scalar(value)}\n") == {"k": value}


# --- hypothesis: any valid policy survives render -> load ---------------------------

SAFE_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    max_size=40,
).filter(lambda s: "${" not in s)
PATHS = st.one_of(
    SAFE_TEXT.map(lambda s: "/" + s),
    st.tuples(st.sampled_from(["${CWD}", "${SCRATCH}", "${HOME}", "${POLICY_DIR}"]), SAFE_TEXT).map(
        lambda t: t[0] + t[1]
    ),
)
ENV_NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,15}", fullmatch=True)
SYSCALLS = st.sampled_from(sorted(TABLES["x86_64"]))
PORTS = st.integers(1, 65535)
# Each resource's bounds, as the schema has them.
RESOURCE_BOUNDS: dict[str, tuple[int, int]] = {
    name: (
        next(m.ge for m in info.metadata if getattr(m, "ge", None) is not None),
        next(m.le for m in info.metadata if getattr(m, "le", None) is not None),
    )
    for name, info in Resources.model_fields.items()
}


@st.composite
def policies(draw: st.DrawFn) -> Policy:
    data: dict[str, Any] = {
        "version": 1,
        "filesystem": {
            k: draw(st.lists(PATHS, max_size=4)) for k in ("read", "write", "execute", "deny")
        },
        "network": {
            "tcp_connect": draw(st.lists(PORTS, max_size=3)),
            "tcp_bind": draw(st.lists(PORTS, max_size=2)),
            "udp": draw(st.booleans()),
            "unix": draw(st.booleans()),
        },
        "ipc": {"signal_outside": draw(st.booleans())},
        "resources": {
            name: draw(st.integers(*RESOURCE_BOUNDS[name]))
            for name in draw(st.sets(st.sampled_from(sorted(RESOURCE_BOUNDS))))
        },
        "environment": {
            "set": draw(st.dictionaries(ENV_NAMES, SAFE_TEXT, max_size=3)),
            "pass": draw(st.lists(ENV_NAMES, max_size=3)),
        },
        "syscalls": {"allow": draw(st.lists(SYSCALLS, max_size=3))},
    }
    addresses = [
        f"filesystem.{k}[{i}]" for k, v in data["filesystem"].items() for i in range(len(v))
    ]
    addresses += [f"environment.set.{k}" for k in data["environment"]["set"]]
    addresses += ["network.udp", "resources.memory_mb", "syscalls.allow"]
    reason = st.fixed_dictionaries(
        {
            "event_id": st.from_regex(r"e[0-9]{1,5}", fullmatch=True),
            "summary": st.text(min_size=1, max_size=60).filter(lambda s: s.strip() != "")
            | SAFE_TEXT.filter(bool),
        }
    )
    chosen = draw(st.lists(st.sampled_from(addresses), max_size=5, unique=True))
    data["reasons"] = {a: draw(st.lists(reason, min_size=1, max_size=2)) for a in chosen}
    return load_policy_dict(data)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(policies())
def test_any_policy_round_trips_through_yaml(policy: Policy) -> None:
    text = render_yaml(policy)
    assert load_policy(text).policy == strip_reasons(policy)
    assert load_policy(text.encode("utf-8")).policy == strip_reasons(policy)
    # Each reason is a comment line; each comment above a rule names its event.
    n_reasons = sum(len(v) for v in policy.reasons.values())
    comment_lines = [line for line in text.splitlines() if line.lstrip().startswith("# e")]
    assert len(comment_lines) == n_reasons


@settings(max_examples=100, deadline=None)
@given(policies())
def test_any_policy_round_trips_through_json(policy: Policy) -> None:
    assert load_policy(render_json(policy)).policy == policy
