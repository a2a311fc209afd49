"""``cvg-mcp`` command line (being built)."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    sys.stderr.write("cvg-mcp: not built yet\n")
    return 2


def run() -> None:
    sys.exit(main())
