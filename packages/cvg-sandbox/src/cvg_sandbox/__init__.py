"""cvg-sandbox: every cvg tool at once. This distribution holds no code of its own; it
depends on each distribution that ships a tool (see its pyproject.toml)."""

__version__ = "0.1.0"
