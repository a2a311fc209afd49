"""What each MCP tool does. A warm run is driven on the event loop; everything else
is a blocking call (or a job that can be ended early) the server runs in a thread.

Every answer is a JSON-ready dict. A refusal (the operator did not allow it, or the
input is bad) raises :class:`Refused` with one line for the agent; a piece of cvg
that is missing or failed raises :class:`Unavailable`. Nothing here fakes a result.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
import anyio.to_thread

from cvg_run import record as run_record
from cvg_run.api import SandboxError

from .policies import Chosen, PolicyDir, Refused
from .runs import Child, Outcome, Run, Stream
from .sandboxes import Pool

DEFAULT_MAX_OUTPUT: Final = 256 * 1024
MAX_STDIN: Final = 16 << 20
MAX_OBSERVATION: Final = 64 << 20
MAX_REMEMBERED: Final = 4096
# A run's argv goes to the sandbox helper in one SOCK_SEQPACKET datagram, which the
# kernel caps at the socket's send buffer (net.core.wmem_default: 208 KiB by default),
# and execve refuses any one argument over 128 KiB (MAX_ARG_STRLEN). Below both, so an
# oversized request is refused by name before it reaches the helper.
MAX_ARGV_BYTES: Final = 128 << 10
RUN_ID: Final = re.compile(r"[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}")
# Each piece runs as its own command line, from the interpreter this server runs on.
_CLI: Final = "import sys; from {mod} import main; sys.exit(main(sys.argv[1:]))"


class Unavailable(Exception):
    """A piece of cvg this tool needs is missing, not built, or failed. One line."""


@dataclass
class Settings:
    policies: str
    cwd: str
    allow_inline_policy: bool = False
    allow_observe: bool = False
    allow_degraded: bool = False
    max_output: int = DEFAULT_MAX_OUTPUT
    python: str | None = None


@dataclass
class RunRequest:
    chosen: Chosen
    argv: list[str]
    stdin: bytes | None
    timeout: float | None
    cwd: str
    trace: bool


@dataclass
class _Made:
    """A run this server made: its record and its policy."""

    record: dict[str, Any]
    policy_text: str | None
    policy_path: str | None


@dataclass
class Service:
    settings: Settings
    pool: Pool = field(init=False)
    dir: PolicyDir = field(init=False)
    _runs: dict[str, _Made] = field(default_factory=dict, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _facts: Any = field(default=None, init=False)

    def __post_init__(self) -> None:
        s = self.settings
        self.dir = PolicyDir(s.policies, allow_inline=s.allow_inline_policy)
        self.pool = Pool(
            cwd=s.cwd,
            allow_degraded=s.allow_degraded,
            python=s.python,
            guard=self.dir.directory,
        )

    def close(self) -> None:
        self.pool.close()

    # --- run_sandboxed -----------------------------------------------------------------

    def check_run(
        self,
        policy: str,
        argv: Any,
        stdin: str | None = None,
        timeout: float | None = None,
        cwd: str | None = None,
        trace: bool = False,
    ) -> RunRequest:
        """The request, checked: raises Refused for anything the rules refuse."""
        args = _argv(argv)
        chosen = self.dir.choose(policy)
        data = None if stdin is None else stdin.encode("utf-8")
        if data is not None and len(data) > MAX_STDIN:
            raise Refused(f"stdin: larger than {MAX_STDIN} bytes")
        if timeout is not None and not (isinstance(timeout, int | float) and timeout > 0):
            raise Refused("timeout: must be a positive number of seconds")
        where = self._cwd(cwd)
        if trace and where != self.settings.cwd:
            raise Refused(
                "cwd: a traced run starts in the server's working directory; drop cwd or trace"
            )
        return RunRequest(chosen, args, data, timeout, where, trace)

    async def run_warm(self, req: RunRequest) -> dict[str, Any]:
        """Run through the policy's warm sandbox, from the event loop."""
        try:
            entry = self.pool.acquire_warm(req.chosen)
            if entry is None:
                entry = await anyio.to_thread.run_sync(self.pool.acquire, req.chosen)
        except SandboxError as e:
            raise Refused(f"policy {req.chosen.name!r}: {e}") from None
        try:
            if entry.refusal is not None:
                raise Refused(f"policy {req.chosen.name!r}: {entry.refusal}")
            run = Run(
                entry.box,
                req.argv,
                stdin=req.stdin,
                timeout=req.timeout,
                cwd=req.cwd,
                cap=self.settings.max_output,
            )
            outcome = await run.go()
        except SandboxError as e:
            self.pool.discard(entry)
            raise Unavailable(f"policy {req.chosen.name!r}: {e}") from None
        finally:
            self.pool.release(entry)
        return self._answer(req.chosen, outcome, traced_asked=False)

    def traced_job(self, req: RunRequest) -> _Job:
        """A traced run, as a blocking job for a worker thread."""

        def go(job: _Job) -> dict[str, Any]:
            # The warm sandbox is not used to run, but its plan says what the run may write.
            try:
                entry = self.pool.acquire(req.chosen)
            except SandboxError as e:
                raise Refused(f"policy {req.chosen.name!r}: {e}") from None
            try:
                if entry.refusal is not None:
                    raise Refused(f"policy {req.chosen.name!r}: {entry.refusal}")
            finally:
                self.pool.release(entry)
            return self._traced(job, req.chosen, req.argv, req.stdin, req.timeout)

        return _Job(go)

    def _cwd(self, cwd: str | None) -> str:
        if cwd is None or cwd == "":
            return self.settings.cwd
        if not isinstance(cwd, str) or "\0" in cwd:
            raise Refused("cwd: must be a directory path")
        # Only where the tool starts: ${CWD} in the policy stays the server's directory.
        path = os.path.normpath(os.path.join(self.settings.cwd, cwd))
        if not os.path.isdir(path):
            raise Refused(f"cwd: {cwd!r} is not a directory")
        return path

    def _traced(
        self,
        job: _Job,
        chosen: Chosen,
        argv: list[str],
        stdin: bytes | None,
        timeout: float | None,
    ) -> dict[str, Any]:
        # The warm helper cannot trace, so a traced call is a cold cvg-run --trace.
        private = tempfile.mkdtemp(prefix="cvg-mcp-trace-")
        try:
            policy_path = chosen.path
            if policy_path is None:
                policy_path = os.path.join(private, "inline.yaml")
                with open(policy_path, "wb") as f:
                    f.write(chosen.data)
            rec_path = os.path.join(private, "run.json")
            cmd = [*self._cli("cvg_run.cli"), "--trace", "--record", rec_path, "-p", policy_path]
            if self.settings.allow_degraded:
                cmd.append("--allow-degraded")
            cmd += ["--", *argv]
            child = Child(cmd, stdin=stdin, cwd=self.settings.cwd, cap=self.settings.max_output)
            job.cancel_hook = child.cancel
            if job.cancelled:
                child.cancel()
            # cvg-run has no per-run wall clock option: the timeout ends it from here.
            fired = threading.Event()

            def expire() -> None:
                fired.set()
                child.cancel()

            timer = None if timeout is None else threading.Timer(timeout, expire)
            if timer is not None:
                timer.start()
            try:
                status, out, err = child.go()
            finally:
                if timer is not None:
                    timer.cancel()
            try:
                with open(rec_path, "rb") as saved:
                    rec = json.load(saved)
            except (OSError, ValueError):
                message = _last_line(err)
                if "not available" in message:
                    raise Unavailable(f"trace is not available: {message}") from None
                raise Refused(
                    f"policy {chosen.name!r}: cvg-run did not run the command "
                    f"(exit {status}): {message}"
                ) from None
            # Where cvg-explain --run ID looks, as cvg-run itself would have put it.
            try:
                where = os.path.join(run_record.state_dir(), f"{rec['run_id']}.json")
                run_record.write_atomic(where, run_record.dumps(rec))
            except OSError:
                pass  # explain_denials still has it in memory
            else:
                try:
                    limits = run_record.bounds()
                except ValueError:
                    limits = run_record.Bounds()  # cvg-run says so; the service keeps serving
                run_record.prune(os.path.dirname(where), where, limits)
            outcome = Outcome(rec, out, err, job.cancelled)
            answer = self._answer(chosen, outcome, traced_asked=True)
            if fired.is_set() and not job.cancelled:
                answer.setdefault("notes", []).append(
                    f"the timeout ({timeout} s) ended the traced run (cvg-run was told to stop)"
                )
            return answer
        finally:
            shutil.rmtree(private, ignore_errors=True)

    def _answer(self, chosen: Chosen, outcome: Outcome, traced_asked: bool) -> dict[str, Any]:
        rec = outcome.record
        run_id = str(rec["run_id"])
        self._keep(chosen, rec)
        answer: dict[str, Any] = {
            "run_id": run_id,
            "status": outcome.status,
            "meaning": rec["exit"].get("meaning"),
        }
        if rec["exit"].get("detail"):
            answer["detail"] = rec["exit"]["detail"]
        answer.update(_stream("stdout", outcome.stdout, self.settings.max_output))
        answer.update(_stream("stderr", outcome.stderr, self.settings.max_output))
        answer["traced"] = bool(rec.get("traced"))
        notes = []
        if outcome.cancelled:
            notes.append("the call was cancelled: the run was ended early")
        if traced_asked and not rec.get("traced"):
            notes.append(
                "tracing was asked for, but this cvg-run did not trace the run: no denials "
                "were recorded, and a refusal may still have happened"
            )
        recorded = rec.get("denials") or []
        # mechanism "none": the call failed for a reason of its own, not the sandbox's.
        denials = [d for d in recorded if d.get("mechanism") not in (None, "none")]
        if rec.get("traced"):
            answer["denials"] = self._denials(run_id, denials) if denials else []
            others = len(recorded) - len(denials)
            if others:
                notes.append(
                    f"{others} failed call(s) were not the sandbox's doing (mechanism none); "
                    "explain_denials lists them"
                )
        if denials:
            notes.append(
                f"the cvg sandbox refused {len(denials)} operation(s): these are policy "
                "refusals, not bugs in the command; ask the operator to change the policy "
                "(each denial names the rule and, when cvg-explain gives one, the fix)"
            )
        if notes:
            answer["notes"] = notes
        return answer

    def _keep(self, chosen: Chosen, rec: dict[str, Any]) -> None:
        """Remember the run as ours, for explain_denials."""
        run_id = str(rec["run_id"])
        text = chosen.data.decode("utf-8", "replace") if chosen.path is None else None
        with self._lock:
            self._runs[run_id] = _Made(rec, text, chosen.path)
            while len(self._runs) > MAX_REMEMBERED:
                del self._runs[next(iter(self._runs))]

    def _denials(self, run_id: str, denials: list[dict[str, Any]]) -> list[dict[str, Any]]:
        fixes: dict[str, dict[str, Any]] = {}
        try:
            explained = self.explain_denials(run_id)
            for item in explained.get("denials", []):
                did = (item.get("denial") or {}).get("id")
                if did:
                    fixes[did] = item
        except (Refused, Unavailable):
            pass
        out = []
        for d in denials:
            item = {"refused_by": "cvg sandbox", **d}
            ex = fixes.get(str(d.get("id")))
            if ex is not None:
                for key in ("cause", "fix", "risk"):
                    if ex.get(key) is not None:
                        item[key] = ex[key]
            out.append(item)
        return out

    # --- check_policy ------------------------------------------------------------------

    def check_policy(self, policy: str) -> dict[str, Any]:
        from cvg_policy.checks import check, errors
        from cvg_policy.errors import PolicyError
        from cvg_policy.explain import explain_policy, report_dict
        from cvg_policy.load import load_policy
        from cvg_policy.variables import context

        chosen = self.dir.choose(policy)
        shown = chosen.name if chosen.path is not None else "<inline>"
        try:
            loaded = load_policy(chosen.data, filename=shown)
        except PolicyError as e:
            return {"policy": chosen.name, "valid": False, "errors": [str(e)], "warnings": []}
        policy_dir = os.path.dirname(chosen.path) if chosen.path else self.settings.cwd
        variables = context(cwd=self.settings.cwd, policy_dir=policy_dir)
        facts = self._kernel_facts()
        findings = check(
            loaded, variables=variables, arch=facts.arch, abi=facts.effective_landlock_abi
        )
        bad = errors(findings)
        answer: dict[str, Any] = {
            "policy": chosen.name,
            "valid": not bad,
            "errors": [str(f) for f in bad],
            "warnings": [str(f) for f in findings if f.severity != "error"],
        }
        if bad:
            return answer
        try:
            report = explain_policy(
                loaded.policy, facts=facts, variables=variables, policy_path=chosen.path
            )
        except PolicyError as e:
            answer.update(valid=False, errors=[str(e)])
            return answer
        answer["enforcement"] = report_dict(report)
        return answer

    def _kernel_facts(self) -> Any:
        # Probing forks throwaway children: once per server is enough.
        with self._lock:
            if self._facts is None:
                try:
                    from cvg_probe import probe
                except ImportError as e:
                    raise Unavailable(f"cvg-probe is not installed: {e}") from None
                self._facts = probe()
            return self._facts

    # --- generate_policy ---------------------------------------------------------------

    def generate_policy(self, observation: Any) -> dict[str, Any]:
        if isinstance(observation, str):
            text = observation
        elif isinstance(observation, dict | list):
            text = json.dumps(observation)
        else:
            raise Refused("observation: give a cvg.observation (a JSON object or its text)")
        data = text.encode("utf-8")
        if len(data) > MAX_OBSERVATION:
            raise Refused(f"observation: larger than {MAX_OBSERVATION} bytes")
        child = Child(
            self._cli("cvg_generate.cli"),
            stdin=data,
            cwd=self.settings.cwd,
            cap=MAX_OBSERVATION,
        )
        status, out, err = child.go()
        message = _last_line(err)
        if status == 0:
            try:
                policy = json.loads(bytes(out.data))
            except ValueError:
                raise Unavailable("cvg-generate wrote something that is not JSON") from None
            return {"policy": policy}
        if "not built yet" in message:
            raise Unavailable(f"generate_policy is not available: {message}")
        raise Refused(f"cvg-generate refused the observation (exit {status}): {message}")

    # --- explain_denials ---------------------------------------------------------------

    def explain_denials(self, run_id: str) -> dict[str, Any]:
        if not isinstance(run_id, str) or not RUN_ID.fullmatch(run_id):
            raise Refused("run_id: not a run id (as run_sandboxed returns it)")
        with self._lock:
            made = self._runs.get(run_id)
        if made is None:
            raise Refused(f"run {run_id}: not a run made through this server")
        try:
            import cvg_explain
        except ImportError as e:
            raise Unavailable(f"cvg-explain is not installed: {e}") from None
        explain = getattr(cvg_explain, "explain", None)
        if explain is None:
            raise Unavailable("explain_denials is not available: cvg-explain is not built yet")
        from cvg_schema import RunRecord
        from cvg_schema.io import loads_as

        try:
            rec = loads_as(RunRecord, json.dumps(made.record))
        except ValueError as e:
            raise Unavailable(f"run {run_id}: its record is not a valid cvg.run: {e}") from None
        try:
            result = explain(rec, policy_text=made.policy_text, policy_path=made.policy_path)
        except Exception as e:  # noqa: BLE001 - cvg-explain's own failure, said in one line
            raise Unavailable(f"cvg-explain failed on run {run_id}: {e}") from None
        dumped: dict[str, Any] = result.model_dump(mode="json", exclude_none=True)
        return dumped

    # --- observe -----------------------------------------------------------------------

    def observe_job(self, argv: Any, stdin: str | None = None, unconfined: bool = False) -> _Job:
        """Watch a command with cvg-observe, as a blocking job for a worker thread."""
        if not self.settings.allow_observe:
            raise Refused(
                "observe is not allowed here: the operator must start cvg-mcp with "
                "--allow-observe (observe runs commands in the learning sandbox, or "
                "unconfined)"
            )
        args = _argv(argv)
        data = None if stdin is None else stdin.encode("utf-8")
        cmd = [*self._cli("cvg_observe.cli"), *(["--unconfined"] if unconfined else []), "--"]
        cap = self.settings.max_output

        def go(job: _Job) -> dict[str, Any]:
            child = Child([*cmd, *args], stdin=data, cwd=self.settings.cwd, cap=MAX_OBSERVATION)
            job.cancel_hook = child.cancel
            if job.cancelled:
                child.cancel()
            status, out, err = child.go()
            answer: dict[str, Any] = {"status": status}
            try:
                answer["observation"] = json.loads(bytes(out.data))
            except ValueError:
                answer["observation"] = None
            # The tool's own stdout went to stderr, after cvg-observe's diagnostics.
            answer.update(_stream("stderr", err, cap))
            if answer["observation"] is None:
                answer["notes"] = ["no observation was made: " + _last_line(err)]
            return answer

        return _Job(go)

    def _cli(self, module: str) -> list[str]:
        return [self.settings.python or sys.executable, "-c", _CLI.format(mod=module)]


class _Job:
    """A blocking call that another thread can cancel while it runs."""

    def __init__(self, fn: Callable[[_Job], dict[str, Any]]) -> None:
        self._fn = fn
        self.cancelled = False
        self.cancel_hook: Callable[[], object] | None = None

    def __call__(self) -> dict[str, Any]:
        return self._fn(self)

    def cancel(self) -> None:
        self.cancelled = True
        hook = self.cancel_hook
        if hook is not None:
            hook()


def _argv(argv: Any) -> list[str]:
    if isinstance(argv, str):
        raise Refused("argv: a list of strings is required, never a shell string")
    if not isinstance(argv, Sequence) or not argv:
        raise Refused("argv: must be a non-empty list of strings")
    for i, a in enumerate(argv):
        if not isinstance(a, str):
            raise Refused(f"argv[{i}]: must be a string, not {type(a).__name__}")
        if "\0" in a:
            raise Refused(f"argv[{i}]: contains a NUL byte")
    if not argv[0]:
        raise Refused("argv[0]: the command is empty")
    # Measured as sent (JSON, escapes included), which is never less than the bytes
    # execve would get.
    size = len(json.dumps(list(argv)))
    if size > MAX_ARGV_BYTES:
        raise Refused(
            f"argv: the request is too large: {size} bytes, over the limit of "
            f"{MAX_ARGV_BYTES} bytes (128 KiB) for a command line; pass large data on stdin"
        )
    return list(argv)


def _stream(name: str, s: Stream, cap: int) -> dict[str, Any]:
    raw = bytes(s.data)
    text = raw.decode("utf-8", "replace")
    out: dict[str, Any] = {name: text}
    if s.truncated:
        out[f"{name}_truncated"] = True
        out[f"{name}_bytes"] = s.total
        out[name] = text + f"\n[cvg-mcp: {name} truncated: {s.total} bytes, first {cap} shown]"
    return out


def _last_line(err: Stream) -> str:
    lines = bytes(err.data).decode("utf-8", "replace").strip().splitlines()
    return lines[-1] if lines else "no message"
