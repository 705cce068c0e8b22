"""Time-coded transcripts: WebVTT, SRT and JSON segment lists, keeping timestamps and speakers.

Each segment becomes one line `[hh:mm:ss] Speaker: text` of the document text, and keeps its offsets so chunks
can report the time span and speakers they cover.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from pagegraph.errors import DocumentError
from pagegraph.state.documents import LoadedDocument, Page, SourceType, TranscriptSegment

_TIMING = re.compile(
    r"^\s*(?P<start>(?:\d+:)?\d{1,2}:\d{2}[.,]\d{1,3})\s*-->\s*(?P<end>(?:\d+:)?\d{1,2}:\d{2}[.,]\d{1,3})"
)
_VOICE = re.compile(r"<v(?:\.[^ >]*)?\s+([^>]+)>")
_TAG = re.compile(r"</?[^>]+>")
# "Alice: hello" or "[Alice]: hello": a short capitalised name before a colon.
_SPEAKER_PREFIX = re.compile(r"^\[?(?P<name>[A-Z][\w.'-]*(?: [A-Z][\w.'-]*){0,3})\]?:\s+(?P<text>.+)$", re.DOTALL)


def format_timestamp(seconds: float) -> str:
    total = int(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


def load_vtt(path: Path, text: str) -> LoadedDocument:
    lines = text.replace("\r\n", "\n").split("\n")
    if not lines or not lines[0].lstrip("\ufeff").startswith("WEBVTT"):
        raise DocumentError(path, "not a WebVTT file (first line must be 'WEBVTT')")
    return _build(path, _parse_cues(path, lines[1:]))


def load_srt(path: Path, text: str) -> LoadedDocument:
    return _build(path, _parse_cues(path, text.replace("\r\n", "\n").split("\n")))


def load_json_transcript(path: Path, text: str) -> LoadedDocument:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DocumentError(path, f"invalid JSON ({exc.msg} at line {exc.lineno})") from exc
    title = None
    if isinstance(data, dict):
        title = data.get("title")
        data = data.get("segments")
    if not isinstance(data, list):
        raise DocumentError(path, "not a transcript: expected a list of {start, end, text, speaker?} segments")
    segments = []
    for index, item in enumerate(data):
        try:
            segments.append(
                TranscriptSegment(
                    start=float(item["start"]),
                    end=float(item["end"]),
                    text=" ".join(str(item["text"]).split()),
                    speaker=(str(item["speaker"]).strip() or None) if item.get("speaker") else None,
                )
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise DocumentError(
                path, f"segment {index + 1}: needs numeric 'start' and 'end' and a 'text' ({exc})"
            ) from exc
    return _build(path, segments, title=str(title) if title else None)


def _seconds(stamp: str) -> float:
    parts = stamp.replace(",", ".").split(":")
    seconds = float(parts[-1])
    minutes = int(parts[-2])
    hours = int(parts[-3]) if len(parts) > 2 else 0
    return hours * 3600 + minutes * 60 + seconds


def _parse_cues(path: Path, lines: list[str]) -> list[TranscriptSegment]:
    segments: list[TranscriptSegment] = []
    index = 0
    while index < len(lines):
        match = _TIMING.match(lines[index])
        index += 1
        if not match:
            continue
        body = []
        while index < len(lines) and lines[index].strip():
            body.append(lines[index].strip())
            index += 1
        raw = " ".join(body)
        voice = _VOICE.search(raw)
        speaker = voice.group(1).strip() if voice else None
        cue_text = " ".join(_TAG.sub("", raw).split())
        if speaker is None and (prefix := _SPEAKER_PREFIX.match(cue_text)):
            speaker, cue_text = prefix.group("name"), prefix.group("text")
        if cue_text:
            segments.append(
                TranscriptSegment(
                    start=_seconds(match["start"]), end=_seconds(match["end"]), speaker=speaker, text=cue_text
                )
            )
    if not segments:
        raise DocumentError(path, "no timed cues found (expected lines like '00:00:01.000 --> 00:00:04.000')")
    return segments


def _build(path: Path, segments: list[TranscriptSegment], title: str | None = None) -> LoadedDocument:
    segments = [segment for segment in segments if segment.text]
    if not segments:
        raise DocumentError(path, "transcript has no text")
    lines, offset = [], 0
    for segment in segments:
        speaker = f"{segment.speaker}: " if segment.speaker else ""
        line = f"[{format_timestamp(segment.start)}] {speaker}{segment.text}"
        segment.offset, segment.end_offset = offset, offset + len(line)
        lines.append(line)
        offset += len(line) + 1
    return LoadedDocument(
        path=str(path),
        name=path.name,
        source_type=SourceType.TRANSCRIPT,
        title=title or path.stem,
        pages=[Page(number=1, text="\n".join(lines))],
        segments=segments,
    )
