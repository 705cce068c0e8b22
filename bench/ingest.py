"""Ingestion throughput on the mmlongbench dev documents.

Prints parsing pages/s, the time until every document is committed and searchable (ingest writes extractive
summaries: load -> tree -> chunks -> embed -> Chroma + SQLite + BM25), its pages/s and chunks/s, and the raw
embedder's chunks/s on the same chunk texts measured in the same run, and their ratio (target >= 0.8). Medians
over --rounds (each round alternates the end-to-end and raw runs so machine noise hits both). With
--summarize N, `pagegraph summarize` (the configured model, PAGEGRAPH_MODEL) then runs on the first N documents
of the last round's index: its minutes and model calls are what model summaries cost on top. With --ocr N, the
documents are also ingested with tables and OCR both off and both on (pages/s, pages OCR'd), and scans of the first
N of them (each page rendered to an image at 200 dpi) with OCR on. With --database-url, the rounds ingest into that
PostgreSQL database (and are dropped after). With --also-embedder NAME, every round also ingests the documents
into an index of that embedder (`ingest --embedder NAME`) right after the landed one's, and its chunks/s are
printed beside.

    .venv/bin/python bench/ingest.py [--limit N] [--rounds R] [--summarize N] [--ocr N] [--database-url URL]
        [--also-embedder multilingual-e5] [--out bench/out/ingest.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EVAL = REPO.parent / "shared" / "eval" / "mmlongbench"
sys.path.insert(0, str(REPO))  # tests.pdf_factory makes the scans


def dev_documents(limit: int | None) -> list[Path]:
    names = sorted({d for line in (EVAL / "dev.jsonl").open() for d in json.loads(line)["documents"]})
    return [EVAL / "documents" / name for name in names][:limit]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=None, help="only the first N dev documents")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--summarize", type=int, default=0, help="then summarize the first N documents with the model")
    parser.add_argument(
        "--ocr", type=int, default=0, help="compare tables + OCR off and on; then ingest scans of N documents"
    )
    parser.add_argument("--out", type=Path, default=None, help="also write the figures as JSON")
    parser.add_argument(
        "--database-url", default=None, help="ingest the rounds into this PostgreSQL database instead of a folder"
    )
    parser.add_argument(
        "--also-embedder",
        action="append",
        default=[],
        help="also ingest every round with this embedder (an `ingest --embedder` name), beside the landed one",
    )
    args = parser.parse_args()
    if not (EVAL / "dev.jsonl").exists():
        sys.exit(f"evaluation data not found at {EVAL} (../shared is absent)")

    from pagegraph.config import Settings
    from pagegraph.errors import DocumentError
    from pagegraph.ingest.loaders import load_document
    from pagegraph.llm.embedder import Embedder

    documents = dev_documents(args.limit)
    settings = Settings(cache_dir=REPO / ".pagegraph" / "cache")
    embedder = Embedder(settings)
    embedder.load()
    print(
        f"{len(documents)} documents; embedder backend {embedder.backend}, {embedder.threads} threads, batch {embedder.batch_size}"
    )

    pages, parse_s = 0, 0.0
    for path in documents:
        started = time.perf_counter()
        try:
            pages += len(load_document(path).pages)
        except DocumentError as exc:
            print(f"  parse failed: {exc}")
        parse_s += time.perf_counter() - started
    print(f"parsing: {pages} pages in {parse_s:.1f} s = {pages / parse_s:.1f} pages/s")

    others = [Embedder(settings, name) for name in args.also_embedder]
    e2e_rates, raw_rates, searchable_s, chunks_total, refined = [], [], [], 0, None
    other_rates: dict[str, list[tuple[float, float]]] = {other.model: [] for other in others}
    for round_index in range(args.rounds):
        summary, e2e_s, by_document, names = ingest_round(documents, settings, embedder, round_index, args)
        if args.summarize and round_index == args.rounds - 1:
            refined = summarize(summary.index_folder, summary.settings, names)
        shutil.rmtree(summary.index_folder.parent, ignore_errors=True)
        chunks_total = summary.chunks
        searchable_s.append(e2e_s)
        e2e_rates.append(chunks_total / e2e_s)
        raw_s = raw_embedding_seconds(by_document, embedder)
        raw_rates.append(chunks_total / raw_s)
        print(
            f"round {round_index + 1}: {chunks_total} chunks; end to end {e2e_s:.1f} s = {e2e_rates[-1]:.1f} chunks/s "
            f"(parse {summary.parse_s:.1f} s, embed {summary.embed_s:.1f} s); raw embedder {raw_s:.1f} s = "
            f"{raw_rates[-1]:.1f} chunks/s"
        )
        # every other embedder on the same documents in the same round, so that machine noise hits them alike
        for other in others:
            other_summary, other_s, other_texts, _ = ingest_round(documents, settings, other, round_index, args)
            shutil.rmtree(other_summary.index_folder.parent, ignore_errors=True)
            other_raw = raw_embedding_seconds(other_texts, other)
            other_rates[other.model].append((other_summary.chunks / other_s, other_summary.chunks / other_raw))
            print(
                f"  {other.model}: end to end {other_s:.1f} s = {other_summary.chunks / other_s:.1f} chunks/s; raw "
                f"embedder {other_raw:.1f} s = {other_summary.chunks / other_raw:.1f} chunks/s"
            )
    e2e, raw = statistics.median(e2e_rates), statistics.median(raw_rates)
    searchable = statistics.median(searchable_s)
    figures = {
        "documents": len(documents),
        "pages": pages,
        "parse_pages_per_s": round(pages / parse_s, 1),
        "searchable_s": round(searchable, 1),
        "searchable_pages_per_s": round(pages / searchable, 1),
        "chunks": chunks_total,
        "end_to_end_chunks_per_s": round(e2e, 2),
        "raw_embedder_chunks_per_s": round(raw, 2),
        "ratio": round(e2e / raw, 3),
        "rounds": args.rounds,
        "index": "postgres" if args.database_url else "folder",
        "backend": embedder.backend,
        "threads": embedder.threads,
        "summarize": refined,
        "also": {
            model: {
                "end_to_end_chunks_per_s": round(statistics.median(e for e, _ in rates), 2),
                "raw_embedder_chunks_per_s": round(statistics.median(r for _, r in rates), 2),
                "end_to_end_of_landed": round(statistics.median(e for e, _ in rates) / e2e, 3),
            }
            for model, rates in other_rates.items()
        },
        "ocr": ocr_figures(documents, settings, embedder, args.ocr) if args.ocr else None,
    }
    print(f"all {len(documents)} documents searchable after {searchable:.1f} s ({pages / searchable:.1f} pages/s)")
    print(f"median end-to-end / raw embedder throughput: {e2e:.1f} / {raw:.1f} = {e2e / raw:.2f} (target >= 0.8)")
    for model, figures_of in figures["also"].items():
        print(f"{model}: end to end {figures_of['end_to_end_of_landed']:.2f} x the landed embedder's chunks/s")
    if refined:
        print(
            f"summarize, {refined['documents']} documents: {refined['minutes']} min, {refined['model_calls']} model "
            f"calls ({refined['summaries']} document and {refined['sections']} section summaries)"
        )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(figures, indent=2) + "\n")


@dataclass
class Round:
    chunks: int
    parse_s: float
    embed_s: float
    index_folder: Path
    settings: object


def ingest_round(documents: list[Path], settings, embedder, round_index: int, args) -> tuple[Round, float, dict, list]:
    """Ingest `documents` into a new index of `embedder`'s model: the round, its seconds until every document is
    searchable, each document's chunk search texts, and the names of the first --summarize documents. A database's
    index is dropped; a folder's is left in its temporary directory (`Round.index_folder`'s parent) for --summarize,
    which the caller removes."""
    from pagegraph.config import Settings
    from pagegraph.ingest.pipeline import Ingestor
    from pagegraph.llm.embedder import MAX_TOKENS_OF
    from pagegraph.store.chunk_text import document_label, search_text
    from pagegraph.store.index import delete_index, open_index
    from pagegraph.store.manifest import IndexParams

    folder = Path(tempfile.mkdtemp()) / f"bench-ingest-{os.getpid()}-{round_index}-{embedder.backend}"
    configured = Settings(index=folder, cache_dir=settings.cache_dir, storage={"database_url": args.database_url})
    params = IndexParams(embedding_model=embedder.model, embedding_max_tokens=MAX_TOKENS_OF[embedder.model])
    with open_index(folder, configured, params, write=True, embedder=embedder) as index:
        started = time.perf_counter()
        summary = Ingestor(index).run(documents)
        e2e_s = time.perf_counter() - started
        labels = {doc.id: document_label(doc.name, doc.title) for doc in index.store.documents()}
        by_document: dict[str, list[str]] = {}
        for chunk in index.store.chunks():
            by_document.setdefault(chunk.document_id, []).append(search_text(chunk, labels[chunk.document_id]))
        names = [doc.name for doc in index.store.documents()][: args.summarize]
    if args.database_url:
        delete_index(folder, configured)
    done = Round(summary.chunks_embedded, summary.parse_seconds, summary.embed_seconds, folder, configured)
    return done, e2e_s, by_document, names


def raw_embedding_seconds(by_document: dict[str, list[str]], embedder) -> float:
    """The raw embedder on the same texts (chunk headers included), batched the way ingestion batches them (per
    document, by length)."""
    started = time.perf_counter()
    for texts in by_document.values():
        texts = sorted(texts, key=len)
        for i in range(0, len(texts), embedder.batch_size):
            embedder.embed(texts[i : i + embedder.batch_size])
    return time.perf_counter() - started


def ingest_rate(documents: list[Path], settings, embedder, ocr: str, tables: bool) -> tuple[int, int, float]:
    """(pages, pages read by OCR, seconds) of ingesting `documents` into a new index with OCR `ocr` and tables on or
    off."""
    from pagegraph.config import Settings
    from pagegraph.ingest.pipeline import Ingestor
    from pagegraph.store.index import open_index

    with tempfile.TemporaryDirectory() as tmp:
        configured = Settings(
            index=Path(tmp) / "index", cache_dir=settings.cache_dir, ingest={"ocr": ocr, "pdf_tables": tables}
        )
        with open_index(configured.index, configured, write=True, embedder=embedder) as index:
            started = time.perf_counter()
            Ingestor(index).run(documents)
            seconds = time.perf_counter() - started
            pages = [page for doc in index.store.documents() for page in index.store.pages(doc.id)]
    return len(pages), sum(page.ocr_confidence is not None for page in pages), seconds


def ocr_figures(documents: list[Path], settings, embedder, scans: int) -> dict:
    """Ingest pages/s with tables and OCR off and on, and of scans of the first `scans` documents (OCR on every
    page)."""
    from tests.pdf_factory import scanned_pdf

    figures = {}
    for label, ocr, tables in (("off", "off", False), ("on", "auto", True)):
        pages, read, seconds = ingest_rate(documents, settings, embedder, ocr, tables)
        figures[f"tables_and_ocr_{label}"] = {
            "pages": pages,
            "ocr_pages": read,
            "pages_per_s": round(pages / seconds, 2),
        }
        print(
            f"tables + OCR {label}: {pages} pages ({read} read by OCR) in {seconds:.1f} s = {pages / seconds:.2f} pages/s"
        )
    with tempfile.TemporaryDirectory() as tmp:
        copies = [scanned_pdf(Path(tmp) / path.name, path, dpi=200) for path in documents[:scans]]
        pages, read, seconds = ingest_rate(copies, settings, embedder, "auto", True)
    figures["scans"] = {
        "documents": len(copies),
        "pages": pages,
        "ocr_pages": read,
        "pages_per_s": round(pages / seconds, 2),
    }
    print(
        f"scans of {len(copies)} documents: {pages} pages ({read} read by OCR) in {seconds:.1f} s = {pages / seconds:.2f} pages/s"
    )
    return figures


def summarize(folder: Path, settings, names: list[str]) -> dict:
    """`pagegraph summarize` on the named documents with the configured model: its time and calls."""
    from pagegraph.ingest.refine import SummaryRefiner
    from pagegraph.llm.factory import get_chat_model

    model = get_chat_model(settings.model, settings=settings)
    with SummaryRefiner(folder, settings, model) as refiner:
        report = refiner.run(names)
    return {
        "documents": len(names),
        "minutes": round(report.seconds / 60, 1),
        "model_calls": report.model_calls,
        "summaries": report.summaries,
        "sections": report.sections,
        "model": settings.model,
    }


if __name__ == "__main__":
    main()
