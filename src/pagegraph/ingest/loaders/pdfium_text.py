"""Text as PDFium gives it, made plain, the same for a page's text layer and for a table cell."""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def pdfium_text(text: str) -> str:
    """Line ends as "\\n"; PDFium's mark for a hyphen at a line break (\\x02) as "-"; other control characters (glyphs
    without a Unicode mapping) dropped; a character beyond the BMP that came as two UTF-16 halves joined, and a lone
    half dropped (it would fail the tokenizer)."""
    text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "ignore")
    return _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n").replace("\x02", "-"))
