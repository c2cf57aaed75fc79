"""Live updates of one list on one page, row by row (:mod:`flask_krm.ui.list_updates`): the
partials of each change, applied as htmx applies them, show exactly the page rendered anew."""

from __future__ import annotations

import re

from flask import Flask
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.ui.conftest import CONFIGMAPS, configmap


class _Element:
    def __init__(self, element_id: str, markup: str) -> None:
        self.id, self.markup = element_id, markup


def _rows_of(markup: str) -> list[_Element]:
    return [_Element(m.group(1), m.group(0)) for m in re.finditer(r'<tr id="([^"]+)".*?</tr>', markup, re.S)]


def _apply(tbody: list[_Element], message: list[str], rows_id: str) -> list[_Element]:
    """``message``'s partials applied to a table body the way htmx 4 does: every target is looked
    up before any swap runs, then the swaps run in order."""
    found = [
        re.fullmatch(r'<hx-partial hx-target="#([^"]+)" hx-swap="([^"]+)">(.*)</hx-partial>', p, re.S) for p in message
    ]
    tasks = []
    for match in found:
        assert match is not None
        target, swap, content = match.groups()
        if target.endswith("-body"):
            return _rows_of(content)
        ref = next((e for e in tbody if e.id == target), None) if target != rows_id else "tbody"
        tasks.append((ref, swap, content))
    for ref, swap, content in tasks:
        if ref is None:
            continue
        if swap == "beforeend":
            tbody.extend(_rows_of(content))
        elif ref not in tbody:
            continue  # a detached element: htmx swaps nothing
        elif swap == "delete":
            tbody.remove(ref)
        elif swap == "beforebegin":
            at = tbody.index(ref)
            tbody[at:at] = _rows_of(content)
        elif swap == "outerMorph" and ref != "tbody":
            assert isinstance(ref, _Element) and (new := _rows_of(content)) and new[0].id == ref.id
            ref.markup = new[0].markup
    return tbody


_STEPS = st.lists(
    st.tuples(st.sampled_from(["put", "delete"]), st.integers(0, 14), st.sampled_from(["a", "b", "c", "z"])),
    min_size=1,
    max_size=12,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(_STEPS, min_size=1, max_size=6), sort=st.sampled_from([None, "size", "-size"]))
def test_row_updates_applied_in_order_show_exactly_the_new_page(
    app: Flask, steps: list[list[tuple[str, int, str]]], sort: str | None
) -> None:
    from flask_krm.events import Deleted, Identity, Upsert
    from flask_krm.runtime import runtime
    from flask_krm.scope import parse_scope
    from flask_krm.ui.list_query import ListQuery
    from flask_krm.ui.list_updates import ListUpdates, paint_list, rows_id
    from flask_krm.ui.page import ListSpec, Page, make_component, parse_columns
    from flask_krm.ui.render import StreamStatus, list_index, render_list_body
    from flask_krm.ui.state import new_store

    scope = parse_scope(CONFIGMAPS)
    columns = parse_columns(["/metadata/name", ("Size", "/data/size")], scope)
    component = make_component(ListSpec(scope, "krm-full/v1", columns, page_size=4, url_key="cm"))
    page = Page("p")
    page.queries[component.id] = ListQuery("cm", "", sort and sort.lstrip("-"), bool(sort and sort[0] == "-"), 2)
    live = StreamStatus("live")
    store = new_store()
    for n in range(0, 14, 2):
        store.apply(Upsert("added", configmap(f"cm-{n:02d}", {"size": "m"}, rv="1")))
    version = 1
    with app.test_request_context():
        cache = runtime(app).cache
        body, shown = paint_list(component, store, live, cache, page)
        tbody = _rows_of(body)
        updates = ListUpdates(component, page, cache, shown)
        for batch in steps:
            changed: set[str] = set()
            for op, n, size in batch:
                version += 1
                name = f"cm-{n:02d}"
                if op == "put":
                    changed |= store.apply(Upsert("modified", configmap(name, {"size": size}, rv=str(version))))
                else:
                    changed |= store.apply(Deleted(Identity(f"uid-{name}", "v1", "ConfigMap", name, "app")))
            tbody = _apply(tbody, updates.changes(store, live, changed), rows_id(component))
            expected = _rows_of(
                render_list_body(component, store, live, cache, page, list_index(component, store, page))
            )
            assert [(e.id, e.markup) for e in tbody] == [(e.id, e.markup) for e in expected]
