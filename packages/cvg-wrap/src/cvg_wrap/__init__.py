"""cvg-wrap: confine the MCP servers a client already has.

``cvg-wrap learn CONFIG`` makes each server of a client's config learn its policy in
real sessions (under cvg-observe), ``cvg-wrap enforce CONFIG`` writes the policies and
starts the servers under cvg-run, ``cvg-wrap restore CONFIG`` puts the config back.
"""

__version__ = "0.1.0"
