"""What the report shows of one attempt: its submission (highlighted), verdict and transcript.

Attempt folders hold files an untrusted agent wrote. They are read without following symbolic
links (a link could point anywhere on the machine that renders the report), cut at a size limit
with an explicit marker, and always escaped before they reach the page.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from markupsafe import Markup

from gauntlet.store import AttemptRecord, RunStore

#: Largest part of one submission file shown (the judge's own limit per file is 200 kB).
SUBMISSION_LIMIT_BYTES = 200_000
#: Largest part of one attempt's transcripts shown.
TRANSCRIPT_LIMIT_BYTES = 300_000
#: Keys under which transcript events carry their text, most specific first.
_TEXT_KEYS = ("content", "text", "message", "result", "output")
_LABEL_KEYS = ("role", "type", "event", "kind")


@dataclass(frozen=True)
class SourceFile:
    """One submission file, ready to show."""

    name: str
    size_bytes: int
    html: Markup
    """Highlighted source, or an escaped note when it cannot be shown."""


@dataclass(frozen=True)
class TranscriptEntry:
    """One event of a transcript."""

    label: str
    text: str


@dataclass(frozen=True)
class Transcript:
    """One transcript file of an attempt."""

    name: str
    entries: list[TranscriptEntry]
    truncated_bytes: int = 0
    """Bytes left out past `TRANSCRIPT_LIMIT_BYTES`."""


@dataclass(frozen=True)
class AttemptView:
    """An attempt as the report shows it."""

    record: AttemptRecord
    anchor: str
    submission: list[SourceFile] = field(default_factory=list)
    transcripts: list[Transcript] = field(default_factory=list)
    other_files: list[tuple[str, int]] = field(default_factory=list)
    """Other files of the attempt folder (judge log, profiles): name and size."""


def _read_capped(path: Path, limit_bytes: int) -> tuple[bytes, int]:
    with path.open("rb") as handle:
        data = handle.read(limit_bytes + 1)
    size = path.stat().st_size
    if len(data) > limit_bytes:
        return data[:limit_bytes], size - limit_bytes
    return data, 0


def highlight(name: str, text: str) -> Markup:
    """Source code as highlighted HTML, the lexer chosen by file name."""
    from pygments import highlight as pygmentize
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import TextLexer, get_lexer_for_filename
    from pygments.util import ClassNotFound

    try:
        lexer = get_lexer_for_filename(name, stripnl=False)
    except ClassNotFound:
        lexer = TextLexer(stripnl=False)
    return Markup(pygmentize(text, lexer, HtmlFormatter(cssclass="highlight")))


def highlight_css() -> str:
    """The style sheet of `highlight`'s markup."""
    from pygments.formatters import HtmlFormatter

    return str(HtmlFormatter(cssclass="highlight").get_style_defs(".highlight"))


def _source_file(path: Path, name: str) -> SourceFile:
    if path.is_symlink():
        return SourceFile(name, 0, Markup("<p class='note'>{}</p>").format("a link, not shown"))
    data, left_out = _read_capped(path, SUBMISSION_LIMIT_BYTES)
    size = len(data) + left_out
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        note = f"binary file, {size} bytes, not shown"
        return SourceFile(name, size, Markup("<p class='note'>{}</p>").format(note))
    html = highlight(name, text)
    if left_out:
        marker = f"[... {left_out} more bytes not shown]"
        html += Markup("<p class='note'>{}</p>").format(marker)
    return SourceFile(name, size, html)


def _entry(event: Any) -> TranscriptEntry:
    if not isinstance(event, dict):
        return TranscriptEntry("", json.dumps(event, indent=1))
    label = next((str(event[k]) for k in _LABEL_KEYS if isinstance(event.get(k), str)), "")
    for key in _TEXT_KEYS:
        value = event.get(key)
        if isinstance(value, str):
            return TranscriptEntry(label, value)
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            # Content blocks (text, tool calls, tool results) as chat APIs write them.
            parts = [
                b["text"] if isinstance(b.get("text"), str) else json.dumps(b, indent=1)
                for b in value
            ]
            return TranscriptEntry(label, "\n\n".join(parts))
    return TranscriptEntry(label, json.dumps(event, indent=1, ensure_ascii=False))


def _transcript(path: Path) -> Transcript:
    if path.is_symlink():
        return Transcript(path.name, [TranscriptEntry("", "a link, not shown")])
    data, left_out = _read_capped(path, TRANSCRIPT_LIMIT_BYTES)
    text = data.decode("utf-8", errors="replace")
    if not path.name.endswith((".jsonl", ".ndjson")):
        return Transcript(path.name, [TranscriptEntry("", text)], left_out)
    entries: list[TranscriptEntry] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            entries.append(_entry(json.loads(line)))
        except json.JSONDecodeError:
            # A line cut by the size limit or by a killed agent: shown as it is.
            entries.append(TranscriptEntry("", line))
    return Transcript(path.name, entries, left_out)


def attempt_anchor(attempt_id: str) -> str:
    """The HTML id of an attempt's section."""
    return "attempt-" + "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in attempt_id)


def attempt_view(store: RunStore, record: AttemptRecord) -> AttemptView:
    """Read what the report shows of one attempt from its folder (absent files are no error)."""
    folder = store.attempt_dir(record.attempt_id)
    submission: list[SourceFile] = []
    transcripts: list[Transcript] = []
    others: list[tuple[str, int]] = []
    if folder.is_dir():
        sub = folder / "submission"
        if sub.is_dir() and not sub.is_symlink():
            for path in sorted(p for p in sub.rglob("*") if p.is_file() or p.is_symlink()):
                submission.append(_source_file(path, path.relative_to(sub).as_posix()))
        for path in sorted(folder.iterdir()):
            if path == sub:
                continue
            if path.name.startswith("transcript") and (path.is_file() or path.is_symlink()):
                transcripts.append(_transcript(path))
            elif path.is_file() and not path.is_symlink():
                others.append((path.name, path.stat().st_size))
    return AttemptView(
        record=record,
        anchor=attempt_anchor(record.attempt_id),
        submission=submission,
        transcripts=transcripts,
        other_files=others,
    )
