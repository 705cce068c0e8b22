"""Per-chunk metadata held as arrays in the BM25 index's order: pre-filter masks and neighbour lookups without
touching Chroma or the chunk texts."""

from __future__ import annotations

import json
from datetime import date
from functools import lru_cache

import numpy as np

from pagegraph.state.documents import CONFIDENTIALITY_LEVELS, day_number
from pagegraph.state.filters import RetrievalFilter
from pagegraph.store.filters import NO_DAY, chunk_mask

_GONE_TAGS = json.dumps({"confidentiality": CONFIDENTIALITY_LEVELS[-1]})


class ChunkCatalog:
    def __init__(self, rows: list[tuple[str, str, str, int, int, int, str]], order: list[str]) -> None:
        """`order`: the BM25 index's chunk ids. Chunks it lists that the store no longer holds (a document removed
        or replaced since BM25 was built, which a reader does not rebuild) are kept as rows no mask lets through."""
        by_id = {row[0]: row for row in rows}
        self.live = np.array([chunk_id in by_id for chunk_id in order], dtype=bool)
        self.live.flags.writeable = False
        self.all_live = bool(self.live.all())
        ordered = [by_id.get(chunk_id) or (chunk_id, "", "", -1, 0, 0, _GONE_TAGS) for chunk_id in order]
        self.ids = list(order)
        self.row_of = {chunk_id: i for i, chunk_id in enumerate(self.ids)}
        self.document_ids = np.array([row[1] for row in ordered], dtype=object)
        self.sources = np.array([row[2] for row in ordered], dtype=object)
        self.positions = np.array([row[3] for row in ordered], dtype=np.int64)
        self.start_pages = np.array([row[4] for row in ordered], dtype=np.int64)
        self.end_pages = np.array([row[5] for row in ordered], dtype=np.int64)
        tags = {raw: json.loads(raw) for raw in {row[6] for row in ordered}}
        self.confidentiality = np.array(
            [CONFIDENTIALITY_LEVELS.index(tags[row[6]]["confidentiality"]) for row in ordered], dtype=np.int64
        )
        days = {raw: _day(parsed.get("date")) for raw, parsed in tags.items()}
        self.dates = np.array([days[row[6]] for row in ordered], dtype=np.int64)  # YYYYMMDD, NO_DAY when undated
        # Categorical fields as integer codes: comparing ints is far faster than comparing strings at 200k chunks.
        self._codes = {
            "source": _encode([row[2] for row in ordered]),
            "project": _encode([tags[row[6]].get("project") for row in ordered]),
            "source_type": _encode([tags[row[6]].get("source_type") for row in ordered]),
        }
        self._at = {(row[1], row[3]): row[0] for row in ordered if row[3] >= 0}
        self._cached_mask = lru_cache(maxsize=64)(self._compute_mask)

    def changed(self, gone: set[str], rows: list[tuple[str, str, str, int, int, int, str]]) -> ChunkCatalog:
        """This catalog with the chunks of the documents `gone` (removed or replaced) no longer live and `rows` (the
        chunks of the documents committed since, in order) appended: work in proportion to what changed, not to the
        catalog's size. Appended chunks come after the others, so ties keep their older order."""
        added = ChunkCatalog(rows, [row[0] for row in rows])
        joined = object.__new__(ChunkCatalog)
        dead = np.isin(self.document_ids, list(gone)) if gone else np.zeros(len(self), dtype=bool)
        live = np.concatenate([self.live & ~dead, added.live])
        live.flags.writeable = False
        joined.live, joined.all_live = live, bool(live.all())
        joined.ids = self.ids + added.ids
        joined.row_of = self.row_of | {chunk_id: len(self) + row for chunk_id, row in added.row_of.items()}
        joined.document_ids = np.concatenate([np.where(dead, "", self.document_ids), added.document_ids])
        for name in ("sources", "positions", "start_pages", "end_pages", "confidentiality", "dates"):
            setattr(joined, name, np.concatenate([getattr(self, name), getattr(added, name)]))
        joined._codes = {}
        for field, (codes, code_of) in self._codes.items():
            new_codes, new_code_of = added._codes[field]
            code_of = dict(code_of)
            for value in new_code_of:
                code_of.setdefault(value, len(code_of))
            recoded = np.array([-1, *(code_of[value] for value in new_code_of)], dtype=np.int64)[new_codes + 1]
            joined._codes[field] = (np.concatenate([codes, recoded]), code_of)
        joined._at = dict(self._at)
        for row in np.flatnonzero(dead):
            joined._at.pop((self.document_ids[row], int(self.positions[row])), None)
        joined._at |= added._at
        joined._cached_mask = lru_cache(maxsize=64)(joined._compute_mask)
        return joined

    def __len__(self) -> int:
        return len(self.ids)

    def location(self, chunk_id: str) -> tuple[str, int, int]:
        """File name, first page and last page of a chunk."""
        row = self.row_of[chunk_id]
        return self.sources[row], int(self.start_pages[row]), int(self.end_pages[row])

    def mask(self, flt: RetrievalFilter | None) -> np.ndarray | None:
        """True for chunks the filter lets through (read-only); None when it lets everything through. Masks are
        cached per filter: one hybrid search asks for the same mask for BM25, dense search and windows."""
        if (flt is None or not flt.restricts) and self.all_live:
            return None
        return self._cached_mask((flt or RetrievalFilter()).model_dump_json())

    def holds(self, chunk_id: str) -> bool:
        """Whether the chunk is searchable here (in BM25's snapshot, and still stored)."""
        row = self.row_of.get(chunk_id)
        return row is not None and bool(self.live[row])

    def _compute_mask(self, flt_json: str) -> np.ndarray:
        numbers = {
            "confidentiality": self.confidentiality,
            "start_page": self.start_pages,
            "end_page": self.end_pages,
            "date": self.dates,
        }
        keep = chunk_mask(RetrievalFilter.model_validate_json(flt_json), self.live, self._codes, numbers)
        keep.flags.writeable = False
        return keep

    def neighbours(self, chunk_id: str, n: int, mask: np.ndarray | None = None) -> list[str]:
        """The chunk and up to n chunks either side of it in the same document, in position order; chunks the
        mask excludes are left out."""
        row = self.row_of[chunk_id]
        document_id, position = self.document_ids[row], int(self.positions[row])
        found = (self._at.get((document_id, p)) for p in range(position - n, position + n + 1))
        return [c for c in found if c is not None and (mask is None or mask[self.row_of[c]])]


def _day(value: str | None) -> int:
    return day_number(date.fromisoformat(value)) if value else NO_DAY


def _encode(values: list[str | None]) -> tuple[np.ndarray, dict[str, int]]:
    code_of: dict[str, int] = {}
    codes = np.array([-1 if v is None else code_of.setdefault(v, len(code_of)) for v in values], dtype=np.int64)
    return codes, code_of
