"""The MCP server: cvg's pieces as MCP tools, on the official SDK's FastMCP.

Each tool is async and hands its blocking work to a worker thread, so calls run
concurrently. When a call is cancelled (the client cancelled it, or went away and
the transport closed) the run it started is ended at once rather than left to its
wall clock: nothing a client started outlives its call.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import anyio
import anyio.to_thread
from mcp.server.fastmcp import FastMCP
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from .policies import Refused
from .service import Service, Unavailable

# Calls running at once (warm runs and threaded work alike); more wait their turn.
MAX_CONCURRENT = 32
# How often an early end is asked again while the run it targets is still starting.
_CANCEL_RETRY = 0.05

INSTRUCTIONS = """\
cvg runs commands under a least-privilege policy the Linux kernel enforces
(Landlock, seccomp, no_new_privs, rlimits). The operator chose the policies: name
one of them (list_policies). A command is an argv list, never a shell string.
When a run is traced and the sandbox refused something, the result lists each
refusal under "denials", marked "refused_by": "cvg sandbox", with the rule that
would grant it and, when available, the smallest fix: that is a policy decision
for the operator, not a bug to work around.
"""


def _result(answer: dict[str, Any]) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(answer))],
        structuredContent=answer,
        isError=False,
    )


def _error(kind: str, message: str) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=f"{kind}: {message}")],
        structuredContent={"error": kind, "message": message},
        isError=True,
    )


class _Calls:
    """Turns a tool's work into its MCP result: blocking work goes to a worker thread
    (ended if the awaiting task is cancelled); refusals become error results."""

    def __init__(self, limiter: anyio.CapacityLimiter) -> None:
        self.limiter = limiter

    async def answer(self, work: Callable[[], Awaitable[dict[str, Any]]]) -> CallToolResult:
        try:
            return _result(await work())
        except Refused as e:
            return _error("refused", str(e))
        except Unavailable as e:
            return _error("unavailable", str(e))

    async def in_thread(self, job: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        done = threading.Event()

        def work() -> dict[str, Any]:
            try:
                return job()
            finally:
                done.set()

        try:
            return await anyio.to_thread.run_sync(
                work, abandon_on_cancel=True, limiter=self.limiter
            )
        except anyio.get_cancelled_exc_class():
            # The job may not have started its command yet: keep asking until it is
            # over, from a thread that does not depend on this task.
            threading.Thread(target=_end, args=(job, done), daemon=True).start()
            raise


def _end(job: Any, done: threading.Event) -> None:
    cancel = getattr(job, "cancel", None)
    if cancel is None:
        return  # nothing it does outlives it
    while not done.is_set():
        cancel()
        done.wait(_CANCEL_RETRY)


def _argv_field(description: str) -> Any:
    # Declared to clients as a list of strings, but checked here rather than by the
    # SDK's model, so a wrong argv gets cvg's one-line refusal, not a validation dump.
    return Field(
        description=description,
        json_schema_extra={"type": "array", "items": {"type": "string"}, "minItems": 1},
    )


def build(service: Service, *, port: int = 0) -> FastMCP:
    """The FastMCP server for ``service`` (loopback only, when served over HTTP)."""
    mcp = FastMCP(
        "cvg", instructions=INSTRUCTIONS, host="127.0.0.1", port=port, log_level="WARNING"
    )
    calls = _Calls(anyio.CapacityLimiter(MAX_CONCURRENT))
    readonly = ToolAnnotations(readOnlyHint=True, openWorldHint=False)

    @mcp.tool(annotations=readonly)
    async def list_policies() -> CallToolResult:
        """The policies the operator allows, by name (use one as `policy`)."""

        def names() -> dict[str, Any]:
            return {
                "policies": service.dir.names(),
                "inline_policy_allowed": service.settings.allow_inline_policy,
            }

        return await calls.answer(lambda: calls.in_thread(names))

    @mcp.tool(annotations=ToolAnnotations(destructiveHint=True, openWorldHint=False))
    async def run_sandboxed(
        policy: Annotated[str, Field(description="A policy name from list_policies.")],
        argv: Annotated[Any, _argv_field('The command as a list: ["python3", "tool.py"].')],
        stdin: Annotated[str | None, Field(description="Text fed to the command.")] = None,
        timeout: Annotated[
            float | None, Field(description="Seconds before the run is ended (status 124).")
        ] = None,
        cwd: Annotated[
            str | None, Field(description="Where the command starts (default: the server's).")
        ] = None,
        trace: Annotated[
            bool, Field(description="Record each sandbox refusal (slower: a cold traced run).")
        ] = False,
    ) -> CallToolResult:
        """Run a command confined by a policy the operator chose. Returns the exit
        status and its meaning, stdout, stderr (each capped; truncation is said), and
        the run id for explain_denials. With trace, each sandbox refusal is listed
        under "denials" with the rule that would grant it."""

        async def work() -> dict[str, Any]:
            req = service.check_run(policy, argv, stdin, timeout, cwd, trace)
            if req.trace:
                return await calls.in_thread(service.traced_job(req))
            async with calls.limiter:
                return await service.run_warm(req)

        return await calls.answer(work)

    @mcp.tool(annotations=readonly)
    async def check_policy(
        policy: Annotated[str, Field(description="A policy name from list_policies.")],
    ) -> CallToolResult:
        """Validate a policy and say, rule by rule, what this kernel enforces of it."""
        return await calls.answer(lambda: calls.in_thread(lambda: service.check_policy(policy)))

    @mcp.tool(annotations=readonly)
    async def generate_policy(
        observation: Annotated[
            dict[str, Any] | str, Field(description="A cvg.observation (from observe).")
        ],
    ) -> CallToolResult:
        """Write a least-privilege policy from an observation, a reason for each rule.
        The operator decides whether to adopt it."""
        return await calls.answer(
            lambda: calls.in_thread(lambda: service.generate_policy(observation))
        )

    @mcp.tool(annotations=readonly)
    async def explain_denials(
        run_id: Annotated[str, Field(description="The run_id run_sandboxed returned.")],
    ) -> CallToolResult:
        """Explain each refusal of a traced run: cause, rule, smallest fix, risk."""
        return await calls.answer(lambda: calls.in_thread(lambda: service.explain_denials(run_id)))

    if service.settings.allow_observe:

        @mcp.tool(annotations=ToolAnnotations(destructiveHint=True, openWorldHint=True))
        async def observe(
            argv: Annotated[Any, _argv_field("The command as a list.")],
            stdin: Annotated[str | None, Field(description="Text fed to the command.")] = None,
            unconfined: Annotated[
                bool, Field(description="No learning sandbox at all (trusted code only).")
            ] = False,
        ) -> CallToolResult:
            """Watch a command under strace, in the learning sandbox (or unconfined),
            and return the cvg.observation for generate_policy."""
            return await calls.answer(
                lambda: calls.in_thread(service.observe_job(argv, stdin, unconfined))
            )

    return mcp


async def serve_stdio(mcp: FastMCP) -> None:
    """Serve one session on stdin and stdout through the SDK's stdio transport, fed
    by non-blocking streams (see stdio.py)."""
    from mcp.server.stdio import stdio_server

    from .stdio import BadInput, LineReader, Writer, drop_bad_input, nonblocking

    low = mcp._mcp_server  # what FastMCP.run_stdio_async runs, minus the thread hops
    with nonblocking(0, 1):
        reader, writer = LineReader(0), Writer(1)
        async with stdio_server(reader, writer) as (read_stream, write_stream):  # type: ignore[arg-type]
            sink, messages = anyio.create_memory_object_stream[Any](0)
            async with anyio.create_task_group() as tg:
                tg.start_soon(drop_bad_input, read_stream, sink, BadInput())
                await low.run(messages, write_stream, low.create_initialization_options())
