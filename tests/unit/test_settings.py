"""Settings read from the environment: lists written as people write them, and one clear line for a bad value."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from pagegraph.access.records import Access
from pagegraph.cli import app
from pagegraph.config import Context, Settings, SettingsError, get_settings
from pagegraph.errors import PagegraphError
from pagegraph.services import Services


def test_list_variables_take_the_path_and_comma_forms_and_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAGEGRAPH_INGEST_ROOTS", "/srv/uploads:/srv/docs")
    monkeypatch.setenv("PAGEGRAPH_ALLOWED_ORIGINS", "https://smith.langchain.com, http://127.0.0.1:3000")
    settings = Settings()
    assert settings.server.ingest_roots == [Path("/srv/uploads"), Path("/srv/docs")]
    assert settings.server.allowed_origins == ["https://smith.langchain.com", "http://127.0.0.1:3000"]
    monkeypatch.setenv("PAGEGRAPH_INGEST_ROOTS", "/some/folder")
    assert Settings().server.ingest_roots == [Path("/some/folder")]
    monkeypatch.setenv("PAGEGRAPH_INGEST_ROOTS", '["/srv/a", "/srv/b"]')
    assert Settings().server.ingest_roots == [Path("/srv/a"), Path("/srv/b")]


def test_a_bad_variable_is_named_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAGEGRAPH_INGEST_ROOTS", '["/srv/a", ')
    with pytest.raises(SettingsError, match=r"^PAGEGRAPH_INGEST_ROOTS: .*separated by ':'"):
        get_settings()
    monkeypatch.setenv("PAGEGRAPH_MAX_PAGES", "many")
    result = CliRunner().invoke(app, ["inspect"])
    assert result.exit_code == 2 and "PAGEGRAPH_MAX_PAGES" in result.output and "Traceback" not in result.output


def test_server_users_choose_only_among_the_models_the_server_offers(monkeypatch: pytest.MonkeyPatch) -> None:
    services = Services(Settings(server={"server_models": ["local", "cheap"]}))
    monkeypatch.setattr("pagegraph.services.caller_access", lambda: Access(user="rita"))
    for spec in ("gguf:/etc/passwd", "ollama:anything"):
        with pytest.raises(PagegraphError, match="PAGEGRAPH_SERVER_MODELS"):
            services.chat_model(Context(model=spec))
    assert services.chat_model(Context(model_profile="cheap")) is not None
    monkeypatch.setattr("pagegraph.services.caller_access", lambda: None)  # the CLI and Python: any spec
    assert services.chat_model(Context(model="local-fast")) is not None


def test_context_knobs_come_in_groups_and_a_key_of_the_old_flat_layout_is_refused_naming_its_group() -> None:
    grouped = Context(retrieval={"top_k_files": 5}, tree={"use": False}, confidence={"supported": 0.9})
    assert (grouped.retrieval.top_k_files, grouped.tree.use, grouped.confidence.supported) == (5, False, 0.9)
    assert grouped.retrieval.alpha == Context().retrieval.alpha  # the rest of a group keeps its defaults

    with pytest.raises(ValueError, match=r"'top_k_files' is retrieval.top_k_files.*\{'retrieval': \{'top_k_files'"):
        Context.model_validate({"top_k_files": 5, "tree": {"use": False}})
    with pytest.raises(ValueError, match="top_k_files"):
        Context(retrieval={"top_k_files": 0})  # bounds hold in the groups

    changed = grouped.with_changes(tree={"max_steps": 3})
    assert (changed.tree.use, changed.tree.max_steps, grouped.tree.max_steps) == (False, 3, 8)


def test_settings_come_in_groups_read_from_the_same_variables_and_flat_keys_are_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PAGEGRAPH_DATABASE_POOL_SIZE", "7")
    monkeypatch.setenv("PAGEGRAPH_LLM_SLOTS", "3")
    settings = Settings(storage={"database_url": "postgresql://db/x"})
    # a group given in part still reads the rest of itself from the environment
    assert (settings.storage.database_url, settings.storage.database_pool_size) == ("postgresql://db/x", 7)
    assert settings.models.llm_slots == 3 and settings.runtime_database_url() == "postgresql://db/x"
    changed = settings.with_changes(ingest={"ocr": "off"}, index=tmp_path)
    assert (changed.ingest.ocr, changed.index, changed.storage.database_url) == ("off", tmp_path, "postgresql://db/x")
    with pytest.raises(ValueError, match="ocr"):
        settings.with_changes(ingest={"ocr": "sometimes"})  # validated like the variable
    with pytest.raises(SettingsError, match=r"'database_url' is now storage\.database_url"):
        Settings(database_url="postgresql://db/x")
    # a flat line in .env is read by its group, not refused
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("PAGEGRAPH_MAX_PAGES=12\n")
    assert Settings().limits.max_pages == 12
