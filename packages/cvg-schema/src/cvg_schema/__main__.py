"""``python -m cvg_schema`` is ``cvg-schema``."""

from .cli import run

run()
