from __future__ import annotations

import json
import time
import zipfile
from pathlib import Path

import docx
import pytest

from pagegraph.errors import DocumentError
from pagegraph.ingest.loaders import ReadOptions, load_document
from pagegraph.state.documents import SourceType
from tests.conftest import zip_bomb_docx

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def test_markdown_headings_levels_and_fenced_code_ignored(tmp_path: Path) -> None:
    path = tmp_path / "guide.md"
    path.write_text(
        "# Guide\n\nIntro.\n\n## Setup\n\n```bash\n# not a heading\n```\n\n### Step one\n\nText.\n###### Deep\n"
    )
    doc = load_document(path)
    assert doc.source_type == SourceType.MARKDOWN
    assert doc.title == "Guide"
    assert [(e.title, e.level) for e in doc.outline] == [("Guide", 1), ("Setup", 2), ("Step one", 3), ("Deep", 6)]
    for entry in doc.outline:
        assert doc.text[entry.offset :].startswith("#")


def test_markdown_custom_heading_pattern(tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    path.write_text("# Top\n\n## Kept\n\n### Ignored\n")
    doc = load_document(path, heading_pattern=r"^(?P<marks>#{1,2})\s+(?P<title>.+)$")
    assert [e.title for e in doc.outline] == ["Top", "Kept"]


def test_text_form_feeds_make_pages(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("first page\n\fsecond page\n\fthird page\n")
    doc = load_document(path)
    assert [(p.number, p.text) for p in doc.pages] == [(1, "first page"), (2, "second page"), (3, "third page")]


def test_docx_headings_tables_and_page_breaks(tmp_path: Path) -> None:
    document = docx.Document()
    document.add_heading("Handbook", level=1)
    document.add_paragraph("Welcome text.")
    document.add_heading("Benefits", level=2)
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "Item", "Days"
    table.cell(1, 0).text, table.cell(1, 1).text = "Holiday", "25"
    document.add_page_break()
    document.add_heading("Leave", level=2)
    document.add_paragraph("Ask your manager.")
    path = tmp_path / "handbook.docx"
    document.save(str(path))

    doc = load_document(path)
    assert doc.source_type == SourceType.DOCX
    assert len(doc.pages) == 2
    assert "| Item | Days |\n| --- | --- |\n| Holiday | 25 |" in doc.pages[0].text
    assert doc.pages[1].text.startswith("Leave")
    assert [(e.title, e.level) for e in doc.outline] == [("Handbook", 1), ("Benefits", 2), ("Leave", 2)]
    assert doc.text[doc.outline[2].offset :].startswith("Leave")


def test_vtt_keeps_timestamps_and_speakers() -> None:
    doc = load_document(SAMPLES / "support-call-2024-03-14.vtt")
    assert doc.source_type == SourceType.TRANSCRIPT
    first = doc.segments[0]
    assert (first.start, first.end, first.speaker) == (2.0, 7.5, "Dana")
    assert doc.text.splitlines()[1].startswith("[00:08] Sam: Hi, my SB-40")
    assert doc.text[first.offset : first.end_offset].endswith("How can I help you today?")


def test_srt_with_speaker_prefix(tmp_path: Path) -> None:
    path = tmp_path / "meeting.srt"
    path.write_text(
        "1\n00:00:01,000 --> 00:00:03,500\nAlice: Shall we start?\n\n2\n01:02:03,000 --> 01:02:05,000\nBob: Yes.\n"
    )
    doc = load_document(path)
    assert [(s.start, s.speaker, s.text) for s in doc.segments] == [
        (1.0, "Alice", "Shall we start?"),
        (3723.0, "Bob", "Yes."),
    ]
    assert "[01:02:03] Bob: Yes." in doc.text


def test_json_transcript(tmp_path: Path) -> None:
    path = tmp_path / "call.json"
    path.write_text(
        json.dumps(
            {
                "title": "Call",
                "segments": [
                    {"start": 0, "end": 4.2, "text": "Hello there", "speaker": "A"},
                    {"start": 4.2, "end": 9, "text": "Hi"},
                ],
            }
        )
    )
    doc = load_document(path)
    assert doc.title == "Call"
    assert [(s.speaker, s.end) for s in doc.segments] == [("A", 4.2), (None, 9.0)]


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("data.xyz", b"hello", "unknown file type '.xyz'"),
        ("empty.md", b"   \n", "file is empty"),
        ("bad.json", b"{not json", "invalid JSON"),
        ("list.json", b'[{"start": 0}]', "segment 1"),
        ("cues.vtt", b"WEBVTT\n\nno cues here\n", "no timed cues"),
        ("fake.pdf", b"this is not a pdf at all", "not a PDF"),
        ("notes.md", "# Notes\n\nCaf\u00e9 ".encode() + b"cr\xe8me br\xfbl\xe9e", "not valid UTF-8 at byte 17 (0xe8)"),
        ("memo.txt", b"ok\n\xff\xfe", "not valid UTF-8 at byte 3"),
    ],
)
def test_bad_files_name_file_and_reason(tmp_path: Path, name: str, content: bytes, reason: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(DocumentError) as error:
        load_document(path)
    assert str(error.value).startswith(f"{name}: ")
    assert reason in str(error.value)


def test_utf8_with_a_byte_order_mark_loads(tmp_path: Path) -> None:
    path = tmp_path / "bom.md"
    path.write_bytes("\ufeff# Caf\u00e9\n\nCr\u00e8me.".encode())
    assert load_document(path).pages[0].text.startswith("# Caf\u00e9")


def test_a_word_file_that_unpacks_past_the_limit_is_refused_before_unpacking(tmp_path: Path) -> None:
    bomb = zip_bomb_docx(tmp_path / "bomb.docx", 3_000_000)
    assert bomb.stat().st_size < 100_000
    with pytest.raises(DocumentError, match=r"bomb.docx: unpacks to .*word/document.xml.*PAGEGRAPH_MAX_UNPACKED_BYTES"):
        load_document(bomb, read=ReadOptions(max_unpacked_bytes=2_000_000))
    # the Word file it was made from (about 1 MB unpacked) loads under the same limit
    assert load_document(tmp_path / ".seed-bomb.docx", read=ReadOptions(max_unpacked_bytes=2_000_000)).pages


def test_a_word_file_that_expands_too_many_times_is_refused_under_the_size_limit(tmp_path: Path) -> None:
    bomb = zip_bomb_docx(tmp_path / "dense.docx", 30_000_000)  # 30 MB of one repeated paragraph: ~100 KB packed
    with pytest.raises(DocumentError, match=r"dense.docx: word/document.xml expands .* times .*MAX_UNPACK_RATIO"):
        load_document(bomb, read=ReadOptions(max_unpacked_bytes=100_000_000))


def test_files_pages_and_characters_past_their_limits_are_refused(tmp_path: Path) -> None:
    text = tmp_path / "long.txt"
    text.write_text("A line of text.\n\f" * 50)
    with pytest.raises(DocumentError, match="long.txt: .* bytes, over the limit .*PAGEGRAPH_MAX_FILE_BYTES"):
        load_document(text, read=ReadOptions(max_file_bytes=100))
    with pytest.raises(DocumentError, match="long.txt: 5[01] pages, over the limit of 10 .*PAGEGRAPH_MAX_PAGES"):
        load_document(text, read=ReadOptions(max_pages=10))
    with pytest.raises(DocumentError, match="long.txt: .* characters of text, .*PAGEGRAPH_MAX_DOCUMENT_CHARS"):
        load_document(text, read=ReadOptions(max_chars=100))


def test_xml_entities_in_a_word_file_are_never_expanded(tmp_path: Path) -> None:
    """A "billion laughs" document.xml (nested entities that would expand to gigabytes) is refused at once, naming
    the file, instead of being expanded."""
    seed = tmp_path / "seed.docx"
    document = docx.Document()
    document.add_paragraph("Laughs follow.")
    document.save(seed)
    entities = '<!ENTITY lol0 "lol">' + "".join(f'<!ENTITY lol{n} "{f"&lol{n - 1};" * 10}">' for n in range(1, 10))
    laughs = tmp_path / "laughs.docx"
    with zipfile.ZipFile(seed) as original, zipfile.ZipFile(laughs, "w", zipfile.ZIP_DEFLATED) as out:
        for item in original.infolist():
            data = original.read(item)
            if item.filename == "word/document.xml":
                head, body = data.split(b"?>", 1)
                body = body.replace(b"Laughs follow.", b"Laughs follow &lol9;")
                data = head + b"?>" + f"<!DOCTYPE w:document [{entities}]>".encode() + body
            out.writestr(item, data)
    started = time.monotonic()
    with pytest.raises(DocumentError, match=r"laughs.docx: corrupt Word document .*amplification"):
        load_document(laughs)
    assert time.monotonic() - started < 10
