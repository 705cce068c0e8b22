"""The model factory, call accounting, unreachable servers, the context budget and the weight joining."""

from __future__ import annotations

import hashlib
import socket
from pathlib import Path

import httpx
import pytest
from langchain_core.messages import HumanMessage
from pydantic import BaseModel

from pagegraph.config import Settings
from pagegraph.errors import ModelError, ModelUnavailableError
from pagegraph.llm import fit_evidence, get_chat_model, invoke_model, structured_call
from pagegraph.llm.budget import context_window, evidence_budget, reply_reserve, token_counter
from pagegraph.llm.calls import estimate_tokens
from pagegraph.llm.factory import resolve_spec
from pagegraph.llm.weights import LocalModelError, PackagedWeights, ensure_weights
from pagegraph.state.usage import UsageSummary
from tests.fakes import ScriptedChatModel


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def offline_servers(tmp_path: Path) -> Settings:
    port = closed_port()
    return Settings(
        cache_dir=tmp_path,
        models={
            "ollama_url": f"http://127.0.0.1:{port}",
            "openai_base_url": f"http://127.0.0.1:{port}/v1",
            "model_retries": 0,
            "model_timeout_s": 5,
        },
    )


class Flag(BaseModel):
    ok: bool


# ---- factory


def test_profiles_and_default_resolve_to_specs() -> None:
    settings = Settings(
        model="balanced",
        models={"model_cheap": "local-fast", "model_balanced": "ollama:qwen2.5", "model_premium": "openai:gpt-4.1"},
    )
    assert resolve_spec(None, settings) == "ollama:qwen2.5"
    assert resolve_spec("cheap", settings) == "local-fast"
    assert resolve_spec("premium", settings) == "openai:gpt-4.1"
    assert resolve_spec("gguf:/m.gguf", settings) == "gguf:/m.gguf"
    with pytest.raises(ModelError, match="profile cheap points at profile premium"):
        resolve_spec("cheap", Settings(models={"model_cheap": "premium"}))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nonsense", "is not one of: local, local-fast"),
        ("ollama:", "is not one of"),
        ("gguf:/nowhere/model.gguf", "no such file"),
        ("nosuchprovider:model", "nosuchprovider:model"),
    ],
)
def test_bad_specs_are_named(spec: str, message: str, offline_servers: Settings) -> None:
    with pytest.raises(ModelError, match=message):
        get_chat_model(spec, settings=offline_servers)


def test_openai_without_key_or_server_says_what_to_set(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ModelError, match="OPENAI_API_KEY"):
        get_chat_model("openai:gpt-4.1-mini", settings=Settings(cache_dir=tmp_path, models={"openai_base_url": None}))


def test_remote_models_get_settings_and_no_connection_at_creation(offline_servers: Settings) -> None:
    ollama = get_chat_model("ollama:qwen2.5:7b", temperature=0.2, max_tokens=300, settings=offline_servers)
    assert (ollama.model, ollama.base_url, ollama.temperature, ollama.num_predict) == (
        "qwen2.5:7b",
        offline_servers.models.ollama_url,
        0.2,
        300,
    )
    openai = get_chat_model("openai:local-model", settings=offline_servers)
    assert openai.openai_api_base == offline_servers.models.openai_base_url
    assert openai.request_timeout == 5 and openai.max_retries == 0


# ---- unreachable servers


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            "ollama:llama3.2",
            r"ollama:llama3.2 at http://127.0.0.1:\d+ refused the connection: start it with `ollama serve` or pick another model with --model",
        ),
        ("openai:qwen", r"openai:qwen at http://127.0.0.1:\d+/v1 refused the connection: start the server"),
    ],
)
def test_a_server_that_is_down_gives_one_clear_line(spec: str, expected: str, offline_servers: Settings) -> None:
    model = get_chat_model(spec, settings=offline_servers)
    with pytest.raises(ModelUnavailableError, match=expected):
        invoke_model(model, [HumanMessage(content="hello")], purpose="test")
    with pytest.raises(ModelUnavailableError, match="refused the connection"):
        structured_call(model, Flag, [HumanMessage(content="hello")], default=Flag(ok=False), purpose="test")


def test_connection_errors_from_any_model_are_explained() -> None:
    model = ScriptedChatModel.replying(httpx.ConnectError("[Errno 111] Connection refused"))
    with pytest.raises(ModelUnavailableError, match="refused the connection"):
        invoke_model(model, [HumanMessage(content="hi")], purpose="test")
    slow = ScriptedChatModel.replying(httpx.ReadTimeout("timed out"))
    with pytest.raises(ModelUnavailableError, match="did not answer in time: raise PAGEGRAPH_MODEL_TIMEOUT_S"):
        structured_call(slow, Flag, [HumanMessage(content="hi")], default=Flag(ok=False), purpose="test")


# ---- usage accounting


def test_calls_record_usage_and_latency() -> None:
    model = ScriptedChatModel.replying("three word reply", usage=True)
    reply, call = invoke_model(model, [HumanMessage(content="one two three four")], purpose="answer")
    assert reply.content == "three word reply"
    assert (call.prompt_tokens, call.completion_tokens, call.estimated, call.purpose) == (4, 3, False, "answer")
    assert call.latency_ms >= 0


def test_usage_is_estimated_when_the_model_reports_none() -> None:
    model = ScriptedChatModel.replying("x" * 70)
    _, call = invoke_model(model, [HumanMessage(content="y" * 35)], purpose="answer")
    assert call.estimated and (call.prompt_tokens, call.completion_tokens) == (10, 20)


def test_usage_adds_up_over_a_run() -> None:
    model = ScriptedChatModel.replying("a b", '{"ok": true}', "c", usage=True)
    calls = [invoke_model(model, [HumanMessage(content="p q r")], purpose="route")[1]]
    calls += [
        a.call
        for a in structured_call(
            model, Flag, [HumanMessage(content="s")], default=Flag(ok=False), purpose="plan"
        ).attempts
    ]
    calls.append(invoke_model(model, [HumanMessage(content="t")], purpose="answer")[1])
    summary = UsageSummary.from_calls([c for c in calls if c is not None])
    assert summary.calls == 3
    assert summary.prompt_tokens == sum(c.prompt_tokens for c in calls if c)
    assert summary.completion_tokens == 2 + 2 + 1
    assert summary.by_model == {"ScriptedChatModel": 3}


# ---- context budget


def test_fit_evidence_drops_lowest_ranked_and_never_cuts() -> None:
    items = [("a.pdf, p. 1", "x" * 350), ("b.pdf, p. 2", "y" * 350), ("c.pdf, p. 3", "z" * 35)]

    def render(item: tuple[str, str]) -> str:
        return f"[{item[0]}] {item[1]}"

    assert fit_evidence(items, render, budget=228, count=estimate_tokens).kept == items
    fit = fit_evidence(items, render, budget=227, count=estimate_tokens)
    assert fit.kept == items[:2] and fit.dropped == items[2:]
    assert fit.tokens == 212
    fit = fit_evidence(items, render, budget=150, count=estimate_tokens)
    assert fit.kept == items[:1], "a lower-ranked item that would fit is still dropped before a better one"
    assert fit_evidence(items, render, budget=10, count=estimate_tokens).kept == []


def test_evidence_budget_pays_for_prompt_and_reply(tmp_path: Path) -> None:
    settings = Settings(cache_dir=tmp_path, models={"remote_context_tokens": 4096, "llm_max_tokens": 512})
    model = ScriptedChatModel()
    assert context_window(model, settings) == 4096 and reply_reserve(model, settings) == 512
    assert token_counter(model) is estimate_tokens
    assert evidence_budget(model, "q" * 350, settings) == 4096 - 100 - 512 - 64


# ---- packaged weights


def make_weight_packages(root: Path, prefix: str, payload: bytes, parts: int) -> None:
    step = -(-len(payload) // parts)
    for part in range(1, parts + 1):
        data = root / f"{prefix}{part}" / "data"
        data.mkdir(parents=True)
        (data.parent / "__init__.py").write_text("")
        (data / f"part{part:02d}.bin").write_bytes(payload[(part - 1) * step : part * step])


def test_weights_are_joined_once_and_verified(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    payload = bytes(range(256)) * 1000
    make_weight_packages(tmp_path / "site", "fakeweights_a_part", payload, 3)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    weights = PackagedWeights(
        name="Fake",
        file_name="fake.gguf",
        package_prefix="fakeweights-a-part",
        parts=3,
        size=len(payload),
        sha256=hashlib.sha256(payload).hexdigest(),
    )
    path = ensure_weights(weights, tmp_path / "cache")
    assert path.read_bytes() == payload
    mtime = path.stat().st_mtime_ns
    assert ensure_weights(weights, tmp_path / "cache") == path and path.stat().st_mtime_ns == mtime
    with open(path, "r+b") as damaged:
        damaged.write(b"\0")
    assert ensure_weights(weights, tmp_path / "cache").read_bytes() == payload, (
        "a file changed after joining is joined again"
    )


def test_weights_with_the_wrong_hash_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    payload = b"not the model" * 100
    make_weight_packages(tmp_path / "site", "fakeweights_b_part", payload, 2)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    weights = PackagedWeights(
        name="Fake",
        file_name="fake.gguf",
        package_prefix="fakeweights-b-part",
        parts=2,
        size=len(payload),
        sha256="0" * 64,
    )
    with pytest.raises(LocalModelError, match=r"expected 1,300 bytes with sha256 0{64}; reinstall"):
        ensure_weights(weights, tmp_path / "cache")
    assert not any((tmp_path / "cache" / "models").glob("fake.gguf*")), "nothing half-written is left behind"


def test_missing_weight_package_is_named(tmp_path: Path) -> None:
    weights = PackagedWeights(
        name="Fake", file_name="f.gguf", package_prefix="fakeweights-absent-part", parts=2, size=1, sha256="0" * 64
    )
    with pytest.raises(LocalModelError, match="package fakeweights-absent-part1 is not installed"):
        ensure_weights(weights, tmp_path)
