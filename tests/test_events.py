"""Protocol events' encoding: exact to the reference gateway's (Go's) bytes, in protocol order."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flask_krm.events import (
    Deleted,
    Identity,
    Redaction,
    Reset,
    StreamError,
    Upsert,
    dumps_sorted,
    encode_body,
    frame,
    to_json,
)


def _reference_body(event: Any) -> bytes:
    """The original encoding (a JSON round trip to sort object keys), for float-free objects."""
    wire = to_json(event)
    if "object" in wire:
        wire["object"] = json.loads(json.dumps(wire["object"], sort_keys=True))
    text = json.dumps(wire, separators=(",", ":"), ensure_ascii=False)
    for raw, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, escaped)
    return text[1:].encode()


json_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | json_text,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(json_text, children, max_size=4),
    max_leaves=15,
)


@given(
    st.dictionaries(json_text, json_values, max_size=6),
    st.lists(json_text, max_size=3),
    st.sampled_from(["added", "modified"]),
)
def test_the_encoding_equals_the_reference_round_trip(obj: dict[str, Any], paths: list[str], kind: str) -> None:
    event = Upsert(kind, obj, tuple(Redaction(p, n + 1) for n, p in enumerate(paths)))  # type: ignore[arg-type]
    assert encode_body(event) == _reference_body(event)
    decoded = json.loads(b"{" + encode_body(event))
    assert decoded["object"] == obj


def test_html_and_line_separators_are_escaped_other_unicode_is_raw() -> None:
    assert dumps_sorted({"b": "<a href='x'>&</a>", "a": "é\u2028\u2029😀"}) == (
        '{"a":"é\\u2028\\u2029😀","b":"\\u003ca href=\'x\'\\u003e\\u0026\\u003c/a\\u003e"}'
    )


def test_control_characters_are_escaped_like_go() -> None:
    assert dumps_sorted('\b\f\n\r\t\x01\x1f"\\\x7f') == '"\\b\\f\\n\\r\\t\\u0001\\u001f\\"\\\\\x7f"'


@pytest.mark.parametrize(
    ("value", "go"),
    [
        (1.0, "1"),
        (-0.0, "-0"),
        (0.5, "0.5"),
        (100.0, "100"),
        (1e-7, "1e-7"),
        (1.5e-10, "1.5e-10"),
        (1e-6, "0.000001"),
        (1e-5, "0.00001"),
        (0.0001, "0.0001"),
        (1e16, "10000000000000000"),
        (1.5e16, "15000000000000000"),
        (1e20, "100000000000000000000"),
        (1e21, "1e+21"),
        (2.5e300, "2.5e+300"),
        (123456789.123, "123456789.123"),
        (0.1, "0.1"),
    ],
)
def test_floats_are_written_as_go_writes_a_float64(value: float, go: str) -> None:
    assert dumps_sorted({"x": [value, value]}) == '{"x":[' + go + "," + go + "]}"
    assert encode_body(Upsert("added", {"v": value, "s": "1.0,"})) == (
        b'"type":"added","object":{"s":"1.0,","v":' + go.encode() + b'},"redacted":[]}'
    )


def test_a_lone_surrogate_becomes_the_replacement_character() -> None:
    body = encode_body(Upsert("added", {"k": "a\ud800\udfffb"}))
    assert body == '"type":"added","object":{"k":"a\ufffd\ufffdb"},"redacted":[]}'.encode()


def test_envelopes_keep_the_protocol_order() -> None:
    reset = Reset(scope={"target": "", "version": "v1", "resource": "namespaces"}, projection="krm-raw/v1")
    assert frame(1, encode_body(reset)) == (
        b'data: {"seq":1,"type":"reset","scope":{"target":"","version":"v1","resource":"namespaces"},'
        b'"projection":"krm-raw/v1"}\n\n'
    )
    deleted = Deleted(Identity("u", "v1", "Namespace", "n"))
    assert (
        encode_body(deleted)
        == b'"type":"deleted","identity":{"uid":"u","apiVersion":"v1","kind":"Namespace","name":"n"}}'
    )
    error = StreamError("UPSTREAM_UNAVAILABLE", "down & out", False, 250)
    assert encode_body(error) == (
        b'"type":"error","code":"UPSTREAM_UNAVAILABLE","message":"down \\u0026 out",'
        b'"retryAfterMs":250,"terminal":false}'
    )
