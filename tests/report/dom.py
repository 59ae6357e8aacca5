"""Reading the numbers a report page carries back out of its HTML."""

from __future__ import annotations

from dataclasses import dataclass
from html.parser import HTMLParser

from gauntlet.score import Unit

_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source"}


@dataclass(frozen=True)
class Cell:
    """An element that carries a number, with the data-* context of its ancestors."""

    context: dict[str, str]
    """data-* attributes of the element and its ancestors (nearest wins), plus `table`: the
    class of the enclosing table."""
    text: str


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, dict[str, str]]] = []
        self.open_cells: list[tuple[int, dict[str, str], list[str]]] = []
        self.cells: list[Cell] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _VOID:
            return
        own = {k: v or "" for k, v in attrs}
        context: dict[str, str] = {}
        for _, outer in self.stack:
            context.update(outer)
        data = {k: v for k, v in own.items() if k.startswith("data-")}
        if tag == "table":
            data["table"] = own.get("class", "")
        context.update(data)
        self.stack.append((tag, data))
        if any(k in own for k in ("data-value", "data-low", "data-metric")):
            self.open_cells.append((len(self.stack), context, []))

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID:
            return
        while self.stack:
            depth = len(self.stack)
            if self.open_cells and self.open_cells[-1][0] == depth:
                _, context, text = self.open_cells.pop()
                self.cells.append(Cell(context, " ".join("".join(text).split())))
            open_tag, _ = self.stack.pop()
            if open_tag == tag:
                break

    def handle_data(self, data: str) -> None:
        for _, _, text in self.open_cells:
            text.append(data)


def number_cells(html: str) -> list[Cell]:
    """Every element of the page carrying data-value, data-low or data-metric."""
    collector = _Collector()
    collector.feed(html)
    collector.close()
    return collector.cells


def find(cells: list[Cell], **wanted: str) -> list[Cell]:
    """Cells whose context has every wanted key (`table`, or a data-* name without `data-`)."""
    keys = {(k if k == "table" else "data-" + k.replace("_", "-")): v for k, v in wanted.items()}
    return [c for c in cells if all(c.context.get(k) == v for k, v in keys.items())]


def value_cell(cells: list[Cell], **wanted: str) -> Cell:
    """The one cell matching `wanted` that carries a value (`data-value`)."""
    (cell,) = [c for c in find(cells, **wanted) if "data-value" in c.context]
    return cell


class _SearchTables(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[list[list[str]]] = []
        self.in_table = False
        self.cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table" and dict(attrs).get("class") == "search":
            self.tables.append([])
            self.in_table = True
        elif tag == "tr" and self.in_table:
            self.tables[-1].append([])
        elif tag == "td" and self.in_table:
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self.cell is not None:
            self.tables[-1][-1].append(" ".join("".join(self.cell).split()))
            self.cell = None
        elif tag == "table":
            self.in_table = False

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


def search_tables(html: str) -> list[list[list[str]]]:
    """The body rows of each search agent's progress table (`table.search`), as cell texts."""
    parser = _SearchTables()
    parser.feed(html)
    parser.close()
    return [[row for row in table if row] for table in parser.tables]  # (the header: th only)


def displayed(text: str, unit: Unit) -> float:
    """The number a formatted value shows (`62.5%` -> 0.625, `1.23×` -> 1.23)."""
    cleaned = text.split("[")[0].strip()
    for mark in ("%", "×", " s", "$", ","):
        cleaned = cleaned.replace(mark, "")
    number = float(cleaned)
    return number / 100 if unit in ("rate", "fraction") else number


#: Half of the last displayed digit, per unit: a shown value is within this of the true one.
DISPLAY_TOLERANCE: dict[str, float] = {
    "rate": 0.0005,
    "fraction": 0.0005,
    "speedup": 0.005,
    "ratio": 0.005,
    "seconds": 0.05,
    "count": 0.05,
    "usd": 0.005,
}
