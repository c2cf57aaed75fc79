"""A list's incremental index: kept up to date one object at a time, it equals a fresh one."""

from __future__ import annotations

import typing as t

from hypothesis import given, settings
from hypothesis import strategies as st

from flask_krm.events import Deleted, Identity, Upsert
from flask_krm.scope import parse_scope
from flask_krm.store import LiveResourceStore
from flask_krm.ui.list_query import ListQuery
from flask_krm.ui.list_view import ListIndex
from flask_krm.ui.page import ListSpec, parse_columns

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
