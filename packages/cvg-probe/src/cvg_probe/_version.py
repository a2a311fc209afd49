"""The cvg-probe version (part of the cache key)."""

__version__ = "0.1.0"
