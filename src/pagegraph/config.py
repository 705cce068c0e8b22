"""Settings: machine-level knobs read from the environment (`PAGEGRAPH_*`).

Per-run knobs that Studio shows (`Context`) join this module with the question graphs.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import warnings
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Field, ValidationError, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from pagegraph.errors import PagegraphError
from pagegraph.state.answering import OutputType

SERVER_FOLDER = "server"  # INDEX/server: what `pagegraph serve` keeps beside an index (its database, logs, audit)


def data_home() -> Path:
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")


def _cache_home() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")


def _comma_list(value: Any) -> Any:
    """A list from the environment separated by commas (`local,ollama:qwen2.5`); a JSON list is read too."""
    if isinstance(value, str):
        return _json_list(value) or [part.strip() for part in value.split(",") if part.strip()]
    return value


def _path_list(value: Any) -> Any:
    """A list from the environment as PATH writes one (`/a:/b`); a JSON list is read too."""
    if isinstance(value, str):
        return _json_list(value) or [part for part in value.split(os.pathsep) if part.strip()] or None
    return value


def _json_list(value: str) -> list[str] | None:
    if not value.lstrip().startswith("["):
        return None
    try:
        parsed = json.loads(value)
    except ValueError:
        raise ValueError("not a JSON list: write the items separated as the variable's description says") from None
    if not isinstance(parsed, list):
        raise ValueError("not a list")
    return [str(item) for item in parsed]


_FROM_ENVIRONMENT = SettingsConfigDict(env_prefix="PAGEGRAPH_", env_file=".env", extra="ignore")
# Lists as the environment writes them: separated by commas, or by ':' as PATH is (a JSON list is read too).
CommaList = Annotated[list[str], NoDecode, BeforeValidator(_comma_list)]
PathList = Annotated[list[Path] | None, NoDecode, BeforeValidator(_path_list)]


class StorageSettings(BaseSettings):
    """Where an index lives when not in its folder: PostgreSQL, a Chroma server."""

    model_config = _FROM_ENVIRONMENT

    database_url: str | None = Field(
        default=None,
        description="postgresql://USER:PASSWORD@HOST:PORT/DB with pgvector: the index lives there (one schema per "
        "index, named after the --index folder's name, which then keeps only this machine's caches); unset keeps "
        "the index in its folder",
    )
    database_pool_size: int = Field(default=4, ge=1, le=64, description="connections one process keeps open")
    chroma_url: str | None = Field(
        default=None, description="http://HOST:PORT of a `chroma run` server; unset keeps vectors in the index folder"
    )


class ModelSettings(BaseSettings):
    """The embedders and chat models: the embedded model's process, model profiles, remote endpoints."""

    model_config = _FROM_ENVIRONMENT

    embedding_backend: Literal["auto", "onnx", "torch"] = Field(
        default="auto", description="auto: ONNX Runtime when the onnx exporter and runtime are installed, else torch"
    )
    embedding_threads: int = Field(
        default=0, ge=0, description="CPU threads for embedding; 0 uses every core the process may run on"
    )
    embedding_batch_size: int = Field(default=32, ge=1, le=1024, description="chunks per embedding batch")
    model_cheap: str = Field(default="local-fast", description="spec the `cheap` profile stands for")
    model_balanced: str = Field(default="local", description="spec the `balanced` profile stands for")
    model_premium: str = Field(
        default="local", description="spec the `premium` profile stands for; point it at a stronger model you run"
    )
    small_models: CommaList = Field(
        default_factory=lambda: ["local", "local-fast"],
        description="model specs the `auto` graph answers with the extract graph (the rest get `rag`), separated by "
        "commas",
    )
    llm_threads: int = Field(
        default=0,
        ge=0,
        description="CPU threads for the local model; 0 uses every core the process may run on. On a machine "
        "other work keeps busy, 1 can be faster: two threads collapse when they have to share two cores",
    )
    llm_context_tokens: int = Field(default=8192, ge=1024, le=32768, description="local model context window")
    llm_batch_size: int = Field(
        default=512, ge=8, le=4096, description="prompt tokens the local model evaluates per step"
    )
    llm_max_tokens: int = Field(default=1024, ge=16, description="longest reply a model may write")
    llm_slots: int = Field(
        default=1,
        ge=1,
        le=16,
        description="calls the local model's process decodes at once (llama.cpp's parallel slots, each with the "
        "whole context window); more wait their turn there. 1 keeps an answer the same from run to run: calls "
        "decoded together change each other's arithmetic, and so the words and pages chosen (docs/models.md); a "
        "server with several users may set 2 or more for throughput",
    )
    llm_repack: bool = Field(
        default=False,
        description="llama.cpp's repacked weight layouts (and AMX, where the build has it): off by default, as they "
        "were slower for the embedded Q4_K_M models on the CPU measured (docs/models.md); a model process that "
        "crashes at its first reply with them is started again without them",
    )
    llm_timeout_s: float = Field(
        default=600.0,
        gt=0,
        description="seconds one local model call may take; past that its process is taken as hung, ended and "
        "started again",
    )
    llm_load_timeout_s: float = Field(
        default=300.0, gt=0, description="seconds the local model's process may take to load and write its first reply"
    )
    llm_idle_s: float = Field(
        default=300.0,
        gt=0,
        description="seconds the local model's process stays loaded after its last call, for whichever command asks "
        "next (`pagegraph model stop` ends it at once)",
    )
    llama_server: Path | None = Field(
        default=None,
        description="llama.cpp's server binary that runs the local models; unset uses the one scripts/setup.sh built "
        "into the virtual environment",
    )
    ollama_url: str = Field(default="http://127.0.0.1:11434", description="Ollama server for ollama:NAME specs")
    openai_base_url: str | None = Field(
        default=None,
        description="OpenAI-compatible endpoint (llama.cpp server, vLLM, LM Studio) for openai:NAME specs; "
        "unset uses OpenAI's own API with OPENAI_API_KEY",
    )
    remote_context_tokens: int = Field(
        default=32768, ge=1024, description="context window assumed for models other than the local ones"
    )
    model_timeout_s: float = Field(default=120.0, gt=0, description="seconds to wait for a remote model's reply")
    model_retries: int = Field(default=1, ge=0, le=5, description="retries of a remote call that failed to connect")
    model_logprobs: bool = Field(
        default=True,
        description="ask OpenAI-compatible servers for token log-probabilities, from which the judge reads P(Yes) "
        "(turn off for a server that refuses them; the judge then uses Context.confidence.written_yes)",
    )


class IngestSettings(BaseSettings):
    """How documents are read at ingest: OCR, tables, the parser process's budget, summaries."""

    model_config = _FROM_ENVIRONMENT

    ingest_summaries: Literal["model", "extractive"] = Field(
        default="extractive",
        description="ingest commits every document with summaries taken from its text; `model`: `pagegraph ingest` "
        "then has the model rewrite them (`pagegraph summarize`), and `pagegraph serve` keeps doing so in the "
        "background for documents ingested through the server",
    )
    ocr: Literal["auto", "off"] = Field(
        default="auto",
        description="auto: ingest OCRs PDF pages that have no text layer when Tesseract is installed; off: never "
        "(`ingest --no-ocr`; an image-only PDF is then refused)",
    )
    pdf_tables: bool = Field(
        default=True,
        description="ingest puts the ruled tables of PDF pages that look tabular into the page text as Markdown rows "
        "(`ingest --no-tables`: the text layer's flat text)",
    )
    pdf_table_seconds: float = Field(
        default=60.0,
        gt=0,
        description="most seconds table detection spends on one PDF; later pages keep their flat text",
    )
    parse_seconds: float = Field(
        default=900.0,
        gt=0,
        description="most seconds the parser process spends on one document when ingesting several; it is then "
        "stopped and the document refused",
    )
    parse_memory_bytes: int = Field(
        default=4_000_000_000,
        ge=500_000_000,
        description="address space the parser process may use (documents past it are refused, the rest go on)",
    )
    ocr_languages: str = Field(
        default="eng", pattern=r"^[a-z_]+(\+[a-z_]+)*$", description="Tesseract languages, joined by '+' (eng+deu)"
    )
    section_min_chars: int = Field(
        default=1500,
        ge=0,
        description="tree index: a section shorter than this (its text, or its children's summaries) is kept as it "
        "is instead of being summarised by the model (PageIndex's min_content_length_for_summary)",
    )
    section_summary_workers: int = Field(default=2, ge=1, le=16, description="section summaries written at once")
    section_max_tokens: int = Field(default=256, ge=32, description="longest section summary reply at ingest")
    summary_max_tokens: int = Field(
        default=512, ge=64, description="longest document summary reply at ingest (a small model's text can run on)"
    )


class LimitSettings(BaseSettings):
    """How much one file, question, request or user may ask of pagegraph."""

    model_config = _FROM_ENVIRONMENT

    max_file_bytes: int = Field(
        default=500_000_000, ge=1024, description="largest file ingest reads; a larger one is refused, naming the limit"
    )
    max_unpacked_bytes: int = Field(
        default=200_000_000,
        ge=1024,
        description="most bytes a Word file (a zip) may unpack to; more is refused before anything is unpacked",
    )
    max_unpack_ratio: int = Field(
        default=200,
        ge=10,
        description="most a member of a Word file may expand over its packed size, once it unpacks past 10 MB "
        "(ordinary documents stay under 20; a zip bomb is hundreds to a thousand)",
    )
    max_pages: int = Field(default=10_000, ge=1, description="most pages one document may have")
    max_document_chars: int = Field(default=50_000_000, ge=1000, description="most characters of text in one document")
    max_upload_bytes: int = Field(
        default=50_000_000, ge=1024, description="largest upload the web page accepts in one request (413 above it)"
    )
    max_question_chars: int = Field(
        default=4000, ge=16, le=1_000_000, description="longest question a run accepts, in characters"
    )
    max_question_tokens: int = Field(
        default=1000,
        ge=8,
        description="longest question a run accepts, in tokens (estimated); at most a quarter of the model's window, "
        "so that a question always leaves room for evidence and the reply",
    )
    refused_question_chars: int = Field(
        default=200, ge=16, le=4000, description="characters of a refused question kept in its thread, then '…'"
    )
    max_request_bytes: int = Field(
        default=1_000_000, ge=1024, description="largest HTTP request body the server reads (413 above it)"
    )
    max_state_bytes: int = Field(
        default=10_000_000,
        ge=1024,
        description="largest a server thread's state may grow to through an edit of it (`POST /threads/ID/state`; "
        "413 above it): a chat's messages are added to at each edit",
    )
    sign_in_failures_per_minute: int = Field(
        default=10,
        ge=1,
        le=10_000,
        description="failed sign-ins (a wrong key, or none) one address may make in a minute; past it a failure "
        "from there is answered 429, and a key that costs a slow check (scrypt) is refused without one, until the "
        "minute has passed; a correct key made by `users add` is always let in",
    )
    runs_per_user: int = Field(
        default=2, ge=1, le=64, description="runs one server user may have going at once (429 above it)"
    )
    runs_per_user_per_minute: int = Field(
        default=30, ge=1, le=10_000, description="runs one server user may start in a minute (429 above it)"
    )


class ServerSettings(BaseSettings):
    """`pagegraph serve`: its runtime's database and Redis, users, uploads, hosts and origins, audit log."""

    model_config = _FROM_ENVIRONMENT

    audit_log: Path | None = Field(
        default=None,
        description="the server's audit log of refused sign-ins, ingests, declassifications and roles (JSON lines; "
        "admins read it at /ui/audit); unset: INDEX/server/audit.jsonl",
    )
    server_log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        default="WARNING", description="the server runtime's log lines shown by `pagegraph serve` (--verbose: INFO)"
    )
    server_database_url: str | None = Field(
        default=None,
        description="postgresql://... where `pagegraph serve` keeps threads, runs, their queue and crons; unset uses "
        "database_url, and without either serve starts a PostgreSQL of its own in INDEX/server (pgserver)",
    )
    redis_url: str | None = Field(
        default=None,
        description="redis://HOST:PORT of the Redis server that carries `pagegraph serve`'s run streams; replicas on "
        "one database share one; unset, serve starts one of its own on loopback",
    )
    auth_file: Path | None = Field(
        default=None,
        description="LangGraph server users file (`pagegraph users add` writes it): names, roles, projects, ceilings "
        "and salted hashes of their API keys; unset, the server is open to the local owner (it binds to 127.0.0.1)",
    )
    upload_dir: Path = Field(
        default_factory=lambda: data_home() / "pagegraph" / "uploads",
        description="the server's shared upload folder: where its `ingest` graph reads when ingest_roots is unset",
    )
    user_upload_dir: Path = Field(
        default_factory=lambda: data_home() / "pagegraph" / "user-uploads",
        description="where the web page keeps each server user's uploads, a folder per user; a user's `ingest` "
        "runs may read their own folder, nobody else's",
    )
    ingest_roots: PathList = Field(
        default=None,
        description="folders the server's `ingest` graph may read, separated by ':' as in PATH, after symlinks and "
        "'..' are resolved; unset: the upload folder only. A path outside them gets the same answer as a missing one",
    )
    allowed_hosts: CommaList = Field(
        default_factory=list,
        description="host names the server answers to besides 127.0.0.1, localhost and ::1, separated by commas "
        "(`pagegraph serve --host` adds the one it binds; `*`: any, behind a proxy that checks them); a request for "
        "another name, as a DNS-rebinding page sends, gets 403",
    )
    allowed_origins: CommaList = Field(
        default_factory=list,
        description="origins (scheme://host:port) of web pages allowed to call the server besides its own page, "
        "separated by commas (LangGraph Studio: https://smith.langchain.com); requests from other pages get 403",
    )
    trusted_proxies: CommaList = Field(
        default_factory=list,
        description="addresses (or networks, 10.0.0.0/8) of reverse proxies whose X-Forwarded-For header names the "
        "client, separated by commas; from any other peer the header is ignored, so that no client can pose as "
        "another address (sign-in limits and the audit log count the peer). Unset: trust none",
    )
    checkpoint_db: Path | None = Field(
        default=None, description="SQLite file that keeps LangGraph server threads; default INDEX/checkpoints.sqlite"
    )
    server_models: CommaList = Field(
        default_factory=lambda: ["local", "local-fast", "cheap", "balanced", "premium"],
        description="model specs and profiles a server user may ask for in a run's context, separated by commas "
        "(never a file path: `gguf:PATH` from a user would probe the server's disk); unset in the context, a run "
        "uses PAGEGRAPH_MODEL",
    )


class Settings(BaseSettings):
    """Machine-level settings, read from `PAGEGRAPH_*` environment variables (or `.env`), in groups like `Context`'s:
    `settings.storage.database_url` is PAGEGRAPH_DATABASE_URL. `Settings(storage={"database_url": URL})` sets one
    (the group's other settings still come from the environment); a key of the flat layout before the groups
    (`Settings(database_url=URL)`) is refused with its new place."""

    model_config = _FROM_ENVIRONMENT

    index: Path = Field(
        default_factory=lambda: data_home() / "pagegraph" / "index",
        description="index folder used when --index is not given",
    )
    cache_dir: Path = Field(
        default_factory=lambda: _cache_home() / "pagegraph",
        description="where exported ONNX embedders and the joined local model weights are kept",
    )
    model: str = Field(
        default="local",
        description="chat model spec: local | local-fast | gguf:PATH | ollama:NAME | openai:NAME | PROVIDER:NAME, "
        "or a profile name (cheap | balanced | premium)",
    )
    storage: StorageSettings = Field(
        default_factory=StorageSettings,
        description="Where an index lives when not in its folder: PostgreSQL, a Chroma server",
    )
    models: ModelSettings = Field(
        default_factory=ModelSettings,
        description="The embedders and chat models: the embedded model's process, model profiles, remote endpoints",
    )
    ingest: IngestSettings = Field(
        default_factory=IngestSettings,
        description="How documents are read at ingest: OCR, tables, the parser process's budget, summaries",
    )
    limits: LimitSettings = Field(
        default_factory=LimitSettings, description="How much one file, question, request or user may ask of pagegraph"
    )
    server: ServerSettings = Field(
        default_factory=ServerSettings,
        description="`pagegraph serve`: its runtime's database and Redis, users, uploads, hosts and origins, audit log",
    )

    def __init__(self, **given: Any) -> None:
        """A group given as a dict is built by its class, so that the settings it leaves out are read from the
        environment as when no group is given. A flat key given here is refused, naming its group (a flat one in
        `.env` is a group's, read by the group)."""
        flat = sorted(SETTING_GROUPS.keys() & given.keys())
        if flat:
            moved = ", ".join(f"{key!r} is now {SETTING_GROUPS[key]}.{key}" for key in flat)
            example = f"Settings({SETTING_GROUPS[flat[0]]}={{{flat[0]!r}: ...}})"
            raise SettingsError(f"settings of the flat layout: {moved} (give them as {example})")
        groups = {
            key: GROUP_CLASSES[key](**value)
            for key, value in given.items()
            if key in GROUP_CLASSES and isinstance(value, dict)
        }
        super().__init__(**given | groups)

    def with_changes(self, **changes: Any) -> Settings:
        """A copy with some settings changed, validated: `settings.with_changes(ingest={"ocr": "off"}, index=p)`."""
        data: dict[str, Any] = {name: getattr(self, name) for name in type(self).model_fields}
        for key, value in changes.items():
            if key in GROUP_CLASSES:
                value = GROUP_CLASSES[key](**{**data[key].model_dump(), **value})
            data[key] = value
        return Settings(**data)

    def audit_path(self) -> Path:
        """The server's audit log (JSON lines): PAGEGRAPH_AUDIT_LOG, else INDEX/server/audit.jsonl."""
        return (self.server.audit_log or self.index / SERVER_FOLDER / "audit.jsonl").expanduser()

    def runtime_database_url(self) -> str | None:
        """The database of the server's runtime (threads, runs, queue, crons, checkpoints)."""
        return self.server.server_database_url or self.storage.database_url

    def model_process_folder(self) -> Path:
        """Where the local model's processes publish their address and write their logs."""
        return self.cache_dir / "model-process"

    def local_model_threads(self) -> int:
        return self.models.llm_threads or len(os.sched_getaffinity(0))

    def question_token_limit(self, context_window: int) -> int:
        """The most tokens a question may have for a model with this window."""
        return min(self.limits.max_question_tokens, context_window // 4)

    def ingest_folders(self, user: str | None = None) -> list[Path]:
        """Where server-side ingest may read, resolved: the configured folders, and `user`'s own uploads."""
        roots = [Path(root).expanduser().resolve() for root in (self.server.ingest_roots or [self.server.upload_dir])]
        return roots + ([self.uploads_of(user)] if user else [])

    def uploads_of(self, user: str) -> Path:
        """`user`'s upload folder (a name that is not a plain file name is hashed)."""
        plain = re.fullmatch(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}", user) is not None
        folder = user if plain else "user-" + hashlib.sha256(user.encode()).hexdigest()[:16]
        return Path(self.server.user_upload_dir).expanduser().resolve() / folder


GROUP_CLASSES: dict[str, type[BaseSettings]] = {
    "storage": StorageSettings,
    "models": ModelSettings,
    "ingest": IngestSettings,
    "limits": LimitSettings,
    "server": ServerSettings,
}
# Each grouped setting's group (its environment variable stays PAGEGRAPH_<NAME>).
SETTING_GROUPS: dict[str, str] = {name: group for group, kind in GROUP_CLASSES.items() for name in kind.model_fields}


class SettingsError(PagegraphError):
    """An environment variable (or .env line) that does not hold what its setting needs, or a setting given in the
    flat layout."""


def setting_field(name: str) -> FieldInfo | None:
    """The field of the setting read from PAGEGRAPH_<NAME>: on `Settings` itself or in its group."""
    if name in SETTING_GROUPS:
        return GROUP_CLASSES[SETTING_GROUPS[name]].model_fields[name]
    return Settings.model_fields.get(name)


def get_settings() -> Settings:
    """The process settings; a variable that cannot be read is named in one line (SettingsError)."""
    try:
        return Settings()
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            field = str(error["loc"][0]) if error["loc"] else ""
            info = setting_field(field)
            expected = f" ({info.description})" if info is not None and info.description else ""
            problems.append(f"PAGEGRAPH_{field.upper()}: {error['msg']}{expected}")
        raise SettingsError("; ".join(problems)) from None


class RoutingWeights(BaseModel):
    """The model-free document router (retrievers.documents): weights of its four document rankings in the
    reciprocal-rank fusion, the fusion's constant, and how many fused chunk scores count per document."""

    profile: float = Field(default=0.5, ge=0.0, description="BM25 over title, summary, topics, section titles")
    centroid: float = Field(default=0.0, ge=0.0, description="question against the mean of the document's chunks")
    chunks: float = Field(default=1.0, ge=0.0, description="the document's best fused chunk scores")
    terms: float = Field(default=0.5, ge=0.0, description="the question's names and years the document holds")
    rrf_k: int = Field(default=1, ge=1)
    per_document: int = Field(default=3, ge=1, le=20)


class SentenceWeights(BaseModel):
    """How the highlight stage and the extract graph's focused read score a sentence for holding the answer
    (retrievers.highlights): a weighted sum of its cosine to the question, the share of the question's content words
    it holds (weighted by how few sentences hold them), how well it fits the answer's expected shape, and its
    passage's rank; a number question's sentence without a figure is scaled down."""

    dense: float = Field(default=0.45, ge=0.0, description="weight of the sentence's cosine to the question")
    lexical: float = Field(default=0.45, ge=0.0, description="weight of the question's content words it holds")
    shape: float = Field(default=0.15, ge=0.0, description="weight of its fit to the answer's expected shape")
    rank: float = Field(default=0.05, ge=0.0, description="weight of 1 / (1 + its passage's rank)")
    no_number: float = Field(
        default=0.7, ge=0.0, le=1.0, description="factor on a number question's sentence that holds no figure"
    )


class PageRules(BaseModel):
    """How the pages a question names, and a financial report's statement pages, are found
    (retrievers.named_pages, retrievers.statements)."""

    max_named_pages: int = Field(
        default=10, ge=1, le=100, description="pages one question may name at most; a longer range counts its ends"
    )
    printed_offset_support: float = Field(
        default=0.3,
        ge=0.0,
        le=1.0,
        description="share of a document's pages that must print their number at one offset from the physical "
        "number before printed page numbers are read through that offset",
    )
    statement_title_chars: int = Field(
        default=400,
        ge=50,
        le=5000,
        description="characters from a page's start where a statement's title is looked for",
    )
    statement_min_numbers: int = Field(
        default=40, ge=1, le=1000, description="figures a page must hold to count as a statement page"
    )
    statement_min_pages: int = Field(
        default=2,
        ge=1,
        le=3,
        description="statements a document must have for any to count (fewer: it is not a financial report)",
    )


class RetrievalKnobs(BaseModel):
    """How passages are found: candidates, fusion, windows, page ranking, document routing."""

    top_k_files: int = Field(default=3, ge=1, le=20, description="documents the router keeps")
    top_k_bm25: int = Field(default=20, ge=1, le=200, description="BM25 candidates per search")
    top_k_vector: int = Field(default=40, ge=1, le=400, description="dense candidates per search")
    max_chunks: int = Field(
        default=15, ge=1, le=50, description="fused hits per plan step handed on (before windows and the budget)"
    )
    alpha: float = Field(
        default=0.4,
        ge=0.0,
        le=1.0,
        description="BM25 weight in the fusion of normalised BM25 and cosine scores (chosen with bench/fusion.py)",
    )
    window: int = Field(default=1, ge=0, le=5, description="neighbouring chunks added on each side of a hit")
    page_ranking: bool = Field(
        default=True,
        description="count retrieved hits by page: one hit per page not yet covered, windows skip covered pages",
    )
    named_pages: bool = Field(
        default=True,
        description="a question naming pages or figures ('page 17', 'the cover', 'Figure 4') gets those pages first "
        "(with page_ranking)",
    )
    statement_pages: bool = Field(
        default=True,
        description="a question asking for a financial metric (a ratio, margin, turnover, return) gets the first "
        "page of its report's balance sheet, income statement and cash flow statement first (with page_ranking)",
    )
    lead_documents: int = Field(
        default=3,
        ge=1,
        le=20,
        description="named pages and statements are looked for in the documents a search names only when it names "
        "at most this many (with page_ranking)",
    )
    route_documents: int = Field(
        default=5,
        ge=0,
        le=50,
        description="a search over the whole library searches only this many documents, ranked without a model "
        "(0: every document)",
    )
    route_keywords_up_to: int = Field(
        default=50_000,
        ge=0,
        description="routing ranks a library's documents by a keyword and vector search of all its chunks when it "
        "holds at most this many; above, by the chunks nearest the question by vector, scored by keywords too (a "
        "keyword search of a whole library costs in proportion to it: ~150 ms at 200k chunks in PostgreSQL)",
    )
    route_alone: float = Field(
        default=0.6,
        ge=0.0,
        le=1.0,
        description="a search over the whole library searches only the best-ranked document, as if the question "
        "named it, when the second scores under this share of its routing score (0: never)",
    )
    routed_share: float = Field(
        default=0.0,
        ge=0.0,
        le=8.0,
        description="when a search over the whole library routes to several documents, their passages take the "
        "first places in proportion to their routing scores raised to this power, so that a routed document is not "
        "crowded out by another's passages (0: in fused-score order alone)",
    )
    page_rules: PageRules = Field(
        default_factory=PageRules, description="how named pages and statement pages are found"
    )
    routing: RoutingWeights = Field(default_factory=RoutingWeights, description="the model-free document router")
    correct_spelling: bool = Field(
        default=True,
        description="search a question's words that no indexed chunk holds, and that are not common English words, "
        "as the indexed word one typing slip away ('Neflix' as 'Netflix')",
    )
    spelling_min_letters: int = Field(
        default=5, ge=3, le=20, description="letters a word must have to be corrected (shorter words are left as typed)"
    )


class GateKnobs(BaseModel):
    """When to abstain before any answer-model call."""

    abstain_threshold: float = Field(
        default=0.19,
        ge=0.0,
        le=1.0,
        description="abstain without calling the answer model when no chunk of the searched documents reaches "
        "this cosine similarity to the question (calibrated with bench/abstain_threshold.py: keeps 98% of "
        "answerable benchmark questions)",
    )
    key_terms: bool = Field(
        default=True,
        description="abstain without calling the answer model when the question names something (a capitalised "
        "name, an acronym, a year) that neither the retrieved passages nor their documents mention, or a page, "
        "figure or table their documents do not have",
    )
    term_part_letters: int = Field(
        default=3,
        ge=1,
        le=10,
        description="a key term's parts shorter than this many letters (numbers aside) are not looked for",
    )
    near_spelling_letters: int = Field(
        default=5,
        ge=3,
        le=20,
        description="a key term's part of at least this many letters is also mentioned by a "
        "near spelling ('Netfilx' for 'Netflix')",
    )
    near_spelling_ratio: float = Field(
        default=0.85, ge=0.5, le=1.0, description="how alike a near spelling must be (difflib's ratio)"
    )


class ReadingKnobs(BaseModel):
    """What the answer model reads: evidence sentences, the extract graph's focused read, the evidence budget, and
    how answer sentences are attributed to passages."""

    highlights: int = Field(
        default=3, ge=0, le=20, description="evidence sentences picked before any answer-model call and shown first"
    )
    highlight_passages: int = Field(
        default=6, ge=1, le=50, description="top passages whose sentences the highlight stage scores"
    )
    sentence_weights: SentenceWeights = Field(
        default_factory=SentenceWeights, description="how a sentence is scored for holding the answer"
    )
    answer_passage_chars: int = Field(
        default=1500,
        ge=200,
        le=20000,
        description="characters of each passage's text an answer hands to another agent (the MCP `ask` tool, "
        "`DocumentTools.ask`), then '…'; its highlighted sentences come whole beside it",
    )
    sentence_min_words: int = Field(
        default=3,
        ge=1,
        le=20,
        description="a sentence is shown, scored and checked when it has at least this many words (a character of "
        "a script written without spaces counts as a word)",
    )
    sentence_max_chars: int = Field(
        default=400, ge=80, le=4000, description="a sentence is shown, scored and checked up to this many characters"
    )
    word_prefix_letters: int = Field(
        default=4,
        ge=2,
        le=12,
        description="two words match when one starts with the other and the shorter has at least this many letters "
        "('weigh' and 'weight'; not 'governor' and 'government'): in sentence scores, the gate's key terms, the "
        "value check, quotes and the reading judge",
    )
    focus_sentences: int = Field(
        default=12, ge=1, le=50, description="extract graph: best sentences of the top passages the first read shows"
    )
    focus_context: int = Field(
        default=1, ge=0, le=5, description="extract graph: neighbouring sentences shown on each side of a best one"
    )
    focus_max_tokens: int = Field(
        default=1200, ge=100, le=100_000, description="extract graph: evidence tokens of the first, focused read"
    )
    focus_span_chars: int = Field(
        default=600,
        ge=100,
        le=5000,
        description="extract graph: characters a shown sentence may span with the short lines after it (table "
        "cells, a figure on its own line)",
    )
    confirm_answers: bool = Field(
        default=False,
        description="extract graph: read whole passages also after a focused read that answered; abstain when the "
        "two answers differ, keep the focused one when the second refuses (fewer wrong answers, fewer right ones)",
    )
    widen_below: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="extract graph: read whole passages once when the focused read refused or the excerpt it cites "
        "holds less than this share of its answer",
    )
    max_evidence_tokens: int = Field(
        default=3000,
        ge=200,
        le=100_000,
        description="evidence tokens in the answer prompt at most (also bounded by the model's context window); "
        "the local model reads ~80 prompt tokens/s on 2 cores",
    )
    attribution_min_overlap: float = Field(
        default=0.3,
        ge=0.0,
        le=1.0,
        description="a sentence that cites nothing is attributed to the passage holding at least this share of its "
        "words",
    )
    attribution_min_tokens: int = Field(
        default=3, ge=1, description="sentences with fewer content words than this are never attributed"
    )
    answer_language: bool = Field(
        default=True,
        description="answer, refuse and name the band in the question's language (identified among 32 languages); "
        "off: always in English",
    )
    language_min_confidence: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="a question whose likeliest language has a lower probability is taken as English (a short "
        "English question can look like several languages)",
    )


class ConfidenceKnobs(BaseModel):
    """The answer's confidence (the judge's P(Yes) times the evidence overlap), its band, and when a run abstains
    on it."""

    support_weight: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="extract graph: weight of the answer's support in its excerpt against the best passage's "
        "similarity in the answer's confidence",
    )
    answer_threshold: float = Field(
        default=0.3,
        ge=0.0,
        le=1.0,
        description="extract graph: abstain when the answer's confidence is below this",
    )
    supported: float = Field(
        default=0.6,
        ge=0.0,
        le=1.0,
        description="an answer whose confidence reaches this, and none of whose values is missing from the sentences "
        "it cites, is shown as supported; below it, as uncertain (check the evidence)",
    )
    computed_weight: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="the confidence of a number answering a question that asks for a computed value (a difference, a "
        "ratio, a change, a sum) is multiplied by this: the judge and the value check confirm values the evidence "
        "states, not arithmetic",
    )
    uncertain_margin: float = Field(
        default=0.01,
        ge=0.0,
        le=0.5,
        description="an uncertain answer's confidence is held at least this far below `supported`, so that a band "
        "and its confidence never say two things",
    )
    period_heading_lines: int = Field(
        default=120,
        ge=1,
        le=2000,
        description="lines above a cited table row searched for the heading that names its periods (a value stated "
        "only in another year's column than the question's is not supported)",
    )
    abstain_below: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="an answer whose confidence is below this is not shown: the run abstains (not found), with its "
        "evidence (0, the default: every answer is shown, a doubtful one as uncertain)",
    )
    judge_sentences: int = Field(
        default=3,
        ge=1,
        le=20,
        description="the question's top highlight sentences the judge checks the answer against",
    )
    reread: bool = Field(
        default=True,
        description="before an answer stating numbers, amounts, percentages or dates is shown as supported, ask the "
        "model the question again over the judge's sentences alone: values it reads there must be the answer's "
        "(one more short call; an answer read otherwise, or in part, is uncertain)",
    )
    reread_tokens: int = Field(
        default=48,
        ge=8,
        le=512,
        description="the longest reply the second reading may write, in tokens",
    )
    judge_alternatives: int = Field(
        default=10,
        ge=2,
        le=20,
        description="the likeliest first tokens asked of the model (top log-probabilities) to read P(Yes) from",
    )
    written_yes: float = Field(
        default=0.75,
        gt=0.5,
        lt=1.0,
        description="the judge's P(Yes) for a model that gives no log-probabilities and writes Yes (writing "
        "anything else: one minus it)",
    )
    quote: bool = Field(
        default=True,
        description="when the answer model refuses or its answer fails the checks, answer with the evidence sentence "
        "that matches the question strongly, quoted with its citation (band `quoted`), instead of not found",
    )
    quote_candidates: int = Field(
        default=2, ge=1, le=20, description="the question's top highlight sentences a quote may be taken from"
    )
    quote_min_score: float = Field(
        default=0.7,
        ge=0.0,
        description="a quoted sentence's highlight score (`SentenceWeights`) is at least this",
    )
    quote_min_terms: float = Field(
        default=0.6,
        ge=0.0,
        le=1.0,
        description="a quoted sentence (with its section and file name) holds at least this share of the question's "
        "content words",
    )


class SmallModelKnobs(BaseModel):
    """The small_model graph: chunks read one call each, and which of their facts are kept."""

    map_chunks: int = Field(
        default=5, ge=1, le=20, description="small_model graph: chunks read one at a time by the model (one call each)"
    )
    fact_grounding: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="small_model graph: a fact is kept only when every number or code in it appears in its passage "
        "and at least this share of its other words do (0 keeps every fact)",
    )
    fallback_facts: int = Field(
        default=3,
        ge=1,
        le=20,
        description="small_model graph: when a map reply cannot be read, the chunk's sentences sharing most words "
        "with the question stand as its facts, this many",
    )


class PageIndexKnobs(BaseModel):
    """The pageindex graph: sections picked from each file's tree by the model."""

    nodes_per_file: int = Field(
        default=5, ge=1, le=20, description="pageindex graph: sections the model picks from each file's tree"
    )
    selection_view_tokens: int = Field(
        default=2000,
        ge=200,
        le=20000,
        description="pageindex graph: the most tokens of a file's section list shown to the model (deep levels go "
        "first)",
    )
    view_summary_chars: int = Field(
        default=240, ge=40, le=2000, description="pageindex graph: characters of each section's summary in that list"
    )


class TreeKnobs(BaseModel):
    """Section-tree navigation (the rag graph's tree retriever; section text also for pageindex)."""

    use: bool = Field(
        default=True,
        description="rag graph: add sections found by navigating the section tree of documents with a real outline "
        "(bookmarks or headings) to the retrieved passages",
    )
    max_steps: int = Field(
        default=8, ge=1, le=100, description="tree retriever: the most sections the model judges per question"
    )
    start_nodes: int = Field(
        default=4,
        ge=1,
        le=50,
        description="tree retriever: sections closest to the question that navigation starts from",
    )
    node_text_chars: int = Field(
        default=3000, ge=200, le=50000, description="tree sections: the most characters of a section's text read"
    )


# Context keys before the groups: old key -> (group, key in it).
FLAT_CONTEXT_KEYS: dict[str, tuple[str, str]] = {
    "top_k_files": ("retrieval", "top_k_files"),
    "top_k_bm25": ("retrieval", "top_k_bm25"),
    "top_k_vector": ("retrieval", "top_k_vector"),
    "max_chunks_for_context": ("retrieval", "max_chunks"),
    "alpha": ("retrieval", "alpha"),
    "window": ("retrieval", "window"),
    "page_ranking": ("retrieval", "page_ranking"),
    "named_pages": ("retrieval", "named_pages"),
    "statement_pages": ("retrieval", "statement_pages"),
    "route_documents": ("retrieval", "route_documents"),
    "route_alone": ("retrieval", "route_alone"),
    "routing": ("retrieval", "routing"),
    "correct_spelling": ("retrieval", "correct_spelling"),
    "abstain_threshold": ("gate", "abstain_threshold"),
    "key_term_gate": ("gate", "key_terms"),
    "highlights": ("reading", "highlights"),
    "highlight_passages": ("reading", "highlight_passages"),
    "focus_sentences": ("reading", "focus_sentences"),
    "focus_context": ("reading", "focus_context"),
    "focus_max_tokens": ("reading", "focus_max_tokens"),
    "confirm_answers": ("reading", "confirm_answers"),
    "widen_below": ("reading", "widen_below"),
    "max_evidence_tokens": ("reading", "max_evidence_tokens"),
    "attribution_min_overlap": ("reading", "attribution_min_overlap"),
    "attribution_min_tokens": ("reading", "attribution_min_tokens"),
    "support_weight": ("confidence", "support_weight"),
    "answer_threshold": ("confidence", "answer_threshold"),
    "supported_confidence": ("confidence", "supported"),
    "map_chunks": ("small_model", "map_chunks"),
    "fact_grounding": ("small_model", "fact_grounding"),
    "nodes_per_file": ("pageindex", "nodes_per_file"),
    "selection_view_tokens": ("pageindex", "selection_view_tokens"),
    "use_tree": ("tree", "use"),
    "tree_max_steps": ("tree", "max_steps"),
    "tree_start_nodes": ("tree", "start_nodes"),
    "node_text_chars": ("tree", "node_text_chars"),
}


class PickingKnobs(BaseModel):
    """The reader that picks its answer among candidates taken from the evidence (`checks.candidates`,
    `nodes.pick`) instead of writing it: what it is offered, and how its choice becomes a confidence."""

    use: bool = Field(
        default=False,
        description="answer by picking among the evidence's table cells, values and names (one short call under a "
        "grammar) before the reader writes one; off by default: on a second lookups set it answered fewer questions "
        "right than the written reader alone (docs/experiments.md)",
    )
    max_candidates: int = Field(
        default=20, ge=2, le=60, description="most candidates offered to the model, best-labelled first"
    )
    sentences: int = Field(
        default=12,
        ge=1,
        le=60,
        description="best-scoring sentences and table rows of the top passages whose values become candidates",
    )
    label_weight: float = Field(
        default=0.3,
        ge=0.0,
        le=2.0,
        description="weight of how many of the question's words a candidate's own label (its row and column, or the "
        "words around it) holds, added to its sentence's score",
    )
    context_words: int = Field(
        default=12,
        ge=2,
        le=40,
        description="most words before a value in its sentence (back to its previous value) that say what it is",
    )
    alternatives: int = Field(
        default=10,
        ge=2,
        le=20,
        description="likeliest tokens read at each token of the model's pick, for its probability",
    )
    answer_from: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="a pick whose probability is below this is not the answer: the reader writes it instead (two to "
        "four calls, judged); 0 keeps every pick",
    )
    supported: float = Field(
        default=0.8,
        ge=0.0,
        le=1.0,
        description="a picked answer is shown as supported when its probability (times the share of its words in "
        "the evidence it cites) reaches this, and the value checks pass; below it, as uncertain",
    )
    refuse_from: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="the model's 'none of these' refuses a question asking for a number only when its probability "
        "reaches this; below it the likeliest candidate is taken instead, banded by its own probability",
    )
    written_weight: float = Field(
        default=0.7,
        ge=0.0,
        le=1.0,
        description="the confidence of a pick from a model that gives no log-probabilities",
    )
    max_tokens: int = Field(
        default=320,
        ge=16,
        le=2048,
        description="longest pick reply (the grammar bounds it by the longest values it may copy; this caps it)",
    )


class Context(BaseModel):
    """Per-run knobs of the question-answering graphs (LangGraph `context_schema`; Studio shows them as a form), in
    groups. Keys of the flat layout before the groups are still read, with a deprecation warning naming the new key."""

    index: str | None = Field(default=None, description="index folder; unset uses PAGEGRAPH_INDEX")
    model: str | None = Field(
        default=None,
        description="chat model spec (local, local-fast, gguf:PATH, ollama:NAME, openai:NAME, PROVIDER:NAME); "
        "unset uses model_profile, else PAGEGRAPH_MODEL",
    )
    model_profile: Literal["cheap", "balanced", "premium"] | None = Field(
        default=None, description="pick the model by profile (PAGEGRAPH_MODEL_CHEAP/BALANCED/PREMIUM)"
    )
    temperature: float = Field(default=0.0, ge=0.0, le=2.0, description="sampling temperature of answer calls")
    structured_max_temperature: float = Field(
        default=0.2, ge=0.0, le=2.0, description="highest sampling temperature of a structured document's answer call"
    )
    output_type: OutputType = Field(default="answer", description="default output shape when the input names none")
    repair_attempts: int = Field(default=1, ge=0, le=3, description="repair calls after invalid structured output")
    history_turns: int = Field(
        default=3, ge=0, le=20, description="earlier chat turns shown to the follow-up rewriter and the answer model"
    )
    rewrite_followups: bool = Field(
        default=True,
        description="on a chat thread with earlier turns, rewrite the question into a standalone one (one model "
        "call) before searching",
    )
    followup_answer_chars: int = Field(
        default=400, ge=0, le=4000, description="characters of each earlier answer the follow-up rewriter is shown"
    )
    followup_max_tokens: int = Field(
        default=96, ge=16, le=512, description="longest standalone question the follow-up rewriter may write"
    )
    retrieval: RetrievalKnobs = Field(default_factory=RetrievalKnobs, description="how passages are found")
    gate: GateKnobs = Field(default_factory=GateKnobs, description="when to abstain before calling the answer model")
    reading: ReadingKnobs = Field(default_factory=ReadingKnobs, description="what the answer model reads")
    confidence: ConfidenceKnobs = Field(
        default_factory=ConfidenceKnobs,
        description="the answer's confidence, its band, and the extract graph's abstention",
    )
    small_model: SmallModelKnobs = Field(default_factory=SmallModelKnobs, description="the small_model graph")
    pageindex: PageIndexKnobs = Field(default_factory=PageIndexKnobs, description="the pageindex graph")
    tree: TreeKnobs = Field(default_factory=TreeKnobs, description="section-tree navigation")
    picking: PickingKnobs = Field(
        default_factory=PickingKnobs, description="the extract graph's answer picked among candidates from the evidence"
    )

    @model_validator(mode="before")
    @classmethod
    def _read_flat_keys(cls, data: Any) -> Any:
        """Move keys of the flat layout (`top_k_files`) into their groups (`retrieval.top_k_files`), with a
        deprecation warning for each; a key given both ways keeps the grouped value."""
        if not isinstance(data, dict) or not FLAT_CONTEXT_KEYS.keys() & data.keys():
            return data
        data = dict(data)
        for old in FLAT_CONTEXT_KEYS.keys() & data.keys():
            group, key = FLAT_CONTEXT_KEYS[old]
            warnings.warn(
                f"the context key {old!r} is now {group}.{key} (give it as {{{group!r}: {{{key!r}: ...}}}})",
                DeprecationWarning,
                stacklevel=2,
            )
            value = data.pop(old)
            knobs = data.get(group)
            knobs = knobs.model_dump() if isinstance(knobs, BaseModel) else dict(knobs or {})
            data[group] = {key: value, **knobs}
        return data

    def with_changes(self, **groups: dict[str, Any]) -> Context:
        """A copy with some knobs changed, validated: `context.with_changes(tree={"use": False})`."""
        data = self.model_dump()
        for group, values in groups.items():
            data[group] = {**data[group], **values} if isinstance(data[group], dict) else values
        return Context.model_validate(data)
