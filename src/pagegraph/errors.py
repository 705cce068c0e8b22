"""Errors that users see: each names the file or stage and the reason."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

SHOWN_ERRORS = 3


class PagegraphError(ValueError):
    """Base class for errors reported to the user as one clear line. A ValueError, because LangGraph server passes
    the message of those on to the client and replaces that of other exceptions by "An internal error occurred"."""


class DocumentError(PagegraphError):
    """A file could not be loaded; other files in the same run are unaffected."""

    def __init__(self, path: str | Path, reason: str) -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{Path(path).name}: {reason}")


class IndexMismatchError(PagegraphError):
    """An index was opened with parameters other than those it was built with."""


class IndexLockedError(PagegraphError):
    """Another process holds the index for writing."""


class IngestCancelled(PagegraphError):
    """An ingest stopped because its run was cancelled: the documents committed before stay, the rest is left."""


class ModelError(PagegraphError):
    """A chat model could not be created, loaded or reached."""


class ModelUnavailableError(ModelError):
    """A remote model server refused the connection, timed out, or does not serve the model."""


def described(exc: ValidationError) -> str:
    """A validation error as one line a user reads: each field and what is wrong with it (pydantic's own text
    repeats the rejected values and ends in a documentation link)."""
    errors = exc.errors(include_url=False)
    parts = [f"{'.'.join(str(at) for at in error['loc']) or 'the value'}: {error['msg']}" for error in errors]
    more = f" (and {len(parts) - SHOWN_ERRORS} more)" if len(parts) > SHOWN_ERRORS else ""
    return "; ".join(parts[:SHOWN_ERRORS]) + more
