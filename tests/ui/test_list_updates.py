"""Live updates of one list on one page, row by row (:mod:`flask_krm.ui.list_updates`): the
partials of each change, applied as htmx applies them, show exactly the page rendered anew."""

from __future__ import annotations

import re
import typing as t
from collections.abc import Iterator

import pytest
from flask import Flask
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flask_krm.events import Deleted, Identity, Upsert
from flask_krm.ui.list_updates import rows_id
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


class Followed:
    """One list of ``page_size`` rows, painted on a page and followed by :class:`ListUpdates`."""

    def __init__(self, app: Flask, count: int, page_size: int = 4) -> None:
        from flask_krm.runtime import runtime
        from flask_krm.scope import parse_scope
        from flask_krm.ui.list_updates import ListUpdates, paint_list
        from flask_krm.ui.page import ListSpec, Page, make_component, parse_columns
        from flask_krm.ui.render import StreamStatus
        from flask_krm.ui.state import new_store

        scope = parse_scope(CONFIGMAPS)
        columns = parse_columns(["/metadata/name", ("Size", "/data/size")], scope)
        self.component = make_component(ListSpec(scope, "krm-full/v1", columns, page_size=page_size))
        self.page = Page("p")
        self.live = StreamStatus("live")
        self.store = new_store()
        self.version = 1
        for n in range(count):
            self.store.apply(Upsert("added", configmap(f"cm-{n:02d}", {"size": "1"}, rv="1")))
        self.context = app.test_request_context()
        self.context.push()
        cache = runtime(app).cache
        _, shown = paint_list(self.component, self.store, self.live, cache, self.page)
        self.updates = ListUpdates(self.component, self.page, cache, shown)

    def put(self, n: int, size: str = "2") -> set[str]:
        self.version += 1
        return set(self.store.apply(Upsert("modified", configmap(f"cm-{n:02d}", {"size": size}, rv=str(self.version)))))

    def delete(self, n: int) -> set[str]:
        name = f"cm-{n:02d}"
        return set(self.store.apply(Deleted(Identity(f"uid-{name}", "v1", "ConfigMap", name, "app"))))

    def changes(self, uids: set[str] | None, status: t.Any = None) -> list[tuple[str, str]]:
        """(target, swap) of every partial sent for ``uids``."""
        sent = self.updates.changes(self.store, status or self.live, uids)
        return [re.findall(r'<hx-partial hx-target="#([^"]+)" hx-swap="([^"]+)"', part)[0] for part in sent]

    def row(self, n: int) -> str:
        from flask_krm.ui.render import row_id

        return row_id(self.component, f"uid-cm-{n:02d}")

    def close(self) -> None:
        self.context.pop()


@pytest.fixture
def followed(app: Flask) -> Iterator[Followed]:
    shown = Followed(app, 6)
    yield shown
    shown.close()


def test_a_change_to_a_shown_row_sends_that_row_only(followed: Followed) -> None:
    assert followed.changes(followed.put(1)) == [(followed.row(1), "outerMorph")]
    assert followed.changes(set()) == [], "nothing changed, nothing sent"
    assert followed.changes(followed.put(1)) == [], "the same row again: the browser shows it already"


def test_a_change_outside_the_page_sends_nothing_and_an_arrival_there_the_count(followed: Followed) -> None:
    assert followed.changes(followed.put(5)) == [], "page 1 shows cm-00 to cm-03"
    followed.version += 1
    added = set(followed.store.apply(Upsert("added", configmap("cm-09", {"size": "1"}, rv=str(followed.version)))))
    sent = followed.changes(added)
    assert (f"{followed.component.id}-count", "outerMorph") in sent
    assert not [target for target, _ in sent if target.startswith(followed.component.id + "-r")]


def test_a_deleted_row_goes_first_and_the_next_one_is_appended(followed: Followed) -> None:
    sent = followed.changes(followed.delete(2))
    assert sent[0] == (followed.row(2), "delete")
    assert (rows_id(followed.component), "beforeend") in sent, "cm-04 moves up onto the page's end"
    assert (f"{followed.component.id}-count", "outerMorph") in sent


def test_a_new_stream_state_an_emptied_list_or_a_resync_sends_the_whole_body(followed: Followed) -> None:
    from flask_krm.ui.render import StreamStatus

    body = followed.component.body_id
    assert [target for target, _ in followed.changes(set(), StreamStatus("retrying", "down"))] == [body]
    assert [target for target, _ in followed.changes(set())] == [body], "live again"
    four = followed.put(0, "9") | followed.put(1, "9") | followed.put(2, "9") | followed.put(3, "9")
    assert len(followed.changes(four)) == 4, "four changed rows of a page of four: each row"
    gone: set[str] = set()
    for n in range(4):
        gone |= followed.delete(n)
    assert [target for target, _ in followed.changes(gone)] == [body], "more rows moved than half a page"
    assert [target for target, _ in followed.changes(followed.delete(4) | followed.delete(5))] == [body], "emptied"


def test_unknown_changes_are_read_again_and_only_differences_sent(followed: Followed) -> None:
    followed.put(0)
    assert followed.changes(None) == [(followed.row(0), "outerMorph")]
