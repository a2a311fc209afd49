"""cvg-trace: reading strace's output, shared by ``cvg-run --trace`` and ``cvg-observe``.

- :mod:`.parse`: strace's text output to records (``TraceParser``), joining
  ``<unfinished ...>``/``resumed`` halves, decoding ``-yy`` descriptors and escapes;
- :mod:`.events`: records to events (``Tracker``), following each process's working
  directory through chdir, fchdir and fork;
- :mod:`.tool`: finding strace and its version.

Standard library and cvg-kernel only: the enforcing side and the learning side both
depend on it, and neither on the other.
"""
