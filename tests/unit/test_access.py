"""Per-user access: filters narrowed to a user's projects and ceiling, the user read from a run's config, roles and
ingest tags checked against it, API keys kept as salted hashes."""

from __future__ import annotations

from pathlib import Path

import pytest

from pagegraph import build_graph
from pagegraph.access.auth import request_key
from pagegraph.access.keys import UserDirectory, convert_plain_file, hash_key, new_key, read_users, write_users
from pagegraph.access.records import Access, ApiUser
from pagegraph.access.runs import ACCESS_KEY, AUTH_USER_KEY
from pagegraph.config import Context, Settings
from pagegraph.errors import PagegraphError
from pagegraph.nodes.ingest import local_path, resolve_in_roots, shown_path
from pagegraph.services import Services
from pagegraph.state.documents import DocumentTags
from pagegraph.state.filters import RetrievalFilter
from pagegraph.store.index import open_index
from tests.fakes import Reply, ScriptedChatModel, citing


def test_filters_narrow_to_the_users_projects_and_ceiling() -> None:
    access = Access(user="ben", projects=["demo", "ops"], ceiling="internal")
    narrowed = RetrievalFilter(projects=["demo", "secret"], max_confidentiality="confidential").within(
        access.projects, access.ceiling
    )
    assert narrowed.projects == ["demo"] and narrowed.max_confidentiality == "internal"
    assert RetrievalFilter().within(access.projects, access.ceiling).projects == ["demo", "ops"]
    assert (
        RetrievalFilter(max_confidentiality="public").within(access.projects, access.ceiling).max_confidentiality
        == "public"
    )
    everything = Access(user="local")
    assert RetrievalFilter().within(everything.projects, everything.ceiling) == RetrievalFilter()


def test_a_filter_allows_documents_by_tags() -> None:
    flt = RetrievalFilter(projects=["demo"], max_confidentiality="internal")
    assert flt.allows(DocumentTags(project="demo", confidentiality="public"))
    assert not flt.allows(DocumentTags(project="demo", confidentiality="confidential"))
    assert not flt.allows(DocumentTags(project=None, confidentiality="public"))


def _ask_as(sample_index: Path, cache_dir: Path, embedder, user: dict | None, *replies: Reply) -> dict:
    index = open_index(sample_index, Settings(cache_dir=cache_dir), embedder=embedder)
    try:
        model = ScriptedChatModel.replying(*replies)
        graph = build_graph("rag", services=Services(Settings(cache_dir=cache_dir), chat_model=model, index=index))
        config = {"configurable": {AUTH_USER_KEY: user}} if user is not None else None
        output = graph.invoke(
            {"question": "How much does the SB-40 weigh?"}, config, context=Context(tree={"use": False})
        )
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
    output = _ask_as(sample_index, cache_dir, embedder, insider, citing("98 kg", "It weighs 98 kg [{n}]."))
    assert not output["abstained"] and output["evidence"]


def test_a_server_user_cannot_point_the_graph_at_another_index(sample_index: Path, cache_dir: Path, tmp_path) -> None:
    services = Services(Settings(cache_dir=cache_dir, index=tmp_path / "server-index"))
    graph = build_graph("basic", services=services)
    user = {"identity": "ana", ACCESS_KEY: {"projects": None, "ceiling": None}}
    with pytest.raises(PagegraphError, match="server users answer from the server's index"):
        graph.invoke(
            {"question": "q"}, {"configurable": {AUTH_USER_KEY: user}}, context=Context(index=str(sample_index))
        )


def test_roles_and_tags_decide_what_a_user_may_write() -> None:
    ben = Access(user="ben", projects=["demo"], ceiling="internal", role="editor")
    assert ben.refuse_tags(DocumentTags(project="demo", confidentiality="internal")) is None
    assert "up to internal" in ben.refuse_tags(DocumentTags(project="demo", confidentiality="confidential"))
    assert "into projects demo" in ben.refuse_tags(DocumentTags(project="ops", confidentiality="public"))
    assert ben.may_write(DocumentTags(project="demo", confidentiality="public"))
    assert not ben.may_write(DocumentTags(project="demo", confidentiality="confidential"))
    assert not ben.may_write(DocumentTags(project="ops", confidentiality="public"))
    reader = ben.model_copy(update={"role": "reader"})
    assert reader.may_read(DocumentTags(project="demo", confidentiality="public"))
    assert not reader.may_write(DocumentTags(project="demo", confidentiality="public"))
    assert "role reader" in reader.refuse_tags(DocumentTags(project="demo", confidentiality="public"))
    admin = ApiUser(name="root", key_hash="x", role="admin", projects=["demo"], ceiling="public").access()
    assert admin.may_write(DocumentTags(project="ops", confidentiality="confidential"))


def test_ingest_paths_and_urls() -> None:
    assert local_path("file:///srv/docs/a%20b.pdf") == Path("/srv/docs/a b.pdf")
    assert local_path("/srv/docs") == Path("/srv/docs")
    with pytest.raises(PagegraphError, match="only paths and file:// URLs"):
        local_path("https://example.com/a.pdf")


def test_api_keys_from_either_header() -> None:
    assert request_key({b"x-api-key": b"a" * 24}) == "a" * 24
    assert request_key({b"authorization": b"Bearer " + b"b" * 24}) == "b" * 24
    assert request_key({b"authorization": b"Basic xyz"}) == ""


def test_the_users_file_keeps_salted_hashes_and_finds_users_by_key(tmp_path: Path) -> None:
    path = tmp_path / "users.json"
    (ana_key, ana_id), (ben_key, ben_id) = new_key(), new_key()
    users = [
        ApiUser(name="ana", key_id=ana_id, key_hash=hash_key(ana_key), role="editor"),
        ApiUser(name="ben", key_id=ben_id, key_hash=hash_key(ben_key), ceiling="public"),
    ]
    write_users(path, users)
    stored = path.read_text()
    assert ana_key not in stored and ben_key not in stored and "sha256$" in stored
    assert path.stat().st_mode & 0o077 == 0
    assert hash_key(ana_key) != users[0].key_hash  # salted
    directory = UserDirectory(path)
    assert directory.find(ana_key).name == "ana" and directory.find(ana_key).role == "editor"
    assert directory.find(ben_key).name == "ben"
    altered = ana_key[:-1] + ("y" if ana_key.endswith("x") else "x")
    assert directory.find(altered) is None and directory.find("pg_nope_" + "x" * 30) is None
    write_users(path, users[1:])  # a removed user's key stops working at once
    assert directory.find(ana_key) is None and directory.find(ben_key).name == "ben"


def test_a_plain_text_users_file_is_refused_until_converted(tmp_path: Path) -> None:
    path = tmp_path / "users.json"
    path.write_text('{"users": [{"name": "ana", "api_key": "ana-key-0123456789abcdef", "projects": ["demo"]}]}')
    with pytest.raises(PagegraphError, match=f"pagegraph users convert {path}"):
        read_users(path)
    assert convert_plain_file(path) == ["ana"]
    assert "ana-key-0123456789abcdef" not in path.read_text()
    (ana,) = read_users(path)
    assert ana.projects == ["demo"] and ana.role == "reader"
    assert UserDirectory(path).find("ana-key-0123456789abcdef").name == "ana"


def test_ingest_outside_the_roots_reads_as_missing(tmp_path: Path) -> None:
    root, private = tmp_path / "uploads", tmp_path / "private"
    (root / "sub").mkdir(parents=True)
    private.mkdir()
    (root / "sub" / "a.md").write_text("a")
    (private / "secret.md").write_text("s")
    (root / "out.md").symlink_to(private / "secret.md")
    roots = [root.resolve()]
    assert resolve_in_roots("sub/a.md", roots) == (root / "sub" / "a.md").resolve()
    assert resolve_in_roots(str(root / "sub" / ".." / "sub" / "a.md"), roots) == (root / "sub" / "a.md").resolve()
    for outside in ("../private/secret.md", str(private / "secret.md"), "out.md", f"file://{private}/secret.md"):
        assert resolve_in_roots(outside, roots) is None
    assert resolve_in_roots("sub/missing.md", roots) is None
    assert shown_path(str(root.resolve() / "sub" / "a.md"), roots) == "sub/a.md"
    assert shown_path("../private/secret.md", roots) == "../private/secret.md"


def test_the_users_commands(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from pagegraph.cli import app

    path = tmp_path / "users.json"
    runner = CliRunner()
    added = runner.invoke(app, ["users", "add", "ana", "--file", str(path), "--role", "editor", "--projects", "demo"])
    assert added.exit_code == 0, added.output
    key = added.output.strip().splitlines()[-1]
    assert key.startswith("pg_") and key not in path.read_text()
    assert UserDirectory(path).find(key).role == "editor"
    again = runner.invoke(app, ["users", "add", "ana", "--file", str(path)])
    assert again.exit_code == 2 and "exists" in again.output
    bad = runner.invoke(app, ["users", "add", "bo", "--file", str(path), "--role", "owner"])
    assert bad.exit_code == 2 and "choose reader, editor, admin" in bad.output
    listed = runner.invoke(app, ["users", "list", "--file", str(path)])
    assert listed.exit_code == 0 and "ana" in listed.output and "editor" in listed.output and key not in listed.output
    removed = runner.invoke(app, ["users", "remove", "ana", "--file", str(path)])
    assert removed.exit_code == 0 and UserDirectory(path).find(key) is None
    plain = tmp_path / "old.json"
    plain.write_text('{"users": [{"name": "ben", "api_key": "ben-key-0123456789abcdef"}]}')
    refused = runner.invoke(app, ["users", "list", "--file", str(plain)])
    assert refused.exit_code == 2 and f"pagegraph users convert {plain}" in " ".join(refused.output.split())
    converted = runner.invoke(app, ["users", "convert", str(plain)])
    assert converted.exit_code == 0 and "ben" in converted.output
    assert UserDirectory(plain).find("ben-key-0123456789abcdef").name == "ben"


def test_lowering_a_document_s_confidentiality_needs_declassify(tmp_path: Path, cache_dir: Path, embedder) -> None:
    from pagegraph.ingest.pipeline import Ingestor

    (tmp_path / "plan.md").write_text("# Plan\n\nThe plan moves the archive to the north wing in May.\n")
    with open_index(tmp_path / "index", Settings(cache_dir=cache_dir), write=True, embedder=embedder) as index:
        Ingestor(index).run([tmp_path / "plan.md"], DocumentTags(confidentiality="internal"))
        (lowered,) = Ingestor(index).run([tmp_path / "plan.md"], DocumentTags(confidentiality="public")).outcomes
        assert lowered.status == "failed" and "would lower" in lowered.reason and "--declassify" in lowered.reason
        assert index.store.documents()[0].tags.confidentiality == "internal"
        raised = Ingestor(index).run([tmp_path / "plan.md"], DocumentTags(confidentiality="confidential"))
        assert raised.outcomes[0].status == "retagged"
        meant = Ingestor(index, declassify=True).run([tmp_path / "plan.md"], DocumentTags(confidentiality="public"))
        assert meant.outcomes[0].status == "retagged" and index.store.documents()[0].tags.confidentiality == "public"


def test_a_folder_ingest_says_nothing_of_documents_beyond_the_editor_s_reach(
    tmp_path: Path, cache_dir: Path, embedder
) -> None:
    from pagegraph.ingest.pipeline import Ingestor

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "board-minutes.md").write_text("# Minutes\n\nThe board approved the merger at its March meeting.\n")
    (folder / "handbook.md").write_text("# Handbook\n\nExpenses are filed by the fifth day of each month.\n")
    editor = Access(user="ed", projects=["corp"], ceiling="internal", role="editor")
    with open_index(tmp_path / "index", Settings(cache_dir=cache_dir), write=True, embedder=embedder) as index:
        Ingestor(index).run([folder / "board-minutes.md"], DocumentTags(project="corp", confidentiality="confidential"))
        run = Ingestor(index, access=editor).run([folder], DocumentTags(project="corp"))
        assert [Path(o.path).name for o in run.outcomes] == ["handbook.md"]  # the minutes are not mentioned
        named = Ingestor(index, access=editor).run([folder / "board-minutes.md"], DocumentTags(project="corp"))
        assert [(o.status, o.reason) for o in named.outcomes] == [("failed", "no such file")]  # as a missing file


def test_a_correct_key_is_never_refused_however_many_wrong_guesses_were_made_on_its_id(tmp_path: Path) -> None:
    """As after a restart (nothing verified yet): twelve wrong secrets on ana's key ID from her own address, then her
    key from that address signs in. The wrong ones past the limit get 429."""
    from pagegraph.access.keys import SignInLimited

    key, key_id = new_key()
    path = tmp_path / "users.json"
    write_users(path, [ApiUser(name="ana", key_id=key_id, key_hash=hash_key(key))])
    assert hash_key(key).startswith("sha256$"), "a random key with an ID needs no slow hash"
    directory = UserDirectory(path, failures_per_minute=3)
    wrong = f"pg_{key_id}_not-the-secret"
    for _ in range(3):
        assert directory.find(wrong, "203.0.113.9") is None
    for _ in range(9):
        with pytest.raises(SignInLimited, match="PAGEGRAPH_SIGN_IN_FAILURES_PER_MINUTE") as limited:
            directory.find(wrong, "203.0.113.9")
        assert 0 < limited.value.retry_after <= 61
    assert directory.find(key, "203.0.113.9").name == "ana"
    with pytest.raises(SignInLimited):  # random key IDs from that address are counted with the rest
        directory.find("pg_00000000_unknown", "203.0.113.9")
    assert directory.find("pg_00000000_unknown", "198.51.100.4") is None, "another address has its own count"


def test_requests_without_a_key_are_limited_per_address(tmp_path: Path) -> None:
    from pagegraph.access.keys import SignInLimited

    path = tmp_path / "users.json"
    write_users(path, [])
    directory = UserDirectory(path, failures_per_minute=3)
    for _ in range(3):
        directory.failed("203.0.113.9")
    with pytest.raises(SignInLimited):
        directory.failed("203.0.113.9")
    directory.failed("198.51.100.4")


def test_a_weak_key_checked_by_scrypt_is_refused_without_a_check_past_the_limit(tmp_path: Path) -> None:
    """Keys converted from a plain-text file have no ID and may be guessable: each costs a slow check, and past the
    limit an address gets none."""
    from pagegraph.access.keys import SignInLimited

    path = tmp_path / "users.json"
    write_users(path, [ApiUser(name="old", key_id=None, key_hash=hash_key("letmein"))])
    assert hash_key("letmein").startswith("scrypt$")
    directory = UserDirectory(path, failures_per_minute=3)
    for _ in range(3):
        assert directory.find("guess", "203.0.113.9") is None
    with pytest.raises(SignInLimited):
        directory.find("letmein", "203.0.113.9")
    assert directory.find("letmein", "198.51.100.4").name == "old"


def test_a_scheduled_run_reads_with_its_owners_rights_from_the_users_file(tmp_path: Path, monkeypatch) -> None:
    """A cron's run names its owner and nothing more: the rights come from the users file at each run, and the run
    of a user who was removed fails."""
    from starlette.authentication import SimpleUser

    from pagegraph.access import runs

    path = tmp_path / "users.json"
    write_users(path, [ApiUser(name="rita", key_hash=hash_key("k"), projects=["corp"], ceiling="internal")])
    monkeypatch.setenv("PAGEGRAPH_AUTH_FILE", str(path))
    for user in (SimpleUser("rita"), {"identity": "rita"}):
        monkeypatch.setattr(runs, "get_config", lambda user=user: {"configurable": {AUTH_USER_KEY: user}})
        access = runs.caller_access()
        assert access == Access(user="rita", projects=["corp"], ceiling="internal", role="reader")
    write_users(path, [])
    with pytest.raises(PagegraphError, match="rita is no longer a user of this server"):
        runs.caller_access()


def test_a_refusal_that_repeats_is_written_once_a_minute_with_its_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pagegraph.access import audit as audit_log

    monkeypatch.setenv("PAGEGRAPH_AUDIT_LOG", str(tmp_path / "audit.jsonl"))
    clock = [1000.0]
    monkeypatch.setattr(audit_log.time, "monotonic", lambda: clock[0])
    refusals = audit_log.RepeatedRefusals(window_s=60)
    for n in range(1000):
        reason = f"too many failed sign-ins; try again in {60 - n % 60} s" if n % 2 else "missing API key"
        refusals.audit("sign_in_refused", who="no key", route="/threads", reason=reason, source="203.0.113.9")
    clock[0] += 61
    refusals.audit("sign_in_refused", who="no key", route="/threads", reason="missing API key", source="203.0.113.9")
    entries = audit_log.recent(tmp_path / "audit.jsonl", 100)
    assert [(e.reason[:20], e.repeated) for e in entries] == [
        ("missing API key", 0),
        ("too many failed sign", 0),
        ("missing API key", 499),
    ]
