"""Field and column labels: given as (label, pointer) pairs or made from the path."""

from __future__ import annotations

import typing as t

import pytest

from flask_krm.scope import parse_scope
from flask_krm.ui.labels import default_label, humanize
from flask_krm.ui.page import ComponentSpecError, parse_columns, parse_labelled_fields

from .conftest import CONFIGMAPS


@pytest.mark.parametrize(
    ("key", "label"),
    [
        ("replicas", "Replicas"),
        ("labels", "Labels"),
        ("readyReplicas", "Ready replicas"),
        ("minReadySeconds", "Min ready seconds"),
        ("podIP", "Pod IP"),
        ("apiVersion", "API version"),
        ("containerPort", "Container port"),
        ("deployment.kubernetes.io/revision", "deployment.kubernetes.io/revision"),
        ("app.conf", "app.conf"),
        ("log-level", "log-level"),
    ],
)
def test_member_names_read_as_words_and_other_keys_stay_as_they_are(key: str, label: str) -> None:
    assert humanize(key) == label


def test_a_default_label_is_the_last_member_and_an_item_its_position() -> None:
    assert default_label(("spec", "replicas")) == "Replicas"
    assert default_label(("metadata", "labels")) == "Labels"
    assert default_label(("spec", "template", "spec", "containers")) == "Containers"
    assert default_label(("spec", "containers", 0)) == "Containers 1"


def test_fields_take_pointers_segments_and_labelled_pairs() -> None:
    assert parse_labelled_fields(["/metadata/labels", ("Replicas", "/spec/replicas"), ["spec", "paused"]]) == (
        (("metadata", "labels"), "Labels"),
        (("spec", "replicas"), "Replicas"),
        (("spec", "paused"), "Paused"),
    )
    assert parse_labelled_fields([("  Image  ", "/spec/image")]) == ((("spec", "image"), "Image"),)
    assert parse_labelled_fields(None) is None


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ("/data", "fields= takes a list"),
        ({"Data": "/data"}, "fields= takes a list"),
        ([("", "/data")], "has an empty label"),
        (["data"], "not a JSON pointer"),
        ([None], "neither a JSON pointer nor a sequence"),
        ([], "needs at least one field"),
    ],
)
def test_bad_fields_are_refused_naming_the_entry(fields: t.Any, message: str) -> None:
    with pytest.raises(ComponentSpecError, match=message):
        parse_labelled_fields(fields)


def test_columns_are_labelled_from_their_path_and_may_draw_status() -> None:
    scope = parse_scope(CONFIGMAPS)
    columns = parse_columns(["/status/readyReplicas", ("Health", "/status", "status")], scope)
    assert [(c.header, c.pointer, c.cell) for c in columns] == [
        ("Ready replicas", "/status/readyReplicas", "text"),
        ("Health", "/status", "status"),
    ]
    with pytest.raises(ComponentSpecError, match="cell 'chart' is not one of text, status, conditions, rollout"):
        parse_columns([("Health", "/status", "chart")], scope)
