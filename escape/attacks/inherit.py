"""Inherited descriptors and environment secrets: what the caller leaves lying around."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _lib import attack, main, out


@attack("inherit", "secret", extra={"inherit": True})
def read_inherited_file_descriptor(a):
    """Read the secret through a descriptor the caller opened and passed down.
    Stopped by cvg-run closing every descriptor but 0, 1 and 2."""
    out(os.pread(a["inherited"]["file"], 200, 0).decode())


@attack("inherit", "secret", extra={"inherit": True})
def openat_inherited_directory_descriptor(a):
    """openat() the secret relative to an inherited directory descriptor of an
    ungranted directory. Stopped by closing descriptors (and Landlock read_file)."""
    fd = os.open("secret.txt", os.O_RDONLY, dir_fd=a["inherited"]["dir"])
    out(os.read(fd, 200).decode())


@attack("inherit", "inherit-socket")
def write_inherited_socket(a):
    """Send through an already-connected TCP socket the caller passed down (no
    connect() for Landlock to see). Stopped by cvg-run closing inherited descriptors."""
    os.write(a["inherited"]["socket"], b"exfil")


@attack("inherit", "secret")
def environment_secret(a):
    """Print the environment, where the caller's AWS_SECRET_ACCESS_KEY lives.
    Stopped: the tool's environment is built from the policy alone."""
    out(dict(os.environ))


@attack("inherit", "secret", policy="default")
def environment_secret_default_policy(a):
    """The same under the default policy (it passes LANG, TERM, TZ only)."""
    out(dict(os.environ))


if __name__ == "__main__":
    main(globals())
