"""What every part of the escape runner shares: where things are, the interpreter the
runs use, and the runner's timing. run.py's main() sets PY and HARD_TIMEOUT before
the pool forks its workers, so the workers see them.
"""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ATTACKS_DIR = HERE / "attacks"
SUPPORT_DIR = HERE / "support"
POLICIES_DIR = HERE / "policies"
RESULTS_DIR = HERE / "results"
PY = ""  # set by main(): the interpreter every run uses (probes.find_python)
UNPRIV = "cvgtest"
CVG_MAIN = "import sys; from cvg_run.cli import main; sys.argv[0] = 'cvg-run'; sys.exit(main())"
SAMPLE = 0.02
# How long the tool's resident total may stay above memory_mb: fifty of the
# root supervisor's scans, ten of the unprivileged one's, and the teardown of
# the processes it ends.
RSS_GRACE = 0.5
HARD_TIMEOUT = 40.0
ABI_MATRIX = (4, 6)
SINK_ORACLES = (
    "tcp",
    "tcp6",
    "udp",
    "unix",
    "abstract",
    "unixdgram",
    "abstractdgram",
    "inherit-socket",
)
REFUSED = 125  # cvg-run's status when it refuses to start the tool (bad or degraded policy)

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

if str(ATTACKS_DIR) not in sys.path:
    sys.path.append(str(ATTACKS_DIR))
