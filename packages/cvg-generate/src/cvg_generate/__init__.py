"""cvg-generate: Write a least-privilege cvg policy from observations, every rule citing the events behind it."""

__version__ = "0.1.0"
