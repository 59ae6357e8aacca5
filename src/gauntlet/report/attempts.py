"""What the report shows of one attempt: its submission (highlighted), verdict and transcript.

Attempt folders hold files an untrusted agent wrote. They are read without following symbolic
links (a link could point anywhere on the machine that renders the report), cut at a size limit
with an explicit marker, and always escaped before they reach the page.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from markupsafe import Markup

from gauntlet.agents.autotune import progress_rows
from gauntlet.agents.evolve_log import GenerationRow, generation_rows
from gauntlet.store import AttemptRecord, RunStore

if TYPE_CHECKING:
    from pygments.lexer import Lexer

#: Largest part of one submission file shown (the judge's own limit per file is 200 kB).
SUBMISSION_LIMIT_BYTES = 200_000
#: Largest part of one transcript shown, in characters of its rendered lines.
TRANSCRIPT_LIMIT_CHARS = 300_000


@dataclass(frozen=True)
class SourceFile:
    """One submission file, ready to show."""

    name: str
    size_bytes: int
    html: Markup
    """Highlighted source, or an escaped note when it cannot be shown."""


@dataclass(frozen=True)
class Transcript:
    """One transcript file of an attempt, in readable lines."""

    name: str
    lines: list[str]
    lines_left_out: int = 0
    """Lines not shown past `TRANSCRIPT_LIMIT_CHARS`."""


@dataclass(frozen=True)
class AttemptView:
    """An attempt as the report shows it."""

    record: AttemptRecord
    anchor: str
    submission: list[SourceFile] = field(default_factory=list)
    transcripts: list[Transcript] = field(default_factory=list)
    other_files: list[tuple[str, int]] = field(default_factory=list)
    """Other files of the attempt folder (judge log, profiles): name and size."""
    search: list[GenerationRow] = field(default_factory=list)
    """A search agent's progress per generation (`evolve`; `autotune`: one row per judged
    point); empty for other agents."""


def _search_rows(record: AttemptRecord, folder: Path) -> list[GenerationRow]:
    if not folder.is_dir():
        return []
    if record.agent.partition(":")[0] == "autotune":
        return progress_rows(folder)
    return generation_rows(folder)


def _read_capped(path: Path, limit_bytes: int) -> tuple[bytes, int]:
    with path.open("rb") as handle:
        data = handle.read(limit_bytes + 1)
    size = path.stat().st_size
    if len(data) > limit_bytes:
        return data[:limit_bytes], size - limit_bytes
    return data, 0


@functools.cache
def _lexer(suffix: str) -> Lexer:
    # Lexer lookup scans every lexer Pygments knows; one lookup per file type is enough.
    from pygments.lexers import TextLexer, get_lexer_for_filename
    from pygments.util import ClassNotFound

    try:
        return get_lexer_for_filename("file" + suffix, stripnl=False)
    except ClassNotFound:
        return TextLexer(stripnl=False)


def highlight(name: str, text: str) -> Markup:
    """Source code as highlighted HTML, the lexer chosen by file name."""
    from pygments import highlight as pygmentize
    from pygments.formatters import HtmlFormatter

    lexer = _lexer(PurePosixPath(name).suffix)
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


def _transcript(path: Path) -> Transcript:
    from gauntlet.agents.transcript import render_transcript

    if path.is_symlink():
        return Transcript(path.name, ["a link, not shown"])
    # One renderer for every agent's format: toolcall events, CLI streams, plain text.
    rendered = render_transcript(path)
    shown: list[str] = []
    total_chars = 0
    for line in rendered:
        total_chars += len(line)
        if total_chars > TRANSCRIPT_LIMIT_CHARS:
            break
        shown.append(line)
    return Transcript(path.name, shown, len(rendered) - len(shown))


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
        search=_search_rows(record, folder),
    )
