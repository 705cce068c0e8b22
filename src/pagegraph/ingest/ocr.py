"""OCR for PDF pages without a text layer (scans, photographed pages): each such page is rendered by PDFium and read
by Tesseract, from the system's packages (Debian's `tesseract-ocr` and `tesseract-ocr-LANG`; scripts/setup.sh
installs English where apt is at hand). Nothing is downloaded: the engine and its language data are local."""

from __future__ import annotations

import csv
import io
import logging
import os
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

import pypdfium2 as pdfium

from pagegraph.config import Settings

log = logging.getLogger(__name__)

PDFIUM_LOCK = threading.Lock()  # PDFium is not thread-safe: every use in a process goes through this lock
TESSDATA_DIRS = [Path("/usr/share/tesseract-ocr/5/tessdata"), Path("/usr/share/tesseract-ocr/4.00/tessdata")]


@dataclass(frozen=True)
class OcrOptions:
    """How pages are read: Tesseract's language codes joined by '+', at this resolution, each page within the time
    limit."""

    languages: str = "eng"
    dpi: int = 300
    timeout_s: float = 120.0


@dataclass(frozen=True)
class OcrText:
    text: str
    confidence: float  # mean word confidence, 0..1


class OcrError(Exception):
    pass


def ocr_options(settings: Settings) -> OcrOptions | None:
    """The OCR that ingest uses under these settings: None when it is off or no engine is installed."""
    if settings.ingest.ocr == "off":
        return None
    options = OcrOptions(languages=settings.ingest.ocr_languages)
    if reason := ocr_unavailable(options):
        log.warning("pages without a text layer stay empty: %s", reason)
        return None
    return options


def ocr_unavailable(options: OcrOptions) -> str | None:
    """Why pages cannot be OCR'd here (no engine, a language without its data); None when they can."""
    if shutil.which("tesseract") is None:
        return "no OCR engine here: install Tesseract (Debian: apt-get install tesseract-ocr tesseract-ocr-eng)"
    prefix = os.environ.get("TESSDATA_PREFIX")
    folders = [Path(prefix)] if prefix else TESSDATA_DIRS
    for language in options.languages.split("+"):
        if not any((folder / f"{language}.traineddata").is_file() for folder in folders):
            return f"Tesseract has no data for language {language!r} (Debian: apt-get install tesseract-ocr-{language})"
    return None


def ocr_pages(data: bytes, numbers: list[int], options: OcrOptions) -> dict[int, OcrText]:
    """The text Tesseract reads on each of these 1-indexed pages of the PDF in `data` (pages it reads nothing on
    are left out). Raises OcrError when the engine fails."""
    read = {}
    for number in numbers:
        with PDFIUM_LOCK:
            document = pdfium.PdfDocument(data)
            try:
                image = document[number - 1].render(scale=options.dpi / 72, grayscale=True).to_pil()
            finally:
                document.close()
        png = io.BytesIO()
        image.save(png, format="PNG")
        found = _tesseract(png.getvalue(), options)
        if found.text:
            read[number] = found
    return read


def _tesseract(png: bytes, options: OcrOptions) -> OcrText:
    command = ["tesseract", "stdin", "stdout", "-l", options.languages, "--dpi", str(options.dpi), "--psm", "3", "tsv"]
    # One thread per page: the embedder and the other ingest work keep the rest of the cores.
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
    try:
        done = subprocess.run(command, input=png, capture_output=True, timeout=options.timeout_s, env=env)
    except subprocess.TimeoutExpired as exc:
        raise OcrError(f"OCR took longer than {options.timeout_s:.0f} s on one page") from exc
    except OSError as exc:
        raise OcrError(f"Tesseract could not be run ({exc})") from exc
    if done.returncode != 0:
        raise OcrError(f"Tesseract failed: {done.stderr.decode(errors='replace').strip()[-300:]}")
    return _words_to_text(done.stdout.decode("utf-8", errors="replace"))


def _words_to_text(tsv: str) -> OcrText:
    """Tesseract's TSV words as text: words of a line joined by spaces, lines by newlines, paragraphs by a blank
    line; with the mean confidence of the words."""
    paragraphs: dict[tuple[str, str], dict[str, list[str]]] = {}
    confidences = []
    for row in csv.DictReader(io.StringIO(tsv), delimiter="\t", quoting=csv.QUOTE_NONE):
        word = (row.get("text") or "").strip()
        if row.get("level") != "5" or not word:
            continue
        paragraph = paragraphs.setdefault((row["block_num"], row["par_num"]), {})
        paragraph.setdefault(row["line_num"], []).append(word)
        confidence = float(row.get("conf") or -1)
        if confidence >= 0:
            confidences.append(confidence / 100)
    text = "\n\n".join("\n".join(" ".join(words) for words in lines.values()) for lines in paragraphs.values())
    return OcrText(text=text, confidence=round(sum(confidences) / len(confidences), 3) if confidences else 0.0)
