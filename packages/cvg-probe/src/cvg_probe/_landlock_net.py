"""The Landlock network and scope probes: TCP connect and bind by port, and the
signal and abstract-socket scopes, each seen working before restriction and
denied after."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from typing import Any

from cvg_kernel import landlock
from cvg_schema import Feature

from ._fork import Outcome, Send
from ._group import Group, Spec, check, outcome_of
from ._landlock import LandlockState, restrict
from ._landlock_fs import connect_unix

LOOPBACK = "127.0.0.1"
NET_CONNECT = Spec(
    "landlock.net.connect_tcp",
    "connect() to a loopback listener: OK on the granted port, EACCES on another port that "
    "accepted the same connect before restriction",
    4,
)
NET_BIND = Spec(
    "landlock.net.bind_tcp",
    "bind() on loopback: OK on the granted port, EACCES on another port that bound fine "
    "before restriction",
    4,
)


def _tcp(addr: tuple[str, int], *, bind: bool) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        if bind:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(addr)
        else:
            s.connect(addr)


class LandlockNetGroup(Group):
    name = "landlock.net"
    specs = (NET_CONNECT, NET_BIND)

    def __init__(self, state: LandlockState) -> None:
        self.socks: list[socket.socket] = []
        self.ruleset: landlock.Ruleset | None = None
        try:
            self.listen_ok = self._listener()
            self.listen_no = self._listener()
            # Reserved (SO_REUSEADDR, not listening) so the child can bind them, and
            # nobody else can take them meanwhile.
            self.bind_ok = self._reserved()
            self.bind_no = self._reserved()
            self.ruleset = landlock.Ruleset.build(
                handled_fs=[],
                handled_net="all",
                scoped=[],
                net_rules=[(self.listen_ok, ["connect_tcp"]), (self.bind_ok, ["bind_tcp"])],
                abi=state.effective,
            )
        except BaseException:
            self.close()
            raise

    def _listener(self) -> int:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.socks.append(s)
        s.bind((LOOPBACK, 0))
        s.listen(16)
        return int(s.getsockname()[1])

    def _reserved(self) -> int:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.socks.append(s)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])

    def body(self, send: Send) -> Mapping[str, Any]:
        assert self.ruleset is not None
        out = {
            "connect other port, before": outcome_of(
                lambda: _tcp((LOOPBACK, self.listen_no), bind=False)
            ),
            "bind other port, before": outcome_of(
                lambda: _tcp((LOOPBACK, self.bind_no), bind=True)
            ),
            "restrict": restrict(self.ruleset),
        }
        if out["restrict"] == "OK":
            out["connect granted port"] = outcome_of(
                lambda: _tcp((LOOPBACK, self.listen_ok), bind=False)
            )
            out["connect other port"] = outcome_of(
                lambda: _tcp((LOOPBACK, self.listen_no), bind=False)
            )
            out["bind granted port"] = outcome_of(lambda: _tcp((LOOPBACK, self.bind_ok), bind=True))
            out["bind other port"] = outcome_of(lambda: _tcp((LOOPBACK, self.bind_no), bind=True))
        return out

    def interpret(self, outcome: Outcome) -> list[Feature]:
        got = outcome.report
        return [
            check(NET_CONNECT, got, {
                "restrict": "OK", "connect other port, before": "OK",
                "connect granted port": "OK", "connect other port": "EACCES",
            }),
            check(NET_BIND, got, {
                "restrict": "OK", "bind other port, before": "OK",
                "bind granted port": "OK", "bind other port": "EACCES",
            }),
        ]  # fmt: skip

    def close(self) -> None:
        for s in self.socks:
            s.close()
        if self.ruleset is not None:
            self.ruleset.close()


SCOPE_SIGNAL = Spec(
    "landlock.scope.signal",
    "kill(prober, 0): OK before restriction, EPERM after; kill(self, 0) still OK",
    6,
)
SCOPE_ABSTRACT = Spec(
    "landlock.scope.abstract_unix_socket",
    "connect() to the prober's abstract AF_UNIX socket: OK before restriction, EPERM after; "
    "a socket made inside the domain still connects",
    6,
)


def _abstract_name(tag: str) -> str:
    return f"\0cvg-probe-{os.getpid()}-{tag}-{os.urandom(6).hex()}"


def _abstract_roundtrip(name: str) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(name)
        listener.listen(1)
        connect_unix(name)


class LandlockScopeGroup(Group):
    name = "landlock.scope"
    specs = (SCOPE_SIGNAL, SCOPE_ABSTRACT)

    def __init__(self, state: LandlockState) -> None:
        self.prober = os.getpid()
        self.ruleset: landlock.Ruleset | None = None
        self.address = _abstract_name("outside")
        self.inside = _abstract_name("inside")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.listener.bind(self.address)
            self.listener.listen(8)
            self.ruleset = landlock.Ruleset.build(
                handled_fs=[], handled_net=[], scoped="all", abi=state.effective
            )
        except BaseException:
            self.close()
            raise

    def body(self, send: Send) -> Mapping[str, Any]:
        assert self.ruleset is not None
        out = {
            "kill prober, before": outcome_of(lambda: os.kill(self.prober, 0)),
            "connect outside, before": outcome_of(lambda: connect_unix(self.address)),
            "restrict": restrict(self.ruleset),
        }
        if out["restrict"] == "OK":
            out["kill prober"] = outcome_of(lambda: os.kill(self.prober, 0))
            out["kill self"] = outcome_of(lambda: os.kill(os.getpid(), 0))
            out["connect outside"] = outcome_of(lambda: connect_unix(self.address))
            out["connect inside"] = outcome_of(lambda: _abstract_roundtrip(self.inside))
        return out

    def interpret(self, outcome: Outcome) -> list[Feature]:
        got = outcome.report
        return [
            check(SCOPE_SIGNAL, got, {
                "restrict": "OK", "kill prober, before": "OK", "kill prober": "EPERM",
                "kill self": "OK",
            }),
            check(SCOPE_ABSTRACT, got, {
                "restrict": "OK", "connect outside, before": "OK", "connect outside": "EPERM",
                "connect inside": "OK",
            }),
        ]  # fmt: skip

    def close(self) -> None:
        self.listener.close()
        if self.ruleset is not None:
            self.ruleset.close()
