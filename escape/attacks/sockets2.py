"""UNIX sockets that need no socket(AF_UNIX) call, and a TCP listener that needs no
bind(): the ways around a rule that only looks at socket() and bind()."""

import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _lib import attack, main, out


@attack("unix", "unixdgram")
def socketpair_dgram_sendto_path(a):
    """With network.unix false: socketpair(AF_UNIX, SOCK_DGRAM), then sendto() a
    pathname datagram socket outside every grant. Should be stopped by seccomp
    (socketpair) or Landlock (pathname UNIX sockets, ABI 9)."""
    s, _ = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.sendto(b"exfil", a["sink"])


@attack("unix", "unixdgram")
def socketpair_dgram_connect_path(a):
    """With network.unix false: socketpair(AF_UNIX, SOCK_DGRAM), connect() one end to a
    pathname datagram socket outside every grant, send(). Should be stopped by seccomp
    (socketpair or connect on AF_UNIX)."""
    s, _ = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.connect(a["sink"])
    s.send(b"exfil")


@attack("unix", "abstractdgram")
def socketpair_dgram_sendto_abstract(a):
    """With network.unix false: socketpair(AF_UNIX, SOCK_DGRAM), then sendto() an
    abstract datagram socket outside the sandbox. Stopped by Landlock's
    abstract_unix_socket scope from ABI 6; below, by nothing unless seccomp is."""
    s, _ = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.sendto(b"exfil", "\0" + a["sink"][1:])


@attack("net-tcp", "autobind", hold=1.5, extra={"deadline": 8.0})
def listen_autobind_ephemeral(a):
    """listen() on a TCP socket never bound: the kernel binds it to an ephemeral port
    (no bind(), so no bind check), and the tool accepts from outside on a port the
    policy (tcp_bind: one port) does not grant. Stopped by the supervisor, which the
    filter hands every listen() to: refused (EACCES) on a socket never bound."""
    s = socket.socket()
    s.listen(4)
    out(f"listening port={s.getsockname()[1]}")
    s.settimeout(5)
    c, _ = s.accept()
    out(f"accepted {c.recv(16)!r}")


@attack("unix", "unix", policy="unix", extra={"no_degraded": True})
def unix_path_connect_ungranted(a):
    """network.unix true: connect to a pathname stream socket outside every grant (the
    D-Bus bus, docker.sock, an ssh-agent). Below Landlock ABI 9 nothing checks the path,
    so cvg-run should refuse the policy (exit 125) unless --allow-degraded, which this
    attack never passes."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(2)
    s.connect(a["sink"])
    s.sendall(b"exfil")


if __name__ == "__main__":
    main(globals())
