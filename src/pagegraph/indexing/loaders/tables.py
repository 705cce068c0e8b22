"""Tables as Markdown rows under their header row: DOCX tables, and the tables of PDF pages in place of the flat
text of their text layer.

For PDFs, only pages whose text looks tabular (several lines with two or more numbers) are examined; pdfplumber finds the
ruled tables on them. Each table replaces its own span of the page's text, found by its first and last rows'
letters and digits (the two libraries space text differently); a table whose span cannot be found is left as
the text layer gave it, so the page's text is never lost."""

from __future__ import annotations

import io
import logging
import re
import time

log = logging.getLogger(__name__)

_NUMBER = re.compile(r"(?<![\w.])[-$€£(]?\d[\d,.]*%?\)?(?![\w])")
TABULAR_LINES = 3  # lines with two or more numbers that make a page worth examining
_ANCHOR = 30
_PROSE_CELL = 150  # a cell this long is a paragraph that happens to sit in a ruled box, not a table
_PREFIXES = {"$", "€", "£", "("}
_SUFFIXES = {"%", ")", "%)"}


def looks_tabular(text: str) -> bool:
    return sum(len(_NUMBER.findall(line)) >= 2 for line in text.splitlines()) >= TABULAR_LINES


def pages_with_tables(data: bytes, texts: dict[int, str], seconds: float) -> dict[int, str]:
    """The pages (1-indexed, with their text-layer text) on which at least one table was put in Markdown, with the new
    text. Pages where nothing was found or placed are left out, and so are the pages left when `seconds` have been
    spent (a pathological file must not hold up an ingest)."""
    import pdfplumber

    rewritten = {}
    started = time.perf_counter()
    try:
        with pdfplumber.open(io.BytesIO(data)) as pdf:
            for number, text in texts.items():
                if time.perf_counter() - started > seconds:
                    log.info(
                        "table detection stopped at page %d after %.0f s; the rest keep their text", number, seconds
                    )
                    break
                try:
                    tables = [clean_rows(table.extract()) for table in pdf.pages[number - 1].find_tables()]
                except Exception as exc:  # pdfminer raises many types on odd pages; the page keeps its text-layer text
                    log.info("page %d: table detection failed (%s)", number, exc)
                    continue
                placed = place_tables(text, [rows for rows in tables if rows])
                if placed != text:
                    rewritten[number] = placed
    except Exception as exc:  # a file pdfminer cannot open keeps its text-layer text everywhere
        log.info("table detection skipped (%s)", exc)
    return rewritten


def clean_rows(rows: list[list[str | None]]) -> list[list[str]]:
    """Cells as single-line text; currency signs and percent signs joined to their numbers; columns and rows that
    are empty throughout dropped. Empty when fewer than two rows or two columns remain."""
    cleaned = []
    for row in rows:
        cells = [" ".join((cell or "").split()).replace("|", "/") for cell in row]
        for i, cell in enumerate(cells):
            if cell in _PREFIXES and i + 1 < len(cells) and cells[i + 1]:
                cells[i + 1], cells[i] = cell + cells[i + 1], ""
            elif cell in _SUFFIXES:
                before = next((j for j in range(i - 1, -1, -1) if cells[j]), None)
                if before is not None:
                    cells[before], cells[i] = cells[before] + cell, ""
        if any(cells):
            cleaned.append(cells)
    width = max((len(row) for row in cleaned), default=0)
    columns = [[row[c] if c < len(row) else "" for row in cleaned] for c in range(width)]
    merged: list[list[str]] = []
    for column in columns:
        if not any(column):
            continue
        # A header spanning two ruled columns ("2023" over "$" and "46,298"): its column holds nothing else, and
        # the next one has no header of its own.
        if merged and merged[-1][0] and not any(merged[-1][1:]) and not column[0]:
            merged[-1] = [a or b for a, b in zip(merged[-1], column)]
        else:
            merged.append(column)
    table = [list(row) for row in zip(*merged) if any(row)]
    filled = [cell for row in table for cell in row if cell]
    if len(table) < 2 or len(merged) < 2 or max(map(len, filled)) > _PROSE_CELL:
        return []
    return table


def markdown(rows: list[list[str]]) -> str:
    """Rows (the first is the header) as a Markdown table."""
    rows = [[" ".join(cell.split()).replace("|", "/") for cell in row] for row in rows]
    lines = ["| " + " | ".join(row) + " |" for row in rows]
    separator = "| " + " | ".join("---" for _ in rows[0]) + " |"
    return "\n".join([lines[0], separator, *lines[1:]])


_SEPARATOR_ROW = re.compile(r"^\|(?:\s*:?-{3,}:?\s*\|)+$")


def plain_rows(text: str) -> str:
    """`text` with its Markdown tables as plain lines of cells (no bars, no `| --- |` rows): for extracts that are
    read as prose."""
    lines = []
    for line in text.split("\n"):
        stripped = line.strip()
        if _SEPARATOR_ROW.match(stripped):
            continue
        if stripped.startswith("|") and stripped.endswith("|"):
            line = " ".join(cell.strip() for cell in stripped.strip("|").split("|"))
        lines.append(line)
    return "\n".join(lines)


def place_tables(text: str, tables: list[list[list[str]]]) -> str:
    """`text` with each table's span replaced by its Markdown; spans that cannot be found, or overlap one already
    placed, are left alone."""
    letters, where = [], []
    for i, char in enumerate(text):
        if char.isalnum():
            letters.append(char.lower())
            where.append(i)
    spelled = "".join(letters)
    spans: list[tuple[int, int, str]] = []
    for rows in tables:
        head = _letters(" ".join(rows[0]))[:_ANCHOR] or _letters(" ".join(rows[1]))[:_ANCHOR]
        tail = _letters(" ".join(rows[-1]))[-_ANCHOR:]
        if not head or not tail:
            continue
        tail_at = spelled.find(tail)
        head_at = spelled.rfind(head, 0, tail_at + 1) if tail_at >= 0 else -1
        if head_at < 0:
            continue
        start = text.rfind("\n", 0, where[head_at]) + 1
        last = where[tail_at + len(tail) - 1]
        end = text.find("\n", last)
        end = len(text) if end < 0 else end
        table = markdown(rows)
        if end - start > 3 * len(table) + 200 or any(start < e and s < end for s, e, _ in spans):
            continue
        spans.append((start, end, table))
    for start, end, table in sorted(spans, reverse=True):
        before = "" if start == 0 or text[:start].endswith("\n\n") else "\n"
        after = "" if end >= len(text) or text[end:].startswith("\n\n") else "\n"
        text = text[:start] + before + table + after + text[end:]
    return text


def _letters(text: str) -> str:
    return "".join(c.lower() for c in text if c.isalnum())
