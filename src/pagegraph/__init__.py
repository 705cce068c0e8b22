"""pagegraph: document question answering with page-accurate citations."""

__version__ = "0.1.0"
