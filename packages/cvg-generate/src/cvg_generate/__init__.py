"""cvg-generate: write a least-privilege cvg policy from observations.

Every rule cites the observed events that justify it.
"""

__version__ = "0.1.0"
