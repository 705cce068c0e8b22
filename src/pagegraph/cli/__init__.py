"""`pagegraph` command line: ingest, summarize, ask, chat, search, inspect, eval, serve, mcp, users, db and model."""

from pagegraph.cli import ask, db, evaluate, ingest, inspect, mcp, model, search, serve, summarize, users  # noqa: F401  (each module registers its commands)
from pagegraph.cli.common import app

__all__ = ["app"]
