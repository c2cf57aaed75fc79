"""Widgets from a cluster's schema: the recorded kube-apiserver v1.37.2 OpenAPI v3 documents (and
the Flunder CRD's, as the simulator builds it) read into the fields an editor shows."""

from __future__ import annotations

import typing as t

import pytest

from flask_krm.kube_schema import SchemaView
from flask_krm.ui.schema_fields import (
    SchemaRefused,
    addable_members,
    field_hints,
    help_text,
    initial_value,
    is_removable,
    schema_parse,
)
from flask_krm.ui.widgets import Field, ObjectState, build_editor, parse_number, parse_text
from tests.published_schemas import CONTAINER, deployment_schema, flunder_schema


@pytest.fixture(scope="module")
def deployment() -> SchemaView:
    return deployment_schema()


@pytest.fixture(scope="module")
def flunder() -> SchemaView:
    return flunder_schema()


def test_hints_from_the_schema(deployment: SchemaView, flunder: SchemaView) -> None:
    container = deployment.at(CONTAINER)
    assert container is not None
    policy = field_hints(container.member("imagePullPolicy"))
    assert policy is not None and policy.options == ("Always", "IfNotPresent", "Never")
    assert "Possible enum values" not in policy.help and policy.help.startswith("Image pull policy.")
    port = field_hints(flunder.at(("spec", "ports", 0, "port")))
    assert port is not None and (port.minimum, port.maximum) == (1, 65535) and port.help == "The port number."
    replicas = field_hints(deployment.at(("spec", "replicas")))
    assert replicas is not None and (replicas.minimum, replicas.maximum) == (-(2**31), 2**31 - 1)
    protocol = field_hints(deployment.at((*CONTAINER, "ports", 0, "protocol")))
    assert protocol is not None and protocol.placeholder == "TCP"
    quantity = field_hints(deployment.at((*CONTAINER, "resources", "limits", "cpu")))
    assert quantity is not None and quantity.text_value
    surge = field_hints(deployment.at(("spec", "strategy", "rollingUpdate", "maxSurge")))
    assert surge is not None and surge.text_value
    assert field_hints(None) is None


def test_help_is_the_first_paragraph_cut_at_a_sentence() -> None:
    assert help_text("One.\n\nTwo.") == "One."
    long = "A sentence. " * 40
    cut = help_text(long)
    assert len(cut) <= 240 and cut.endswith(".")
    assert help_text(None) == ""


def test_members_to_add_and_to_remove(deployment: SchemaView) -> None:
    container = deployment.at(CONTAINER)
    names = [choice.name for choice in addable_members(container, {"name": "web", "image": "x"})]
    assert {"env", "ports", "args", "command", "volumeMounts", "resources"} <= set(names)
    assert "name" not in names and "image" not in names
    labels = {choice.name: choice.label for choice in addable_members(container, {})}
    assert labels["volumeMounts"] == "Volume mounts" and labels["imagePullPolicy"] == "Image pull policy"
    assert is_removable(container, "env") and not is_removable(container, "name")
    assert not is_removable(container, "no-such-member")


def test_initial_values_by_type(deployment: SchemaView, flunder: SchemaView) -> None:
    container = deployment.at(CONTAINER)
    assert container is not None
    assert initial_value(container.member("env")) == []  # type: ignore[arg-type]
    assert initial_value(container.member("resources")) == {}  # type: ignore[arg-type]
    assert initial_value(container.member("workingDir")) == ""  # type: ignore[arg-type]
    assert initial_value(container.member("stdin")) is False  # type: ignore[arg-type]
    assert initial_value(flunder.at(("spec", "ports", 0, "port"))) == 1  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("where", "typed", "reader", "expected"),
    [
        ((*CONTAINER, "imagePullPolicy"), "Never", parse_text, "Never"),
        ((*CONTAINER, "resources", "limits", "cpu"), "500m", parse_text, "500m"),
        ((*CONTAINER, "resources", "limits", "memory"), "128Mi", parse_text, "128Mi"),
        (("spec", "strategy", "rollingUpdate", "maxSurge"), "25%", parse_text, "25%"),
        (("spec", "strategy", "rollingUpdate", "maxSurge"), "2", parse_number, 2),
        (("spec", "replicas"), "3", parse_number, 3),
    ],
)
def test_values_the_schema_reads(
    deployment: SchemaView, where: tuple[t.Any, ...], typed: str, reader: t.Any, expected: t.Any
) -> None:
    node = deployment.at(where)
    assert node is not None
    assert schema_parse(node, reader)(typed, "") == expected


@pytest.mark.parametrize(
    ("where", "typed", "reader", "message"),
    [
        ((*CONTAINER, "imagePullPolicy"), "Sometimes", parse_text, "Choose one of Always, IfNotPresent, Never."),
        ((*CONTAINER, "resources", "limits", "cpu"), "lots", parse_text, "Enter a quantity, such as 500m, 2 or 128Mi."),
        (("spec", "replicas"), "1.5", parse_number, "Enter a whole number."),
        (("spec", "replicas"), "3000000000", parse_number, "Enter a number from -2147483648 to 2147483647."),
    ],
)
def test_values_the_schema_refuses(
    deployment: SchemaView, where: tuple[t.Any, ...], typed: str, reader: t.Any, message: str
) -> None:
    node = deployment.at(where)
    assert node is not None
    with pytest.raises(SchemaRefused, match=message.replace(".", r"\.")):
        schema_parse(node, reader)(typed, "")


def test_a_crd_pattern_bound_and_enum_are_checked(flunder: SchemaView) -> None:
    reference = flunder.at(("spec", "reference"))
    assert reference is not None
    with pytest.raises(SchemaRefused, match="Enter a value matching"):
        schema_parse(reference, parse_text)("Not_A_Name", "")
    port = flunder.at(("spec", "ports", 0, "port"))
    assert port is not None
    with pytest.raises(SchemaRefused, match="from 1 to 65535"):
        schema_parse(port, parse_number)("70000", 1)


def field(fields: t.Iterable[Field], label: str) -> Field:
    return next(f for f in fields if f.label == label)


def test_a_flunder_editor_without_fields_shows_its_spec_from_the_schema(flunder: SchemaView) -> None:
    obj = {
        "apiVersion": "wardle.example.com/v1alpha1",
        "kind": "Flunder",
        "metadata": {"name": "fl-1"},
        "spec": {"reference": "fl-2", "ports": [{"name": "http", "port": 80}]},
    }
    keys = {("spec", "ports"): ("name",)}
    state = ObjectState(obj, obj, lambda path: False, list_keys=lambda path: keys.get(tuple(path)), schema=flunder)
    view = build_editor(state)
    spec = field(view.fields, "Spec")
    assert spec.kind == "group" and spec.hints is not None and spec.hints.help == "What the Flunder should be."
    reference = field(spec.children, "Reference")
    assert reference.hints is not None and "another Flunder" in reference.hints.help and reference.removable
    ports = field(spec.children, "Ports")
    assert ports.kind == "items" and ports.hints is not None and ports.hints.help.startswith("The ports")
    http = ports.children[0]
    assert [choice.name for choice in http.addable] == ["protocol"]
    port = field(http.children, "Port")
    assert port.kind == "number" and port.hints is not None and (port.hints.minimum, port.hints.maximum) == (1, 65535)


def test_a_container_shows_selects_and_offers_its_absent_members(deployment: SchemaView) -> None:
    obj = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "template": {"spec": {"containers": [{"name": "web", "image": "nginx", "imagePullPolicy": "IfNotPresent"}]}}
        },
    }
    keys = {("spec", "template", "spec", "containers"): ("name",)}
    state = ObjectState(obj, obj, lambda path: False, list_keys=lambda path: keys.get(tuple(path)), schema=deployment)
    view = build_editor(state, [("spec", "template", "spec", "containers")])
    web = view.fields[0].children[0]
    assert field(web.children, "Image pull policy").kind == "select"
    assert {"env", "ports", "args", "volumeMounts", "resources"} <= {choice.name for choice in web.addable}
    # without a schema, the same object keeps its value-driven widgets
    plain = build_editor(ObjectState(obj, obj, lambda path: False, list_keys=lambda path: keys.get(tuple(path))))
    assert field(plain.fields, "Spec").addable == ()
