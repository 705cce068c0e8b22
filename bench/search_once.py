"""How many searches a question through `auto` runs, and how long its search and highlight stages take, on the
fixed answer rows (bench/answer_rows.txt), each asked of its own document, with a deterministic stand-in model
marked small (so auto hands the question to extract, as with the embedded model). The model's reply is built from
what it was shown, so two code versions that give the same answers read the same evidence.

Compare a landed version with the working tree on the same index, one after the other:

    git worktree add /tmp/landed LANDED_COMMIT
    PYTHONPATH=/tmp/landed/src python bench/search_once.py --index INDEX --label landed --out bench/results/search-once-landed.json
    python bench/search_once.py --index INDEX --label after --out bench/results/search-once-after.json
    python bench/search_once.py --compare bench/results/search-once-landed.json bench/results/search-once-after.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import time
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

REPO = Path(__file__).resolve().parents[1]
DEV = REPO.parent / "shared" / "eval" / "mmlongbench" / "dev.jsonl"
SEARCH_STAGES = ("retrieve[0]", "highlight")


class ShownModel(BaseChatModel):
    """Replies with the last words of what it was shown and a digest of all of it, citing excerpt 1: deterministic,
    and a function of the evidence it read."""

    @property
    def _llm_type(self) -> str:
        return "shown"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any):
        shown = str(messages[-1].content)
        digest = hashlib.sha256(shown.encode()).hexdigest()[:8]
        reply = f"{' '.join(shown.split()[-12:])} ({digest}) [1]"
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=reply))])


def row_ids(path: Path) -> list[str]:
    return [line.split("#")[0].strip() for line in path.read_text().splitlines() if line.split("#")[0].strip()]


def measure(index: Path, rows: Path, label: str) -> dict[str, Any]:
    import pagegraph
    from pagegraph.config import Context, Settings
    from pagegraph.eval.questions import load_questions
    from pagegraph.retrievers.hybrid import HybridRetriever
    from pagegraph.services import Services

    searches: list[str] = []
    search = HybridRetriever.search_with_relevance

    def counted(self, query, *args, **kwargs):
        searches.append(query)
        return search(self, query, *args, **kwargs)

    HybridRetriever.search_with_relevance = counted
    questions = {q.id: q for q in load_questions(DEV)}
    services = Services(Settings(index=index), chat_model=ShownModel())
    graph = pagegraph.build_graph("auto", services=services)
    context = Context(index=str(index), model="local-fast")
    graph.invoke({"question": "warm up", "documents": questions[row_ids(rows)[0]].documents}, context=context)
    per_row = []
    for row in row_ids(rows):
        question = questions[row]
        searches.clear()
        started = time.perf_counter()
        output = graph.invoke({"question": question.question, "documents": question.documents}, context=context)
        wall = time.perf_counter() - started
        stages = [r for r in output["trace"] if r.stage in SEARCH_STAGES]
        per_row.append(
            {
                "id": row,
                "searches": len(searches),
                "search_highlight_ms": round(sum(r.latency_ms for r in stages), 1),
                "run_ms": round(wall * 1000, 1),
                "answer": output["answer"],
                "highlights": [h.sentence for h in output["highlights"]],
                "evidence": [e.id for e in output["evidence"]],
            }
        )
        print(f"{row}: {len(searches)} searches, {per_row[-1]['search_highlight_ms']:.0f} ms", flush=True)
    services.close()
    return {"label": label, "index": str(index), "rows": per_row, "summary": summary(per_row)}


def summary(rows: list[dict]) -> dict[str, Any]:
    return {
        "questions": len(rows),
        "searches_per_question": statistics.median(r["searches"] for r in rows),
        "median_search_highlight_ms": statistics.median(r["search_highlight_ms"] for r in rows),
        "median_run_ms": statistics.median(r["run_ms"] for r in rows),
    }


def compare(before: dict, after: dict) -> dict[str, Any]:
    pairs = list(zip(before["rows"], after["rows"], strict=True))
    same = {key: sum(a[key] == b[key] for a, b in pairs) for key in ("answer", "highlights", "evidence")}
    ratios = [b["search_highlight_ms"] / a["search_highlight_ms"] for a, b in pairs if a["search_highlight_ms"]]
    runs = [b["run_ms"] / a["run_ms"] for a, b in pairs if a["run_ms"]]
    return {
        before["label"]: before["summary"],
        after["label"]: after["summary"],
        "same": {key: f"{count}/{len(pairs)}" for key, count in same.items()},
        "median_ratio_search_highlight_ms": round(statistics.median(ratios), 3),
        "median_ratio_run_ms": round(statistics.median(runs), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path)
    parser.add_argument("--rows", type=Path, default=REPO / "bench" / "answer_rows.txt")
    parser.add_argument("--label", default="after")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--compare", type=Path, nargs=2, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args()
    if args.compare:
        before, after = (json.loads(path.read_text()) for path in args.compare)
        print(json.dumps(compare(before, after), indent=2))
        return
    if not DEV.is_file():
        raise SystemExit(f"{DEV}: not found (../shared is absent)")
    if args.index is None:
        parser.error("--index is required to measure")
    result = measure(args.index, args.rows, args.label)
    print(json.dumps(result["summary"], indent=2))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
