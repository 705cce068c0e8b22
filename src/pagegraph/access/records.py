"""Who may read and change what: a server user's access, and the filter a search runs under."""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import BaseModel, Field

from pagegraph.state.documents import (
    CONFIDENTIALITY_LEVELS,
    Confidentiality,
    DocumentRecord,
    DocumentTags,
    within_ceiling,
)

Role = Literal["reader", "editor", "admin"]
ROLES: tuple[Role, ...] = ("reader", "editor", "admin")


class Access(BaseModel):
    """What a server user may do. Reading: documents of these projects (None: every project) up to this
    confidentiality (None: no ceiling). Writing (ingest, retag, prune) needs the editor or admin role and stays
    inside what the user may read: nobody changes a document they cannot see, or tags one out of their reach."""

    user: str
    projects: list[str] | None = None
    ceiling: Confidentiality | None = None
    role: Role = "reader"

    def may_read(self, tags: DocumentTags) -> bool:
        in_project = self.projects is None or tags.project in self.projects
        return in_project and within_ceiling(tags.confidentiality, self.ceiling)

    @property
    def may_ingest(self) -> bool:
        return self.role in ("editor", "admin")

    def may_write(self, tags: DocumentTags) -> bool:
        """Whether this user may add, retag, replace or prune a document with these tags."""
        return self.may_ingest and self.may_read(tags)

    def refuse_tags(self, tags: DocumentTags) -> str | None:
        """Why this user may not ingest documents tagged `tags`; None when they may."""
        if not self.may_ingest:
            return f"{self.user} may not ingest documents: role {self.role} (ingest needs editor or admin)"
        if self.projects is not None and tags.project not in self.projects:
            allowed = ", ".join(self.projects) or "none"
            return f"{self.user} may ingest into projects {allowed}, not {tags.project!r}"
        if not within_ceiling(tags.confidentiality, self.ceiling):
            return f"{self.user} may ingest documents up to {self.ceiling}, not {tags.confidentiality}"
        return None


class ApiUser(BaseModel):
    """A LangGraph server user, as the users file keeps them: the salted hash of the API key they send (header
    `x-api-key`, or `Authorization: Bearer KEY`), their role and what they may read. `pagegraph users add` writes
    one and prints the key once."""

    name: str = Field(min_length=1)
    key_id: str | None = Field(
        default=None, description="the public part of keys that `pagegraph users add` makes (pg_ID_SECRET)"
    )
    key_hash: str = Field(min_length=1, description="scrypt$N$r$p$SALT$HASH of the whole key")
    role: Role = Field(default="reader", description="reader: ask; editor: also ingest; admin: every document")
    projects: list[str] | None = Field(default=None, description="projects they may read; unset: every project")
    ceiling: Confidentiality = Field(default="internal", description="the highest confidentiality they may read")

    def access(self) -> Access:
        if self.role == "admin":
            return Access(user=self.name, role=self.role)
        return Access(user=self.name, projects=self.projects, ceiling=self.ceiling, role=self.role)


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

    def within(self, access: Access) -> RetrievalFilter:
        """This filter narrowed to what `access` may see: projects intersected, the lower ceiling."""
        projects = self.projects
        if access.projects is not None:
            projects = [p for p in (projects or access.projects) if p in access.projects]
        ceiling = self.max_confidentiality
        if access.ceiling is not None and (
            ceiling is None or CONFIDENTIALITY_LEVELS.index(access.ceiling) < CONFIDENTIALITY_LEVELS.index(ceiling)
        ):
            ceiling = access.ceiling
        return self.model_copy(update={"projects": projects, "max_confidentiality": ceiling})

    @property
    def restricts(self) -> bool:
        """Whether the filter keeps anything out."""
        return any(value is not None for value in self.model_dump().values())
