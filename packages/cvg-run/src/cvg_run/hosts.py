"""network.hosts for one run: start the proxy, patch the plan, collect the log.

The compiled plan grants no TCP port for hosts (the proxy's port is only known
per run), so cvg-run patches a copy of the loaded plan before ``prepare``: one
Landlock connect rule for the proxy's port, and the proxy variables in the
tool's environment. The plan cache keeps the unpatched plan.

``CVG_RUN_HOSTS_FILE`` in cvg-run's own environment (never the tool's) names a
hosts(5) file the proxy then resolves from, and nothing else: no DNS at all.
Tests map names to loopback addresses with it; an air-gapped host can too.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping, Sequence

from .planning import Planned, plan_digest
from .proxy import Allowlist, Proxy, hosts_file_resolver

TYPE_CHECKING = False  # not typing's: importing typing costs every cold start
if TYPE_CHECKING:
    from typing import Any

HOSTS_FILE_VARIABLE = "CVG_RUN_HOSTS_FILE"
PROXY_VARIABLES = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY")


class HostsProxy:
    """The proxy of one run. Use as a context manager, or call ``stop()``."""

    def __init__(self, hosts: Sequence[Mapping[str, Any]], *, hosts_file: str | None = None):
        allow = Allowlist((str(h["host"]), [int(p) for p in h["ports"]]) for h in hosts)
        resolver = hosts_file_resolver(hosts_file) if hosts_file else None
        self.proxy = Proxy(allow, resolver=resolver).start()
        self.port = self.proxy.port

    def __enter__(self) -> HostsProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self.proxy.stop()

    def env(self) -> dict[str, str]:
        """The variables the tool gets, in both cases: tools differ in which they read
        (curl reads only lower-case http_proxy), and NO_PROXY empty sends everything
        through the proxy (a direct connection would be refused anyway)."""
        http = f"http://127.0.0.1:{self.port}"
        values = {
            "HTTPS_PROXY": http,
            "HTTP_PROXY": http,
            "ALL_PROXY": f"socks5h://127.0.0.1:{self.port}",
            "NO_PROXY": "",
        }
        out: dict[str, str] = {}
        for name, value in values.items():
            out[name] = value
            out[name.lower()] = value
        return out

    def patch(self, plan: Mapping[str, Any]) -> dict[str, Any]:
        """A copy of ``plan`` that lets the tool connect to the proxy's port, with the
        proxy variables set (they replace any the policy set)."""
        out = copy.deepcopy(dict(plan))
        landlock = out.setdefault("landlock", {})
        rules = landlock.setdefault("net_rules", [])
        for rule in rules:
            if rule.get("port") == self.port:
                rule["access"] = sorted({*rule.get("access", []), "connect_tcp"})
                break
        else:
            # Below ABI 4 the plan handles no network rights and a rule would be
            # refused; the compiler has already listed network.hosts as degraded.
            handled = landlock.get("handled_net", "all")
            if handled == "all" or "connect_tcp" in handled:
                rules.append({"port": self.port, "access": ["connect_tcp"]})
        env = out.setdefault("environment", {})
        env_set = env.setdefault("set", {})
        proxy_env = self.env()
        env["pass"] = [n for n in env.get("pass", []) if n not in proxy_env]
        env_set.update(proxy_env)
        return out

    def patched(self, planned: Planned) -> Planned:
        """``planned`` with the patched plan, and the digest of that plan: the record
        carries the plan that was applied, proxy port included."""
        plan = self.patch(planned.plan)
        return Planned(
            plan,
            plan_digest(plan),
            planned.policy_digest,
            planned.policy_path,
            planned.cached,
            planned.hosts,
        )

    def record_fields(self) -> dict[str, Any]:
        """What the run record gains: the proxy's log (stop the proxy first)."""
        entries, omitted = self.connections()
        out: dict[str, Any] = {"connections": entries}
        if omitted:
            out["connections_omitted"] = omitted
        return out

    def connections(self) -> tuple[list[dict[str, Any]], int]:
        """The proxy's log for the record (after ``stop()``): entries and how many
        more were left out."""
        return [dict(e) for e in self.proxy.log], self.proxy.omitted


def start(hosts: Sequence[Mapping[str, Any]]) -> HostsProxy:
    """Start the proxy for a plan's network.hosts (see ``planning.Planned.hosts``)."""
    return HostsProxy(hosts, hosts_file=os.environ.get(HOSTS_FILE_VARIABLE) or None)
