"""Lets examples/test_examples.py import examples/first_run.py as a module."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
