"""The cvg-observe version."""

__version__ = "0.1.0"
