"""The filter a search runs under: which documents, projects, source types, confidentiality, pages and dates. A
record of the graphs' state and input; `access.runs.readable_filter` narrows it to what the user running a graph may
read."""

from __future__ import annotations

from datetime import date

from pydantic import BaseModel, Field

from pagegraph.state.documents import (
    CONFIDENTIALITY_LEVELS,
    Confidentiality,
    DocumentRecord,
    DocumentTags,
    within_ceiling,
)


class RetrievalFilter(BaseModel):
    """Restricts a search before scoring. Empty fields do not restrict."""

    documents: list[str] | None = Field(default=None, description="file names of the documents to search")
    projects: list[str] | None = Field(default=None, description="documents tagged with one of these projects")
    source_types: list[str] | None = Field(default=None, description="documents with one of these source-type tags")
    max_confidentiality: Confidentiality | None = Field(default=None, description="ceiling: nothing above this level")
    pages: tuple[int, int] | None = Field(default=None, description="inclusive page range a chunk must overlap")
    date_from: date | None = Field(default=None, description="documents dated on or after this day (undated: out)")
    date_to: date | None = Field(default=None, description="documents dated on or before this day (undated: out)")

    def allows(self, tags: DocumentTags) -> bool:
        """Whether a document with these tags passes the project, source-type, ceiling and date restrictions."""
        if self.projects is not None and tags.project not in self.projects:
            return False
        if self.source_types is not None and tags.source_type not in self.source_types:
            return False
        if not self.dates(tags.date):
            return False
        return within_ceiling(tags.confidentiality, self.max_confidentiality)

    def dates(self, day: date | None) -> bool:
        """Whether a document of this date is inside the date range (an undated one is inside no range)."""
        if not (self.date_from or self.date_to):
            return True
        return day is not None and (self.date_from or day) <= day <= (self.date_to or day)

    def selects(self, document: DocumentRecord) -> bool:
        """Whether this filter lets `document` be searched: named (when documents are named) and allowed by its tags."""
        return (self.documents is None or document.name in self.documents) and self.allows(document.tags)

    def within(self, projects: list[str] | None, ceiling: Confidentiality | None) -> RetrievalFilter:
        """This filter narrowed to what a reader of these `projects` (None: all) up to `ceiling` (None: none) may
        see: projects intersected, the lower ceiling."""
        narrowed = self.projects
        if projects is not None:
            narrowed = [p for p in (narrowed or projects) if p in projects]
        lowest = self.max_confidentiality
        if ceiling is not None and (
            lowest is None or CONFIDENTIALITY_LEVELS.index(ceiling) < CONFIDENTIALITY_LEVELS.index(lowest)
        ):
            lowest = ceiling
        return self.model_copy(update={"projects": narrowed, "max_confidentiality": lowest})

    @property
    def restricts(self) -> bool:
        """Whether the filter keeps anything out."""
        return any(value is not None for value in self.model_dump().values())
