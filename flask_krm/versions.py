"""resourceVersion ordering.

Kubernetes: "Resource versions are compared as arbitrary bitsize decimal integers ... If they are
not of equal length, the longer one is greater. If they are of equal length, the lexicographically
greater one is greater." A version is *decimal* when it is non-empty, starts with 1-9 and has only
digits (``0123`` and ``0`` are not). Two versions are orderable only if both are decimal; nothing is
ever parsed into a fixed-width integer.

Kubernetes 1.35+ makes orderability a conformance requirement, so :attr:`Ordering.STRICT` (the
default) ends a stream on a version it cannot order; :attr:`Ordering.LENIENT` is the opt-in for an
aggregated API server that serves opaque versions: it orders what it can and drops nothing it
cannot.
"""

from __future__ import annotations

import enum
from typing import Final

__all__ = [
    "MAX_RESOURCE_VERSION_LENGTH",
    "Ordering",
    "is_decimal",
    "compare",
    "is_stale",
    "unorderable_message",
]

MAX_RESOURCE_VERSION_LENGTH: Final = 1024
"""Longer strings are not treated as decimal resourceVersions (Kubernetes' own example has 40
digits). Such a value is merely unorderable: strict mode refuses it, lenient mode passes it."""


class Ordering(enum.Enum):
    """How a stream treats resourceVersions it cannot order."""

    STRICT = "strict"
    """Refuse: the stream ends with a terminal ``INTERNAL`` error naming the lenient escape hatch."""
    LENIENT = "lenient"
    """Order what can be ordered; pass through (never drop) what cannot."""


def is_decimal(rv: object) -> bool:
    """True for a string of digits with no leading zero (and at most the maximum length)."""
    return (
        isinstance(rv, str)
        and 0 < len(rv) <= MAX_RESOURCE_VERSION_LENGTH
        and rv.isascii()
        and rv.isdigit()
        and rv[0] != "0"
    )


def compare(a: object, b: object) -> int | None:
    """``-1``, ``0`` or ``1`` as decimal ``a`` is lower, equal or greater than ``b``; ``None`` when
    either is not decimal (even when the two strings are equal)."""
    if not (is_decimal(a) and is_decimal(b)):
        return None
    assert isinstance(a, str) and isinstance(b, str)
    if len(a) != len(b):
        return -1 if len(a) < len(b) else 1
    if a == b:
        return 0
    return -1 if a < b else 1


def is_stale(rv: object, high_water: object) -> bool | None:
    """Whether ``rv`` is older than ``high_water`` (equal is not stale); ``None`` if unorderable."""
    order = compare(rv, high_water)
    return None if order is None else order < 0


def _shown(rv: object) -> str:
    text = rv if isinstance(rv, str) else repr(rv)
    if len(text) > 64:
        text = text[:61] + "..."
    return text


def unorderable_message(rv: object) -> str:
    """The terminal error message for a resourceVersion strict ordering cannot order.

    The wording is fixed by the conformance corpus (``resourceversion-unorderable.sse``), which
    names the reference gateway's setting; in flask-krm the same switch is ``Ordering.LENIENT``.
    """
    return (
        f"upstream served a resourceVersion that cannot be ordered ({_shown(rv)}). Kubernetes 1.35+ "
        "requires every resourceVersion to be an orderable decimal, so this upstream is either "
        "older than 1.35 or an aggregated API server that does not conform. Set Gateway.Ordering = "
        "OrderingLenient to stream it anyway, without per-object monotonicity."
    )
