"""Label and field selectors: the query syntax of ``labelSelector`` and ``fieldSelector``."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from . import object_meta

_SPECIAL = "!=,()<> \t\n"


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
    """``validateLabelKey`` as the parser calls it (with no field path: ``<nil>``)."""
    errors = object_meta.qualified_name(key)
    if errors:
        raise SelectorError(f'<nil>: Invalid value: "{key}": ' + "; ".join(errors))
    return key


def _check_value(key: str, value: str, index: int = 0) -> str:
    """``validateLabelValue``: the value at ``values[index][key]``."""
    errors = object_meta.label_value(value)
    if errors:
        raise SelectorError(f'values[{index}][{key}]: Invalid value: "{value}": ' + "; ".join(errors))
    return value


def _is_word(token: str) -> bool:
    return token not in ("!", "=", "==", "!=", ",", "(", ")", "<", ">")


class _Parser:
    """The recursive descent of ``labels.Parse``, with its error messages."""

    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.position = 0

    def peek(self) -> str | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def take(self) -> str:
        token = self.peek()
        self.position += 1
        return "" if token is None else token

    def selector(self) -> LabelSelector:
        requirements: list[Requirement] = []
        while self.peek() is not None:
            token = self.peek() or ""
            if not _is_word(token) and token != "!":
                raise SelectorError(f"found '{token}', expected: !, identifier, or 'end of string'")
            try:
                requirements.append(self.requirement())
            except SelectorError as error:
                raise SelectorError(f"unable to parse requirement: {error}") from None
            separator = self.take()
            if separator == "" and self.peek() is None:
                break
            if separator != ",":
                raise SelectorError(f"found '{separator}', expected: ',' or 'end of string'")
            following = self.peek() or ""
            if not following or (not _is_word(following) and following != "!"):
                raise SelectorError(f"found '{following}', expected: identifier after ','")
        return LabelSelector(tuple(requirements))

    def requirement(self) -> Requirement:
        negated = self.peek() == "!"
        if negated:
            self.take()
        key = self.take()
        if not key or not _is_word(key):
            raise SelectorError(f"found '{key}', expected: identifier")
        _check_key(key)
        if negated or self.peek() in (None, ","):
            return Requirement(key, "!" if negated else "exists")
        operator = self.take()
        if operator in ("in", "notin"):
            return Requirement(key, operator, self.values(key))
        if operator not in ("=", "==", "!=", "<", ">"):
            raise SelectorError(f"found '{operator}', expected: in, notin, =, ==, !=, gt, lt")
        value = self.take() if self.peek() is not None and _is_word(self.peek() or "") else ""
        if operator in ("<", ">"):
            if not re.fullmatch(r"-?\d+", value):
                raise SelectorError(
                    f"values[0]: Invalid value: \"{value}\": for 'Gt', 'Lt' operators, the value must be an integer"
                )
            return Requirement(key, "gt" if operator == ">" else "lt", (value,))
        return Requirement(key, "!=" if operator == "!=" else "=", (_check_value(key, value),))

    def values(self, key: str) -> tuple[str, ...]:
        """``parseValues``: ``()`` is the empty value; the values are checked in sorted order (a Go string set)."""
        opening = self.take()
        if opening != "(":
            raise SelectorError(f"found '{opening}' expected: '('")
        ahead = self.peek() or ""
        if ahead == ")":
            self.take()
            return ("",)
        if ahead != "," and not _is_word(ahead):
            raise SelectorError(f"found '{ahead}', expected: ',', ')' or identifier")
        found = self.identifiers()
        if self.take() != ")":
            raise SelectorError(f"found '{ahead}', expected: ')'")
        ordered = sorted(found)
        return tuple(_check_value(key, value, index) for index, value in enumerate(ordered))

    def identifiers(self) -> set[str]:
        """``parseIdentifiersList``: comma-separated, possibly empty identifiers up to (not taking) the ``)``."""
        found: set[str] = set()
        while True:
            token = self.take()
            if token == ",":
                if not found or self.peek() in (",", ")"):
                    found.add("")
                if self.peek() == ")":
                    return found
            elif token and _is_word(token):
                found.add(token)
                ahead = self.peek()
                if ahead == ")":
                    return found
                if ahead != ",":
                    raise SelectorError(f"found '{ahead or ''}', expected: ',' or ')'")
            else:
                raise SelectorError(f"found '{token}', expected: ',', or identifier")


def parse_label_selector(text: str) -> LabelSelector:
    """Parse the full ``labels.Parse`` syntax: ``=``, ``==``, ``!=``, ``in``, ``notin``, exists, ``!``, ``<``, ``>``."""
    return _Parser(text).selector()


def selector_from_match(selector: Mapping[str, Any]) -> LabelSelector:
    """A ``metav1.LabelSelector`` object (``matchLabels`` and ``matchExpressions``) as a selector."""
    requirements = [Requirement(key, "=", (str(value),)) for key, value in (selector.get("matchLabels") or {}).items()]
    operators = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
    for expression in selector.get("matchExpressions") or []:
        requirements.append(
            Requirement(expression["key"], operators[expression["operator"]], tuple(expression.get("values") or ()))
        )
    return LabelSelector(tuple(requirements))


def selector_string(selector: Mapping[str, Any] | None) -> str:
    """``metav1.LabelSelectorAsSelector(...).String()``: requirements sorted by key, joined by commas."""
    requirements: list[tuple[str, str]] = []
    for key, value in ((selector or {}).get("matchLabels") or {}).items():
        requirements.append((key, f"{key}={value}"))
    for expression in (selector or {}).get("matchExpressions") or []:
        key, operator = expression.get("key", ""), expression.get("operator")
        values = ",".join(sorted(expression.get("values") or []))
        text = {
            "In": f"{key} in ({values})",
            "NotIn": f"{key} notin ({values})",
            "Exists": key,
            "DoesNotExist": f"!{key}",
        }
        requirements.append((key, text.get(str(operator), "<invalid>")))
    return ",".join(text for _, text in sorted(requirements, key=lambda requirement: requirement[0]))


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


def parse_field_selector(text: str, supported: tuple[str, ...], unsupported: Callable[[str], str]) -> FieldSelector:
    """Parse a field selector; a field outside ``supported`` fails with the message ``unsupported(field)``."""
    terms: list[tuple[str, str, str]] = []
    for part in _split_unescaped(text, ","):
        if not part.strip():
            continue
        match = re.match(r"^((?:[^=!\\]|\\.)*)(==|!=|=)(.*)$", part)
        if not match:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
        name, operator, value = match.group(1).strip(), match.group(2), _unescape(match.group(3))
        if name not in supported:
            raise SelectorError(unsupported(name))
        terms.append((name, "!=" if operator == "!=" else "=", value))
    return FieldSelector(tuple(terms))
