"""Table cells and their sort order."""

from __future__ import annotations

import typing as t

from flask_krm.ui.cells import MAX_CHIPS, MAX_TEXT, Cell, cell_of, sort_value


def test_a_map_is_key_value_chips_in_key_order_with_the_rest_counted() -> None:
    assert cell_of({"tier": "front", "app": "web"}) == Cell(chips=("app=web", "tier=front"))
    big = cell_of({f"k{n:02d}": n for n in range(MAX_CHIPS + 3)})
    assert len(big.chips) == MAX_CHIPS and big.more == 3
    assert cell_of({"nested": {"a": 1}, "list": [1, 2]}).chips == ("list=2 items", "nested=1 field")


def test_lists_are_compact_and_never_json() -> None:
    assert cell_of(["a", "b", 3]) == Cell(text="a, b, 3")
    assert cell_of([{"name": "web", "image": "nginx"}, {"name": "sidecar"}]) == Cell(text="web, sidecar")
    assert cell_of([{"type": "Ready"}, {"type": "Available"}]) == Cell(text="2 items")
    assert cell_of(list(range(8))) == Cell(text="0, 1, 2, 3, 4", more=3)


def test_scalars_and_long_text() -> None:
    assert cell_of(3) == Cell(text="3") and cell_of(True) == Cell(text="true") and cell_of(None).empty
    long = cell_of("x" * 10_000)
    assert len(long.text) == MAX_TEXT and long.text.endswith("…")
    assert cell_of("two\nlines") == Cell(text="two lines")


def _order(values: list[t.Any], *, descending: bool = False) -> list[t.Any]:
    return sorted(values, key=lambda v: sort_value(v, cell_of(v), descending=descending))


def test_numbers_sort_by_value_text_naturally_and_empty_cells_last_both_ways() -> None:
    assert _order([10, None, 2, "pod-10", "pod-2", "Alpha"]) == [2, 10, "Alpha", "pod-2", "pod-10", None]
    assert _order([10, None, 2, "pod-10", "pod-2"], descending=True) == [10, 2, "pod-10", "pod-2", None]


# ------------------------------------------------------------------ the incremental index --
