"""JSON a browser sends: bounded nesting, finite numbers, one precise refusal.

Every route that reads JSON from a request (an edited field's path and value, a create body, a
native merge patch) parses it with :func:`load_json`. It refuses, before any other code sees the
value, what would exhaust the server's recursion (nesting deeper than :data:`MAX_DEPTH`) and what
JSON cannot carry although Python's parser accepts it (``NaN``, ``Infinity``, numbers overflowing
to infinity). The size of a request is bounded before it is parsed, by the request size limit
(``KRM_MAX_REQUEST_BYTES``, :func:`flask_krm.guards.limit_request_size`).

Pure: no Flask, no gevent, no network.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final

MAX_DEPTH: Final = 64
"""Nesting levels a JSON value from a request may have (``[]`` and ``{}`` are one level).

Kubernetes objects nest far less deeply; the bound keeps every recursive step (merging, diffing,
copying, rendering) well inside the interpreter's recursion limit."""


class JsonRefused(ValueError):
    """JSON from a request that is refused; the message says why and is safe to show."""


class NotJson(JsonRefused):
    """The text is not JSON. ``detail`` says where the parser stopped."""

    def __init__(self, what: str, detail: str) -> None:
        super().__init__(f"{what} is not JSON: {detail}")
        self.detail = detail


class TooDeep(JsonRefused):
    """The value nests deeper than :data:`MAX_DEPTH` levels."""

    def __init__(self, what: str) -> None:
        super().__init__(f"{what} is nested deeper than {MAX_DEPTH} levels")


class TooLong(JsonRefused):
    """The value holds an integer with more digits than Python converts
    (``sys.get_int_max_str_digits()``)."""

    def __init__(self, what: str) -> None:
        super().__init__(f"{what} holds a number of more than {sys.get_int_max_str_digits()} digits")


class NotFinite(JsonRefused):
    """The value holds ``NaN`` or an infinite number, which JSON cannot carry."""

    def __init__(self, what: str) -> None:
        super().__init__(f"{what} holds NaN or Infinity, which JSON cannot carry")


def load_json(text: str | bytes, *, what: str = "the body") -> Any:
    """The JSON value of ``text``. ``what`` names it in the refusal's message.

    Raises :class:`NotJson`, :class:`TooDeep`, :class:`TooLong` or :class:`NotFinite` (all
    :class:`JsonRefused`).
    """

    def constant(name: str) -> Any:
        raise NotFinite(what)

    def integer(literal: str) -> int:
        try:
            return int(literal)
        except ValueError:
            raise TooLong(what) from None

    def number(literal: str) -> float:
        value = float(literal)
        if not math.isfinite(value):
            raise NotFinite(what)
        return value

    try:
        value = json.loads(text, parse_constant=constant, parse_float=number, parse_int=integer)
    except RecursionError:
        raise TooDeep(what) from None
    except json.JSONDecodeError as exc:
        raise NotJson(what, f"{exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except JsonRefused:
        raise
    except ValueError:  # not UTF-8
        raise NotJson(what, "it is not UTF-8 text") from None
    check_json_value(value, what=what)
    return value


def check_json_value(value: Any, *, what: str = "the value") -> None:
    """Refuse a value built elsewhere that :func:`load_json` would refuse: nesting deeper than
    :data:`MAX_DEPTH` or a non-finite number. Walks iteratively, so any depth is safe to check.

    Raises :class:`TooDeep` or :class:`NotFinite`.
    """
    if nests_too_deep(value):
        raise TooDeep(what)
    for item in _walk(value):
        if isinstance(item, float) and not math.isfinite(item):
            raise NotFinite(what)


def nests_too_deep(value: Any) -> bool:
    """Whether ``value`` nests deeper than :data:`MAX_DEPTH` levels (checked without recursion)."""
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        children = _children(item)
        if children is None:
            continue
        if depth >= MAX_DEPTH:
            return True
        pending.extend((child, depth + 1) for child in children)
    return False


def _walk(value: Any) -> Iterator[Any]:
    pending = [value]
    while pending:
        item = pending.pop()
        yield item
        pending.extend(_children(item) or ())


def _children(item: Any) -> Iterable[Any] | None:
    if isinstance(item, Mapping):
        return item.values()
    if isinstance(item, (list, tuple)):
        return item
    return None
