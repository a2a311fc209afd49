"""cvg-validate: exit codes, one-line errors, output, -o, --explain, --compile."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from clihelp import Invoke, PolicyFile
from conftest import ALL_FEATURES, make_facts, needs_abi

import cvg_policy.cli as cli_module
from cvg_policy.cli import main
from cvg_policy.errors import PolicyError
from cvg_policy.load import MAX_POLICY_BYTES, load_policy
from cvg_policy.variables import context
from cvg_schema import Facts, Plan, Policy, dumps, loads, loads_as

MALFORMED = Path(__file__).parent / "malformed"

# Each malformed file: (line, key) the one error line must name; None where there is none.
EXPECTED: dict[str, tuple[int | None, str | None, str]] = {
    "alias_bomb.yaml": (1, None, "alias bomb"),
    "bad_env_name.yaml": (3, "environment.pass[1]", "not an environment variable name"),
    "bad_env_set_name.yaml": (4, 'environment.set["1PATH"]', "not an environment variable"),
    "bad_indent.yaml": (4, None, "invalid YAML"),
    "bad_syscall_name.yaml": (3, "syscalls.allow[0]", "unknown system call 'ptrac'"),
    "bad_syscall_pattern.yaml": (3, "syscalls.allow[0]", "not a system call name"),
    "bad_yaml.yaml": (4, None, "invalid YAML"),
    "binary_garbage.bin": (1, None, "binary data"),
    "bool_key.yaml": (4, "environment.set", "read as a boolean"),
    "comments_only.yaml": (None, None, "empty"),
    "deep_nesting.yaml": (3, "filesystem.read", "nested more than"),
    "duplicate_key.yaml": (5, "filesystem.read", "duplicate key 'read' (first at line 3)"),
    "duplicate_top_key.yaml": (4, "version", "duplicate key 'version'"),
    "empty.yaml": (None, None, "empty"),
    "empty_path.yaml": (3, "filesystem.write[0]", "at least 1 character"),
    "float_for_int.yaml": (3, "resources.cpu_seconds", "expected an integer, got 1.5"),
    "huge_digits.yaml": (3, "resources.open_files", "far too large"),
    "huge_memory.yaml": (3, "resources.memory_mb", "out of range"),
    "json_duplicate_key.json": (4, "network", "duplicate key 'network'"),
    "json_infinity.json": (None, None, "Infinity is not JSON"),
    "json_nul_in_path.json": (4, "filesystem.read[0]", "NUL"),
    "json_schema_version_2.json": (3, "schema_version", "2.0 is not supported"),
    "json_syntax.json": (3, None, "invalid JSON"),
    "json_wrong_kind.json": (1, "kind", "expected cvg.policy, got cvg.facts"),
    "list_for_mapping.yaml": (3, "environment.set", "expected a mapping, got a list"),
    "list_top.yaml": (1, None, "got a list"),
    "mapping_for_section.yaml": (2, "network", "expected a mapping"),
    "merge_key.yaml": (3, "network", "merge keys"),
    "missing_version.yaml": (1, "version", "required field is missing"),
    "multi_document.yaml": (2, None, "single document"),
    "negative_port.yaml": (5, "network.tcp_connect[1]", "port -1 is out of range"),
    "not_utf8.yaml": (4, None, "not UTF-8"),
    "null.yaml": (1, None, "got null"),
    "port_70000.yaml": (3, "network.tcp_bind[0]", "port 70000 is out of range"),
    "python_name_tag.yaml": (1, "version", "!!python/name:os.system is not allowed"),
    "python_tag.yaml": (2, "filesystem", "!!python/object/apply:os.system is not allowed"),
    "reason_for_missing_rule.yaml": (5, 'reasons["filesystem.read[3]"]', "has 1 entry"),
    "reason_missing_summary.yaml": (
        6,
        'reasons["filesystem.read[0]"][0].summary',
        "required field is missing",
    ),
    "recursive_alias.yaml": (3, "filesystem.read[1]", "recursive alias"),
    "relative_path.yaml": (5, "filesystem.read[1]", "'usr/lib' is not absolute"),
    "scalar_top.yaml": (1, None, "got a string"),
    "string_for_list.yaml": (3, "filesystem.read", "expected a list, got '/usr'"),
    "tabs.yaml": (3, None, "tab character"),
    "timestamp.yaml": (3, "environment.pass[1]", "!!timestamp"),
    "typo_key.yaml": (2, "filesytem", "did you mean 'filesystem'?"),
    "typo_nested_key.yaml": (3, "network.tcp_conect", "did you mean 'tcp_connect'?"),
    "unbalanced_variable.yaml": (3, "filesystem.read[0]", "unterminated ${"),
    "unknown_key.yaml": (4, "firewall", "unknown field"),
    "unknown_variable.yaml": (3, "filesystem.write[0]", "unknown variable ${TMPDIR}"),
    "unknown_variable_env.yaml": (5, "environment.set.HOME", "unknown variable ${HOMEDIR}"),
    "unterminated_string.yaml": (4, None, "invalid YAML"),
    "utf16_nul.yaml": (1, None, "binary data"),
    "version_2.yaml": (1, "version", "version 2 is not supported"),
    "version_string.yaml": (1, "version", "expected the number 1"),
    "wrong_type_bool.yaml": (3, "network.udp", "expected true or false, got 'no'"),
    "wrong_type_int.yaml": (3, "resources.memory_mb", "expected an integer, got '512'"),
    "zero_processes.yaml": (3, "resources.processes", "0 is out of range"),
}


def facts_fixture(abi: int = 4) -> Facts:
    """Facts of a kernel reporting ABI ``abi`` on which every feature of ABI 4 was
    proven; nothing newer is listed."""
    newer = tuple(name for name in ALL_FEATURES if needs_abi(name) > 4)
    return make_facts(abi, absent=newer, euid=None)


@pytest.fixture
def policy_dir(tmp_path: Path) -> Path:
    (tmp_path / "data").mkdir()
    (tmp_path / "tool").write_text("#!/bin/sh\n")
    return tmp_path


def clean_policy(root: Path) -> str:
    return f"""\
version: 1
filesystem:
  read: [{root}/data, "${{POLICY_DIR}}/data"]
  write: ["${{SCRATCH}}"]
  execute: [{root}/tool]
network:
  tcp_connect: [443]
environment:
  set: {{HOME: "${{SCRATCH}}"}}
"""


# --- malformed files: exit 1, exactly one line naming file, line and key ------------


def test_every_malformed_file_has_an_expectation() -> None:
    files = sorted(p.name for p in MALFORMED.iterdir())
    assert len(files) >= 30
    assert files == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_malformed_policy_is_one_line_and_exit_1(cli: Invoke, name: str) -> None:
    path = str(MALFORMED / name)
    r = cli([path])
    assert r.status == 1
    assert r.out == ""
    assert len(r.err_lines) == 1, r.err
    line, key, needle = EXPECTED[name]
    prefix = path + (f":{line}" if line is not None else "") + ": "
    if key is not None:
        prefix += f"{key}: "
    assert r.err.startswith(prefix), r.err
    if line is None:
        assert not re.match(r":[0-9]", r.err[len(path) :]), r.err
    assert needle in r.err


@pytest.mark.parametrize("name", ["duplicate_key.yaml", "binary_garbage.bin", "empty.yaml"])
def test_malformed_on_stdin_is_named_stdin(cli: Invoke, name: str) -> None:
    r = cli(["-"], stdin=(MALFORMED / name).read_bytes())
    assert r.status == 1
    assert len(r.err_lines) == 1
    assert r.err.startswith("<stdin>")


def test_a_policy_over_one_mib_is_refused(cli: Invoke, tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_bytes(b"version: 1\n" + b"#" * MAX_POLICY_BYTES)
    r = cli([str(big)])
    assert r.status == 1
    assert r.err_lines == [f"{big}: larger than 1 MiB: refused (a policy is a few KiB)"]


# --- valid policies -------------------------------------------------------------------


def test_a_clean_policy_exits_0_and_writes_yaml_that_reloads(cli: Invoke, policy_dir: Path) -> None:
    path = policy_dir / "p.yaml"
    path.write_text(clean_policy(policy_dir))
    r = cli([str(path)])
    assert (r.status, r.err) == (0, "")
    assert r.out.startswith("version: 1\nfilesystem:\n  read:\n")
    assert load_policy(r.out).policy == load_policy(path.read_bytes()).policy


def test_stdin_is_the_default(cli: Invoke, policy_dir: Path) -> None:
    text = clean_policy(policy_dir).replace('"${POLICY_DIR}/data"', "/usr")
    for args in ([], ["-"]):
        r = cli(args, stdin=text.encode())
        assert r.status == 0, r.err
        assert load_policy(r.out).policy == load_policy(text).policy


def test_warnings_go_to_stderr_one_per_line_and_q_silences_them(
    policy_file: PolicyFile,
    cli: Invoke,
) -> None:
    path = policy_file("version: 1\nfilesystem:\n  write: [/etc]\nnetwork:\n  tcp_connect: [25]\n")
    r = cli([str(path)])
    assert r.status == 0
    assert r.err_lines == [
        f"{path}:3: filesystem.write[0]: warning: writes /etc as a whole: the system "
        "configuration (passwd, sudoers, cron, ld.so.preload)",
        f"{path}:5: network.tcp_connect[0]: warning: may connect to port 25 on any host: "
        "smtp: mail out, a classic exfiltration channel",
    ]
    assert load_policy(r.out).policy.filesystem.write == ["/etc"]
    quiet = cli(["-q", str(path)])
    assert (quiet.status, quiet.err, quiet.out) == (0, "", r.out)


def test_strict_makes_a_missing_path_an_error(
    policy_file: PolicyFile,
    cli: Invoke,
    tmp_path: Path,
) -> None:
    path = policy_file(f"version: 1\nfilesystem:\n  read:\n    - {tmp_path}/gone\n")
    r = cli([str(path)])
    assert r.status == 0
    assert r.err_lines == [f"{path}:4: filesystem.read[0]: warning: {tmp_path}/gone does not exist"]
    r = cli(["--strict", "-q", str(path)])
    assert (r.status, r.out) == (1, "")
    assert r.err_lines == [f"{path}:4: filesystem.read[0]: error: {tmp_path}/gone does not exist"]


def test_cwd_option_sets_the_cwd_variable(
    policy_file: PolicyFile,
    cli: Invoke,
    tmp_path: Path,
) -> None:
    path = policy_file('version: 1\nfilesystem:\n  read: ["${CWD}/src"]\n')
    r = cli(["--cwd", str(tmp_path), str(path)])
    assert r.err_lines == [
        f"{path}:3: filesystem.read[0]: warning: ${{CWD}}/src ({tmp_path}/src) does not exist"
    ]
    (tmp_path / "src").mkdir()
    r = cli(["--cwd", str(tmp_path), str(path)])
    assert (r.status, r.err) == (0, "")


GENERATED = {
    "kind": "cvg.policy",
    "schema_version": "1.0",
    "version": 1,
    "filesystem": {"read": ["/usr", "/etc/ld.so.cache"], "write": ["${SCRATCH}"]},
    "reasons": {
        "filesystem.read[1]": [{"event_id": "e12", "summary": "openat /etc/ld.so.cache (read)"}],
        "filesystem.write[0]": [{"event_id": "e30", "summary": "openat /tmp/x (write)"}],
    },
}


def test_generated_policy_gets_its_reasons_as_comments(cli: Invoke) -> None:
    r = cli(["-q"], stdin=json.dumps(GENERATED).encode())
    assert r.status == 0, r.err
    assert "    # e12: openat /etc/ld.so.cache (read)\n    - /etc/ld.so.cache\n" in r.out
    assert "    # e30: openat /tmp/x (write)\n    - ${SCRATCH}\n" in r.out


def test_format_json_writes_a_policy_message_with_reasons(cli: Invoke) -> None:
    r = cli(["-q", "--format", "json"], stdin=json.dumps(GENERATED).encode())
    assert r.status == 0
    message = loads(r.out)
    assert isinstance(message, Policy)
    assert message.reasons["filesystem.read[1]"][0].event_id == "e12"
    assert message == load_policy(json.dumps(GENERATED)).policy
    # A bare YAML policy comes out as a full message too.
    r = cli(["--format", "json"], stdin=b"version: 1\n")
    assert json.loads(r.out)["kind"] == "cvg.policy"


# --- -o: atomic, and untouched on failure --------------------------------------------


def test_output_file_is_written(cli: Invoke, policy_dir: Path) -> None:
    src = policy_dir / "in.yaml"
    src.write_text(clean_policy(policy_dir))
    out = policy_dir / "out.yaml"
    r = cli(["-o", str(out), str(src)])
    assert (r.status, r.out, r.err) == (0, "", "")
    assert load_policy(out.read_bytes()).policy == load_policy(src.read_bytes()).policy
    assert sorted(p.name for p in policy_dir.iterdir()) == ["data", "in.yaml", "out.yaml", "tool"]


def test_output_dash_is_stdout(cli: Invoke) -> None:
    r = cli(["-o", "-", "--format", "json"], stdin=b"version: 1\n")
    assert r.status == 0
    assert json.loads(r.out)["version"] == 1


def test_output_can_replace_its_own_input(cli: Invoke, policy_dir: Path) -> None:
    src = policy_dir / "p.yaml"
    src.write_text(clean_policy(policy_dir))
    before = load_policy(src.read_bytes()).policy
    r = cli(["-o", str(src), str(src)])
    assert r.status == 0
    assert src.read_text().startswith("version: 1\n")
    assert load_policy(src.read_bytes()).policy == before


@pytest.mark.parametrize("bad", ["relative_path.yaml", "bad_syscall_name.yaml", "empty.yaml"])
def test_a_failing_validation_leaves_the_output_untouched(
    cli: Invoke,
    bad: str,
    tmp_path: Path,
) -> None:
    out = tmp_path / "p.yaml"
    out.write_text("previous content\n")
    os.chmod(out, 0o640)
    r = cli(["-o", str(out), str(MALFORMED / bad)])
    assert r.status == 1
    assert out.read_text() == "previous content\n"
    assert os.stat(out).st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.yaml"]  # no temporary left


def test_an_unwritable_output_is_a_usage_error(cli: Invoke, tmp_path: Path) -> None:
    r = cli(["-o", str(tmp_path / "no" / "such" / "dir.yaml")], b"version: 1\n")
    assert r.status == 2
    assert len(r.err_lines) == 1 and "cannot write" in r.err
    r = cli(["-o", str(tmp_path)], b"version: 1\n")
    assert r.status == 2
    assert "is a directory" in r.err


# --- usage errors: exit 2 -------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["/nonexistent/p.yaml"], "/nonexistent/p.yaml: no such file"),
        (["--format", "xml"], "Invalid value for '--format'"),
        (["--explain", "--compile", "p.yaml"], "--explain and --compile are exclusive"),
        (["--compile", "--format", "yaml", "p.yaml"], "--compile writes JSON only"),
        (["--facts", "-"], "cannot both come from stdin"),
        (["--facts", "-", "-"], "cannot both come from stdin"),
        (["--cwd", "/nonexistent/dir"], "'--cwd'"),
        (["--no-such-option"], "No such option"),
        (["a.yaml", "b.yaml"], "unexpected extra argument"),
    ],
)
def test_usage_errors_exit_2(cli: Invoke, args: list[str], needle: str) -> None:
    r = cli(args, stdin=b"version: 1\n")
    assert r.status == 2
    assert len(r.err_lines) == 1, r.err
    assert r.err.startswith("cvg-validate: ")
    assert needle in r.err
    assert r.out == ""


def test_a_directory_is_a_usage_error(cli: Invoke, tmp_path: Path) -> None:
    r = cli([str(tmp_path)])
    assert r.status == 2
    assert r.err_lines == [
        f"cvg-validate: {tmp_path}: is a directory, not a policy file (see 'cvg-validate --help')"
    ]


def test_a_missing_facts_file_is_a_usage_error(cli: Invoke, tmp_path: Path) -> None:
    p = tmp_path / "p.yaml"
    p.write_text("version: 1\n")
    r = cli(["--explain", "--facts", str(tmp_path / "nope.json"), str(p)])
    assert r.status == 2
    assert "nope.json: no such file" in r.err


def test_a_terminal_on_stdin_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    class Tty(io.TextIOWrapper):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdin", Tty(io.BytesIO(b"version: 1\n")))
    assert main([]) == 2
    assert "no policy given" in capsys.readouterr().err


def test_help_teaches_pipelines_exit_codes_and_an_example(cli: Invoke) -> None:
    r = cli(["--help"])
    assert r.status == 0
    text = " ".join(r.out.split())
    assert "cvg-observe -- python3 tool.py | cvg-generate | cvg-validate > p.yaml" in text
    assert "cvg-probe | cvg-validate --explain --facts - p.yaml" in text
    assert "Exit status:" in text
    for code in ("0 the policy is valid", "1 the policy is invalid", "2 usage error"):
        assert code in text
    assert "Example:" in text
    r = cli(["--version"])
    assert r.status == 0 and r.out.startswith("cvg-validate ")


def test_an_internal_error_is_one_line_and_exit_1(
    cli: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(cli_module, "check", boom)
    r = cli([], stdin=b"version: 1\n")
    assert r.status == 1
    assert r.err_lines == ["cvg-validate: internal error: RuntimeError: boom second line"]


# --- --explain and --compile ----------------------------------------------------------


@pytest.fixture
def facts_file(tmp_path: Path) -> Path:
    path = tmp_path / "facts.json"
    path.write_bytes(dumps(facts_fixture()))
    return path


def test_explain_table_lists_every_rule(cli: Invoke, policy_dir: Path, facts_file: Path) -> None:
    from cvg_policy.explain import explain_policy

    path = policy_dir / "p.yaml"
    path.write_text(clean_policy(policy_dir))
    r = cli(["--explain", "--facts", str(facts_file), str(path)])
    assert (r.status, r.err) == (0, "")
    assert r.out.startswith(f"{path} on 6.8.0-test (x86_64), Landlock ABI 4: ")
    variables = context(policy_dir=str(policy_dir))
    report = explain_policy(
        load_policy(path.read_bytes()).policy, facts=facts_fixture(), variables=variables
    )
    rows = [line.split()[0] for line in r.out.splitlines() if line[:1].isalpha() and "." in line]
    assert [a for a in rows if a in {x.address for x in report.rules}] == [
        x.address for x in report.rules
    ]
    assert "Known limits on any kernel:" in r.out


def test_explain_json_is_the_report(cli: Invoke, policy_dir: Path, facts_file: Path) -> None:
    from cvg_policy.explain import explain_policy, report_dict

    path = policy_dir / "p.yaml"
    path.write_text(clean_policy(policy_dir))
    args = ["--explain", "--format", "json", "--facts", str(facts_file), str(path)]
    r = cli(args)
    assert r.status == 0, r.err
    report = explain_policy(
        load_policy(path.read_bytes()).policy,
        facts=facts_fixture(),
        variables=context(policy_dir=str(policy_dir)),
        policy_path=str(path),
    )
    assert json.loads(r.out) == json.loads(json.dumps(report_dict(report)))


def test_explain_reads_facts_from_stdin(cli: Invoke, policy_dir: Path) -> None:
    path = policy_dir / "p.yaml"
    path.write_text(clean_policy(policy_dir))
    r = cli(["--explain", "--facts", "-", str(path)], stdin=dumps(facts_fixture()))
    assert r.status == 0, r.err
    assert "Landlock ABI 4" in r.out


def test_invalid_facts_are_one_line_and_exit_1(cli: Invoke, policy_dir: Path) -> None:
    path = policy_dir / "p.yaml"
    path.write_text("version: 1\n")
    bad = json.dumps({"kind": "cvg.facts", "schema_version": "1.0", "kernel": "x"}).encode()
    r = cli(["--explain", "--facts", "-", str(path)], stdin=bad)
    assert r.status == 1
    assert len(r.err_lines) == 1
    assert r.err.startswith("<stdin>: facts: $.")


def test_compile_prints_the_plan(cli: Invoke, policy_dir: Path, facts_file: Path) -> None:
    from cvg_policy.compile import compile_policy

    path = policy_dir / "p.yaml"
    path.write_text(clean_policy(policy_dir))
    r = cli(["--compile", "--facts", str(facts_file), str(path)])
    assert (r.status, r.err) == (0, "")
    plan = loads_as(Plan, r.out)
    expected = compile_policy(
        load_policy(path.read_bytes()).policy,
        variables=context(policy_dir=str(policy_dir)),
        facts=facts_fixture(),
        policy_path=str(path),
    )
    assert plan == expected
    assert any(rule.path == f"{policy_dir}/data" for rule in plan.landlock.fs_rules)


def test_compile_errors_name_the_file_and_line(
    cli: Invoke, monkeypatch: pytest.MonkeyPatch, facts_file: Path
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise PolicyError("cannot be narrowed", address="filesystem.deny[0]")

    import cvg_policy.compile

    monkeypatch.setattr(cvg_policy.compile, "compile_policy", refuse)
    text = b"version: 1\nfilesystem:\n  read: [/usr]\n  deny:\n    - /usr/share\n"
    r = cli(["-q", "--compile", "--facts", str(facts_file)], stdin=text)
    assert r.status == 1
    assert r.err_lines == ["<stdin>:5: filesystem.deny[0]: cannot be narrowed"]


def test_without_facts_the_probe_is_asked(cli: Invoke, monkeypatch: pytest.MonkeyPatch) -> None:
    import cvg_probe

    calls: list[int] = []

    def fake_probe(*, fresh: bool = False, cache: bool = True) -> Facts:
        calls.append(1)
        return facts_fixture(abi=6)

    monkeypatch.setattr(cvg_probe, "probe", fake_probe, raising=False)
    r = cli(["--explain"], stdin=b"version: 1\n")
    assert r.status == 0, r.err
    assert calls == [1]
    assert "Landlock ABI 6" in r.out


def test_a_failing_probe_is_one_line_and_exit_1(
    cli: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    import cvg_probe

    def broken(*, fresh: bool = False, cache: bool = True) -> Facts:
        raise OSError("no /proc here")

    monkeypatch.setattr(cvg_probe, "probe", broken, raising=False)
    r = cli(["--explain"], stdin=b"version: 1\n")
    assert r.status == 1
    assert r.err_lines == [
        "cvg-validate: probing this kernel failed: no /proc here (pass --facts FILE from cvg-probe)"
    ]


# --- the real executable ---------------------------------------------------------------


def executable(name: str) -> str | None:
    candidate = Path(sys.executable).parent / name
    if candidate.exists():
        return str(candidate)
    return shutil.which(name)


def test_the_console_script_never_shows_a_traceback(tmp_path: Path) -> None:
    exe = executable("cvg-validate")
    if exe is None:
        pytest.skip("cvg-validate is not installed in this environment")
    for name in ("alias_bomb.yaml", "python_tag.yaml", "binary_garbage.bin"):
        done = subprocess.run(
            [exe, str(MALFORMED / name)], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 1
        assert done.stdout == ""
        assert len(done.stderr.splitlines()) == 1, done.stderr
    done = subprocess.run(
        [exe, "--format", "json", "-"], input="version: 1\n", capture_output=True, text=True
    )
    assert done.returncode == 0
    assert json.loads(done.stdout)["version"] == 1


def test_probe_pipeline_with_facts_from_stdin(policy_dir: Path) -> None:
    """cvg-probe | cvg-validate --explain --facts - p.yaml, with the real probe."""
    validate = executable("cvg-validate")
    probe = executable("cvg-probe")
    if validate is None or probe is None:
        pytest.skip("cvg-validate or cvg-probe is not installed in this environment")
    path = policy_dir / "p.yaml"
    path.write_text(clean_policy(policy_dir))
    facts = subprocess.run([probe], capture_output=True, timeout=300)
    assert facts.returncode == 0, facts.stderr
    done = subprocess.run(
        [validate, "--explain", "--facts", "-", str(path)],
        input=facts.stdout,
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert b"filesystem.read[0]" in done.stdout
    parsed = loads_as(Facts, facts.stdout)
    assert f"Landlock ABI {parsed.effective_landlock_abi}".encode() in done.stdout


def test_every_schema_problem_is_reported_in_the_files_order(cli: Invoke, tmp_path: Path) -> None:
    # Sections out of the schema's own order: the lines follow the file.
    path = tmp_path / "three.yaml"
    path.write_text(
        "version: 1\n"
        "resources:\n"
        "  cpu_seconds: -1\n"
        "filesystem:\n"
        "  read: [usr]\n"
        "  write: [/tmp, 3]\n"
        "network:\n"
        "  tcp_connect: [70000]\n"
    )
    r = cli([str(path)])
    assert r.status == 1 and r.out == ""
    assert [line.split(": ")[:2] for line in r.err_lines] == [
        [f"{path}:3", "resources.cpu_seconds"],
        [f"{path}:5", "filesystem.read[0]"],
        [f"{path}:6", "filesystem.write[1]"],
        [f"{path}:8", "network.tcp_connect[0]"],
    ], r.err
    assert "not absolute" in r.err_lines[1] and "port 70000" in r.err_lines[3]


def test_a_union_problem_is_still_one_line(cli: Invoke, tmp_path: Path) -> None:
    path = tmp_path / "union.yaml"
    path.write_text("version: 1\nresources:\n  open_files: [1, 2, 3]\n  memory_mb: lots\n")
    r = cli([str(path)])
    assert r.status == 1
    assert [line.split(": ")[1] for line in r.err_lines] == [
        "resources.open_files",
        "resources.memory_mb",
    ], r.err


def test_every_check_problem_is_reported(cli: Invoke, tmp_path: Path) -> None:
    path = tmp_path / "checks.yaml"
    path.write_text(
        "version: 1\n"
        "filesystem:\n"
        f"  read: [{tmp_path}/gone1, {tmp_path}/gone2]\n"
        "syscalls:\n"
        "  mode: denylist\n"
        "  allow: [nosuchcall]\n"
    )
    r = cli(["--strict", str(path)])
    assert r.status == 1
    assert [line.split(": ")[:2] for line in r.err_lines] == [
        [f"{path}:3", "filesystem.read[0]"],
        [f"{path}:3", "filesystem.read[1]"],
        [f"{path}:6", "syscalls.allow[0]"],
    ], r.err
