"""Does the embedded model give the same answer every time? The `small_model` graph (its chunk readings run in
parallel) asked the watch manual question several times after a fresh model start, with the slots the environment
sets: pages cited, distinct answers and wall time per run. Run it once per slot count, stopping the model process
between them (it is shared per machine):

    pkill -f llama-server; PAGEGRAPH_LLM_SLOTS=1 python bench/model_slots.py --out bench/results/slots-1.json
    pkill -f llama-server; PAGEGRAPH_LLM_SLOTS=2 python bench/model_slots.py --out bench/results/slots-2.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOCUMENTS = REPO.parent / "shared" / "eval" / "mmlongbench" / "documents"
FILES = ["watch_d.pdf", "a4f3ced0696009fec3179f493e4f28c4.pdf"]  # the two PDFs of test_rag_local_model.py
QUESTION = "What will happen when you press and hold the down button?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, default=REPO / ".pagegraph" / "model-slots" / "index")
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    from pagegraph import build_graph
    from pagegraph.config import Context, Settings
    from pagegraph.ingest.pipeline import Ingestor
    from pagegraph.services import Services
    from pagegraph.store.index import open_index

    settings = Settings()
    if not args.index.exists():
        with open_index(args.index, settings, write=True) as index:
            Ingestor(index).run([DOCUMENTS / name for name in FILES])
    services = Services(settings, index=open_index(args.index, settings))
    graph = build_graph("small_model", services=services)
    runs = []
    for run in range(args.runs):
        started = time.perf_counter()
        output = graph.invoke({"question": QUESTION}, context=Context())
        pages = sorted({(c.source, p) for c in output["citations"] for p in range(c.start_page, c.end_page + 1)})
        runs.append(
            {"run": run, "wall_s": round(time.perf_counter() - started, 1), "cited": pages, "answer": output["answer"]}
        )
        print(json.dumps(runs[-1])[:160], flush=True)
    summary = {"slots": settings.models.llm_slots, "distinct_answers": len({r["answer"] for r in runs}), "runs": runs}
    args.out.write_text(json.dumps(summary, indent=1) + "\n")


if __name__ == "__main__":
    main()
