"""Live components and pages (:mod:`flask_krm.ui.page`): macro arguments, component ids, and pages as
JSON, as a shared draft backend keeps them for every worker."""

from __future__ import annotations

import dataclasses
import json
import typing as t

import pytest

from flask_krm import Scope
from flask_krm.scope import parse_scope
from flask_krm.sessions import DraftRegistry, Limits
from flask_krm.store import DEFAULT_POLICY, READ_ONLY_POLICY, EditPolicy
from flask_krm.ui.labels import default_label
from flask_krm.ui.list_query import ListQuery
from flask_krm.ui.page import (
    MAX_PAGE_SIZE,
    Column,
    ComponentSpecError,
    EditorSpec,
    ListSpec,
    Page,
    RowAction,
    find_page,
    is_component_id,
    make_component,
    new_page_id,
    page_from_json,
    page_to_json,
    parse_columns,
    parse_fields,
    parse_page_size,
    parse_policy,
    parse_row_actions,
    parse_url_key,
    store_page,
)
from tests.ui.conftest import CONFIGMAPS as CONFIGMAPS_QUERY

CONFIGMAPS = Scope(target="demo", version="v1", resource="configmaps", namespace="app", label_selector="tier=web")


def a_page() -> Page:
    page = Page("p-1")
    listing = ListSpec(
        CONFIGMAPS,
        "krm-spec/v1",
        (
            Column("Name", ("metadata", "name")),
            Column("Level", ("data", "level")),
            Column("Ready", ("status",), "ready"),
        ),
        link="/cm/{name}",
        title="Maps",
        row_actions=(RowAction("Delete", "krm_review.delete"),),
        page_size=20,
        url_key="maps",
    )
    editor = EditorSpec(
        Scope(target="demo", group="apps", version="v1", resource="deployments", namespace="app", name="web"),
        "krm-full/v1",
        EditPolicy((("spec", "replicas"),)),
        fields=(("spec", "replicas"),),
        title="Web",
        yaml=False,
        labels=((("spec", "replicas"), "Pods"),),
    )
    for spec in (listing, editor):
        page.add(make_component(spec))
    page.painted = {c: f"digest-{c}" for c in page.components}
    page.bound = {next(reversed(page.components)): "uid-web"}
    page.queries = {next(iter(page.components)): ListQuery("maps", "web", "level", True, 2, "/maps", (("tab", "a"),))}
    return page


def test_a_page_comes_back_whole_with_the_same_component_ids() -> None:
    page = a_page()
    again = page_from_json(json.loads(json.dumps(page_to_json(page))))
    assert again.id == page.id
    assert again.components == page.components
    assert again.painted == page.painted and again.bound == page.bound
    assert again.queries == page.queries


@pytest.mark.parametrize(
    "mangle",
    [
        lambda d: None,
        lambda d: {**d, "id": 3},
        lambda d: {**d, "components": [{"kind": "chart", "scope": {}, "projection": "x"}]},
        lambda d: {**d, "components": [{**d["components"][0], "scope": {"target": "demo"}}]},
        lambda d: {**d, "painted": {"x": 1}},
        lambda d: {**d, "queries": {"x": "maps"}},
        lambda d: {**d, "queries": []},
    ],
)
def test_what_is_not_a_page_is_refused(mangle: t.Callable[[dict[str, t.Any]], t.Any]) -> None:
    with pytest.raises((ValueError, TypeError, KeyError)):
        page_from_json(mangle(page_to_json(a_page())))


def test_row_actions_are_part_of_what_identifies_a_list() -> None:
    parsed = parse_scope(CONFIGMAPS_QUERY)
    plain = ListSpec(parsed, "krm-full/v1", parse_columns(None, parsed))
    with_delete = ListSpec(
        parsed, "krm-full/v1", parse_columns(None, parsed), row_actions=(RowAction("Delete", "krm_review.delete"),)
    )
    assert make_component(plain).id != make_component(with_delete).id
    assert with_delete.row_actions[0].name == "delete"


@pytest.mark.parametrize(
    "bad",
    [
        "krm_review.delete",
        [("Delete",)],
        [("", "krm_review.delete")],
        [("Delete", "")],
        [42],
        [("Delete", "a.delete"), ("Remove", "b.delete")],
    ],
)
def test_row_actions_that_describe_no_button_are_refused(bad: object) -> None:
    with pytest.raises(ComponentSpecError):
        parse_row_actions(bad)


def test_a_field_naming_a_list_item_needs_an_explicit_policy() -> None:
    shown = parse_fields([("spec", "template", "spec", "containers", 0)])
    with pytest.raises(ComponentSpecError, match="name the editable regions with policy="):
        parse_policy(None, shown)
    assert parse_policy("default", shown) is DEFAULT_POLICY
    assert parse_policy(None, parse_fields(["/spec/template/spec/containers/0"])).roots == (
        ("spec", "template", "spec", "containers", "0"),
    ), "a pointer's segments are keys: the item's fields are editable, nothing beside it"


def test_parse_columns_defaults_to_name_and_namespace_across_namespaces() -> None:
    namespaced = parse_scope(CONFIGMAPS_QUERY)
    everywhere = parse_scope("target=demo&version=v1&resource=configmaps")
    assert [c.header for c in parse_columns(None, namespaced)] == ["Name"]
    assert [(c.header, c.pointer) for c in parse_columns(None, everywhere)] == [
        ("Name", "/metadata/name"),
        ("Namespace", "/metadata/namespace"),
    ]


def test_parse_columns_takes_pointers_pairs_triples_and_mappings() -> None:
    scope = parse_scope(CONFIGMAPS_QUERY)
    columns = parse_columns(["/data/a~1b", ("Level", "/data/level"), ("Health", "/status", "status")], scope)
    assert [(c.header, c.path, c.cell) for c in columns] == [
        (default_label(("data", "a/b")), ("data", "a/b"), "text"),
        ("Level", ("data", "level"), "text"),
        ("Health", ("status",), "status"),
    ]
    assert parse_columns({"Size": "/data/size"}, scope) == (Column("Size", ("data", "size")),)


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        ("/metadata/name", "takes a list"),
        ([], "at least one column"),
        (["metadata/name"], "not a JSON pointer"),
        ([""], "not a JSON pointer"),
        ([("Name",)], "neither a pointer"),
        ([("Name", 3)], "neither a pointer"),
        ([("Chart", "/status", "chart")], "cell 'chart' is not one of"),
    ],
)
def test_parse_columns_refuses_what_describes_no_column(columns: t.Any, message: str | None) -> None:
    with pytest.raises(ComponentSpecError, match=message):
        parse_columns(columns, parse_scope(CONFIGMAPS_QUERY))


@pytest.mark.parametrize("size", [1, 50, MAX_PAGE_SIZE])
def test_a_page_size_is_a_whole_number_in_range(size: int) -> None:
    assert parse_page_size(size) == size


@pytest.mark.parametrize("size", [0, -1, MAX_PAGE_SIZE + 1, True, 2.0, "20", None])
def test_a_page_size_out_of_range_or_not_a_number_is_refused(size: t.Any) -> None:
    with pytest.raises(ComponentSpecError, match="page_size="):
        parse_page_size(size)


def test_a_url_key_defaults_to_the_resource_and_must_fit_a_parameter_name() -> None:
    scope = parse_scope(CONFIGMAPS_QUERY)
    assert parse_url_key(None, scope) == "configmaps"
    assert parse_url_key("maps_2-x", scope) == "maps_2-x"
    for bad in ("", "a.b", "a b", "x" * 41, 7):
        with pytest.raises(ComponentSpecError, match="url_key="):
            parse_url_key(bad, scope)


def test_a_policy_names_the_regions_an_editor_may_edit_inside_the_default_ones() -> None:
    assert parse_policy(None) is DEFAULT_POLICY
    assert parse_policy("default") is DEFAULT_POLICY
    assert parse_policy("read-only") == READ_ONLY_POLICY
    assert parse_policy(["/data", "/metadata/labels"]).roots == (("data",), ("metadata", "labels"))
    narrowed = EditPolicy.only(("spec", "replicas"))
    assert parse_policy(narrowed) is narrowed
    assert parse_policy(None, (("metadata",), ("spec", "replicas"), ("status",))).roots == (
        ("metadata", "labels"),
        ("metadata", "annotations"),
        ("spec", "replicas"),
    ), "with fields and no policy: the shown fields the default policy allows, and nothing else"


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ("everything", "is not a policy"),
        (42, "is not a policy"),
        (["/status"], "status is read-only under every policy"),
        (["/metadata/name"], "lies outside the default editable regions"),
        (EditPolicy.only(("metadata", "name")), "lies outside the default editable regions"),
        (["data"], "policy="),
    ],
)
def test_a_policy_that_is_not_one_or_widens_the_default_is_refused(policy: t.Any, message: str) -> None:
    with pytest.raises(ComponentSpecError, match=message):
        parse_policy(policy)


def test_fields_are_pointers_or_labelled_pairs_without_repeats() -> None:
    assert parse_fields(None) is None
    assert parse_fields(["/data", "/data", ["spec", "replicas"]]) == (("data",), ("spec", "replicas"))
    for bad in ("/data", {"Data": "/data"}, [], [("", "/data")], [3]):
        with pytest.raises(ComponentSpecError):
            parse_fields(bad)


def editor_spec(**changes: t.Any) -> EditorSpec:
    scope = Scope(target="demo", version="v1", resource="configmaps", namespace="app", name="web")
    return dataclasses.replace(EditorSpec(scope, "krm-full/v1", DEFAULT_POLICY), **changes)


def test_a_component_id_is_what_it_shows_whatever_the_page() -> None:
    spec = editor_spec()
    assert make_component(spec).id == make_component(editor_spec()).id
    assert is_component_id(make_component(spec).id)
    others = [
        editor_spec(title="Other"),
        editor_spec(yaml=False),
        editor_spec(policy=READ_ONLY_POLICY),
        editor_spec(fields=(("data",),)),
        editor_spec(projection="krm-spec/v1"),
        editor_spec(scope=dataclasses.replace(spec.scope, name="api")),
    ]
    ids = {make_component(other).id for other in others} | {make_component(spec).id}
    assert len(ids) == len(others) + 1


def test_only_the_form_of_a_component_id_is_one() -> None:
    assert is_component_id("krm-0123456789ab")
    for bad in (
        "krm-0123456789AB",
        "krm-0123456789a",
        "krm-0123456789abc",
        "x-0123456789ab",
        None,
        7,
        "krm-01234567\n9ab",
    ):
        assert not is_component_id(bad)


def test_element_ids_are_stable_per_path_and_suffix() -> None:
    component = make_component(editor_spec())
    replicas = component.element_id(("spec", "replicas"))
    assert replicas == component.element_id(["spec", "replicas"])
    assert replicas.startswith(component.id + "-f")
    assert component.element_id(("spec", "replicas"), "-error") == replicas + "-error"
    assert component.element_id(("spec", 0)) != component.element_id(("spec", "0"))
    assert component.body_id == component.id + "-body" and component.kind == "editor"


def test_a_page_is_found_in_its_own_session_only_and_by_another_worker_from_the_backend() -> None:
    limits = Limits(1800.0, 3600.0, 4)
    worker = DraftRegistry()
    drafts = worker.namespace("session", "alice", limits)
    page = a_page()
    page.id = new_page_id()
    store_page(drafts, page)
    assert find_page(drafts, page.id) is page
    assert find_page(worker.namespace("other-session", "alice", limits), page.id) is None
    assert find_page(drafts, "no-such-page") is None
    assert find_page(drafts, "") is None
    for length, found in ((64, True), (65, False)):
        long = Page("x" * length)
        store_page(drafts, long)
        assert (find_page(drafts, long.id) is long) is found, "page ids are at most 64 characters"
    other_worker = DraftRegistry(backend=worker.backend)
    there = other_worker.namespace("session", "alice", limits)
    found = find_page(there, page.id)
    assert found is not None and found is not page
    assert found.components == page.components and found.queries == page.queries
    assert find_page(there, page.id) is found, "kept once read"


def test_a_mangled_page_record_is_no_page() -> None:
    limits = Limits(1800.0, 3600.0, 4)
    drafts = DraftRegistry().namespace("session", "alice", limits)
    drafts.write_records({"page:p-1": {"id": "p-1", "components": [{"kind": "chart"}]}, "page:p-2": {"id": "p-3"}})
    assert find_page(drafts, "p-1") is None
    assert find_page(drafts, "p-2") is None, "a record naming another page"


def test_page_ids_are_unguessable_and_url_safe() -> None:
    ids = {new_page_id() for _ in range(100)}
    assert len(ids) == 100
    assert all(len(i) >= 22 and i.replace("-", "").replace("_", "").isalnum() for i in ids)
