"""YAML text of objects: fidelity of rendering, Kubernetes' scalar rules, and the loading limits."""

from __future__ import annotations

import sys
import tracemalloc

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from flask_krm import yaml_text
from flask_krm.store.view_edits import WITHHELD
from flask_krm.yaml_text import (
    MAX_ALIASED_VALUES,
    MAX_ALIASES,
    MAX_EXPANDED_BYTES,
    MAX_NODES,
    MAX_YAML_BYTES,
    PAUSE_EVERY,
    YamlRefused,
    dump_yaml,
    dump_yaml_lines,
    load_yaml,
    load_yaml_value,
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
    assert refused.value.message == (
        f"The aliases of the YAML stand for more than {MAX_ALIASED_VALUES} values (merge keys included)"
    )
    assert refused.value.line == 6


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
        ("a: 1\n b: 2\n", "Mapping values are not allowed in this context", 2, 3),
        ("a: [1, 2\nb: 3\n", "Did not find expected ',' or ']'", 2, 2),
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


# -- amplification, integers and duplicate keys ----------------------------------------------

NESTED_ANCHORS = (
    "a: &a ["
    + ",".join(["x" * 10] * 10)
    + "]\n"
    + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 9) + "]\n" for i in range(8))
)
"""Anchors nested nine deep, each aliasing the one before nine times (6.9 KB of text would be
hundreds of megabytes expanded)."""
ALIAS_FAN_OUT = "a: &a [" + ",".join(["item"] * 3000) + "]\nb: [" + ",".join(["*a"] * 63) + "]\n"
"""63 aliases of a list of 3,000 items."""
MERGE_BOMB = "a: &a {" + ", ".join(f"k{i}: {i}" for i in range(504)) + "}\nb:\n  <<: [" + ", ".join(["*a"] * 63) + "]\n"
"""A merge key merging one mapping of 504 keys 63 times."""
EXPANDED_TEXT = "a: &a " + "x" * 600_000 + "\nb: [*a, *a, *a, *a]\n"
"""Four aliases of a 600,000-character string."""


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        (NESTED_ANCHORS, f"The aliases of the YAML stand for more than {MAX_ALIASED_VALUES} values", 5),
        (ALIAS_FAN_OUT, f"The aliases of the YAML stand for more than {MAX_ALIASED_VALUES} values", 2),
        (MERGE_BOMB, f"The aliases of the YAML stand for more than {MAX_ALIASED_VALUES} values", 3),
        (EXPANDED_TEXT, "The YAML expands to more than 2097152 characters of values", 2),
    ],
    ids=["nested-anchors", "alias-fan-out", "merge-keys", "expanded-text"],
)
def test_amplification_is_refused_at_its_line_small_and_before_any_value_is_built(
    text: str, message: str, line: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[object] = []
    construct_object = yaml.constructor.BaseConstructor.construct_object

    def counted(loader: yaml.constructor.BaseConstructor, node: yaml.Node, deep: bool = False) -> object:
        built.append(node)
        return construct_object(loader, node, deep)

    monkeypatch.setattr(yaml.constructor.BaseConstructor, "construct_object", counted)
    pauses: list[None] = []
    tracemalloc.start()
    try:
        with pytest.raises(YamlRefused) as refused:
            load_yaml(text, pause=lambda: pauses.append(None))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert refused.value.message.startswith(message)
    assert refused.value.line == line
    assert not built, "refused while composing: not one value was built, the expansion never began"
    written = written_values(text)
    assert len(pauses) <= written // PAUSE_EVERY, "only the values written were composed, each once"
    values, characters = expanded(text)
    assert values > MAX_ALIASED_VALUES or characters > MAX_EXPANDED_BYTES, "the expansion is past a bound"
    assert peak < 5 * 1024 * 1024 + 2 * len(text), f"{peak} bytes allocated to refuse it"


def written_values(text: str) -> int:
    """The nodes ``text`` writes (an alias is its anchor's node again, not counted twice)."""
    seen: set[int] = set()
    todo: list[yaml.Node] = [yaml.compose(text, Loader=yaml.SafeLoader)]
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            todo += [child for pair in node.value for child in pair]
        elif isinstance(node, yaml.SequenceNode):
            todo += node.value
    return len(seen)


def expanded(text: str) -> tuple[int, int]:
    """The values and characters of values ``text`` stands for with every alias followed."""
    memo: dict[int, tuple[int, int]] = {}

    def size(node: yaml.Node) -> tuple[int, int]:
        if id(node) not in memo:
            if isinstance(node, yaml.ScalarNode):
                memo[id(node)] = (1, len(node.value))
            else:
                pairs = node.value if isinstance(node, yaml.MappingNode) else [(child,) for child in node.value]
                sizes = [size(child) for pair in pairs for child in pair]
                memo[id(node)] = (1 + sum(v for v, _ in sizes), sum(c for _, c in sizes))
        return memo[id(node)]

    return size(yaml.compose(text, Loader=yaml.SafeLoader))


def test_composing_pauses_every_so_many_values_written() -> None:
    text = "data:\n" + "".join(f"  k{i}: v\n" for i in range(5 * PAUSE_EVERY))
    pauses: list[None] = []
    load_yaml(text, pause=lambda: pauses.append(None))
    assert len(pauses) == written_values(text) // PAUSE_EVERY == 10, "a key, its value: two values per line"


def test_every_value_counts_towards_the_expanded_size() -> None:
    text = "data:\n" + "".join(f"  k{i}: v\n" for i in range(MAX_NODES // 2))
    with pytest.raises(YamlRefused, match=f"expands to more than {MAX_NODES} values"):
        load_yaml(text)


def test_a_merge_key_is_overridden_by_the_keys_written_beside_it() -> None:
    loaded = load_yaml("base: &b {x: 1, y: 2}\nc:\n  <<: *b\n  y: 3\n")
    assert loaded.value["c"] == {"x": 1, "y": 3}


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        ("kind: ConfigMap\ndata:\n  a: '1'\n  b: '2'\n  a: '3'\n", 5, 3),
        ("metadata:\n  labels:\n    app: web\n    app: db\n", 4, 5),
        ("data:\n  a: '1'\nkind: ConfigMap\ndata:\n  b: '2'\n", 4, 1),
        ("data: {a: '1', a: '2'}\n", 1, 16),
    ],
    ids=["data-key", "label", "top-level-data", "flow-mapping"],
)
def test_a_key_written_twice_is_refused_at_its_second_line(text: str, line: int, column: int) -> None:
    with pytest.raises(YamlRefused, match="is written twice in this mapping") as refused:
        load_yaml(text)
    assert (refused.value.line, refused.value.column) == (line, column)


@pytest.mark.parametrize(
    "number",
    [
        "9" * 4301,
        "-" + "9" * 4301,
        "0x" + "f" * 20_000,
        "-0x" + "f" * 3580,
        "0b" + "1" * 30_000,
        "0" + "7" * 5000,
        "1" + ":30" * 3000,
        "1_" * 4301 + "1",
    ],
    ids=["decimal", "negative", "hex", "hex-just-past", "binary", "octal", "sexagesimal", "underscores"],
)
def test_an_integer_past_the_number_fields_digit_limit_is_refused_at_its_line_before_it_is_converted(
    number: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    converted: list[int] = []  # every integer converted is checked as printable next
    monkeypatch.setattr(yaml_text, "printable_int", lambda value: converted.append(value) or True)
    load_yaml("a: 12\n")
    assert converted == [12]
    with pytest.raises(YamlRefused) as refused:
        load_yaml(f"a: 1\nspec:\n  replicas: {number}\n")
    assert converted == [12, 1], "refused before its conversion, which costs quadratic time past the limit"
    limit = sys.get_int_max_str_digits()
    assert (refused.value.message, refused.value.line) == (f"The number has more than {limit} digits", 3)


@pytest.mark.parametrize(
    ("number", "value"),
    [("9" * 4300, int("9" * 4300)), ("0x" + "f" * 3571, int("f" * 3571, 16)), ("0o17", "0o17"), ("017", 15)],
)
def test_integers_within_the_limit_load(number: str, value: object) -> None:
    assert load_yaml(f"a: {number}\n").value["a"] == value


_TRICKY_TEXT = st.lists(
    st.sampled_from(["a", " ", "\n", "\t", ":", "#", "'", "-", "yes", "0755", "\u2028", "\x85", "é", "\r", "{", "~"]),
    max_size=6,
).map("".join)
_TRICKY_VALUES = st.recursive(
    st.one_of(
        _TRICKY_TEXT, st.integers(-3, 3), st.floats(allow_nan=False), st.booleans(), st.none(), st.just(WITHHELD)
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_TRICKY_TEXT, inner, max_size=4)),
    max_leaves=12,
)


@given(st.dictionaries(_TRICKY_TEXT, _TRICKY_VALUES, max_size=5))
def test_an_object_written_entry_by_entry_is_the_same_text_as_written_whole(obj: dict[str, object]) -> None:
    assert dump_yaml_lines(obj) == dump_yaml(obj)
    assert dump_yaml_lines(obj) == dump_yaml(obj)  # from the entries kept


def test_an_object_differing_in_one_value_writes_only_that_entry_again() -> None:
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "data": {f"key-{n}": f"value {n}" for n in range(50)}}
    dump_yaml_lines(obj)
    changed = {**obj, "data": {**obj["data"], "key-7": "changed"}}
    written: list[object] = []
    original = yaml_text.dump_yaml

    def counting(value: object) -> str:
        written.append(value)
        return original(value)

    yaml_text.dump_yaml = counting  # type: ignore[assignment]
    try:
        assert dump_yaml_lines(changed) == original(changed)
    finally:
        yaml_text.dump_yaml = original  # type: ignore[assignment]
    assert written == [{"key-7": "changed"}]


def test_a_fields_value_of_any_type_is_loaded_as_an_object_is() -> None:
    assert load_yaml_value("a: [1, two]") == {"a": [1, "two"]}
    assert load_yaml_value("- on\n- '0755'") == [True, "0755"] and load_yaml_value("12") == 12
    with pytest.raises(YamlRefused, match="written twice") as refused:
        load_yaml_value("a: 1\nb:\n  c: 1\n  c: 2\n")
    assert refused.value.line == 4
    with pytest.raises(YamlRefused, match="not a value"):
        load_yaml_value("- !withheld 'not shown'")
    with pytest.raises(YamlRefused, match="empty"):
        load_yaml_value("# nothing")
