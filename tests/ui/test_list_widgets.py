"""How editor lists are shown and how a new keyed item is made (:mod:`flask_krm.ui.list_widgets`)."""

from __future__ import annotations

import typing as t

import pytest

from flask_krm.ui.list_widgets import (
    ItemRefused,
    is_ordered,
    item_label,
    key_inputs,
    list_kind,
    new_item,
)

CONTAINERS: t.Final = ("spec", "template", "spec", "containers")
PORTS: t.Final = (*CONTAINERS, 0, "ports")


def test_a_keyed_list_is_edited_item_by_item_only_while_every_item_is_keyed_once() -> None:
    containers = [{"name": "web", "image": "a"}, {"name": "log", "image": "b"}]
    assert list_kind(CONTAINERS, containers, ("name",)) == "items"
    assert list_kind(CONTAINERS, [*containers, {"name": "web"}], ("name",)) is None, "a duplicate key"
    assert list_kind(CONTAINERS, [{"image": "a"}], ("name",)) is None, "an item without its key"
    assert list_kind(CONTAINERS, containers, None) is None, "no keys from the schema"


def test_lists_of_strings_are_rows_and_an_empty_one_only_where_rows_are_expected() -> None:
    assert list_kind(("spec", "hosts"), ["a", "b"], None) == "rows"
    assert list_kind(("spec", "hosts"), [], None) is None
    assert list_kind((*CONTAINERS, 0, "args"), [], None) == "rows"
    assert list_kind((*CONTAINERS, 0, "command"), [], None) == "rows"
    assert list_kind(CONTAINERS, [], ("name",)) == "items", "an empty keyed list still takes new items"
    assert list_kind(("spec", "hosts"), ["a", 1], None) is None
    assert list_kind(("spec", "hosts"), ("a",), None) is None, "only a JSON array is a list"
    assert list_kind(("spec", "hosts"), "a", None) is None


def test_rows_and_lists_whose_order_means_something_can_be_reordered() -> None:
    assert is_ordered(("spec", "hosts"), "rows")
    assert is_ordered(CONTAINERS, "items")
    assert is_ordered((*CONTAINERS, 0, "env"), "items")
    assert not is_ordered(PORTS, "items")
    assert not is_ordered((), "items")


def test_an_items_legend_joins_its_key_values() -> None:
    assert item_label({"containerPort": 8080, "protocol": "TCP"}, ("containerPort", "protocol")) == "8080/TCP"
    assert item_label({"name": "web"}, ("name", "missing")) == "web/"


def test_key_inputs_are_numeric_as_the_list_holds_them_else_as_kubernetes_types_them() -> None:
    port, protocol = key_inputs([], ("containerPort", "protocol"))
    assert (port.name, port.default, port.numeric, port.label) == ("containerPort", "", True, "Container port")
    assert (protocol.default, protocol.numeric) == ("TCP", False)
    (held,) = key_inputs([{"port": "http"}], ("port",))
    assert not held.numeric, "the items held say the key is a string"
    (name,) = key_inputs([{"name": "web"}], ("name",))
    assert not name.numeric and name.default == ""


def test_a_new_item_has_its_keys_and_the_members_a_well_known_list_needs() -> None:
    assert new_item(CONTAINERS, [], ("name",), {"name": "  side  "}) == {"name": "side", "image": ""}
    assert new_item(PORTS, [], ("containerPort", "protocol"), {"containerPort": "8080", "protocol": "UDP"}) == {
        "containerPort": 8080,
        "protocol": "UDP",
    }
    assert new_item(("spec", "hostAliases"), [], ("ip",), {"ip": "10.0.0.1"}) == {"ip": "10.0.0.1", "hostnames": []}
    first = new_item((*CONTAINERS, 0, "env"), [], ("name",), {"name": "A"})
    second = new_item((*CONTAINERS, 0, "env"), [], ("name",), {"name": "B"})
    first["value"] = "changed"
    assert second == {"name": "B", "value": ""}, "new items share no members"


@pytest.mark.parametrize(
    ("submitted", "message"),
    [
        ({}, "Enter the containerPort of the new item."),
        ({"containerPort": "   "}, "Enter the containerPort of the new item."),
        ({"containerPort": None}, "Enter the containerPort of the new item."),
        ({"containerPort": "80a"}, "The containerPort is a whole number, such as 8080."),
        ({"containerPort": "-80"}, "The containerPort is a whole number, such as 8080."),
        ({"containerPort": "1234567890"}, "The containerPort is a whole number, such as 8080."),
    ],
)
def test_a_new_item_without_a_key_or_with_a_number_that_is_not_one_is_refused(
    submitted: dict[str, str | None], message: str
) -> None:
    with pytest.raises(ItemRefused) as refused:
        new_item(PORTS, [], ("containerPort",), submitted)
    assert str(refused.value) == message


def test_a_key_the_list_holds_as_text_stays_text() -> None:
    assert new_item(("spec", "ports"), [{"port": "http"}], ("port",), {"port": "8080"}) == {"port": "8080"}
