"""`pagegraph` command line: ingest, ask, chat, inspect and eval."""

from pagegraph.cli import ask, evaluate, ingest, inspect, serve  # noqa: F401  (each module registers its commands)
from pagegraph.cli.common import app

__all__ = ["app"]
