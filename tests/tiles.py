"""Read the metric tiles (:mod:`ui.tiles`) a page drew, as AppTest read ``st.metric``: ``.label``, ``.value``,
``.delta`` (the grey line under the value) and ``.help``."""

from __future__ import annotations

from dataclasses import dataclass
from html.parser import HTMLParser


@dataclass(frozen=True)
class ShownTile:
    """One tile as drawn (its escaped attributes decoded)."""

    label: str
    value: str
    delta: str | None
    help: str


class _TileParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tiles: list[ShownTile] = []

    def handle_starttag(self, tag, attrs) -> None:
        found = dict(attrs)
        if "data-tile" in found:
            self.tiles.append(ShownTile(found["data-label"], found["data-value"], found.get("data-note"),
                                        found.get("data-help", "")))


def tiles_in(body: str) -> list[ShownTile]:
    """The tiles of one ``st.html`` body."""
    parser = _TileParser()
    parser.feed(body)
    return parser.tiles


def metric_tiles(at) -> list[ShownTile]:
    """Every tile an AppTest run (or one of its blocks) drew, in page order."""
    return [tile for element in at.get("html") for tile in tiles_in(element.proto.body)]
