"""Run cvg-run as it is used, on the real kernel, as root or as an unprivileged user.

Most tests call ``cvg_run.cli.main(argv)`` inside a forked child (the supervisor
sets itself as a child subreaper and kills every descendant it has, which must
never be pytest itself). The child may drop to the unprivileged user: the
python running pytest lives under /root (mode 0700), so nothing may be imported
after the drop. Everything main() reaches lazily is imported here, at the top,
and ``warm_up()`` runs the compile path once in the parent.

Some tests run the real ``cvg-run`` console script as a subprocess (as root).

Oracles are external to the code under test: the process table (/proc), files
the tool or its daemons write, and the exit status seen by waitpid.
"""

from __future__ import annotations

import codecs
import contextlib
import copy
import fcntl
import json
import os
import pwd
import secrets
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

# Imported for the forked child: main() imports the policy compiler lazily, and
# after dropping privileges the child can no longer read the stdlib under /root.
# warm_up() then runs the lazy paths once, for what these imports do not reach.
import cvg_kernel.paths_guard  # noqa: F401
import cvg_policy.compile
import cvg_policy.errors
import cvg_policy.load
import cvg_policy.variables  # noqa: F401
from cvg_kernel import process
from cvg_kernel.plan import prepare
from cvg_run import cli, planning, record, supervisor
from cvg_run.cli import main
from cvg_schema import RunRecord
from cvg_schema.io import loads_as
from cvg_testing import Tree, Under, drop_to, exit_child, stdio_from, tree_root

CVG_RUN = Path(sys.executable).parent / "cvg-run"
ABI_ENV = "CVG_LANDLOCK_ABI_MAX"
PY = "/usr/bin/python3"  # the tool's python: readable by every user, unlike pytest's

# The start of a tool script that tries steps and prints what came of each as one JSON
# line at the end (``print(json.dumps(out))``): a value, or an errno name.
STEPS = r"""
import errno, json, os, sys
out = {}
def step(name, fn):
    try:
        out[name] = fn()
    except OSError as e:
        out[name] = errno.errorcode.get(e.errno, str(e.errno))
def read(p):
    with open(p) as f:
        return f.read()
"""


# --- identities ---------------------------------------------------------------------


def uid_of(user: pwd.struct_passwd | None) -> int:
    return os.geteuid() if user is None else user.pw_uid


# --- a per-test world-writable box ---------------------------------------------------


@dataclass
class Box(Tree):
    """Directories any identity can use: HOME, XDG state and cache, a cwd, a share;
    TMPDIR is where cvg-run makes ${SCRATCH}, so kept ones go with the box."""

    share = Under("share")  # test policies grant write to it, for markers and pid files

    @property
    def env(self) -> dict[str, str | None]:
        return {**self.xdg_env(), ABI_ENV: None}

    def records(self) -> list[Path]:
        return sorted(self.runs.glob("*.json")) if self.runs.is_dir() else []


def make_box() -> Box:
    return Box(tree_root("cvg-run-test-", "share"))


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def default_policy() -> dict[str, Any]:
    data = yaml.safe_load(planning.default_policy_bytes())
    assert isinstance(data, dict)
    return data


def make_policy(where: Path, name: str = "policy.json", **sections: Any) -> Path:
    """The embedded default policy with ``sections`` merged in (lists replace),
    written as JSON (which is YAML) readable by every identity."""
    path = where / name
    path.write_text(json.dumps(_merge(default_policy(), sections), indent=1))
    path.chmod(0o644)
    return path


# --- running main() in a forked child ------------------------------------------------


@dataclass
class Ran:
    status: int | None  # waitpid status of the child; None if it had to be killed
    stdout: bytes
    stderr: bytes
    value: Any  # what the child function returned (JSON round-tripped)
    error: str | None  # traceback text if the child function raised
    timed_out: bool
    seconds: float

    @property
    def rc(self) -> int:
        """main()'s return value."""
        assert self.error is None, self.error
        assert not self.timed_out, f"timed out; stderr: {self.stderr.decode(errors='replace')}"
        assert isinstance(self.value, dict), self.value
        rc = self.value["rc"]
        assert isinstance(rc, int)
        return rc

    @property
    def after(self) -> Any:
        assert isinstance(self.value, dict), (self.value, self.error)
        return self.value.get("after")

    @property
    def err(self) -> str:
        return self.stderr.decode(errors="replace")

    @property
    def out(self) -> str:
        return self.stdout.decode(errors="replace")


@dataclass
class Started:
    pid: int
    out_r: int
    err_r: int
    rep_r: int
    t0: float = field(default_factory=time.monotonic)

    def signal(self, sig: int) -> None:
        os.kill(self.pid, sig)

    def finish(self, timeout: float = 60.0) -> Ran:
        """Collect the child's output and status; kill its whole tree at ``timeout``."""
        deadline = self.t0 + timeout
        bufs: dict[int, list[bytes]] = {self.out_r: [], self.err_r: [], self.rep_r: []}
        sel = selectors.DefaultSelector()
        for fd in bufs:
            sel.register(fd, selectors.EVENT_READ)
        timed_out = False
        try:
            while sel.get_map():
                left = deadline - time.monotonic()
                if left <= 0:
                    timed_out = True
                    break
                for key, _ in sel.select(min(left, 1.0)):
                    chunk = os.read(key.fd, 65536)
                    if chunk:
                        bufs[key.fd].append(chunk)
                    else:
                        sel.unregister(key.fd)
            status = None
            while not timed_out:
                pid, st = os.waitpid(self.pid, os.WNOHANG)
                if pid:
                    status = st
                    break
                if time.monotonic() > deadline:
                    timed_out = True
                    break
                time.sleep(0.01)
            if timed_out:
                _kill_tree_of(self.pid)
                os.waitpid(self.pid, 0)
        finally:
            sel.close()
            for fd in bufs:
                os.close(fd)
        report = b"".join(bufs[self.rep_r])
        payload = json.loads(report) if report else {}
        return Ran(
            status=status,
            stdout=b"".join(bufs[self.out_r]),
            stderr=b"".join(bufs[self.err_r]),
            value=payload.get("value"),
            error=payload.get("error"),
            timed_out=timed_out,
            seconds=time.monotonic() - self.t0,
        )


def _kill_tree_of(pid: int) -> None:
    for p in [*process.descendants(pid), pid]:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


def start(
    fn: Callable[[], Any],
    *,
    user: pwd.struct_passwd | None = None,
    env: Mapping[str, str | None] | None = None,
    stdin: bytes = b"",
) -> Started:
    """Fork; the child puts its stdio on pipes, sets ``env`` (None removes a name),
    drops to ``user`` and calls ``fn``; its JSON-able result comes back."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    rep_r, rep_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        code = 70
        try:
            # The report pipe goes high, out of the way of descriptors tests set up.
            rep = fcntl.fcntl(rep_w, fcntl.F_DUPFD_CLOEXEC, 200)
            close = (in_r, in_w, out_r, out_w, err_r, err_w, rep_r, rep_w)
            stdio_from(in_r, out_w, err_w, close=close)
            for name, value in (env or {}).items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
            tempfile.tempdir = None  # the parent's choice is cached; follow TMPDIR
            if user is not None:
                drop_to(user)
            try:
                payload: dict[str, Any] = {"value": fn()}
                code = 0
            except BaseException:  # noqa: BLE001 - a forked child never returns into the caller's code
                payload = {"error": traceback.format_exc()}
            data = json.dumps(payload).encode()
            while data:
                data = data[os.write(rep, data) :]
        except BaseException:  # noqa: BLE001 - a forked child never returns into the caller's code
            os.write(2, traceback.format_exc().encode())
        finally:
            exit_child(code)
    for fd in (in_r, out_w, err_w, rep_w):
        os.close(fd)
    os.write(in_w, stdin)
    os.close(in_w)
    return Started(pid, out_r, err_r, rep_r)


def run_main(
    argv: Sequence[str],
    *,
    box: Box,
    user: pwd.struct_passwd | None = None,
    env: Mapping[str, str | None] | None = None,
    before: Callable[[], None] | None = None,
    after: Callable[[int], Any] | None = None,
    timeout: float = 60.0,
    cwd: bool = True,
) -> Ran:
    """``main(["--cwd", box.cwd, *argv])`` in a forked child as ``user``.

    ``before`` runs in the child just before main (after the drop); ``after``
    gets main's status, still in the child, and its result comes back as
    ``Ran.after``: that is where "after main returned" checks go.
    """
    full = ["--cwd", str(box.cwd), *argv] if cwd else list(argv)

    def child() -> dict[str, Any]:
        if before is not None:
            before()
        rc = main(full)
        return {"rc": rc, "after": after(rc) if after is not None else None}

    return start(child, user=user, env={**box.env, **(env or {})}).finish(timeout)


def run_cli(
    argv: Sequence[str],
    *,
    box: Box,
    env: Mapping[str, str | None] | None = None,
    cwd: Path | None = None,
    timeout: float = 60.0,
) -> subprocess.CompletedProcess[bytes]:
    """The real console script, as a subprocess (as whoever runs pytest)."""
    return subprocess.run(
        [str(CVG_RUN), *argv],
        env=cli_env(box, env),
        cwd=cwd or box.cwd,
        capture_output=True,
        timeout=timeout,
        check=False,
    )


def cli_env(box: Box, extra: Mapping[str, str | None] | None = None) -> dict[str, str]:
    merged: dict[str, str | None] = {**os.environ, **box.env, **(extra or {})}
    return {k: v for k, v in merged.items() if v is not None}


# --- oracles --------------------------------------------------------------------------


def token() -> str:
    """A unique marker to put in a tool's command line, to find its processes later."""
    return "cvgtok" + secrets.token_hex(6)


def procs_with(marker: str) -> list[int]:
    """Live processes whose command line contains ``marker`` (zombies have none)."""
    out = []
    needle = marker.encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if needle in f.read():
                    out.append(int(entry))
        except OSError:
            continue
    return out


def proc_field(pid: int, name: str) -> str | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(name + ":"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return None


def session_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as f:
        stat = f.read()
    return int(stat[stat.rindex(b")") + 2 :].split()[3])


def wait_for(predicate: Callable[[], Any], timeout: float = 20.0, what: str = "") -> Any:
    end = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what or predicate}")
        time.sleep(0.01)


def load_record(path: str | os.PathLike[str]) -> tuple[dict[str, Any], RunRecord]:
    """The record as JSON and as validated by cvg_schema.RunRecord."""
    data = Path(path).read_bytes()
    return json.loads(data), loads_as(RunRecord, data)


def only_record(box: Box) -> tuple[dict[str, Any], RunRecord]:
    found = box.records()
    assert len(found) == 1, found
    return load_record(found[0])


# --- warming the parent ---------------------------------------------------------------


@contextlib.contextmanager
def environ(env: Mapping[str, str]) -> Iterator[None]:
    """``env`` set in os.environ for the block, everything restored after it."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def warm_up() -> None:
    """Run the lazy parts of main() once here, so a forked child that dropped
    privileges finds every module already imported."""
    box = make_box()
    try:
        with environ({"XDG_CACHE_HOME": str(box.cache), "XDG_STATE_HOME": str(box.state)}):
            policy = make_policy(
                box.share,
                network={"tcp_connect": [443], "tcp_bind": [8080], "udp": True, "unix": True},
                ipc={"signal_outside": True},
                resources={"processes": 10, "wall_clock_seconds": 5},
                syscalls={"allow": ["ptrace"]},
            )
            for path in (None, str(policy)):
                planned = planning.plan_for(path, cwd=str(box.cwd), home=str(box.home))
                prepare(planned.plan, {"SCRATCH": str(box.share), "CWD": str(box.cwd)}).close()
            for bad in ("version: [", "version: 1\nfilesystem: {read: [x]}\n", "{}"):
                (box.share / "bad.yaml").write_text(bad)
                try:
                    planning.plan_for(str(box.share / "bad.yaml"), cwd="/", home="/")
                except planning.PolicyRefused:
                    pass
            for encoding in ("utf-16", "utf-16-be", "utf-16-le", "utf-32", "utf-32-be",
                             "utf-32-le"):  # fmt: skip
                codecs.lookup(encoding)  # json.loads(bytes) may guess any of these
            cli._parser().parse_args(["-v", "--", "true"])
            record.dumps({"t": record._when(time.time()), "id": record.new_run_id()})
            supervisor.resolve_command("true", "/usr/bin")
            shutil.which("true")
    finally:
        shutil.rmtree(box.root, ignore_errors=True)


def bare_stdout(identity: pwd.struct_passwd | None, box: Box, argv: list[str]) -> str:
    """``argv`` with no sandbox, as ``identity``, in ``box``'s environment: its stdout
    (the first half of an attack: it works without cvg)."""

    def child() -> str:
        return subprocess.run(argv, capture_output=True, text=True, check=False).stdout

    ran = start(child, user=identity, env=box.env).finish()
    assert ran.error is None and isinstance(ran.value, str), ran.error
    return ran.value
