"""The command line: the pipeline's round trip, bad input, merging, --verify."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import workloads as wl

from cvg_generate.cli import main
from cvg_schema import Policy

SCRIPT = "import json, csv\nprint(open('data/in.txt').read().strip())\n"


@pytest.fixture(scope="module")
def observed(tmp_path_factory: pytest.TempPathFactory) -> tuple[wl.Place, Path]:
    place = wl.make_place(tmp_path_factory.mktemp("cli"), "tool")
    inp = wl.Input({"tool.py": SCRIPT, "data/in.txt": "hi\n"}, [wl.PYTHON, "tool.py"])
    obs = place.root / "obs.json"
    out = wl.run(place, wl.Workload("t", inp, inp), inp, [wl.cvg("cvg-observe"), "-o", str(obs)])
    assert out.status == 0 and out.stdout == "hi\n", out.stderr
    return place, obs


def _gen(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [wl.cvg("cvg-generate"), *args], input=stdin, capture_output=True, timeout=120
    )


def test_round_trip_through_cvg_validate_keeps_every_reason(
    observed: tuple[wl.Place, Path],
) -> None:
    place, obs = observed
    gen = _gen(str(obs))
    assert gen.returncode == 0, gen.stderr
    policy = Policy.model_validate_json(gen.stdout)
    val = subprocess.run(
        [wl.cvg("cvg-validate"), "--cwd", str(place.work)], input=gen.stdout, capture_output=True
    )
    assert val.returncode == 0, val.stderr
    yaml_text = val.stdout.decode()
    lines = yaml_text.splitlines()
    rules = 0
    for i, line in enumerate(lines):
        # Every generated value (a list item or a scalar in a section) has a comment above.
        if (
            re.match(r"^    - ", line)
            or re.match(r"^  [a-z_]+: (?!\[\]|\{\}|false)", line)
            or (re.match(r"^    [A-Z_]+: ", line))
        ):
            rules += 1
            assert lines[i - 1].lstrip().startswith("# e"), (i, line)
    assert rules >= len([a for a in policy.reasons if a.startswith("filesystem.")]) > 10
    # And every rule in the JSON has its reasons.
    fs = policy.filesystem
    for field in ("read", "write", "execute", "deny"):
        for i, _ in enumerate(getattr(fs, field)):
            assert policy.reasons[f"filesystem.{field}[{i}]"]


def test_bad_input_is_one_line_naming_the_file_and_json_path(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            {
                "kind": "cvg.observation",
                "schema_version": "1.0",
                "argv": ["x"],
                "cwd": "/",
                "events": [{"id": "e1", "syscall": "openat", "result": "ok"}],
            }
        )
    )
    r = _gen(str(bad))
    err = r.stderr.decode()
    assert r.returncode == 1 and r.stdout == b""
    assert err.count("\n") == 1 and f"{bad}: $.events[0].op" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("doc", "expect"),
    [
        ('{"kind": "cvg.observation", "schema_version": "2.0"}', "$.schema_version"),
        ('{"kind": "cvg.policy", "schema_version": "1.0", "version": 1}', "$.kind"),
        ("{not json", "not valid JSON"),
        ("", "empty input"),
    ],
)
def test_refused_documents(doc: str, expect: str) -> None:
    r = _gen(stdin=doc.encode())
    assert r.returncode == 1 and expect in r.stderr.decode() and r.stdout == b""
    assert r.stderr.decode().startswith("cvg-generate: <stdin>: ")


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--no-such-option"]) == 2
    assert main(["--verify"]) == 2
    assert main(["obs.json", "--", "true"]) == 2
    assert main(["--headroom", "0.5"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err


def test_several_documents_on_stdin_merge(observed: tuple[wl.Place, Path]) -> None:
    _, obs = observed
    one = obs.read_bytes()
    r = _gen("-q", stdin=one + b"\n" + one)
    assert r.returncode == 0, r.stderr
    policy = Policy.model_validate_json(r.stdout)
    names = {x.observation for rs in policy.reasons.values() for x in rs}
    assert names == {"<stdin>#1", "<stdin>#2"}


def test_out_writes_the_file_and_nothing_on_stdout(
    observed: tuple[wl.Place, Path], tmp_path: Path
) -> None:
    _, obs = observed
    out = tmp_path / "p.json"
    r = _gen(str(obs), "-q", "-o", str(out))
    assert r.returncode == 0 and r.stdout == b""
    Policy.model_validate_json(out.read_bytes())
    assert [p.name for p in tmp_path.iterdir()] == ["p.json"]  # no temporary left behind


def test_verify_holds_for_the_learned_command(observed: tuple[wl.Place, Path]) -> None:
    place, obs = observed
    inp = wl.Input({"tool.py": SCRIPT, "data/in.txt": "hi\n"}, [])
    place.reset(inp)
    r = subprocess.run(
        [wl.cvg("cvg-generate"), "-q", str(obs), "--verify", "--", wl.PYTHON, "tool.py"],
        cwd=place.work,
        env=place.env(),
        capture_output=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert b"the policy holds" in r.stderr
    Policy.model_validate_json(r.stdout)  # stdout is still the policy alone


PLANT = """
import sys
from cvg_generate.generate import Source, generate
from cvg_generate.verify import verify_policy
from cvg_schema import Policy
from cvg_schema.io import read_as
from cvg_schema import Observation
policy = generate([Source(read_as(Observation, sys.argv[1]))]).policy
data = policy.model_dump(mode="json", by_alias=True)
data["filesystem"]["read"] = [p for p in data["filesystem"]["read"] if p != "${CWD}"]
data["reasons"] = {}
sys.exit(verify_policy(Policy.model_validate(data), sys.argv[2:]))
"""


def _gaps_found(place: wl.Place, argv: list[str]) -> str:
    """Run a verification in ``place`` that must find a gap (exit 1); its stderr."""
    r = subprocess.run(argv, cwd=place.work, env=place.env(), capture_output=True, timeout=120)
    err = r.stderr.decode()
    assert r.returncode == 1, err
    return err


def test_verify_catches_a_planted_gap(observed: tuple[wl.Place, Path]) -> None:
    place, obs = observed
    inp = wl.Input({"tool.py": SCRIPT, "data/in.txt": "hi\n"}, [])
    place.reset(inp)
    err = _gaps_found(place, [sys.executable, "-c", PLANT, str(obs), wl.PYTHON, "tool.py"])
    assert "gap d" in err and "tool.py" in err and "refused by landlock_fs" in err
    assert "+    - " in err  # the smallest fix, a diff adding a read grant


def test_verify_reports_a_gap_of_another_input(observed: tuple[wl.Place, Path]) -> None:
    place, obs = observed
    place.reset(wl.Input({"tool.py": SCRIPT, "data/in.txt": "hi\n"}, []))
    outside = place.root / "elsewhere.txt"
    outside.write_text("x\n")
    code = f"print(open({str(outside)!r}).read())"
    bare = subprocess.run([wl.PYTHON, "-c", code], env=place.env(), capture_output=True)
    assert bare.returncode == 0 and bare.stdout == b"x\n\n"  # readable with no sandbox
    err = _gaps_found(
        place, [wl.cvg("cvg-generate"), "-q", str(obs), "--verify", "--", wl.PYTHON, "-c", code]
    )
    assert f"openat {outside} refused by landlock_fs (read_file)" in err
    assert f"+    - {outside}" in err


def test_the_design_pipeline_exactly_as_written(tmp_path: Path) -> None:
    # `python3` is whatever the caller's PATH finds first (here the test environment's
    # own, a symlink into another tree): the policy must find the same one again.
    work = tmp_path / "w"
    work.mkdir()
    (work / "tool.py").write_text("import json, sys\nprint(json.dumps(sys.argv))\n")
    env = {"PATH": f"{wl.BIN}:{wl.PATH}", "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    script = (
        "cvg-observe -- python3 tool.py | cvg-generate | cvg-validate > p.yaml\n"
        "cvg-run -p p.yaml -- python3 tool.py\n"
    )
    r = subprocess.run(["sh", "-ec", script], cwd=work, env=env, capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout == b'["tool.py"]\n'  # from cvg-run (cvg-observe sent the tool's to stderr)
    assert b'["tool.py"]' in r.stderr
    assert "# e1: " in (work / "p.yaml").read_text()


def test_a_newer_minor_version_is_read() -> None:
    doc = {
        "kind": "cvg.observation",
        "schema_version": "1.9",
        "partial": True,
        "events": [
            {"id": "e1", "op": "read", "syscall": "openat", "path": "/srv/x", "result": "ok"}
        ],
    }
    r = _gen(stdin=json.dumps(doc).encode())
    assert r.returncode == 0, r.stderr
    assert Policy.model_validate_json(r.stdout).filesystem.read == ["/srv/x"]


@pytest.mark.parametrize(
    ("command", "status", "words"),
    [("/no/such", 127, "was not found"), ("/etc/passwd", 126, "could not be executed")],
)
def test_verify_of_a_command_that_never_started_is_not_a_pass(
    observed: tuple[wl.Place, Path], command: str, status: int, words: str
) -> None:
    place, obs = observed
    r = subprocess.run(
        [wl.cvg("cvg-generate"), "-q", str(obs), "--verify", "--", command],
        cwd=place.work,
        env=place.env(),
        capture_output=True,
        timeout=120,
    )
    err = r.stderr.decode()
    assert r.returncode == status, err
    assert "the policy holds" not in err
    assert f"could not be started: {command} {words}" in err
    help_text = subprocess.run([wl.cvg("cvg-generate"), "--help"], capture_output=True).stdout
    assert b"125, 126, 127  --verify: the command could not be started" in help_text


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "-1", "1e400", str(10**30)])
def test_headroom_refuses_nan_inf_negative_and_huge(
    observed: tuple[wl.Place, Path], value: str
) -> None:
    _, obs = observed
    r = _gen("--headroom", value, str(obs))
    err = r.stderr.decode()
    assert r.returncode == 2 and r.stdout == b"", err
    assert len(err.splitlines()) == 1 and "--headroom" in err and "internal error" not in err


README = Path(__file__).resolve().parents[3] / "README.md"


def test_the_readme_learn_then_verify_lines_exactly_as_written(tmp_path: Path) -> None:
    """The README's learn line must write what its --verify line reads."""
    lines = README.read_text().splitlines()
    learn = next(x for x in lines if x.startswith("cvg-observe -- python3 tool.py |"))
    verify = next(x for x in lines if x.startswith("cvg-generate obs.json --verify"))
    script = "\n".join(x.split("#")[0].strip() for x in (learn, verify)) + "\n"
    work = tmp_path / "w"
    work.mkdir()
    (work / "tool.py").write_text("import json, sys\nprint(json.dumps(sys.argv))\n")
    env = {"PATH": f"{wl.BIN}:{wl.PATH}", "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    r = subprocess.run(["sh", "-ec", script], cwd=work, env=env, capture_output=True, timeout=180)
    err = r.stderr.decode()
    assert r.returncode == 0, err
    assert "verify: the policy holds" in err, err
    Policy.model_validate_json(r.stdout)  # the --verify line's policy
