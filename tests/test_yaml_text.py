"""YAML text of objects: fidelity of rendering, Kubernetes' scalar rules, and the loading limits."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flask_krm.store.view_edits import WITHHELD
from flask_krm.yaml_text import (
    MAX_ALIASES,
    MAX_NODES,
    MAX_YAML_BYTES,
    YamlRefused,
    dump_yaml,
    load_yaml,
    with_placeholders,
)

RETYPE_PRONE = [
    "0755",
    "yes",
    "no",
    "on",
    "off",
    "y",
    "n",
    "1e3",
    "null",
    "~",
    "true",
    "False",
    "1.5",
    ".inf",
    "-.5",
    "0x1F",
    "0o17",
    "12:30",
    "2024-01-02",
    "2024-01-02T03:04:05Z",
    "<<",
    "=",
    "",
    " padded ",
    "+1",
    "1_000",
]


def configmap(data: dict[str, str]) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app"}, "data": data}


@pytest.mark.parametrize("text", RETYPE_PRONE)
def test_strings_yaml_would_retype_round_trip_unchanged(text: str) -> None:
    obj = configmap({"value": text, text or "empty": "x"})
    rendered = dump_yaml(obj)
    assert load_yaml(rendered).value == obj
    value_line = next(line for line in rendered.splitlines() if line.strip().startswith("value:"))
    assert value_line.split(":", 1)[1].strip()[:1] in ("'", '"'), value_line


@given(
    st.dictionaries(
        st.text(min_size=1, max_size=8),
        st.one_of(
            st.text(max_size=20),
            st.integers(-(2**63), 2**63),
            st.floats(allow_nan=False, allow_infinity=False),
            st.booleans(),
            st.lists(st.text(max_size=5), max_size=3),
        ),
        max_size=6,
    )
)
def test_any_json_object_round_trips(data: dict[str, object]) -> None:
    obj = {"spec": data, "metadata": {"name": "x"}}
    assert load_yaml(dump_yaml(obj)).value == obj


def test_rendering_keeps_key_order_block_style_and_literal_blocks() -> None:
    obj = {"kind": "ConfigMap", "apiVersion": "v1", "data": {"b": "2", "a": "line 1\nline 2\n"}, "list": [1, 2]}
    text = dump_yaml(obj)
    assert text.splitlines()[:2] == ["kind: ConfigMap", "apiVersion: v1"]
    assert "  a: |\n    line 1\n    line 2\n" in text
    assert "list:\n- 1\n- 2\n" in text


def test_typed_scalars_follow_kubernetes_rules() -> None:
    loaded = load_yaml("a: yes\nb: on\nc: 0755\nd: 1e3\ne: ~\nf: null\ng: 2024-01-02\nh: '0755'\n").value
    assert loaded == {"a": True, "b": True, "c": 493, "d": 1000.0, "e": None, "f": None, "g": "2024-01-02", "h": "0755"}


def test_withheld_placeholder_loads_as_the_marker_never_a_string() -> None:
    obj = with_placeholders({"kind": "Secret", "metadata": {"name": "s"}}, [("data", "password")])
    text = dump_yaml(obj)
    assert "password: !withheld 'not shown'" in text
    loaded = load_yaml(text).value
    assert loaded["data"]["password"] is WITHHELD


def test_lines_of_paths() -> None:
    loaded = load_yaml("metadata:\n  name: x\nspec:\n  containers:\n  - name: web\n    image: a\n")
    assert loaded.lines[("spec", "containers", 0)] == 5
    assert loaded.lines[("spec", "containers", 0, "image")] == 6
    assert loaded.line_of(("spec", "containers", 0, "env", 3)) == 5


BILLION_LAUGHS = "\n".join(
    ["a: &a ['lol','lol','lol','lol','lol','lol','lol','lol','lol']"]
    + [f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)}]" for i in range(8)]
)


def test_billion_laughs_is_refused() -> None:
    with pytest.raises(YamlRefused) as refused:
        load_yaml(BILLION_LAUGHS)
    assert str(MAX_NODES) in refused.value.message or str(MAX_ALIASES) in refused.value.message


def test_too_many_aliases_refused_at_their_line() -> None:
    text = "a: &x 1\nb: [" + ", ".join(["*x"] * (MAX_ALIASES + 1)) + "]\n"
    with pytest.raises(YamlRefused) as refused:
        load_yaml(text)
    assert refused.value.message == f"The YAML uses more than {MAX_ALIASES} aliases"
    assert refused.value.line == 2


def test_recursive_alias_refused() -> None:
    with pytest.raises(YamlRefused, match="refers to itself"):
        load_yaml("a: &x [1, *x]\n")


@pytest.mark.parametrize(
    "text", ["a: " + "[" * 200 + "]" * 200, "a:\n" + "".join("  " * i + "- \n" for i in range(200))]
)
def test_deep_nesting_refused(text: str) -> None:
    with pytest.raises(YamlRefused, match="nests deeper than 64 levels"):
        load_yaml(text)


def test_ten_megabytes_refused_before_parsing() -> None:
    text = "data:\n" + "".join(f"  k{i}: {'x' * 100}\n" for i in range(100_000))
    assert len(text) > 10_000_000
    with pytest.raises(YamlRefused) as refused:
        load_yaml(text)
    assert refused.value.message == f"The YAML is {len(text)} bytes; at most {MAX_YAML_BYTES} bytes can be edited"


@pytest.mark.parametrize(
    ("text", "message", "line", "column"),
    [
        ("a: 1\n b: 2\n", "Mapping values are not allowed here", 2, 3),
        ("a: [1, 2\nb: 3\n", "Expected ',' or ']', but got ':'", 2, 2),
        ("a: 1\n---\nb: 2\n", "But found another document", 2, 1),
        ("- 1\n- 2\n", "The YAML must be a mapping of the object's fields", 1, 1),
        ("a: 1\n1: x\n", "The key 1 is not a string; quote it", 1, 1),
        ("a: 1\nb: .inf\n", "'.inf' is not a number JSON can hold", 2, 4),
        ("a: !!binary aGVsbG8=\n", "A binary value cannot be part of an object; write it as a string", 1, 4),
        ("a: !custom x\n", "Could not determine a constructor for the tag '!custom'", 1, 4),
        ("a: 1\nb: \x07\n", "The YAML holds a character it cannot contain ('\\x07')", 2, 4),
    ],
)
def test_unusable_text_names_what_and_where(text: str, message: str, line: int, column: int) -> None:
    with pytest.raises(YamlRefused) as refused:
        load_yaml(text)
    assert (refused.value.message, refused.value.line, refused.value.column) == (message, line, column)


def test_empty_text_refused() -> None:
    with pytest.raises(YamlRefused, match="empty"):
        load_yaml("# nothing\n")
