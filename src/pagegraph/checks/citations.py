"""An answer's citations against the evidence it was given, without a model: bracketed numbers and labels resolved
to the evidence they name, uncited sentences attributed to the passage they were taken from, refusals recognised,
and the `Citation` records an answer carries."""

from __future__ import annotations

import re

from pagegraph.prompts.answer import REFUSAL
from pagegraph.state.answering import Citation, CitationOrigin, Evidence
from pagegraph.text.words import tokenize

_BRACKETS = re.compile(r"\[([^\[\]\n]{1,300})\]")
_CITATION_RUN = re.compile(r"\[[^\[\]\n]{1,300}\](?:[ \t]*\[[^\[\]\n]{1,300}\])+")
_NUMBERS = re.compile(r"^\s*\d+(?:\s*(?:,|;|and|-|–)\s*\d+)*\s*$")
_PAGE = re.compile(r"p{1,2}\.\s*(\d+)")
_FILE_NAME = re.compile(r"\w\.(?:pdf|md|markdown|txt|docx|vtt|srt|json)\b", re.I)
_REFUSAL_WORDS = set(tokenize(REFUSAL))


def _cited_numbers(inside: str) -> list[int]:
    numbers: list[int] = []
    for part in re.split(r"\s*(?:,|;|and)\s*", inside.strip()):
        if m := re.fullmatch(r"(\d+)\s*[-–]\s*(\d+)", part):
            numbers.extend(range(int(m.group(1)), int(m.group(2)) + 1))
        elif part.isdigit():
            numbers.append(int(part))
    return numbers


def _cited_label(inside: str, evidence: list[Evidence]) -> list[int]:
    """A citation written as a label: the evidence from that file whose pages hold the page it names."""
    lowered = inside.lower()
    same_file = [n for n, e in enumerate(evidence, 1) if e.source.lower() in lowered]
    page = _PAGE.search(lowered)
    if page is not None:  # the number printed on the page, as labels show it, or the page's place in the file
        number = int(page.group(1))
        same_file = [
            n
            for n in same_file
            if evidence[n - 1].start_page <= number <= evidence[n - 1].end_page
            or page.group(1) in (evidence[n - 1].start_label, evidence[n - 1].end_label)
        ]
    return same_file[:1]


def resolve_citations(draft: str, evidence: list[Evidence]) -> tuple[str, list[int], int]:
    """The answer with citations written as evidence labels, the evidence numbers cited (in order of first
    citation), and how many citations pointed at no evidence (removed)."""
    cited: list[int] = []
    invalid = 0

    def replace(match: re.Match[str]) -> str:
        nonlocal invalid
        inside = match.group(1)
        numbers = _cited_numbers(inside) if _NUMBERS.match(inside) else _cited_label(inside, evidence)
        valid = [n for n in numbers if 1 <= n <= len(evidence)]
        if not valid:
            if _NUMBERS.match(inside) or _FILE_NAME.search(inside) or _PAGE.search(inside.lower()):
                invalid += 1
                return ""
            return match.group(0)
        cited.extend(n for n in valid if n not in cited)
        return " ".join(evidence[n - 1].label() for n in dict.fromkeys(valid))

    text = _BRACKETS.sub(replace, draft)
    # "[2][doc.pdf, p. 8]" names one passage twice: each run of citations names a passage once
    text = _CITATION_RUN.sub(lambda run: " ".join(f"[{c}]" for c in dict.fromkeys(_BRACKETS.findall(run[0]))), text)
    text = re.sub(r"[ \t]+([.,;:])", r"\1", re.sub(r"[ \t]{2,}", " ", text)).strip()
    return text, cited, invalid


def strip_citations(text: str) -> str:
    """The text without its bracketed citations (numbers or labels)."""
    return _BRACKETS.sub(" ", text)


def content_tokens(text: str) -> set[str]:
    return set(tokenize(strip_citations(text)))


def overlap(answer_tokens: set[str], text: str) -> float:
    if not answer_tokens:
        return 0.0
    return len(answer_tokens & set(tokenize(text))) / len(answer_tokens)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?![^\[]*\])")  # not inside a [label, p. 3]


def attribute(text: str, evidence: list[Evidence], min_tokens: int, min_overlap: float) -> tuple[str, list[int]]:
    """Cite, for each sentence of at least `min_tokens` content words that cites nothing, the evidence sharing most
    of its words (at least `min_overlap` of them).

    Small models often answer correctly from a passage without writing its number; the label then comes from the
    evidence the sentence's words were taken from."""
    attributed: list[int] = []
    lines = []
    for line in text.split("\n"):
        if line.lstrip().startswith("#"):
            lines.append(line)
            continue
        parts: list[tuple[str, int | None]] = []
        for sentence in _SENTENCE_END.split(line):
            tokens = content_tokens(sentence)
            best = None
            if not _BRACKETS.search(sentence) and len(tokens) >= min_tokens and evidence:
                scores = [overlap(tokens, e.text) for e in evidence]
                best = max(range(len(evidence)), key=scores.__getitem__)
                best = best if scores[best] >= min_overlap else None
            parts.append((sentence, best))
            if best is not None and best + 1 not in attributed:
                attributed.append(best + 1)
        rendered = []
        for i, (sentence, best) in enumerate(parts):
            # a run of sentences from the same passage carries its label once, at the end of the run
            if best is None or (i + 1 < len(parts) and parts[i + 1][1] == best):
                rendered.append(sentence)
                continue
            rendered.append(cited_sentence(sentence, evidence[best].label()))
        lines.append(" ".join(rendered))
    return "\n".join(lines), attributed


def cited_sentence(sentence: str, mark: str) -> str:
    """The sentence with a citation before its closing punctuation ("98 kg [1]."), where sentence splitting keeps
    it with the sentence it cites."""
    stripped = re.sub(r"\s+([.,;:!?])", r"\1", sentence.rstrip())
    return f"{stripped[:-1]} {mark}{stripped[-1]}" if stripped[-1:] in ".!?" else f"{stripped} {mark}"


def is_refusal(draft: str, cited: list[int]) -> bool:
    """An empty answer, the refusal sentence with nothing else but citations (small models cite the passages they
    found wanting), or an uncited answer that contains the refusal sentence."""
    words = set(tokenize(strip_citations(draft)))
    return words <= _REFUSAL_WORDS or (not cited and _REFUSAL_WORDS <= words)


def citation(evidence: Evidence, origin: CitationOrigin) -> Citation:
    return Citation(
        source=evidence.source,
        section=evidence.section,
        start_page=evidence.start_page,
        end_page=evidence.end_page,
        chunk_ids=evidence.chunk_ids,
        label=evidence.label(),
        origin=origin,
    )
