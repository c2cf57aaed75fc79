"""Widgets from a cluster's schema: the recorded kube-apiserver v1.37.2 OpenAPI v3 documents (and
the Flunder CRD's, as the simulator builds it) read into the fields an editor shows."""

from __future__ import annotations

import typing as t

import pytest

from flask_krm.kube_schema import SchemaView
from flask_krm.ui.list_widgets import key_inputs, new_item
from flask_krm.ui.schema_fields import (
    SchemaRefused,
    addable_members,
    field_hints,
    help_text,
    in_pod_template,
    initial_value,
    is_free_form,
    is_removable,
    schema_parse,
)
from flask_krm.ui.widgets import (
    Field,
    ObjectState,
    ValueRefused,
    build_editor,
    parse_number,
    parse_text,
    parse_yaml,
    yaml_value_text,
)
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
    assert is_removable({"x-kubernetes-preserve-unknown-fields": True, "properties": {}}, "kept")


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


def test_a_pod_templates_help_leaves_out_what_is_said_of_a_running_pod(deployment: SchemaView) -> None:
    containers = ("spec", "template", "spec", "containers")
    node = deployment.at(containers)
    assert node is not None and "Containers cannot currently be added or removed." in node["description"]
    hints = field_hints(node, template=in_pod_template(containers))
    assert hints is not None and hints.help.startswith("List of containers belonging to the pod.")
    assert "cannot" not in hints.help.lower() and "  " not in hints.help
    image = field_hints(deployment.at((*CONTAINER, "name")), template=True)
    assert image is not None and "Cannot be updated" not in image.help and image.help.endswith(".")
    pod = field_hints(node)  # a Pod's own field keeps every sentence
    assert pod is not None and "Containers cannot currently be added or removed." in pod.help
    assert in_pod_template(("spec", "jobTemplate", "spec", "template", "spec"))
    assert not in_pod_template(("spec", "replicas")) and not in_pod_template(("template",))


@pytest.mark.parametrize(
    ("node", "good", "bad", "message"),
    [
        ({"type": "string", "format": "date-time"}, "2030-01-31T12:00:00Z", "2030-01-31 12:00", "RFC 3339"),
        ({"type": "string", "format": "date-time"}, "2030-01-31T12:00:00.5+02:00", "2030-02-31T12:00:00Z", "RFC 3339"),
        ({"type": "string", "format": "byte"}, "aGVsbG8=", "hello!", "base64"),
    ],
)
def test_formats_are_checked(node: dict[str, t.Any], good: str, bad: str, message: str) -> None:
    assert schema_parse(node, parse_text)(good, "") == good
    with pytest.raises(SchemaRefused, match=message):
        schema_parse(node, parse_text)(bad, "")


def test_a_double_is_a_number_a_person_may_give_a_fraction() -> None:
    node = {"type": "number", "format": "double", "minimum": 0}
    assert schema_parse(node, parse_number)("0.25", 1) == 0.25
    with pytest.raises(SchemaRefused, match="at least 0"):
        schema_parse(node, parse_number)("-0.5", 1)
    obj = {"spec": {"ratio": 1}}
    schema = {"properties": {"spec": {"properties": {"ratio": node}}}}
    ratio = build_editor(ObjectState(obj, obj, lambda path: False, schema=schema), [("spec", "ratio")]).fields[0]
    assert ratio.kind == "number" and not ratio.integral  # the input steps by any amount


def test_an_empty_required_value_is_refused() -> None:
    with pytest.raises(SchemaRefused, match="This field is required: enter a value."):
        schema_parse({"type": "string"}, parse_text, required=True)("  ", "x")
    assert schema_parse({"type": "string"}, parse_text)("", "x") == ""


def test_open_members_are_free_form(deployment: SchemaView, flunder: SchemaView) -> None:
    assert is_free_form(flunder.at(("status",)))
    assert is_free_form(deployment.at(("metadata", "managedFields", 0, "fieldsV1")))
    assert is_free_form({"additionalProperties": True}) and is_free_form({"type": "object"})
    assert not is_free_form({"description": "Not said."})  # a host's partial schema: nothing said
    assert not is_free_form({"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["key"]})
    assert not is_free_form(flunder.at(("spec",)))  # it keeps unknown members, beside its declared ones
    assert not is_free_form(deployment.at((*CONTAINER, "resources", "limits")))
    assert not is_free_form(deployment.at(("spec", "strategy", "rollingUpdate", "maxSurge")))
    assert not is_free_form(None)
    assert initial_value({"x-kubernetes-preserve-unknown-fields": True}) == {}


def test_a_flunders_open_members_are_yaml(flunder: SchemaView) -> None:
    obj = {
        "apiVersion": "wardle.example.com/v1alpha1",
        "kind": "Flunder",
        "metadata": {"name": "fl-1"},
        "spec": {"reference": "fl-2", "extra": {"size": 3, "tags": ["a"]}, "note": "kept"},
        "status": {"ready": True},
    }
    state = ObjectState(obj, obj, lambda path: path[:1] == ("status",), schema=flunder)
    view = build_editor(state)
    spec = field(view.fields, "Spec")
    extra = field(spec.children, "Extra")  # not declared, kept by the schema: YAML
    assert extra.kind == "yaml" and extra.editable and extra.text == "size: 3\ntags:\n- a"
    assert extra.removable and field(spec.children, "Note").removable
    assert field(spec.children, "Note").kind == "text"  # an undeclared string stays text
    assert field(spec.children, "Reference").kind == "text"
    status = field(view.fields, "Status")
    assert status.kind == "yaml" and not status.editable and status.text == "ready: true"


def test_a_yaml_field_reads_any_value_and_refuses_what_the_yaml_tab_refuses() -> None:
    assert parse_yaml("a: 1\nb: [x, 'y']", None) == {"a": 1, "b": ["x", "y"]}
    assert parse_yaml("- 1\n- two", None) == [1, "two"]
    assert parse_yaml("yes", None) is True and parse_yaml("'yes'", None) == "yes"
    for text, message in [
        ("a: 1\na: 2", "line 2"),
        ("a: 1\nb: c: d", r"line 2, column 5"),
        ("", "empty"),
        ("a: !withheld 'not shown'", "not a value"),
        ("a: .inf", "JSON"),
    ]:
        with pytest.raises(ValueRefused, match=message) as refused:
            parse_yaml(text, None)
        assert refused.value.status == 422
    assert (
        yaml_value_text({"a": [1]}) == "a:\n- 1" and yaml_value_text("text") == "text" and yaml_value_text({}) == "{}"
    )


def test_a_new_items_keys_are_typed_by_the_schema(deployment: SchemaView, flunder: SchemaView) -> None:
    ports = flunder.at(("spec", "ports", 0))
    # a key named like a number is text when the schema says so, whatever the name suggests
    named_port = {"properties": {"port": {"type": "string"}}}
    assert [k.numeric for k in key_inputs([], ["port"], named_port)] == [False]
    assert new_item(("spec", "ports"), [], ["port"], {"port": "8080"}, named_port) == {"port": "8080"}
    counted = {"properties": {"slot": {"type": "integer"}}}  # not a name the guess knows
    assert [k.numeric for k in key_inputs([], ["slot"], counted)] == [True]
    assert new_item(("spec", "slots"), [], ["slot"], {"slot": "3"}, counted) == {"slot": 3}
    assert [k.numeric for k in key_inputs([], ["name"], ports)] == [False]
    container_port = deployment.at((*CONTAINER, "ports", 0))
    inputs = key_inputs([], ["containerPort", "protocol"], container_port)
    assert [(k.numeric, k.default) for k in inputs] == [(True, ""), (False, "TCP")]


def test_an_empty_optional_object_is_shown_absent_and_its_members_offered(deployment: SchemaView) -> None:
    container = {"name": "web", "image": "nginx", "resources": {}}
    obj = {"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"template": {"spec": {"containers": [container]}}}}
    keys = {("spec", "template", "spec", "containers"): ("name",)}

    def web(draft: dict[str, t.Any]) -> Field:
        state = ObjectState(
            draft, obj, lambda path: False, list_keys=lambda path: keys.get(tuple(path)), schema=deployment
        )
        return build_editor(state, [("spec", "template", "spec", "containers")]).fields[0].children[0]

    shown = web(obj)
    assert "Resources" not in [child.label for child in shown.children]
    offered = {choice.name: choice.label for choice in shown.addable}
    assert offered["resources/limits"] == "Resources: Limits" and offered["resources/requests"] == "Resources: Requests"
    assert "resources" not in offered
    limited = {**container, "resources": {"limits": {}}}
    grown = web({**obj, "spec": {"template": {"spec": {"containers": [limited]}}}})
    assert "Resources" in [child.label for child in grown.children]  # not empty: shown
    assert not any(name.startswith("resources") for name in (choice.name for choice in grown.addable))
