"""Section tree per document: from bookmarks or headings, else a filing's items, numbered headings or headings the page
sets apart (larger type, "TOPIC: Title" lines), else page, time or paragraph groups, so that every document gets a
tree a model or a user can navigate."""

from __future__ import annotations

import math
import re
from collections import Counter

from pagegraph.ingest.loaders.transcript import format_timestamp
from pagegraph.state.documents import LoadedDocument, OutlineEntry, SourceType, TreeNode, TypedLine, page_of

_NUMBERED_HEADING = re.compile(
    r"^(?P<number>\d{1,2}(?:\.\d{1,2}){0,3})\.?[ \t]+(?P<title>[A-Z][^\n]{1,80})$", re.MULTILINE
)
# A filing's parts, items and exhibits (10-K, 10-Q, 20-F): "PART II", "Item 7. Management's…", "Item 1A—Risk
# Factors", "ITEM 8:"; an exhibit's first line names it alone ("Exhibit 32.1"). A reference inside a sentence ("Item 8
# of this Report") has no stop or dash after its number.
_PART = re.compile(
    r"^[ \t]*PART[ \t]+(?P<part>IV|I{1,3})\b[ \t.:—–-]*(?P<title>[^\n]{0,80})$", re.MULTILINE | re.IGNORECASE
)
_ITEM = re.compile(
    r"^[ \t]*ITEM[ \t]+(?P<item>\d{1,2}[A-C]?)[ \t]*[.:—–-][ \t]*(?P<title>[A-Z][^\n]{1,200})$",
    re.MULTILINE | re.IGNORECASE,
)
_EXHIBIT = re.compile(r"^[ \t]*EXHIBIT[ \t]+(?P<exhibit>\d{1,3}(?:\.\d{1,2})?)[ \t]*$", re.MULTILINE | re.IGNORECASE)
_TOC_PAGE = re.compile(r"\s\d{1,3}$")  # a contents line ends with its page number
# a topic's heading line in the body's own type: "COVERED SERVICES: Massage Therapy"
_TOPIC_HEADING = re.compile(
    r"^[ \t]*(?P<topic>[A-Z][A-Z0-9&/,' -]{2,40}):[ \t]+(?P<title>[A-Z][^\n:]{0,79}[^\s.,;\"\u201d])$", re.MULTILINE
)
MAX_HEADING_WORDS = 24
MAX_HEADING_LINES = 3  # a heading wrapped over more lines is a passage in large type
RUNNING_LINE_PAGES = 3  # a line set apart on this many pages is a running header or footer, not a heading
MAX_HEADING_LEVELS = 3
FILING_TITLE_CHARS = 100
MIN_FILING_ITEMS = 4
MIN_DETECTED_HEADINGS = 3
MAX_PAGE_NODES = 20
TRANSCRIPT_WINDOW_S = 300
PARAGRAPH_GROUP_CHARS = 3000
RUNNING_HEADER_CHARS = 120


def section_outline(doc: LoadedDocument) -> tuple[list[OutlineEntry], str]:
    """The headings that shape the tree, and where they came from ("none" when the tree is the root alone)."""
    if doc.outline:
        return doc.outline, doc.outline_source
    filing = _filing_sections(doc.text) if doc.source_type != SourceType.TRANSCRIPT else []
    if doc.source_type == SourceType.TRANSCRIPT:
        entries, source = _time_windows(doc), "time"
    elif sum(entry.level == 2 for entry in filing) >= MIN_FILING_ITEMS:
        entries, source = filing, "filing"
    elif len(detected := _detect_numbered_headings(doc.text)) >= MIN_DETECTED_HEADINGS:
        entries, source = detected, "detected"
    elif len(headings := _set_apart_headings(doc)) >= MIN_DETECTED_HEADINGS:
        entries, source = headings, "type"
    elif len(doc.pages) > 1:
        entries, source = _page_groups(doc), "pages"
    else:
        entries, source = _paragraph_groups(doc.text), "paragraphs"
    return entries, source if entries else "none"


def build_tree(doc: LoadedDocument, document_id: str, entries: list[OutlineEntry]) -> list[TreeNode]:
    """Nodes in pre-order, root first. A section runs until the next heading at its level or above."""
    text = doc.text
    starts = doc.page_starts()
    root = TreeNode(
        id=f"{document_id}:n0",
        document_id=document_id,
        parent_id=None,
        position=0,
        level=0,
        title=doc.title,
        title_path=[doc.title],
        start_page=1,
        end_page=len(doc.pages),
        start_offset=0,
        end_offset=len(text),
    )
    nodes, stack = [root], [root]
    for entry in sorted(entries, key=lambda e: e.offset):
        while stack[-1].level >= entry.level and len(stack) > 1:
            stack.pop()
        parent = stack[-1]
        node = TreeNode(
            id=f"{document_id}:n{len(nodes)}",
            document_id=document_id,
            parent_id=parent.id,
            position=len(nodes),
            level=parent.level + 1,
            title=entry.title,
            title_path=[*parent.title_path, entry.title],
            start_page=1,
            end_page=1,
            start_offset=min(entry.offset, len(text)),
            end_offset=len(text),
        )
        parent.children_ids.append(node.id)
        nodes.append(node)
        stack.append(node)
    _close_spans(nodes)
    for node in nodes:
        node.start_page = page_of(starts, node.start_offset)
        last_page = page_of(starts, max(node.start_offset, node.end_offset - 1))
        # A section that ends just after a page break (the next one starts below that page's running header)
        # does not really continue onto that page.
        if last_page > node.start_page and node.end_offset - starts[last_page - 1] <= RUNNING_HEADER_CHARS:
            last_page -= 1
        node.end_page = last_page
        node.text = text[node.start_offset : node.end_offset].strip()
    by_id = {node.id: node for node in nodes}
    for node in reversed(nodes):  # children come after their parent in pre-order
        if node.parent_id is not None:
            parent = by_id[node.parent_id]
            parent.end_page = max(parent.end_page, node.end_page)
    return nodes


def _close_spans(nodes: list[TreeNode]) -> None:
    by_id = {node.id: node for node in nodes}
    for node in nodes:
        children = [by_id[child] for child in node.children_ids]
        for child, following in zip(children, children[1:]):
            child.end_offset = following.start_offset
        if children:
            children[-1].end_offset = node.end_offset


def _detect_numbered_headings(text: str) -> list[OutlineEntry]:
    entries = []
    for match in _NUMBERED_HEADING.finditer(text):
        title = match.group("title").strip()
        letters = sum(ch.isalpha() for ch in title)
        if letters < 0.6 * len(title.replace(" ", "")) or title.endswith((".", ",", ";")):
            continue
        level = match.group("number").count(".") + 1
        entries.append(OutlineEntry(title=f"{match.group('number')} {title}", level=level, offset=match.start()))
    return entries


def _set_apart_headings(doc: LoadedDocument) -> list[OutlineEntry]:
    """Headings read from how the page sets them apart: lines in larger type than the body's (`set_apart`, a PDF's;
    a heading wrapped over lines in the same type is one; the larger the type, the higher the level), and lines in
    the form "TOPIC: Title". A line set apart on many pages (a running header) or one that reads as a number or a
    sentence fragment of many words is none."""
    text, starts = doc.text, doc.page_starts()
    repeated = {t for t, n in Counter(line.text for line in doc.set_apart).items() if n >= RUNNING_LINE_PAGES}
    groups: list[list[TypedLine]] = []
    for line in doc.set_apart:
        if line.text in repeated:
            continue
        last = groups[-1][-1] if groups else None
        if last is not None and (last.page, last.size) == (line.page, line.size) and _follows(text, starts, last, line):
            groups[-1].append(line)
        else:
            groups.append([line])
    # a size set apart more than once ranks the levels; one used once (a cover's title) is above them all
    used = Counter(group[0].size for group in groups)
    ranked = [size for size, count in used.items() if count > 1]
    entries: list[OutlineEntry] = []
    searched_from = 0
    for group in groups:
        title = " ".join(" ".join(line.text for line in group).split())
        letters = sum(ch.isalpha() for ch in title)
        if len(group) > MAX_HEADING_LINES or len(title.split()) > MAX_HEADING_WORDS or letters < 0.5 * len(title):
            continue
        page_start = starts[group[0].page - 1]
        at = text.find(group[0].text, max(searched_from, page_start))
        if at < 0:
            continue
        searched_from = at + len(group[0].text)
        level = min(1 + sum(size > group[0].size for size in ranked), MAX_HEADING_LEVELS)
        entries.append(OutlineEntry(title=title[:FILING_TITLE_CHARS], level=level, offset=at))
    topic_level = min(max((entry.level for entry in entries), default=0) + 1, MAX_HEADING_LEVELS)
    taken = {entry.offset for entry in entries}
    for match in _TOPIC_HEADING.finditer(text):
        at = match.start("topic")
        if at not in taken and not _TOC_PAGE.search(match.group("title")):
            title = f"{match.group('topic').strip()}: {match.group('title').strip()}"
            entries.append(OutlineEntry(title=title[:FILING_TITLE_CHARS], level=topic_level, offset=at))
    return sorted(entries, key=lambda entry: entry.offset)


def _follows(text: str, starts: list[int], first: TypedLine, second: TypedLine) -> bool:
    """Whether `second` is the line right after `first` on their page (a heading wrapped onto a second line)."""
    at = text.find(first.text, starts[first.page - 1])
    return at >= 0 and text[at + len(first.text) :].lstrip().startswith(second.text)


def _filing_sections(text: str) -> list[OutlineEntry]:
    """A filing's parts (level 1), their items (level 2) and its exhibits (level 1). The contents list names every
    part and item first: each is taken where it last starts a line, which is its heading in the body (an item is
    known by its part: a 10-Q has an Item 1 in Part I and in Part II)."""
    found: dict[tuple[str, str], OutlineEntry] = {}
    part = ""
    lines = [(m.start(), "part", m) for m in _PART.finditer(text)]
    lines += [(m.start(), "item", m) for m in _ITEM.finditer(text)]
    lines += [(m.start(), "exhibit", m) for m in _EXHIBIT.finditer(text)]
    for offset, kind, match in sorted(lines, key=lambda line: line[0]):
        if kind == "part":
            part = match.group("part").upper()
            title = " ".join(f"Part {part} {match.group('title').strip(' .:—–-')}".split())
            found["part", part] = OutlineEntry(title=title[:FILING_TITLE_CHARS], level=1, offset=offset)
        elif kind == "item":
            title = " ".join(match.group("title").split())
            if _TOC_PAGE.search(title):
                continue
            item = match.group("item").upper()
            heading = f"Item {item}. {title}"[:FILING_TITLE_CHARS]
            found[part, item] = OutlineEntry(title=heading, level=2, offset=offset)
        else:
            exhibit = match.group("exhibit")
            found["exhibit", exhibit] = OutlineEntry(title=f"Exhibit {exhibit}", level=1, offset=offset)
    return sorted(found.values(), key=lambda entry: entry.offset)


def _page_groups(doc: LoadedDocument) -> list[OutlineEntry]:
    starts = doc.page_starts()
    n_pages = len(doc.pages)
    group = max(1, math.ceil(n_pages / MAX_PAGE_NODES))
    entries = []
    for first in range(0, n_pages, group):
        last = min(n_pages, first + group)
        if group > 1:
            entries.append(OutlineEntry(title=f"Pages {first + 1}–{last}", level=1, offset=starts[first]))
        for index in range(first, last):
            page = doc.pages[index]
            label = f" ({page.label})" if page.label else ""
            level = 2 if group > 1 else 1
            entries.append(OutlineEntry(title=f"Page {page.number}{label}", level=level, offset=starts[index]))
    return entries


def _time_windows(doc: LoadedDocument) -> list[OutlineEntry]:
    entries, window = [], -1
    for segment in doc.segments:
        current = int(segment.start // TRANSCRIPT_WINDOW_S)
        if current != window:
            window = current
            begin, end = current * TRANSCRIPT_WINDOW_S, (current + 1) * TRANSCRIPT_WINDOW_S
            entries.append(
                OutlineEntry(title=f"{format_timestamp(begin)}–{format_timestamp(end)}", level=1, offset=segment.offset)
            )
    return entries if len(entries) > 1 else []


def _paragraph_groups(text: str) -> list[OutlineEntry]:
    if len(text) <= PARAGRAPH_GROUP_CHARS:
        return []
    entries: list[OutlineEntry] = []
    group_start = offset = 0
    for paragraph in re.split(r"(\n\s*\n)", text):
        if offset - group_start >= PARAGRAPH_GROUP_CHARS or not entries:
            if paragraph.strip():
                first_line = paragraph.strip().splitlines()[0]
                title = first_line if len(first_line) <= 60 else first_line[:57].rstrip() + "…"
                entries.append(
                    OutlineEntry(title=title, level=1, offset=offset + len(paragraph) - len(paragraph.lstrip()))
                )
                group_start = offset
        offset += len(paragraph)
    return entries
