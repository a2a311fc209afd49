"""What every attack module shares: the registry and a few ctypes helpers.

An attack module is imported by the runner (for its registry: class, oracle,
docstring) and executed inside the sandbox as ``PYTHON MODULE.py NAME ARGS.json``.
An attack never judges itself: whatever it prints is only material for the
runner's oracles (a secret token it could not know unless the read worked).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import sys
import time
from dataclasses import dataclass, field

REGISTRY: dict[str, Attack] = {}


@dataclass
class Attack:
    name: str
    cls: str
    oracle: str
    func: object
    module: str
    policy: str = "workspace"
    limit: str | None = None  # the documented limit an escape would go through
    hold: float = 0.0  # seconds the runner keeps sampling before it may judge
    extra: dict = field(default_factory=dict)

    @property
    def doc(self) -> str:
        return " ".join((self.func.__doc__ or "").split())


def attack(cls: str, oracle: str, **kw):
    """Register the decorated function as an attack."""

    def deco(func):
        name = func.__name__
        if name in REGISTRY:
            raise ValueError(f"duplicate attack {name}")
        REGISTRY[name] = Attack(name, cls, oracle, func, func.__module__, **kw)
        return func

    return deco


libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def sys_call(nr: int, *args: int) -> int:
    """A raw syscall with integer (or pointer-as-integer) arguments; raises OSError."""
    r = libc.syscall(ctypes.c_long(nr), *(ctypes.c_long(a) for a in args))
    if r == -1:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r


def drop_capabilities() -> None:
    """Give up every capability (effective, permitted, inheritable) and check with
    capget that none is left. The attacks whose success would change the machine (the
    clock, its names, swap, modules, kexec, a pivot of the root) call this first: as
    root they then make the call the way the unprivileged user does, where it fails
    bare too, so the bare run proves nothing and changes nothing."""
    hdr = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (ctypes.c_uint32 * 6)()
    sys_call(126, ctypes.addressof(hdr), ctypes.addressof(data))  # capset: all zero
    hdr = (ctypes.c_uint32 * 2)(0x20080522, 0)
    sys_call(125, ctypes.addressof(hdr), ctypes.addressof(data))  # capget
    if any(data):
        sys.stderr.write("capabilities still held: the call is not made\n")
        sys.exit(4)


def leave_a_daemon(seconds: float = 8) -> None:
    """Double-fork and setsid: a grandchild in a session of its own sleeps ``seconds``,
    meant to outlive the run, while the tool goes on."""
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            time.sleep(seconds)
        os._exit(0)
    time.sleep(0.2)


def hold_descriptors(n: int, seconds: float = 1) -> None:
    """Open /dev/null ``n`` times (as many as the limit lets) and hold them ``seconds``,
    for the runner to count."""
    fds = []
    try:
        for _ in range(n):
            fds.append(os.open("/dev/null", os.O_RDONLY))
    finally:
        time.sleep(seconds)


def args() -> dict:
    """The arguments file the runner wrote, or the arguments themselves (inline
    attacks, whose working directory the policy does not grant)."""
    if sys.argv[2].startswith("{"):
        return json.loads(sys.argv[2])
    with open(sys.argv[2]) as f:
        return json.load(f)


def out(*parts: object) -> None:
    print(*parts, flush=True)


def attempted_marker(name: str, tok: str) -> str:
    """The line an attack prints on its standard output just before it makes its
    call. The runner counts a sandboxed run as contained only when this line (with
    the run's random token) arrived: an attack that never ran proves nothing."""
    return f"cvg-escape: attempting {name} {tok}"


def main(module_globals: dict) -> None:
    name = sys.argv[1]
    a = args()
    func = REGISTRY[name].func
    # Written straight to the descriptor: an attack that ends itself with a signal
    # or os._exit must not leave it in a buffer.
    os.write(1, (attempted_marker(name, a["tok"]) + "\n").encode())
    try:
        func(a)
    except OSError as e:
        sys.stderr.write(f"{name}: OSError {e.errno} {e.strerror}\n")
        sys.exit(3)
