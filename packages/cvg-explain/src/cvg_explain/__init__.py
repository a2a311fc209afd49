"""cvg-explain: Explain each denial of a cvg run: cause, rule, smallest fix as a YAML diff, and its risk."""

__version__ = "0.1.0"
