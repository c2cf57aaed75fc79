"""Table cells, sort order, a list's URL parameters and its incremental index, without a server."""

from __future__ import annotations

import typing as t

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flask_krm.events import Deleted, Identity, Upsert
from flask_krm.scope import parse_scope
from flask_krm.store import LiveResourceStore
from flask_krm.ui.cells import MAX_CHIPS, MAX_TEXT, Cell, cell_of, sort_value
from flask_krm.ui.list_query import InvalidListQuery, ListQuery, column_keys, parse_list_query
from flask_krm.ui.list_view import ListIndex
from flask_krm.ui.page import ListSpec, parse_columns


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


def test_column_keys_are_readable_and_unique() -> None:
    assert column_keys(["Name", "Ready replicas", "Name", "!!"]) == ("name", "ready-replicas", "name-3", "column-4")


def test_a_query_reads_only_its_own_parameters() -> None:
    args = [("cm.q", " web "), ("cm.sort", "-size"), ("cm.page", "3"), ("other.page", "2"), ("x", "1"), ("cm.q", "no")]
    query = parse_list_query("cm", args, "/p", ("name", "size"))
    assert query == ListQuery("cm", "web", "size", True, 3, "/p", (("other.page", "2"), ("x", "1")))
    assert query.href(page=1) == "/p?other.page=2&x=1&cm.q=web&cm.sort=-size"
    assert query.sort_href("size") == "/p?other.page=2&x=1&cm.q=web&cm.sort=size"
    assert query.sort_href("name") == "/p?other.page=2&x=1&cm.q=web&cm.sort=name"
    assert ListQuery("cm", path="/p").href() == "/p"


@pytest.mark.parametrize(
    ("raw", "page"), [("0", 1), ("-1", 1), ("2.5", 1), ("", 1), ("٣", 1), ("9" * 40, 10**9), ("7", 7)]
)
def test_page_numbers_are_clamped(raw: str, page: int) -> None:
    assert parse_list_query("cm", [("cm.page", raw)], "/", ("name",)).page == page


def test_unknown_columns_and_long_filters_are_refused_with_a_400() -> None:
    with pytest.raises(InvalidListQuery) as refused:
        parse_list_query("cm", [("cm.sort", "-colour")], "/", ("name", "size"))
    assert refused.value.code == 400 and "use one of name, size" in str(refused.value.description)
    with pytest.raises(InvalidListQuery, match="longer than 200"):
        parse_list_query("cm", [("cm.q", "x" * 201)], "/", ("name",))


# ------------------------------------------------------------------ the incremental index --

_NAMES = st.sampled_from([f"cm-{n}" for n in range(12)])
_SIZES = st.one_of(st.none(), st.integers(-3, 30), st.sampled_from(["web", "Web-2", "web-10", "db", ""]))
_OPS = st.lists(st.tuples(st.sampled_from(["put", "delete"]), _NAMES, _SIZES), max_size=40)


def _object(name: str, size: t.Any) -> dict[str, t.Any]:
    spec = {} if size is None else {"size": size}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "app", "uid": f"uid-{name}", "labels": {"name": name}},
        "spec": spec,
    }


@settings(max_examples=150, deadline=None)
@given(
    ops=_OPS,
    sort=st.sampled_from([None, "name", "size", "labels"]),
    descending=st.booleans(),
    text=st.sampled_from(["", "web", "cm-1", "name=cm-2", "nothing"]),
    page=st.integers(1, 5),
)
def test_the_index_kept_up_to_date_one_object_at_a_time_equals_a_fresh_one(
    ops: list[tuple[str, str, t.Any]], sort: str | None, descending: bool, text: str, page: int
) -> None:
    scope = parse_scope("target=demo&version=v1&resource=configmaps&namespace=app")
    columns = parse_columns(["/metadata/name", ("Size", "/spec/size"), ("Labels", "/metadata/labels")], scope)
    spec = ListSpec(scope, "krm-full/v1", columns)
    query = ListQuery("cm", text, sort, descending and sort is not None, page)
    store = LiveResourceStore()
    live = ListIndex(spec, query, 3)
    live.rebuild(store)
    for version, (op, name, size) in enumerate(ops, start=1):
        if op == "put":
            obj = _object(name, size)
            obj["metadata"]["resourceVersion"] = str(version)
            changed = store.apply(Upsert("modified", obj))
        else:
            changed = store.apply(Deleted(Identity(f"uid-{name}", "v1", "ConfigMap", name, "app")))
        live.update(store, changed)
        fresh = ListIndex(spec, query, 3)
        fresh.rebuild(store)
        assert live.window() == fresh.window()
    shown = live.window()
    everything = ListIndex(spec, ListQuery("cm", text, sort, descending and sort is not None, 1), 10_000)
    everything.rebuild(store)
    rows = everything.window().rows
    assert [row.key for row in rows] == sorted(row.key for row in rows)
    assert all(all(word in row.search for word in text.casefold().split()) for row in rows)
    assert shown.rows == rows[(shown.page - 1) * 3 : shown.page * 3]
    assert shown.total == len(store.uids()) and shown.matching == len(rows)
