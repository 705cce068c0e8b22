"""Text as PDFium gives it, made plain, the same for a page's text layer and for a table cell."""

from __future__ import annotations

import ctypes
import math
import re
from collections import Counter

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def pdfium_text(text: str) -> str:
    """Line ends as "\\n"; PDFium's mark for a hyphen at a line break (\\x02) as "-"; other control characters (glyphs
    without a Unicode mapping) dropped; a character beyond the BMP that came as two UTF-16 halves joined, and a lone
    half dropped (it would fail the tokenizer)."""
    text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "ignore")
    return _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n").replace("\x02", "-"))


def typed_lines(textpage: pdfium.PdfTextPage) -> list[tuple[str, float]]:
    """Each line of a page's text layer (as `pdfium_text` makes it) with the type size most of its characters
    have."""
    lines: list[tuple[str, float]] = []
    matrix = pdfium_c.FS_MATRIX()
    chars: list[str] = []
    sizes: Counter[float] = Counter()

    def end_line() -> None:
        text = pdfium_text("".join(chars)).strip()
        if text and sizes:
            lines.append((text, sizes.most_common(1)[0][0]))
        chars.clear()
        sizes.clear()

    for index in range(pdfium_c.FPDFText_CountChars(textpage.raw)):
        char = chr(pdfium_c.FPDFText_GetUnicode(textpage.raw, index) or 0)
        if char in "\r\n":
            end_line()
        elif char != "\0":
            chars.append(char)
            if not char.isspace():
                sizes[round(_type_size(textpage, index, matrix) * 2) / 2] += 1
    end_line()
    return lines


def _type_size(textpage: pdfium.PdfTextPage, index: int, matrix: pdfium_c.FS_MATRIX) -> float:
    """A character's type size as it shows on the page: its font size times the vertical scale of its text matrix
    (many writers set the font at size 1 and scale the matrix)."""
    size = pdfium_c.FPDFText_GetFontSize(textpage.raw, index)
    if pdfium_c.FPDFText_GetMatrix(textpage.raw, index, ctypes.byref(matrix)):
        size *= math.hypot(matrix.c, matrix.d)
    return size
