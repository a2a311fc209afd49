from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from schema_samples import SAMPLES


@pytest.fixture(params=sorted(SAMPLES))
def sample(request: pytest.FixtureRequest) -> dict[str, Any]:
    """A deep copy of one full sample message, for each kind in turn."""
    return copy.deepcopy(SAMPLES[request.param])
