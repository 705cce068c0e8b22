"""`pagegraph` command line: ingest, summarize, ask, chat, search, inspect, eval, serve, mcp, users, db and model;
each command's module is imported when it runs (`pagegraph.cli.common.COMMANDS`)."""

from pagegraph.cli.common import app

__all__ = ["app"]
