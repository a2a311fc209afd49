"""cvg-import: turn foreign reports (Divergence dynamic reports) into partial cvg observations."""

__version__ = "0.1.0"
