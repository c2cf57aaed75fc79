"""Request bodies decoded as kube-apiserver's codec decodes them: what it cannot handle is a 400 naming
the problem, unknown fields are dropped with a warning (or refused under strict validation)."""

from __future__ import annotations

import pytest

from flask_krm.testing.simulator.catalog import CONFIGMAPS
from flask_krm.testing.simulator.decoding import decode
from flask_krm.testing.simulator.errors import ApiError
from flask_krm.testing.simulator.field_validation import FieldValidation


def test_a_body_becomes_the_kinds_object_with_its_kind_and_api_version() -> None:
    decoded = decode(CONFIGMAPS, {"metadata": {"name": "a"}, "data": {"k": "v"}})
    assert decoded == {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "a"}, "data": {"k": "v"}}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([1], "json: cannot unmarshal array into Go value of type struct"),
        ({"kind": "Secret", "metadata": {}}, "converting (v1.Secret) to (core.ConfigMap): unknown conversion"),
        ({"apiVersion": "v2", "metadata": {}}, "the API version in the data (v2) does not match"),
        ({"metadata": {}, "data": {"k": 1}}, 'ConfigMap in version "v1" cannot be handled as a ConfigMap'),
    ],
)
def test_what_the_codec_cannot_handle_is_a_400(body: object, message: str) -> None:
    with pytest.raises(ApiError) as refused:
        decode(CONFIGMAPS, body)
    assert refused.value.code == 400 and message in refused.value.message


def test_unknown_fields_are_dropped_with_a_warning_or_refused_when_strict() -> None:
    body = {"metadata": {"name": "a"}, "spec": {"x": 1}}
    warned = FieldValidation()
    assert "spec" not in decode(CONFIGMAPS, body, warned)
    assert warned.warnings == ['unknown field "spec"']
    with pytest.raises(ApiError, match='strict decoding error: unknown field "spec"'):
        decode(CONFIGMAPS, body, FieldValidation("Strict"))
