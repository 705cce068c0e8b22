"""Hybrid query latency at 20k and 200k chunks (1M on request), on an index folder and in PostgreSQL + pgvector.

The corpus is a synthetic replication of an ingested index (by default the 52 mmlongbench documents): every document
is copied under a new name, its chunk vectors jittered slightly so that the vector index holds no exact duplicates.
Queries are the dev questions, run unfiltered, filtered to one document and filtered to one document and a page
range; each search is timed in a pass of its own, after --warm-up other dev questions. Prints p50/p95 of the whole
search (query embedding, BM25, Chroma, fusion) for the retriever the graphs use (`default`: convex fusion, document
routing when unfiltered, page ranking and windows) and for the hybrid retriever as it first landed (`landed`: rank
fusion, no routing), and of BM25 and dense search alone. With --backend postgres
(or both) the replicas are also written into a database (--database-url, default a private pgserver under
--workdir): the build rate is chunks/s written (pages, tree, chunks and vectors; no parsing or embedding), and a
replica is timed once opened (its chunk catalog and document profiles read from the database; keyword and dense
search run in SQL), and so is the time until a document another process commits is searchable by keyword here (the
next snapshot reads only what was committed since), beside reopening the index whole.

    .venv/bin/python bench/retrieval.py [--source-index DIR] [--sizes 20000,200000,1000000] [--queries 100]
        [--warm-up 20] [--backend folder|postgres|both] [--database-url URL]
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
EVAL = REPO.parent / "shared" / "eval" / "mmlongbench"


def copied_document(source, doc, suffix: str, name: str, rng, limit: int | None = None):
    """A copy of one of `source`'s documents under new ids and `name`, its first `limit` chunks, their vectors
    jittered slightly."""
    from pagegraph.state.documents import DocumentRecord
    from pagegraph.store.records import DocumentWrite

    pairs = list(source.store.iter_chunks(doc.id))[:limit]
    chunks = [
        c.model_copy(
            update={
                "id": c.id + suffix,
                "document_id": doc.id + suffix,
                "source": name,
                "section_id": c.section_id + suffix,
            }
        )
        for c, _ in pairs
    ]
    vectors = np.stack([v for _, v in pairs]) + rng.normal(0, 0.02, (len(pairs), len(pairs[0][1])))
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    nodes = [
        n.model_copy(
            update={
                "id": n.id + suffix,
                "document_id": doc.id + suffix,
                "parent_id": n.parent_id + suffix if n.parent_id else None,
            }
        )
        for n in source.store.tree(doc.id)
    ]
    record = DocumentRecord(**{**doc.model_dump(), "id": doc.id + suffix, "path": f"{doc.path}#{suffix}", "name": name})
    return DocumentWrite(record, source.store.pages(doc.id), nodes, chunks, vectors)


def build_replica(source, folder: Path, size: int, settings) -> None:
    from pagegraph.store.index import open_index

    rng = np.random.default_rng(7)
    documents = source.store.documents()
    per_copy = sum(doc.n_chunks for doc in documents)
    copies = math.ceil(size / per_copy)
    written = 0
    print(f"building {folder.name}: {copies} copies of {len(documents)} documents ({per_copy} chunks each copy)")
    with open_index(folder, settings, source.params, write=True, embedder=source.embedder) as replica:
        for copy in range(copies):
            for doc in documents:
                if written >= size:
                    break
                document = copied_document(
                    source, doc, f"-{copy:03d}", f"copy{copy:03d}-{doc.name}", rng, size - written
                )
                replica.commit_document(document, replaces=None)
                written += len(document.chunks)
        replica.make_searchable()
    folder.mkdir(parents=True, exist_ok=True)  # a database index keeps nothing in it: only this marker
    (folder / "replica-complete").write_text(str(written))
    print(f"  {written} chunks")


def commit_to_searchable(source, replica, folder: Path, settings) -> dict[str, float]:
    """Seconds until a document another process commits is searchable by keyword in this one (its next snapshot,
    read incrementally), beside reopening the index whole; the document is removed after."""
    from pagegraph.state.filters import RetrievalFilter
    from pagegraph.store.index import open_index

    doc = source.store.documents()[0]
    document = copied_document(source, doc, "-commit", f"commit-{doc.name}", np.random.default_rng(11))
    word = next(w for w in document.chunks[0].text.split() if len(w) > 6 and w.isalpha())
    with open_index(folder, settings, write=True, embedder=source.embedder) as writer:
        writer.commit_document(document, replaces=None)
        try:
            started = time.perf_counter()
            with replica.successor() as following:
                found = following.keyword_search(word, 400, RetrievalFilter(documents=[document.record.name]))
                searchable = time.perf_counter() - started
            assert found, "the committed document is found by keyword"
            started = time.perf_counter()
            with open_index(folder, settings, embedder=source.embedder):
                reopened = time.perf_counter() - started
        finally:
            writer.remove_document(document.record.id)
    print(f"  a commit by another process searchable here after {searchable:.2f} s (reopening whole: {reopened:.2f} s)")
    return {"commit_to_searchable_s": round(searchable, 2), "reopen_s": round(reopened, 2)}


def percentiles(values: list[float]) -> str:
    return f"p50 {np.percentile(values, 50):6.1f} ms  p95 {np.percentile(values, 95):6.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source-index", type=Path, default=REPO / ".pagegraph" / "eval-mmlb52-pdfium")
    parser.add_argument("--sizes", default="20000,200000")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument(
        "--warm-up", type=int, default=20, help="untimed questions (the next dev rows) before each pass"
    )
    parser.add_argument("--workdir", type=Path, default=REPO / "bench" / "out")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--backend", choices=["folder", "postgres", "both"], default="folder")
    parser.add_argument("--database-url", default=None, help="default: a private pgserver under --workdir")
    args = parser.parse_args()
    if not (EVAL / "dev.jsonl").exists():
        sys.exit(f"evaluation data not found at {EVAL} (../shared is absent)")

    from pagegraph.config import Context, Settings
    from pagegraph.eval.baselines import first_landed_hybrid
    from pagegraph.retrievers.bm25 import BM25ChunkRetriever
    from pagegraph.retrievers.hybrid import HybridRetriever
    from pagegraph.retrievers.vector import DenseRetriever
    from pagegraph.state.filters import RetrievalFilter
    from pagegraph.store.index import delete_index, open_index

    settings = Settings(cache_dir=REPO / ".pagegraph" / "cache")
    if not (args.source_index / "manifest.json").exists():
        sys.exit(
            f"no source index at {args.source_index}: run `pagegraph eval {EVAL / 'dev.jsonl'} --docs "
            f"{EVAL / 'documents'} --index {args.source_index}` first"
        )
    questions = [json.loads(line) for line in (EVAL / "dev.jsonl").open()]
    rows, warm_up = questions[: args.queries], questions[args.queries :][: args.warm_up]
    figures = {}
    backends = ["folder", "postgres"] if args.backend == "both" else [args.backend]
    database_url = args.database_url
    if "postgres" in backends and database_url is None:
        import pgserver

        args.workdir.mkdir(parents=True, exist_ok=True)
        database_url = pgserver.get_server(args.workdir / "postgres", cleanup_mode=None).get_uri()
    with open_index(args.source_index, settings) as source:
        for backend, size in [(b, int(s)) for s in args.sizes.split(",") for b in backends]:
            on = settings if backend == "folder" else settings.with_changes(storage={"database_url": database_url})
            folder = args.workdir / (f"replica-{size}" if backend == "folder" else f"pg-replica-{size}")
            if not (folder / "replica-complete").exists():
                if backend == "postgres":
                    delete_index(folder, on)  # what an unfinished build left in the database
                shutil.rmtree(folder, ignore_errors=True)
                started = time.perf_counter()
                build_replica(source, folder, size, on)
                seconds = time.perf_counter() - started
                figures[f"{backend}/{size}/build_chunks_per_s"] = round(size / seconds, 1)
                print(f"  built in {seconds:.0f} s = {size / seconds:.0f} chunks/s written")
            started = time.perf_counter()
            with open_index(folder, on, embedder=source.embedder) as replica:
                print(f"  {backend}: opened in {time.perf_counter() - started:.1f} s")
                retrievers = {
                    "default": HybridRetriever.for_context(replica, Context()),
                    "landed": first_landed_hybrid(replica, window=1),
                }
                bm25, dense = BM25ChunkRetriever(index=replica), DenseRetriever(index=replica)
                started = time.perf_counter()
                replica.catalog  # noqa: B018  (loaded once per process, outside the timings)
                replica.profiles  # noqa: B018
                print(f"  catalog and document profiles loaded in {time.perf_counter() - started:.1f} s")
                modes = {
                    "unfiltered": lambda row: None,
                    "document": lambda row: RetrievalFilter(documents=[f"copy000-{d}" for d in row["documents"]]),
                    "document+pages": lambda row: RetrievalFilter(
                        documents=[f"copy000-{d}" for d in row["documents"]], pages=(1, 10)
                    ),
                }
                searches = {
                    **{name: retriever.search for name, retriever in retrievers.items()},
                    "bm25": partial(bm25.search, k=20),
                    "dense": partial(dense.search, k=40),
                }
                print(f"{backend}, {size} chunks ({len(replica.catalog)} in BM25, {len(replica.profiles)} documents):")
                for mode, make_filter in modes.items():
                    timings: dict[str, list[float]] = {name: [] for name in searches}
                    # each search in a pass of its own, as a server that runs it would, after questions that are
                    # not timed: the whole-library BM25 between two searches evicted what the other had read
                    for name, search in searches.items():
                        for row in warm_up:
                            search(row["question"], flt=make_filter(row))
                        for row in rows:
                            flt = make_filter(row)
                            started = time.perf_counter()
                            search(row["question"], flt=flt)
                            timings[name].append((time.perf_counter() - started) * 1000)
                    print(f"  {mode}: " + " | ".join(f"{n} {percentiles(t)}" for n, t in timings.items()))
                    figures[f"{backend}/{size}/{mode}"] = {
                        name: {
                            "p50_ms": round(statistics.median(t), 2),
                            "p95_ms": round(float(np.percentile(t, 95)), 2),
                        }
                        for name, t in timings.items()
                    }
                if backend == "postgres":
                    figures[f"{backend}/{size}/commit"] = commit_to_searchable(source, replica, folder, on)
    print("target: default p50 < 50 ms at 200k (unfiltered: with document routing)")
    if args.out:
        args.out.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
