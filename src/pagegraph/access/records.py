"""Who may read and change what: a server user's access and role, as the users file keeps them (the filter a search
runs under is a state record, `state.filters.RetrievalFilter`, narrowed to an access by `access.runs`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from pagegraph.state.documents import (
    Confidentiality,
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
