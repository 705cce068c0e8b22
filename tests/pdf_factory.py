"""PDFs made on the spot for tests: good ones with an outline, and each kind of bad one."""

from __future__ import annotations

import io
from pathlib import Path

from fpdf import FPDF
from PIL import Image
from pypdf import PdfReader, PdfWriter


def text_pdf(path: Path, pages: list[tuple[str, str]]) -> Path:
    """One page per (heading, body); each heading is a bookmark."""
    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    for heading, body in pages:
        pdf.add_page()
        pdf.start_section(heading)
        pdf.multi_cell(0, 6, heading, new_x="LMARGIN", new_y="NEXT")
        pdf.multi_cell(0, 6, body, new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(path))
    return path


def corrupt_pdf(path: Path) -> Path:
    path.write_bytes(b"%PDF-1.7\n" + bytes(range(256)) * 20 + b"\n%%EOF\n")
    return path


def truncated_pdf(path: Path, source: Path) -> Path:
    data = source.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def password_pdf(path: Path, source: Path) -> Path:
    writer = PdfWriter(clone_from=PdfReader(source))
    writer.encrypt(user_password="secret", owner_password="owner-secret", algorithm="AES-256")
    writer.write(str(path))
    return path


def empty_pdf(path: Path) -> Path:
    buffer = io.BytesIO()
    PdfWriter().write(buffer)
    path.write_bytes(buffer.getvalue())
    return path


def image_only_pdf(path: Path) -> Path:
    image = Image.new("RGB", (400, 300), "white")
    for x in range(50, 350):
        image.putpixel((x, 150), (0, 0, 0))
    png = io.BytesIO()
    image.save(png, format="PNG")
    pdf = FPDF()
    for _ in range(2):
        pdf.add_page()
        pdf.image(io.BytesIO(png.getvalue()), x=10, y=10, w=150)
    pdf.output(str(path))
    return path


def scanned_pdf(path: Path, source: Path, dpi: int = 200, pages: set[int] | None = None) -> Path:
    """A scan of `source`: each page (or each of `pages`, 1-indexed; the others keep their text) rendered to an image
    and written back as an image-only page of the same size."""
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(source)
    text_pages = PdfReader(source)
    writer = PdfWriter()
    try:
        for index in range(len(document)):
            if pages is not None and index + 1 not in pages:
                writer.add_page(text_pages.pages[index])
                continue
            width, height = document[index].get_size()
            image = document[index].render(scale=dpi / 72).to_pil().convert("L")
            png = io.BytesIO()
            image.save(png, format="PNG")
            pdf = FPDF(unit="pt", format=(width, height))
            pdf.add_page()
            pdf.image(png, x=0, y=0, w=width, h=height)
            writer.add_page(PdfReader(io.BytesIO(bytes(pdf.output()))).pages[0])
    finally:
        document.close()
    with path.open("wb") as out:
        writer.write(out)
    return path


def page_labelled_pdf(path: Path, pages: list[tuple[str, str]], front: int) -> Path:
    """`text_pdf`'s pages, the first `front` labelled i, ii, … and the rest 1, 2, … (the PDF's /PageLabels)."""
    text_pdf(path, pages)
    writer = PdfWriter(clone_from=PdfReader(path))
    writer.set_page_label(0, front - 1, style="/r")
    writer.set_page_label(front, len(pages) - 1, style="/D", start=1)
    writer.write(str(path))
    return path
