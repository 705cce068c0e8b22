"""Per-user access: filters narrowed to a user's projects and ceiling, the user read from a run's config, ingest
tags checked against it."""

from __future__ import annotations

from pathlib import Path

import pytest

from pagegraph import build_graph
from pagegraph.access import ACCESS_KEY, AUTH_USER_KEY
from pagegraph.config import Context, Settings
from pagegraph.errors import PagegraphError
from pagegraph.indexing.index import Index
from pagegraph.nodes.ingest import check_tags, local_path
from pagegraph.server.auth import find_user, request_key
from pagegraph.services import Services
from pagegraph.state.records import Access, ApiUser, DocumentTags, RetrievalFilter
from tests.fakes import ScriptedChatModel


def test_filters_narrow_to_the_users_projects_and_ceiling() -> None:
    access = Access(user="ben", projects=["demo", "ops"], ceiling="internal")
    narrowed = RetrievalFilter(projects=["demo", "secret"], max_confidentiality="confidential").within(access)
    assert narrowed.projects == ["demo"] and narrowed.max_confidentiality == "internal"
    assert RetrievalFilter().within(access).projects == ["demo", "ops"]
    assert RetrievalFilter(max_confidentiality="public").within(access).max_confidentiality == "public"
    everything = Access(user="local")
    assert RetrievalFilter().within(everything) == RetrievalFilter()


def test_a_filter_allows_documents_by_tags() -> None:
    flt = RetrievalFilter(projects=["demo"], max_confidentiality="internal")
    assert flt.allows(DocumentTags(project="demo", confidentiality="public"))
    assert not flt.allows(DocumentTags(project="demo", confidentiality="confidential"))
    assert not flt.allows(DocumentTags(project=None, confidentiality="public"))


def _ask_as(sample_index: Path, cache_dir: Path, embedder, user: dict | None, *replies: str) -> dict:
    index = Index(sample_index, Settings(cache_dir=cache_dir), embedder=embedder)
    try:
        model = ScriptedChatModel.replying(*replies)
        graph = build_graph("rag", services=Services(Settings(cache_dir=cache_dir), chat_model=model, index=index))
        config = {"configurable": {AUTH_USER_KEY: user}} if user is not None else None
        output = graph.invoke({"question": "How much does the SB-40 weigh?"}, config, context=Context(use_tree=False))
        assert not model.script
        return output
    finally:
        index.close()


def test_a_server_user_reads_only_documents_within_their_access(sample_index: Path, cache_dir: Path, embedder) -> None:
    # the sample index holds untagged documents at the default ceiling, internal
    outsider = {"identity": "eve", ACCESS_KEY: {"projects": ["other"], "ceiling": "confidential"}}
    output = _ask_as(sample_index, cache_dir, embedder, outsider)
    assert output["abstained"] and not output["evidence"] and output["llm_calls"] == 0
    low = {"identity": "pat", ACCESS_KEY: {"projects": None, "ceiling": "public"}}
    assert _ask_as(sample_index, cache_dir, embedder, low)["abstained"]
    unvouched = {"identity": "studio"}
    assert _ask_as(sample_index, cache_dir, embedder, unvouched)["abstained"]
    insider = {"identity": "ana", ACCESS_KEY: {"projects": None, "ceiling": "internal"}}
    output = _ask_as(sample_index, cache_dir, embedder, insider, "It weighs 98 kg [1].")
    assert not output["abstained"] and output["evidence"]


def test_a_server_user_cannot_point_the_graph_at_another_index(sample_index: Path, cache_dir: Path, tmp_path) -> None:
    services = Services(Settings(cache_dir=cache_dir, index=tmp_path / "server-index"))
    graph = build_graph("basic", services=services)
    user = {"identity": "ana", ACCESS_KEY: {"projects": None, "ceiling": None}}
    with pytest.raises(PagegraphError, match="server users answer from the server's index"):
        graph.invoke(
            {"question": "q"}, {"configurable": {AUTH_USER_KEY: user}}, context=Context(index=str(sample_index))
        )


def test_ingest_tags_must_be_within_the_users_access() -> None:
    ben = Access(user="ben", projects=["demo"], ceiling="internal")
    check_tags(DocumentTags(project="demo", confidentiality="internal"), ben)
    check_tags(DocumentTags(project="anything", confidentiality="confidential"), None)
    with pytest.raises(PagegraphError, match="up to internal"):
        check_tags(DocumentTags(project="demo", confidentiality="confidential"), ben)
    with pytest.raises(PagegraphError, match="into projects demo"):
        check_tags(DocumentTags(project="ops", confidentiality="public"), ben)


def test_ingest_paths_and_urls() -> None:
    assert local_path("file:///srv/docs/a%20b.pdf") == Path("/srv/docs/a b.pdf")
    assert local_path("/srv/docs") == Path("/srv/docs")
    with pytest.raises(PagegraphError, match="only paths and file:// URLs"):
        local_path("https://example.com/a.pdf")


def test_api_keys_from_either_header() -> None:
    users = [ApiUser(name="ana", api_key="a" * 24), ApiUser(name="ben", api_key="b" * 24, ceiling="public")]
    assert request_key({b"x-api-key": b"a" * 24}) == "a" * 24
    assert request_key({b"authorization": b"Bearer " + b"b" * 24}) == "b" * 24
    assert request_key({b"authorization": b"Basic xyz"}) == ""
    assert find_user(users, "b" * 24).name == "ben"
    assert find_user(users, "c" * 24) is None
