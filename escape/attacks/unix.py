"""UNIX sockets, pathname and abstract, to listeners outside the sandbox."""

import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _lib import attack, main


def _connect(path):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(2)
    s.connect(path)
    s.sendall(b"exfil")


@attack("unix", "unix", policy="default")
def unix_pathname_connect_default_policy(a):
    """Connect to a pathname UNIX socket (think docker.sock, the D-Bus bus) under the
    default policy. Stopped by seccomp: socket(AF_UNIX) is refused without network.unix."""
    _connect(a["sink"])


@attack("unix", "unix")
def unix_pathname_connect_workspace_policy(a):
    """Connect to a pathname UNIX socket with network.unix false. Stopped by seccomp."""
    _connect(a["sink"])


@attack("unix", "unix", policy="unix", limit="unix-path")
def unix_pathname_connect_unix_granted(a):
    """Connect to a pathname UNIX socket in an ungranted directory with network.unix
    true. Stopped only from Landlock ABI 9 (resolve_unix); below, a documented limit."""
    _connect(a["sink"])


@attack("unix", "unixdgram", policy="unix", limit="unix-path")
def unix_dgram_sendto_pathname_unix_granted(a):
    """sendto() a datagram to a pathname UNIX socket outside the grants with
    network.unix true. Stopped from ABI 9 only (documented limit below)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.sendto(b"exfil", a["sink"])


@attack("unix", "abstract", policy="default")
def unix_abstract_connect_default_policy(a):
    """Connect to an abstract UNIX socket (think @/tmp/.X11-unix) under the default
    policy. Stopped by seccomp (AF_UNIX) and, from ABI 6, Landlock's scope."""
    _connect("\0" + a["sink"][1:])


@attack("unix", "abstract", policy="unix", limit="unix-abstract")
def unix_abstract_connect_unix_granted(a):
    """Connect to an abstract UNIX socket outside the sandbox with network.unix true.
    Stopped by Landlock's abstract_unix_socket scope (ABI 6); below ABI 6 cvg-run refuses
    the policy unless --allow-degraded, which the matrix passes."""
    _connect("\0" + a["sink"][1:])


if __name__ == "__main__":
    main(globals())
