"""Can the model tell its own right answers from wrong ones when asked a closed question instead of writing? For
each answered row of answer runs (`pagegraph eval --mode answer` reports), two one-token reads of the question's
top highlight sentences (model-free, as the `highlight` stage picks them), scored from the first token's
distribution rather than from the token the model writes:

- `verdict`: "Do the sentences state that the proposed answer answers the question? Yes or No": P(Yes) / (P(Yes) +
  P(No)) (P(True), Kadavath et al. 2022);
- `choice`: the values the sentences state (numbers, amounts, dates), lettered, the answer's own among them: the
  probability of the answer's letter among the letters (candidate spans scored by the model). Rows whose answer
  states no such value get the verdict's score.

Reported per run: AURC over the answered rows ranked by each score (lower is better) beside a constant, the
landed confidence and the token overlap (the confidence before issue 39), and the cost of the extra call.

    PAGEGRAPH_LLM_THREADS=2 .venv/bin/python bench/answer_check.py --index .pagegraph/eval-mmlb-dev28 \\
        --run bench/results/answers-calibration-rows-answer-tokens.json --run bench/results/answers-40-answer-tokens.json \\
        [--highlights 3] [--out bench/results/answer-check.json]
"""

from __future__ import annotations

import json
import math
import statistics
import string
import time

import numpy as np
from answer_runs import answered_rows, questions_by_id, run_arguments, top_highlights

# Prompts of an experiment: they live here, not in pagegraph.prompts, while no graph uses them.
VERDICT_SYSTEM = "You check answers against evidence. Reply with one word: Yes or No."
VERDICT_REQUEST = """Sentences:
{sentences}

Question: {question}
Proposed answer: {answer}

Do the sentences state that the proposed answer is the answer to the question? Reply Yes or No."""
CHOICE_SYSTEM = "You answer questions from evidence. Reply with the letter of one option only."
CHOICE_REQUEST = """Sentences:
{sentences}

Question: {question}

Options:
{options}

Which option answers the question, according to the sentences? Reply with its letter."""


def first_token_distribution(llama, system: str, request: str) -> np.ndarray:
    """Log-probabilities of the first token the model would write."""
    from llama_cpp import LogitsProcessorList

    seen: list[np.ndarray] = []

    def keep(_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        if not seen:
            top = float(scores.max())
            seen.append(scores - top - np.log(np.exp(scores - top).sum()))
        return scores

    llama.create_chat_completion(
        messages=[{"role": "system", "content": system}, {"role": "user", "content": request}],
        max_tokens=1,
        temperature=0.0,
        logits_processor=LogitsProcessorList([keep]),
    )
    return seen[0]


def token_ids(llama, words: list[str]) -> list[int]:
    ids = set()
    for word in words:
        for form in (word, " " + word):
            pieces = llama.tokenize(form.encode(), add_bos=False, special=False)
            if len(pieces) == 1:
                ids.add(pieces[0])
    return sorted(ids)


def probability(distribution: np.ndarray, ids: list[int]) -> float:
    return float(sum(math.exp(distribution[i]) for i in ids))


def main() -> None:
    parser = run_arguments(__doc__, highlights=3)
    args = parser.parse_args()

    from pagegraph.config import Settings
    from pagegraph.eval.calibration import aurc, is_right
    from pagegraph.eval.scoring import strip_labels
    from pagegraph.llm import get_chat_model
    from pagegraph.retrievers.values import extract_values, own_values, same_value

    questions = questions_by_id(args.questions)
    settings = Settings()
    llama = get_chat_model("local", settings=settings).loaded().llama
    yes, no = token_ids(llama, ["Yes", "yes", "YES"]), token_ids(llama, ["No", "no", "NO"])
    letters = {letter: token_ids(llama, [letter]) for letter in string.ascii_uppercase[:12]}
    report: dict = {"highlights": args.highlights, "runs": {}}
    with top_highlights(args.index, settings, args.highlights) as highlighted:
        for path in args.run:
            scored, seconds = [], []
            for row in answered_rows(path):
                question = questions[row["id"]]
                highlights = highlighted(question)
                sentences = "\n".join(h.sentence for h in highlights) or "(none)"
                answer = " ".join(strip_labels(row["answer"]).split())
                began = time.perf_counter()
                distribution = first_token_distribution(
                    llama,
                    VERDICT_SYSTEM,
                    VERDICT_REQUEST.format(sentences=sentences, question=question.question, answer=answer),
                )
                p_yes, p_no = probability(distribution, yes), probability(distribution, no)
                verdict = p_yes / (p_yes + p_no) if p_yes + p_no > 0 else 0.5
                said = [v for v in own_values(answer, question.question) if v.kind != "name"]
                choice, options = None, []
                if said:
                    for value in extract_values(sentences, names=False):
                        if not any(same_value(value, o) for o in options):
                            options.append(value)
                    at = next((n for n, o in enumerate(options) if same_value(said[0], o)), None)
                    if at is None:
                        options.append(said[0])
                        at = len(options) - 1
                    options = options[: len(letters)]
                    if at < len(options) and len(options) > 1:
                        listed = "\n".join(f"{string.ascii_uppercase[n]}. {o.text}" for n, o in enumerate(options))
                        distribution = first_token_distribution(
                            llama,
                            CHOICE_SYSTEM,
                            CHOICE_REQUEST.format(sentences=sentences, question=question.question, options=listed),
                        )
                        masses = [
                            probability(distribution, letters[string.ascii_uppercase[n]]) for n in range(len(options))
                        ]
                        choice = masses[at] / sum(masses) if sum(masses) > 0 else 0.0
                    elif len(options) == 1:
                        choice = 1.0
                seconds.append(time.perf_counter() - began)
                scored.append(
                    {
                        "id": row["id"],
                        "right": is_right(row),
                        "verdict": round(verdict, 4),
                        "choice": None if choice is None else round(choice, 4),
                        "options": len(options),
                        "confidence": row["confidence"],
                        "overlap": row["confidence_signals"]["overlap"],
                    }
                )
                print(f"{row['id']}: right {is_right(row)}, verdict {verdict:.3f}, choice {choice}", flush=True)
            figures = {
                "answered": len(scored),
                "right": sum(s["right"] for s in scored),
                "aurc_constant": aurc([(0.0, s["right"]) for s in scored]),
                "aurc_landed_confidence": aurc([(s["confidence"], s["right"]) for s in scored]),
                "aurc_overlap": aurc([(s["overlap"], s["right"]) for s in scored]),
                "aurc_verdict": aurc([(s["verdict"], s["right"]) for s in scored]),
                "aurc_choice_else_verdict": aurc(
                    [(s["verdict"] if s["choice"] is None else s["choice"], s["right"]) for s in scored]
                ),
                "extra_call_p50_s": round(statistics.median(seconds), 2) if seconds else None,
                "rows": scored,
            }
            report["runs"][str(path)] = figures
            print(path.name, {k: v for k, v in figures.items() if k != "rows"}, flush=True)
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
