"""``cvg-mcp``: serve cvg to MCP clients, over stdio or streamable HTTP on loopback.

``main(argv)`` runs the command line and returns the exit status; ``run()`` is the
console script.
"""

from __future__ import annotations

import logging
import os
import secrets
import signal
import sys
from collections.abc import Sequence
from typing import Any, Final

import click

from . import __version__

PROG: Final = "cvg-mcp"
EXIT_OK: Final = 0
EXIT_USAGE: Final = 2
TOKEN_ENV: Final = "CVG_MCP_TOKEN"
# Each stream of each run in flight is held in memory up to --max-output, and the
# answer is one MCP message: a bound keeps a typo (or 1e30) from promising either.
MAX_OUTPUT_LIMIT: Final = 64 << 20


class _Usage(Exception):
    pass


def _err(line: str) -> None:
    sys.stderr.write(f"{PROG}: {line}\n")
    sys.stderr.flush()


@click.command(
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog="""\b
Exit status: 0 when the client closed the session; 128+N when stopped by signal N
(SIGTERM, SIGHUP: runs in flight are ended first); 2 for a usage error (one line on
stderr).

\b
A client configuration (Claude Desktop and other "mcpServers" clients):
  {"mcpServers": {"cvg": {"command": "cvg-mcp",
                          "args": ["--policies", "/etc/cvg/policies"]}}}
""",
)
@click.option(
    "--policies",
    "policies",
    required=True,
    metavar="DIR",
    help="The operator's policies. A client can name a policy in DIR (NAME, NAME.yaml, "
    "NAME.yml or NAME.json) and nothing else: absolute names, '..' and symlinks leading "
    "out of DIR are refused.",
)
@click.option(
    "--allow-inline-policy",
    is_flag=True,
    help="Also accept policy text from the client (it then chooses its own confinement).",
)
@click.option(
    "--allow-observe",
    is_flag=True,
    help="Offer the observe tool, which runs commands in the learning sandbox or, when "
    "asked, unconfined. Without this flag the tool does not exist.",
)
@click.option(
    "--allow-degraded",
    is_flag=True,
    help="Run policies this kernel cannot fully enforce (each degraded rule is in the run record).",
)
@click.option(
    "--cwd",
    "cwd",
    default=None,
    metavar="DIR",
    help="The working directory of runs, and ${CWD} in policies (default: this one).",
)
@click.option(
    "--max-output",
    "max_output",
    type=click.IntRange(min=1024, max=MAX_OUTPUT_LIMIT),
    default=256 * 1024,
    show_default=True,
    metavar="BYTES",
    help="Keep at most this much of each of stdout and stderr per run; the answer says "
    "when it was cut.",
)
@click.option(
    "--http",
    "http_port",
    type=click.IntRange(min=1, max=65535),
    default=None,
    metavar="PORT",
    help="Serve streamable HTTP on 127.0.0.1:PORT at /mcp instead of stdio. Each request "
    f"needs 'Authorization: Bearer TOKEN': ${TOKEN_ENV}, else a fresh token printed "
    "on stderr.",
)
@click.version_option(__version__, "-V", "--version", prog_name=PROG)
def cli(
    policies: str,
    allow_inline_policy: bool,
    allow_observe: bool,
    allow_degraded: bool,
    cwd: str | None,
    max_output: int,
    http_port: int | None,
) -> int:
    """Serve cvg as MCP tools: run_sandboxed, check_policy, generate_policy,
    explain_denials, list_policies (and observe with --allow-observe).

    Over stdio by default: an MCP client starts this command and talks to it on
    stdin and stdout; diagnostics go to stderr. Commands run in a warm sandbox per
    policy, so a call costs about what the Python API costs. A client that goes
    away mid-run leaves no process behind.
    """
    import anyio

    from .server import build, serve_stdio
    from .service import Service, Settings

    if not os.path.isdir(policies):
        raise _Usage(f"--policies {policies}: not a directory")
    where = os.path.abspath(cwd) if cwd else os.getcwd()
    if not os.path.isdir(where):
        raise _Usage(f"--cwd {cwd}: not a directory")
    settings = Settings(
        policies=policies,
        cwd=where,
        allow_inline_policy=allow_inline_policy,
        allow_observe=allow_observe,
        allow_degraded=allow_degraded,
        max_output=max_output,
    )
    service = Service(settings)
    # SIGTERM and SIGHUP end the server the way a closed session does: every sandbox
    # is closed and every run in flight ended.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _raise_exit)
    try:
        mcp = build(service, port=http_port or 0)
        if http_port is None:
            anyio.run(serve_stdio, mcp)
        else:
            _serve_http(mcp, http_port)
    except KeyboardInterrupt:
        pass
    finally:
        service.close()
    return EXIT_OK


def _raise_exit(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def _serve_http(mcp: Any, port: int) -> None:
    import anyio
    import uvicorn

    token = os.environ.get(TOKEN_ENV) or secrets.token_urlsafe(24)
    if not os.environ.get(TOKEN_ENV):
        _err(f"bearer token for this server: {token}")
    _err(f"serving MCP on http://127.0.0.1:{port}/mcp (loopback only)")
    logging.getLogger("mcp.server.streamable_http").addFilter(_closed_stream_noise)
    app = _BearerOnly(mcp.streamable_http_app(), token)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    anyio.run(uvicorn.Server(config).serve)


def _closed_stream_noise(record: logging.LogRecord) -> bool:
    """Drop the SDK's traceback for a stream a client closed when its session ended:
    that is the normal end of a session, not an error."""
    import anyio

    exc = record.exc_info[1] if record.exc_info else None
    return not isinstance(exc, anyio.ClosedResourceError)


class _BearerOnly:
    """Loopback is shared by every local user: each request must carry the token."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not secrets.compare_digest(given, self.expected):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"text/plain")],
                    }
                )
                await send({"type": "http.response.body", "body": b"bearer token required\n"})
                return
        await self.app(scope, receive, send)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        rc = cli.main(
            args=list(sys.argv[1:] if argv is None else argv),
            prog_name=PROG,
            standalone_mode=False,
        )
    except _Usage as e:
        _err(str(e))
        return EXIT_USAGE
    except click.exceptions.Exit as e:
        return int(e.exit_code)
    except click.ClickException as e:
        _err(e.format_message())
        return EXIT_USAGE
    except click.exceptions.Abort:
        return 130
    return int(rc or 0)


def run() -> None:
    sys.exit(main())
