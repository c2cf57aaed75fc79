"""Rendering live components (:mod:`flask_krm.ui.render`): the shared fragment cache, which object
an editor on a page edits, and the model its body is rendered from."""

from __future__ import annotations

import typing as t

import pytest
from flask import Flask
from markupsafe import Markup

from flask_krm.scope import parse_scope
from flask_krm.store import EditPolicy
from flask_krm.store.operations import SetField
from flask_krm.ui.page import Component, EditorSpec, ListSpec, Page, make_component, parse_columns
from flask_krm.ui.render import (
    FragmentCache,
    StreamStatus,
    content_digest,
    edited_object,
    model_of_editor,
    object_state,
    render_body,
    row_id,
)
from flask_krm.ui.state import new_store
from tests.store.objects import added, deleted, store_with
from tests.ui.conftest import CONFIGMAPS, configmap

LIVE: t.Final = StreamStatus("live")


def editor(policy: EditPolicy | None = None, name: str = "demo") -> Component:
    scope = parse_scope(CONFIGMAPS + f"&name={name}")
    return make_component(
        EditorSpec(scope, "krm-full/v1", policy or EditPolicy.only(("data",), ("metadata", "labels")))
    )


def test_only_a_live_stream_is_writable() -> None:
    states: tuple[t.Any, ...] = ("connecting", "syncing", "live", "retrying", "terminal")
    assert [s for s in states if StreamStatus(s).writable] == ["live"]


def test_the_fragment_cache_renders_once_per_key_and_forgets_the_least_recently_used() -> None:
    cache = FragmentCache(capacity=2)
    rendered: list[str] = []

    def render(text: str) -> t.Callable[[], Markup]:
        return lambda: rendered.append(text) or Markup(text)

    assert cache.get_or_render("a", render("A")) == "A"
    assert cache.get_or_render("a", render("other")) == "A", "a hit does not render"
    cache.get_or_render("b", render("B"))
    cache.get_or_render("a", render("A"))  # a is now the most recently used
    cache.get_or_render("c", render("C"))  # b goes
    assert len(cache) == 2 and (cache.hits, cache.misses) == (2, 3)
    assert cache.get_or_render("a", render("A again")) == "A"
    assert cache.get_or_render("b", render("B again")) == "B again"
    assert rendered == ["A", "B", "C", "B again"]


def test_a_content_digest_ignores_key_order_only() -> None:
    assert content_digest({"a": 1, "b": [1, 2]}) == content_digest({"b": [1, 2], "a": 1})
    assert content_digest({"a": 1, "b": [1, 2]}) != content_digest({"a": 1, "b": [2, 1]})
    assert content_digest({"a": 1}) != content_digest({"a": "1"})


def test_row_ids_are_per_list_and_object() -> None:
    one = editor()
    other = editor(name="other")
    assert row_id(one, "uid-a") == row_id(one, "uid-a")
    assert row_id(one, "uid-a") != row_id(one, "uid-b")
    assert row_id(one, "uid-a") != row_id(other, "uid-a")
    assert row_id(one, "uid-a").startswith(one.id + "-r")


def test_an_editor_without_a_page_edits_the_newest_object_of_its_name() -> None:
    store = store_with(configmap("demo", {"a": "1"}, uid="u-1"), configmap("other", {}))
    assert edited_object(store, editor()).uid == "u-1"
    assert edited_object(store, editor(name="absent")).uid is None


def test_a_page_stays_with_its_object_while_it_holds_unsaved_changes() -> None:
    store = store_with(configmap("demo", {"a": "1"}, uid="u-1"), store=new_store(60.0))
    page = Page("p")
    component = editor()
    assert edited_object(store, component, page).uid == "u-1" and page.bound[component.id] == "u-1"
    store.perform("u-1", SetField(("data", "a"), "mine"))
    store.apply(deleted(configmap("demo", {"a": "1"}, uid="u-1")))
    gone = edited_object(store, component, page)
    assert gone.uid is None and gone.removed is not None and gone.removed.draft["data"]["a"] == "mine"
    assert gone.replacement is None
    store.apply(added(configmap("demo", {"a": "new"}, uid="u-2")))
    replaced = edited_object(store, component, page)
    assert replaced.uid is None and replaced.removed is not None and replaced.replacement == "u-2"
    assert edited_object(store, component, Page("reloaded")).uid == "u-2", "a new page edits the replacement"


def test_a_page_without_unsaved_changes_follows_the_name() -> None:
    store = store_with(configmap("demo", {"a": "1"}, uid="u-1"), store=new_store(60.0))
    page = Page("p")
    component = editor()
    edited_object(store, component, page)
    store.apply(deleted(configmap("demo", {"a": "1"}, uid="u-1")))
    assert edited_object(store, component, page).uid is None and component.id not in page.bound
    store.apply(added(configmap("demo", {"a": "new"}, uid="u-2")))
    assert edited_object(store, component, page).uid == "u-2"


def test_a_page_opened_after_the_deletion_offers_the_sessions_recovery_copy() -> None:
    store = store_with(configmap("demo", {"a": "1"}, uid="u-1"), store=new_store(60.0))
    store.perform("u-1", SetField(("data", "a"), "mine"))
    store.apply(deleted(configmap("demo", {"a": "1"}, uid="u-1")))
    page = Page("reloaded")
    component = editor()
    found = edited_object(store, component, page)
    assert found.removed is not None and found.removed.identity.uid == "u-1"
    assert page.bound[component.id] == "u-1"


def test_the_editors_policy_makes_fields_read_only() -> None:
    store = store_with(configmap("demo", {"a": "1"}, uid="u-1"))
    spec = editor(EditPolicy.only(("data", "a"))).spec
    assert isinstance(spec, EditorSpec)
    state = object_state(store, "u-1", spec)
    assert not state.read_only(("data", "a"))
    assert state.read_only(("data", "b")) and state.read_only(("metadata", "labels", "x"))
    assert state.read_only(("metadata", "name")), "what the store keeps read-only stays so"


def test_the_model_says_what_the_body_holds_and_only_a_clean_one_is_shared() -> None:
    store = store_with(configmap("demo", {"a": "1"}, uid="u-1"), store=new_store(60.0))
    component = editor()
    clean = model_of_editor(component, store, LIVE, Page("p"))
    assert clean.shape == "object" and clean.body_key is not None
    assert model_of_editor(component, store, LIVE, Page("q")) is clean, "one model of a delivery"
    store.perform("u-1", SetField(("data", "a"), "mine"))
    dirty = model_of_editor(component, store, LIVE, Page("p"))
    assert dirty.shape == "object" and dirty.body_key is None and dirty.yaml is not None
    assert dirty.yaml.changes is not None and "mine" in dirty.yaml.changes
    nothing = model_of_editor(editor(name="absent"), store, LIVE, Page("p"))
    assert nothing.shape == "none" and nothing.obj is None
    page = Page("p")
    model_of_editor(component, store, LIVE, page)
    store.apply(deleted(configmap("demo", {"a": "1"}, uid="u-1")))
    removed = model_of_editor(component, store, LIVE, page)
    assert removed.shape == "removed" and removed.removed is not None
    assert removed.removed.copy_out.changed == ("/data/a",) and not removed.removed.replaced


@pytest.mark.parametrize("kind", ["list", "editor"])
def test_a_component_without_a_store_renders_its_status_and_no_content(app: Flask, kind: str) -> None:
    scope = parse_scope(CONFIGMAPS)
    component = (
        make_component(ListSpec(scope, "krm-full/v1", parse_columns(None, scope))) if kind == "list" else editor()
    )
    with app.test_request_context():
        body = render_body(component, None, StreamStatus("terminal", "You may not view this."), FragmentCache())
    assert 'data-krm-stream="terminal"' in body and "You may not view this." in body
    assert "<tr id=" not in body and "krm-field" not in body


def test_a_page_keeps_its_object_while_a_newer_one_of_the_same_name_arrives_first() -> None:
    store = store_with(configmap("demo", {"a": "1"}, uid="u-1"))
    page = Page("p")
    component = editor()
    assert edited_object(store, component, page).uid == "u-1"
    store.apply(added(configmap("demo", {"a": "new"}, uid="u-2")))  # the recreation seen before the deletion
    assert edited_object(store, component).uid == "u-2", "without a page: the newest"
    assert edited_object(store, component, page).uid == "u-1"
