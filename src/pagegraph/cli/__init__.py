"""`pagegraph` command line: ingest, summarize, ask, chat, search, inspect, eval, serve and users."""

from pagegraph.cli import ask, evaluate, ingest, inspect, search, serve, summarize, users  # noqa: F401  (each module registers its commands)
from pagegraph.cli.common import app

__all__ = ["app"]
