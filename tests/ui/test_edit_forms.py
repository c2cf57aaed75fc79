"""Edit forms read into store operations (``flask_krm.ui.edit_forms``), with the widget of the field."""

from __future__ import annotations

import pytest

from flask_krm.store import BUILTIN_LIST_SCHEMAS, AddItem, EditLines, LiveResourceStore, MoveItem, RemoveItem, SetField
from flask_krm.store.paths import MISSING
from flask_krm.store.problems import ProblemKind
from flask_krm.ui.edit_forms import RequestRefused, add_item, editable_path, move_item, remove_item, set_field
from flask_krm.ui.problems import RequestProblem
from tests.store.objects import deployment, store_with

UID = "deploy-1"
CONTAINERS = ("spec", "template", "spec", "containers")


def a_store() -> LiveResourceStore:
    obj = deployment("1", [{"name": "web", "image": "web:1", "args": ["--a", "--b"], "ports": []}])
    return store_with(obj, store=LiveResourceStore(schemas=BUILTIN_LIST_SCHEMAS))


def test_a_number_field_reads_numbers_and_its_start() -> None:
    assert set_field(a_store(), UID, ("spec", "replicas"), "4", "2") == SetField(("spec", "replicas"), 4, 2)
    assert set_field(a_store(), UID, ("spec", "replicas"), "4", "") == SetField(("spec", "replicas"), 4, MISSING)


def test_an_array_written_as_text_travels_as_its_two_texts() -> None:
    args = (*CONTAINERS, {"name": "web"}, "args")
    operation = set_field(a_store(), UID, args, '["--a"]\r\n', '["--a", "--b"]')
    assert operation == EditLines(args, '["--a"]\n', '["--a", "--b"]', ["--a"])
    with pytest.raises(RequestRefused) as refused:
        set_field(a_store(), UID, args, '["--a"]', None)
    assert refused.value.kind is RequestProblem.NO_START


@pytest.mark.parametrize(
    ("address", "submitted", "kind"),
    [
        (("spec", "replicas"), "many", RequestProblem.UNREADABLE_VALUE),
        (("spec", "replicas"), None, RequestProblem.UNREADABLE_REQUEST),
        (("status", "readyReplicas"), "1", ProblemKind.READ_ONLY),
        (("spec", "template"), "x", RequestProblem.NOT_ONE_VALUE),
    ],
)
def test_unreadable_fields_are_request_problems(address: tuple[str, ...], submitted: str | None, kind: object) -> None:
    with pytest.raises(RequestRefused) as refused:
        set_field(a_store(), UID, address, submitted, None)
    assert refused.value.kind is kind


def test_items_are_read_from_their_key_fields_and_rows_from_their_text() -> None:
    store = a_store()
    ports = (*CONTAINERS, {"name": "web"}, "ports")
    new_port = add_item(store, UID, ports, {"item.containerPort": "8080", "item.protocol": "TCP"})
    assert isinstance(new_port, AddItem) and new_port.value["containerPort"] == 8080
    with pytest.raises(RequestRefused) as refused:
        add_item(store, UID, ports, {"item.containerPort": "http", "item.protocol": "TCP"})
    assert refused.value.kind is RequestProblem.UNREADABLE_ITEM
    assert remove_item((*ports[:-1], "args", 1), {"value": "--b"}) == RemoveItem((*ports[:-1], "args", 1), "--b")
    assert move_item((*ports[:-1], "args", 0), {"to": "down"}) == MoveItem((*ports[:-1], "args", 0), 1)
    with pytest.raises(RequestRefused) as refused:
        move_item((*ports[:-1], "args", 0), {"to": "sideways"})
    assert refused.value.kind is RequestProblem.NO_DIRECTION


def test_a_read_only_place_is_refused_before_its_value_is_read() -> None:
    store = a_store()
    assert editable_path(store, UID, ("spec", "replicas")) == ("spec", "replicas")
    for address in [("status", "readyReplicas"), ("status", "new"), ("metadata", "uid")]:
        with pytest.raises(RequestRefused) as refused:
            editable_path(store, UID, address)
        assert refused.value.kind is ProblemKind.READ_ONLY, address
    with pytest.raises(RequestRefused) as refused:  # no number, but no number could be written there
        add_item(store, UID, ("status", "conditions"), {"item.type": "Ready"})
    assert refused.value.kind is ProblemKind.READ_ONLY
