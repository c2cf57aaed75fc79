"""Live components and pages (:mod:`flask_krm.ui.page`): macro arguments, component ids, and pages as
JSON, as a shared draft backend keeps them for every worker."""

from __future__ import annotations

import json
import typing as t

import pytest

from flask_krm import Scope
from flask_krm.scope import parse_scope
from flask_krm.store import DEFAULT_POLICY, EditPolicy
from flask_krm.ui.list_query import ListQuery
from flask_krm.ui.page import (
    Column,
    ComponentSpecError,
    EditorSpec,
    ListSpec,
    Page,
    RowAction,
    make_component,
    page_from_json,
    page_to_json,
    parse_columns,
    parse_fields,
    parse_policy,
    parse_row_actions,
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
