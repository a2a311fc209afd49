"""cvg-observe: watch what a tool does under strace and write it as a ``cvg.observation``.

>>> result = observe(["python3", "tool.py"], sys.stdout.buffer)   # in the learning sandbox

The pieces, usable on their own:

- :mod:`cvg_trace.parse`: strace's text output to records (``TraceParser``), joining
  ``<unfinished ...>``/``resumed`` halves, decoding ``-yy`` descriptors and escapes;
- :mod:`cvg_trace.events`: records to events (``Tracker``), following each process's
  working directory through chdir, fchdir and fork;
- :mod:`cvg_observe.elf`: the ``#!`` chain and PT_INTERP of an executable;
- :mod:`cvg_observe.learning`: the learning sandbox's policy and the ``Judge`` that
  marks what it refused;
- :mod:`cvg_observe.observe`: running strace and writing the observation
  (``observe``, ``ObservationWriter``, ``write_observation``).
"""

from ._version import __version__
from .observe import (
    EXIT_NOT_OBSERVED,
    NotStarted,
    ObservationWriter,
    ObserveError,
    Result,
    observe,
    write_observation,
)

__all__ = [
    "EXIT_NOT_OBSERVED",
    "NotStarted",
    "ObservationWriter",
    "ObserveError",
    "Result",
    "__version__",
    "observe",
    "write_observation",
]
