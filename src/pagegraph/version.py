"""The package version (pyproject.toml names the same), at the bottom layer so that any module may read it."""

__version__ = "0.1.0"
