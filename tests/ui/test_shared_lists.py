"""Lists of sessions sharing one server truth: one index per view, the same rows for every clean
session, and an index of its own for a session that removed an object before the server did."""

from __future__ import annotations

import pytest
from flask import Flask
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.ui.conftest import CONFIGMAPS, configmap
from tests.ui.test_list_updates import _STEPS, _apply, _rows_of


def _component(sort: str | None) -> tuple[object, object]:
    from flask_krm.scope import parse_scope
    from flask_krm.ui.list_query import ListQuery
    from flask_krm.ui.page import ListSpec, Page, make_component, parse_columns

    scope = parse_scope(CONFIGMAPS)
    columns = parse_columns(["/metadata/name", ("Size", "/data/size")], scope)
    component = make_component(ListSpec(scope, "krm-full/v1", columns, page_size=4, url_key="cm"))
    page = Page("p")
    page.queries[component.id] = ListQuery("cm", "", sort and sort.lstrip("-"), bool(sort and sort[0] == "-"), 2)
    return component, page


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(_STEPS, min_size=1, max_size=6), sort=st.sampled_from([None, "size", "-size"]))
def test_every_session_of_a_truth_shows_exactly_the_new_page_from_one_shared_index(
    app: Flask, steps: list[list[tuple[str, int, str]]], sort: str | None
) -> None:
    from flask_krm.events import Deleted, Identity, Reset, Synced, Upsert
    from flask_krm.runtime import runtime
    from flask_krm.store.truth import ServerTruth
    from flask_krm.ui.list_updates import ListUpdates, paint_list, rows_id
    from flask_krm.ui.render import StreamStatus, list_index, render_list_body
    from flask_krm.ui.state import new_store

    component, page = _component(sort)
    live = StreamStatus("live")
    truth = ServerTruth()
    truth.apply(Reset({"target": "demo"}, "krm-full/v1"))
    for n in range(0, 14, 2):
        truth.apply(Upsert("added", configmap(f"cm-{n:02d}", {"size": "m"}, rv="1")))
    truth.apply(Synced())
    stores = [new_store(truth=truth) for _ in range(3)]
    changed: list[set[str]] = [set() for _ in stores]
    for store, seen in zip(stores, changed, strict=True):
        store.subscribe(seen.update)
    version = 1
    with app.test_request_context():
        cache = runtime(app).cache
        painted = [paint_list(component, store, live, cache, page) for store in stores]  # type: ignore[arg-type]
        indexes = {id(list_index(component, store, page)) for store in stores}  # type: ignore[arg-type]
        assert len(indexes) == 1  # one index of this view for every session
        bodies = [_rows_of(body) for body, _ in painted]
        updates = [ListUpdates(component, page, cache, shown) for _, shown in painted]  # type: ignore[arg-type]
        for batch in steps:
            for op, n, size in batch:
                version += 1
                name = f"cm-{n:02d}"
                if op == "put":
                    truth.apply(Upsert("modified", configmap(name, {"size": size}, rv=str(version))))
                else:
                    truth.apply(Deleted(Identity(f"uid-{name}", "v1", "ConfigMap", name, "app")))
            expected = None
            for at, store in enumerate(stores):
                uids = set(changed[at])
                changed[at].clear()
                bodies[at] = _apply(bodies[at], updates[at].changes(store, live, uids), rows_id(component))
                if expected is None:
                    index = list_index(component, store, page)  # type: ignore[arg-type]
                    expected = _rows_of(render_list_body(component, store, live, cache, page, index))  # type: ignore[arg-type]
                assert [(e.id, e.markup) for e in bodies[at]] == [(e.id, e.markup) for e in expected]


def test_a_session_that_removed_an_object_reads_its_own_index_until_the_server_deletes_it(app: Flask) -> None:
    from flask_krm.events import Deleted, Identity, Upsert
    from flask_krm.runtime import runtime
    from flask_krm.store.truth import ServerTruth
    from flask_krm.ui.list_updates import ListUpdates, paint_list
    from flask_krm.ui.render import StreamStatus, list_index
    from flask_krm.ui.state import new_store

    component, page = _component(None)
    page.queries[component.id] = page.queries[component.id].__class__("cm", "", None, False, 1)
    live = StreamStatus("live")
    truth = ServerTruth()
    for n in range(3):
        truth.apply(Upsert("added", configmap(f"cm-{n:02d}", {"size": "m"}, rv="1")))
    mine, theirs = new_store(truth=truth), new_store(truth=truth)
    with app.test_request_context():
        cache = runtime(app).cache
        _, shown = paint_list(component, mine, live, cache, page)  # type: ignore[arg-type]
        updates = ListUpdates(component, page, cache, shown)  # type: ignore[arg-type]
        assert mine.remove_resource("uid-cm-01")
        parts = updates.changes(mine, live, {"uid-cm-01"})
        assert any('hx-swap="delete"' in part for part in parts)
        assert updates.index is not None and not updates.index.following
        assert [row.name for row in updates.index.window().rows] == ["cm-00", "cm-02"]
        shared = list_index(component, theirs, page)  # type: ignore[arg-type]
        assert shared.following and [row.name for row in shared.window().rows] == ["cm-00", "cm-01", "cm-02"]
        truth.apply(Deleted(Identity("uid-cm-01", "v1", "ConfigMap", "cm-01", "app")))
        assert updates.changes(mine, live, {"uid-cm-01"}) == []
        assert updates.index.following and updates.index is list_index(component, theirs, page)  # type: ignore[arg-type]


@pytest.mark.parametrize("count", [200])
def test_a_clean_session_holds_nothing_per_object(app: Flask, count: int) -> None:
    from flask_krm.events import Upsert
    from flask_krm.store.truth import ServerTruth
    from flask_krm.ui.state import new_store

    truth = ServerTruth()
    for n in range(count):
        truth.apply(Upsert("added", configmap(f"cm-{n:03d}", {"size": "m"}, rv="1")))
    store = new_store(truth=truth)
    assert len(store.uids()) == count
    assert store.edited_uids() == [] and not store.diverged()
