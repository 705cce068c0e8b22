"""File loaders. `load_document(path)` picks one by extension."""

from __future__ import annotations

from pathlib import Path

from pagegraph.errors import DocumentError
from pagegraph.ingest.loaders.docx import load_docx
from pagegraph.ingest.loaders.markdown import load_markdown
from pagegraph.ingest.loaders.options import ReadOptions
from pagegraph.ingest.loaders.pdf import load_pdf
from pagegraph.ingest.loaders.text import load_text
from pagegraph.ingest.loaders.transcript import load_json_transcript, load_srt, load_vtt
from pagegraph.state.documents import LoadedDocument
from pagegraph.store.manifest import DEFAULT_HEADING_PATTERN

SUPPORTED_EXTENSIONS: dict[str, str] = {
    ".pdf": "PDF",
    ".md": "Markdown",
    ".markdown": "Markdown",
    ".txt": "plain text",
    ".text": "plain text",
    ".docx": "Word document",
    ".vtt": "WebVTT transcript",
    ".srt": "SRT transcript",
    ".json": "JSON transcript",
}


def load_document(
    path: Path, heading_pattern: str = DEFAULT_HEADING_PATTERN, read: ReadOptions | None = None
) -> LoadedDocument:
    """Load one file into pages and headings, or raise DocumentError naming the file and the reason."""
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_EXTENSIONS:
        supported = ", ".join(sorted(SUPPORTED_EXTENSIONS))
        raise DocumentError(path, f"unknown file type '{suffix or '(none)'}' (supported: {supported})")
    if not path.is_file():
        raise DocumentError(path, "not a file")
    read = read or ReadOptions()
    try:
        size = path.stat().st_size
        if size > read.max_file_bytes:
            raise DocumentError(
                path, f"{size:,} bytes, over the limit of {read.max_file_bytes:,} (PAGEGRAPH_MAX_FILE_BYTES)"
            )
        data = path.read_bytes()
    except OSError as exc:
        raise DocumentError(path, f"cannot be read ({exc.strerror or exc})") from exc
    if not data.strip():
        raise DocumentError(path, "file is empty")
    return within_limits(path, _load(path, suffix, data, heading_pattern, read), read)


def within_limits(path: Path, loaded: LoadedDocument, read: ReadOptions) -> LoadedDocument:
    if len(loaded.pages) > read.max_pages:
        raise DocumentError(
            path, f"{len(loaded.pages):,} pages, over the limit of {read.max_pages:,} (PAGEGRAPH_MAX_PAGES)"
        )
    chars = sum(len(page.text) for page in loaded.pages)
    if chars > read.max_chars:
        raise DocumentError(
            path, f"{chars:,} characters of text, over the limit of {read.max_chars:,} (PAGEGRAPH_MAX_DOCUMENT_CHARS)"
        )
    return loaded


def _load(path: Path, suffix: str, data: bytes, heading_pattern: str, read: ReadOptions) -> LoadedDocument:
    if suffix == ".pdf":
        return load_pdf(path, data, read)
    if suffix == ".docx":
        return load_docx(path, data, read)
    text = _decode(path, data)
    if suffix in (".md", ".markdown"):
        return load_markdown(path, text, heading_pattern)
    if suffix in (".txt", ".text"):
        return load_text(path, text)
    if suffix == ".vtt":
        return load_vtt(path, text)
    if suffix == ".srt":
        return load_srt(path, text)
    return load_json_transcript(path, text)


def _decode(path: Path, data: bytes) -> str:
    """UTF-8 text (a byte-order mark is dropped). Anything else is refused where it first goes wrong: guessing
    another encoding indexes a UTF-8 file with a few bad bytes as mojibake."""
    if b"\x00" in data[:4096]:
        raise DocumentError(path, "binary content in a text file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DocumentError(
            path,
            f"not valid UTF-8 at byte {exc.start} (0x{data[exc.start]:02x}): save it as UTF-8, e.g. "
            f"`iconv -f cp1252 -t utf-8 {path.name} > {path.stem}.utf8{path.suffix}` for a Windows file",
        ) from None


__all__ = ["SUPPORTED_EXTENSIONS", "load_document"]
