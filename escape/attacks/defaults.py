# ruff: noqa: SIM115  (attacks keep files open on purpose: short, one-shot scripts)
"""The embedded default policy (cvg-run with no -p) as people run it: from their
home directory, as whoever they are."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _lib import attack, main, out


@attack("defaults", "secret", policy="default", extra={"home": True, "inline": True})
def default_policy_home_ssh_key(a):
    """cvg-run with no -p, started in the home directory (HOME is the working
    directory, holding .ssh/id_rsa and .env): print both. The default policy reads
    ${CWD}; should be stopped by a default that keeps secrets of the home out. The
    attack's code comes on the command line (`inline`): a default that grants nothing
    of a home would otherwise keep the interpreter from reading the attack itself."""
    for name in (".ssh/id_rsa", ".env"):
        out(open(os.path.join(os.getcwd(), name)).read())


@attack("defaults", "shadow", policy="default")
def default_policy_etc_shadow(a):
    """As root, read /etc/shadow under the default policy (it reads /etc; root owns
    the file, so dropping capabilities does not stop the read). Should be stopped by
    a default that leaves the password hashes out. Provable as root only."""
    out(open("/etc/shadow").read())


if __name__ == "__main__":
    main(globals())
