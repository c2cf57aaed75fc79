"""Label and field selectors: the query syntax of ``labelSelector`` and ``fieldSelector``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_SPECIAL = "!=,()<> \t\n"
_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_PREFIX = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


class SelectorError(ValueError):
    """A selector string that does not parse; the server answers 400 BadRequest with the message."""


@dataclass(frozen=True)
class Requirement:
    """One clause of a label selector."""

    key: str
    operator: str  # "=", "!=", "in", "notin", "exists", "!", "gt", "lt"
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.operator == "exists":
            return present
        if self.operator == "!":
            return not present
        if self.operator in ("=", "in"):
            return present and value in self.values
        if self.operator in ("!=", "notin"):
            return not present or value not in self.values
        if not present or value is None or not re.fullmatch(r"-?\d+", value):
            return False
        bound = int(self.values[0])
        return int(value) > bound if self.operator == "gt" else int(value) < bound


@dataclass(frozen=True)
class LabelSelector:
    """A parsed ``labelSelector`` (all requirements must hold)."""

    requirements: tuple[Requirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(requirement.matches(labels) for requirement in self.requirements)


def _tokens(text: str) -> list[str]:
    tokens: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char.isspace():
            index += 1
        elif text.startswith(("==", "!="), index):
            tokens.append(text[index : index + 2])
            index += 2
        elif char in "!=,()<>":
            tokens.append(char)
            index += 1
        else:
            start = index
            while index < len(text) and text[index] not in _SPECIAL:
                index += 1
            tokens.append(text[start:index])
    return tokens


def _check_key(key: str) -> str:
    prefix, _, name = key.rpartition("/")
    if (prefix and (len(prefix) > 253 or not _PREFIX.match(prefix))) or len(name) > 63 or not _NAME.match(name):
        raise SelectorError(f"unable to parse requirement: invalid label key {key!r}")
    return key


def _check_value(value: str) -> str:
    if len(value) > 63 or not _VALUE.match(value):
        raise SelectorError(f"unable to parse requirement: invalid label value: {value!r}")
    return value


def _is_word(token: str) -> bool:
    return token not in ("!", "=", "==", "!=", ",", "(", ")", "<", ">")


def parse_label_selector(text: str) -> LabelSelector:
    """Parse the full ``labels.Parse`` syntax: ``=``, ``==``, ``!=``, ``in``, ``notin``, exists, ``!``, ``<``, ``>``."""
    tokens = _tokens(text)
    requirements: list[Requirement] = []
    position = 0

    def take() -> str:
        nonlocal position
        if position >= len(tokens):
            raise SelectorError(f"found '', expected: identifier in {text!r}")
        position += 1
        return tokens[position - 1]

    while position < len(tokens):
        token = take()
        if token == "!":
            key = take()
            if not _is_word(key):
                raise SelectorError(f"found '{key}', expected: identifier after '!'")
            requirements.append(Requirement(_check_key(key), "!"))
        elif _is_word(token):
            key = _check_key(token)
            following = tokens[position] if position < len(tokens) else ","
            if following == ",":
                requirements.append(Requirement(key, "exists"))
            elif following in ("=", "==", "!="):
                take()
                value = tokens[position] if position < len(tokens) and _is_word(tokens[position]) else ""
                if value:
                    take()
                requirements.append(Requirement(key, "!=" if following == "!=" else "=", (_check_value(value),)))
            elif following in ("<", ">"):
                take()
                bound = take()
                if not re.fullmatch(r"-?\d+", bound):
                    raise SelectorError(f"unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer")
                requirements.append(Requirement(key, "gt" if following == ">" else "lt", (bound,)))
            elif following in ("in", "notin"):
                take()
                if take() != "(":
                    raise SelectorError(f"found '{tokens[position - 1]}', expected: '('")
                values: list[str] = []
                while True:
                    item = take()
                    if item == ")":
                        break
                    if item == ",":
                        continue
                    if not _is_word(item):
                        raise SelectorError(f"found '{item}', expected: ',', ')' or identifier")
                    values.append(_check_value(item))
                requirements.append(Requirement(key, following, tuple(values)))
            else:
                raise SelectorError(f"found '{following}', expected: in, notin, =, ==, !=, gt, lt")
        else:
            raise SelectorError(f"found '{token}', expected: !, identifier, or 'end of string'")
        if position < len(tokens):
            separator = take()
            if separator != ",":
                raise SelectorError(f"found '{separator}', expected: ',' or 'end of string'")
            if position == len(tokens):
                raise SelectorError("found '', expected: !, identifier")
    return LabelSelector(tuple(requirements))


def selector_from_match(selector: Mapping[str, Any]) -> LabelSelector:
    """A ``metav1.LabelSelector`` object (``matchLabels`` and ``matchExpressions``) as a selector."""
    requirements = [Requirement(key, "=", (str(value),)) for key, value in (selector.get("matchLabels") or {}).items()]
    operators = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
    for expression in selector.get("matchExpressions") or []:
        requirements.append(
            Requirement(expression["key"], operators[expression["operator"]], tuple(expression.get("values") or ()))
        )
    return LabelSelector(tuple(requirements))


@dataclass(frozen=True)
class FieldSelector:
    """A parsed ``fieldSelector``: terms ``field=value``, ``field==value`` or ``field!=value``."""

    terms: tuple[tuple[str, str, str], ...] = ()

    @property
    def empty(self) -> bool:
        return not self.terms

    def exact(self, field: str) -> str | None:
        """The value this selector requires ``field`` to equal, if it does."""
        for name, operator, value in self.terms:
            if name == field and operator == "=":
                return value
        return None

    def matches(self, fields: Mapping[str, str]) -> bool:
        return all((fields.get(name) == value) == (operator == "=") for name, operator, value in self.terms)


def _split_unescaped(text: str, separator: str) -> list[str]:
    parts, current, index = [], "", 0
    while index < len(text):
        if text[index] == "\\" and index + 1 < len(text):
            current += text[index : index + 2]
            index += 2
        elif text[index] == separator:
            parts.append(current)
            current = ""
            index += 1
        else:
            current += text[index]
            index += 1
    parts.append(current)
    return parts


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def parse_field_selector(text: str, supported: tuple[str, ...]) -> FieldSelector:
    """Parse a field selector and check every field against the type's supported field labels."""
    terms: list[tuple[str, str, str]] = []
    for part in _split_unescaped(text, ","):
        if not part.strip():
            continue
        match = re.match(r"^((?:[^=!\\]|\\.)*)(==|!=|=)(.*)$", part)
        if not match:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
        name, operator, value = match.group(1).strip(), match.group(2), _unescape(match.group(3))
        if name not in supported:
            raise SelectorError(f"field label not supported: {name}")
        terms.append((name, "!=" if operator == "!=" else "=", value))
    return FieldSelector(tuple(terms))
