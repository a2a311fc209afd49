"""The no-sandbox baseline: run CMD as cvg-run would (a parent that forks, execs and
waits), with no confinement, no wall clock and no cleanup. An attack counts as
proven on a host only if its oracle fires under this."""

import os
import sys

argv = sys.argv[1:]
if argv and argv[0] == "--":
    argv = argv[1:]
pid = os.fork()
if pid == 0:
    try:
        os.execv(argv[0], argv)
    finally:
        os._exit(127)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status) % 256)
