"""What a field's schema says about its widget: choices, bounds, help, defaults, what may be added.

Pure: no Flask, no gevent. Given the schema node of one field (a
:class:`~flask_krm.kube_schema.SchemaView` of the kind the cluster publishes, or of a host's
structural schema), :func:`field_hints` gives what the widget shows (a select of an ``enum``'s
values, an integer's bounds, the default as a placeholder, the description's first paragraph as
help text), :func:`addable_members` the members an object may be given, :func:`initial_value`
what a member starts as when added, and :func:`schema_parse` reads a submitted value as the schema
types it (an int-or-string, a quantity) and refuses one the schema does not allow, with a message
for the person at the field. A pod template's fields take their help from the Pod's schema, whose
sentences about a running Pod ("Cannot be updated.") are left out there (:func:`in_pod_template`).
A member that allows any value (:func:`is_free_form`) is edited as YAML.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import typing as t
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

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

POD_ONLY: t.Final = re.compile(
    r" *(?:(?:This c|C)annot be updated|(?:Init c|C)ontainers cannot currently be added or removed"
    r"|This field is immutable|This field can only be set on creation and is immutable afterwards)\. *"
)
"""Sentences of the Pod schema's descriptions that are about a running Pod, not a pod template
(a Deployment's template is updated, and its containers added and removed, by a rollout)."""

RFC3339: t.Final = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})\Z", re.ASCII)
"""A ``date-time`` (RFC 3339, as Kubernetes' ``metav1.Time`` reads it)."""


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


def in_pod_template(path: Sequence[t.Any]) -> bool:
    """Whether ``path`` is in a pod template (below a ``spec``'s ``template``: a Deployment's,
    a StatefulSet's, a CronJob's job template's...)."""
    return any(segment == "template" and index > 0 and path[index - 1] == "spec" for index, segment in enumerate(path))


def help_text(description: t.Any, *, template: bool = False) -> str:
    """A description as help at a field: its first paragraph, without Kubernetes' list of enum
    values (nor, in a pod template, the sentences of :data:`POD_ONLY`), cut at the last sentence
    that fits :data:`HELP_LENGTH`."""
    if not isinstance(description, str):
        return ""
    text = _ENUM_NOTE.sub("", description).strip().split("\n\n")[0].replace("\n", " ").strip()
    if template:
        text = POD_ONLY.sub(" ", text).strip()
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


def field_hints(
    node: Mapping[str, t.Any] | None, *, required: bool = False, template: bool = False
) -> FieldHints | None:
    """What ``node`` adds to its field's widget (``None``: no schema); ``template``: the field is
    in a pod template (:func:`in_pod_template`)."""
    if node is None:
        return None
    enum = node.get("enum")
    options = tuple(value for value in enum if isinstance(value, str)) if isinstance(enum, list) else ()
    low, high = _bounds(node) if "integer" in types_of(node) or "number" in types_of(node) else (None, None)
    return FieldHints(
        help=help_text(node.get("description"), template=template),
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


def is_free_form(node: Mapping[str, t.Any] | None) -> bool:
    """A member that may hold any value, edited as YAML: ``x-kubernetes-preserve-unknown-fields``,
    ``additionalProperties: true`` or ``type: object`` with no members, items or values declared
    (a CRD's open ``status``, a ``RawExtension``). A node that names no type says nothing (a host's
    list schema gives only what it overrides): it is not free form."""
    if node is None or any(node.get(key) for key in ("properties", "items", "enum", "format")):
        return False
    if isinstance(node.get("additionalProperties"), Mapping) or any(
        key.startswith("x-kubernetes-list") for key in node
    ):
        return False
    if node.get("x-kubernetes-preserve-unknown-fields") is True or node.get("additionalProperties") is True:
        return True
    return types_of(node) == {"object"} and node.get("x-kubernetes-embedded-resource") is not True


def keeps_unknown(node: Mapping[str, t.Any] | None) -> bool:
    """An object whose members the schema does not declare are kept (each edited as YAML)."""
    return node is not None and node.get("x-kubernetes-preserve-unknown-fields") is True


MEMBER_STEP: t.Final = "/"
"""Joins a member and one of its own members in an add choice (``resources/limits``)."""


def addable_members(node: SchemaView | None, value: t.Any, emptied: t.Collection[str] = ()) -> tuple[MemberChoice, ...]:
    """The declared members the object ``value`` does not have, in the schema's order (``status``
    and the members an API server sets are not offered); for each member of ``emptied`` (shown as
    absent, see :func:`shown_absent`), its own members, named ``member/its-member``."""
    if node is None or not isinstance(value, Mapping):
        return ()
    choices: list[MemberChoice] = []
    for name in node.members():
        if name in _NEVER_ADDED or _read_only(node.member(name)):
            continue
        if name not in value:
            choices.append(MemberChoice(name, humanize(name)))
        elif name in emptied:
            member = node.member(name)
            choices.extend(
                MemberChoice(f"{name}{MEMBER_STEP}{inner.name}", f"{humanize(name)}: {inner.label}")
                for inner in addable_members(member, {})
            )
    return tuple(choices)


def shown_absent(parent: SchemaView | None, name: t.Any, value: t.Any) -> bool:
    """Whether member ``name`` of an object of schema ``parent``, holding ``value`` as the server
    does, is shown as absent: an optional object of declared members left empty (a container's
    ``resources: {}``, which Kubernetes writes for a container given none). Its members are
    offered to add in its object (:func:`addable_members`)."""
    if parent is None or not isinstance(name, str) or not isinstance(value, Mapping) or value:
        return False
    if name not in parent.members() or name in required_members(parent):
        return False
    node = parent.member(name)
    return node is not None and bool(node.members()) and not is_free_form(node) and not is_string_map(node)


_NEVER_ADDED: t.Final = frozenset({"status", "apiVersion", "kind", "metadata"})


def _read_only(node: Mapping[str, t.Any] | None) -> bool:
    return node is not None and node.get("readOnly") is True


def is_removable(parent: Mapping[str, t.Any] | None, name: t.Any) -> bool:
    """Whether member ``name`` of an object of schema ``parent`` may be removed: declared and not
    required, or not declared by an object that keeps such members (:func:`keeps_unknown`)."""
    if parent is None or not isinstance(name, str):
        return False
    properties = parent.get("properties")
    declared = isinstance(properties, Mapping) and name in properties
    return name not in required_members(parent) if declared else keeps_unknown(parent)


def initial_value(node: Mapping[str, t.Any]) -> t.Any:
    """What a member of schema ``node`` starts as when a person adds it: its default, else an
    empty value of its type (an enum's first value, the least integer its bounds allow)."""
    default = node.get("default")
    if default is not None and not (isinstance(default, dict) and not default and node.get("properties")):
        return json.loads(json.dumps(default))
    types = types_of(node)
    if is_free_form(node):
        return {}
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


REQUIRED_MESSAGE: t.Final = "This field is required: enter a value."


def schema_parse(node: Mapping[str, t.Any], parse: Parse, *, required: bool = False) -> Parse:
    """``parse`` (a widget's) as the schema ``node`` reads it: an int-or-string is a whole number
    when it is one and text otherwise, a quantity is text in Kubernetes' syntax, and any value is
    checked against the enum, bounds, length, pattern and format (:class:`SchemaRefused`);
    ``required``: the member must be there, and empty text is refused."""

    def read(submitted: str | None, server_value: t.Any) -> t.Any:
        if required and submitted is not None and not submitted.strip() and "boolean" not in types_of(node):
            raise SchemaRefused(REQUIRED_MESSAGE)
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
        return _format_refusal(node.get("format"), value) if value else ""
    return ""


def _format_refusal(form: t.Any, value: str) -> str:
    """Why the string ``value`` is not of the format ``form`` (``date-time``, ``byte``; empty: it is,
    or the format is not checked here)."""
    if form == "date-time":
        if RFC3339.match(value):
            try:
                datetime.fromisoformat(value.upper().replace("Z", "+00:00"))
                return ""
            except ValueError:
                pass
        return "Enter a date and time (RFC 3339), such as 2030-01-31T12:00:00Z."
    if form == "byte":
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            return "Enter base64 text, such as aGVsbG8=."
    return ""


__all__ = [
    "FieldHints",
    "MemberChoice",
    "SchemaRefused",
    "addable_members",
    "field_hints",
    "help_text",
    "in_pod_template",
    "initial_value",
    "is_free_form",
    "is_removable",
    "keeps_unknown",
    "is_string_map",
    "shown_absent",
    "refusal",
    "schema_parse",
]
