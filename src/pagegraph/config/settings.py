"""Settings: machine-level knobs read from the environment (`PAGEGRAPH_*`, or `.env`), in groups."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from pagegraph.errors import PagegraphError

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
