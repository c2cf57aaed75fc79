"""What a field's schema says about its widget: choices, bounds, help, defaults, what may be added.

Pure: no Flask, no gevent. Given the schema node of one field (a
:class:`~flask_krm.kube_schema.SchemaView` of the kind the cluster publishes, or of a host's
structural schema), :func:`field_hints` gives what the widget shows (a select of an ``enum``'s
values, an integer's bounds, the default as a placeholder, the description's first paragraph as
help text), :func:`addable_members` the members an object may be given, :func:`initial_value`
what a member starts as when added, and :func:`schema_parse` reads a submitted value as the schema
types it (an int-or-string, a quantity) and refuses one the schema does not allow, with a message
for the person at the field.
"""

from __future__ import annotations

import json
import re
import typing as t
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..kube_schema import (
    SchemaView,
    is_int_or_string,
    is_quantity,
    required_members,
    types_of,
)
from .labels import humanize

HELP_LENGTH: t.Final = 240
"""The most characters of a description shown at a field (its first paragraph, cut at a sentence)."""

INT32: t.Final = (-(2**31), 2**31 - 1)
INT64: t.Final = (-(2**63), 2**63 - 1)

QUANTITY: t.Final = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?\Z")
"""Kubernetes' quantity syntax (``resource.ParseQuantity``): a decimal number and a suffix."""

_INTEGER: t.Final = re.compile(r"[+-]?\d{1,19}\Z")
_ENUM_NOTE: t.Final = re.compile(r"\n*Possible enum values:.*", re.S)


@dataclass(frozen=True, slots=True)
class FieldHints:
    """What a field's schema adds to its widget."""

    help: str = ""
    """The description's first paragraph (at most :data:`HELP_LENGTH` characters)."""
    options: tuple[str, ...] = ()
    """An ``enum``'s values: the field is a select of them."""
    minimum: int | float | None = None
    maximum: int | float | None = None
    placeholder: str = ""
    """The default, as the empty field shows it."""
    required: bool = False
    text_value: bool = False
    """An int-or-string or a quantity: typed as text, read back as the schema types it."""


@dataclass(frozen=True, slots=True)
class MemberChoice:
    """An absent member an object may be given: its name and its label."""

    name: str
    label: str


def help_text(description: t.Any) -> str:
    """A description as help at a field: its first paragraph, without Kubernetes' list of enum
    values, cut at the last sentence that fits :data:`HELP_LENGTH`."""
    if not isinstance(description, str):
        return ""
    text = _ENUM_NOTE.sub("", description).strip().split("\n\n")[0].replace("\n", " ").strip()
    if len(text) <= HELP_LENGTH:
        return text
    cut = text.rfind(". ", 0, HELP_LENGTH)
    return text[: cut + 1] if cut > 0 else text[: HELP_LENGTH - 1].rstrip() + "…"


def _bounds(node: Mapping[str, t.Any]) -> tuple[int | float | None, int | float | None]:
    low, high = node.get("minimum"), node.get("maximum")
    fallback = INT32 if node.get("format") == "int32" else INT64 if node.get("format") == "int64" else (None, None)
    low = low if isinstance(low, (int, float)) and not isinstance(low, bool) else fallback[0]
    high = high if isinstance(high, (int, float)) and not isinstance(high, bool) else fallback[1]
    if isinstance(low, (int, float)) and node.get("exclusiveMinimum") is True:
        low = low + 1 if isinstance(low, int) else low
    if isinstance(high, (int, float)) and node.get("exclusiveMaximum") is True:
        high = high - 1 if isinstance(high, int) else high
    return low, high


def _placeholder(default: t.Any) -> str:
    if default is None or isinstance(default, (dict, list)):
        return ""
    if isinstance(default, bool):
        return "true" if default else "false"
    return str(default)


def field_hints(node: Mapping[str, t.Any] | None, *, required: bool = False) -> FieldHints | None:
    """What ``node`` adds to its field's widget (``None``: no schema)."""
    if node is None:
        return None
    enum = node.get("enum")
    options = tuple(value for value in enum if isinstance(value, str)) if isinstance(enum, list) else ()
    low, high = _bounds(node) if "integer" in types_of(node) or "number" in types_of(node) else (None, None)
    return FieldHints(
        help=help_text(node.get("description")),
        options=options,
        minimum=low,
        maximum=high,
        placeholder=_placeholder(node.get("default")),
        required=required,
        text_value=is_int_or_string(node) or is_quantity(node),
    )


def is_string_map(node: Mapping[str, t.Any] | None) -> bool:
    """An object with no declared members whose values are strings or quantities (``resources``'
    ``limits``, a selector's labels): edited as a key/value map."""
    if node is None or node.get("properties"):
        return False
    extra = node.get("additionalProperties")
    if not isinstance(extra, Mapping):
        return False
    return types_of(extra) == {"string"} or is_quantity(extra)


def addable_members(node: SchemaView | None, value: t.Any) -> tuple[MemberChoice, ...]:
    """The declared members the object ``value`` does not have, in the schema's order (``status``
    and the members an API server sets are not offered)."""
    if node is None or not isinstance(value, Mapping):
        return ()
    return tuple(
        MemberChoice(name, humanize(name))
        for name in node.members()
        if name not in value and name not in _NEVER_ADDED and not _read_only(node.member(name))
    )


_NEVER_ADDED: t.Final = frozenset({"status", "apiVersion", "kind", "metadata"})


def _read_only(node: Mapping[str, t.Any] | None) -> bool:
    return node is not None and node.get("readOnly") is True


def is_removable(parent: Mapping[str, t.Any] | None, name: t.Any) -> bool:
    """Whether member ``name`` of an object of schema ``parent`` may be removed (declared, not required)."""
    if parent is None or not isinstance(name, str):
        return False
    properties = parent.get("properties")
    return isinstance(properties, Mapping) and name in properties and name not in required_members(parent)


def initial_value(node: Mapping[str, t.Any]) -> t.Any:
    """What a member of schema ``node`` starts as when a person adds it: its default, else an
    empty value of its type (an enum's first value, the least integer its bounds allow)."""
    default = node.get("default")
    if default is not None and not (isinstance(default, dict) and not default and node.get("properties")):
        return json.loads(json.dumps(default))
    types = types_of(node)
    if is_int_or_string(node) or is_quantity(node):
        return ""
    if "array" in types:
        return []
    if "object" in types or node.get("properties") or node.get("additionalProperties"):
        return {}
    if "boolean" in types:
        return False
    if "integer" in types or "number" in types:
        low, high = _bounds(node)
        return low if isinstance(low, int) and low > 0 else 0 if high is None or high >= 0 else high
    enum = node.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    return ""


Parse: t.TypeAlias = Callable[[str | None, t.Any], t.Any]


class SchemaRefused(ValueError):
    """A value the schema does not allow, with what to tell the person."""


def schema_parse(node: Mapping[str, t.Any], parse: Parse) -> Parse:
    """``parse`` (a widget's) as the schema ``node`` reads it: an int-or-string is a whole number
    when it is one and text otherwise, a quantity is text in Kubernetes' syntax, and any value is
    checked against the enum, bounds, length and pattern (:class:`SchemaRefused`)."""

    def read(submitted: str | None, server_value: t.Any) -> t.Any:
        if is_int_or_string(node) and submitted is not None:
            text = submitted.strip()
            value: t.Any = int(text) if _INTEGER.match(text) else submitted
        elif is_quantity(node) and submitted is not None:
            value = submitted.strip()
            if not QUANTITY.match(value):
                raise SchemaRefused("Enter a quantity, such as 500m, 2 or 128Mi.")
            if isinstance(server_value, (int, float)) and _INTEGER.match(value):
                value = int(value)
        else:
            value = parse(submitted, server_value)
        problem = refusal(node, value)
        if problem:
            raise SchemaRefused(problem)
        return value

    return read


def refusal(node: Mapping[str, t.Any], value: t.Any) -> str:
    """Why ``value`` is not allowed by ``node`` (empty: it is)."""
    enum = node.get("enum")
    if isinstance(enum, list) and enum and value not in enum:
        return "Choose one of " + ", ".join(str(choice) for choice in enum) + "."
    types = types_of(node)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and types & {"integer", "number"}:
        if "integer" in types and "number" not in types and not isinstance(value, int):
            return "Enter a whole number."
        low, high = _bounds(node)
        if (low is not None and value < low) or (high is not None and value > high):
            return (
                f"Enter a number from {low} to {high}."
                if low is not None and high is not None
                else (f"Enter a number of at least {low}." if low is not None else f"Enter a number of at most {high}.")
            )
    if isinstance(value, str) and "string" in types:
        longest = node.get("maxLength")
        if isinstance(longest, int) and len(value) > longest:
            return f"Enter at most {longest} characters."
        pattern = node.get("pattern")
        if isinstance(pattern, str) and value:
            try:
                matches = re.search(pattern, value) is not None
            except re.error:
                matches = True  # a pattern Python cannot read: the API server decides
            if not matches:
                return f"Enter a value matching {pattern}."
    return ""


__all__ = [
    "FieldHints",
    "MemberChoice",
    "SchemaRefused",
    "addable_members",
    "field_hints",
    "help_text",
    "initial_value",
    "is_removable",
    "is_string_map",
    "refusal",
    "schema_parse",
]
