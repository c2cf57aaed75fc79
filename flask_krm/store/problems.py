"""Problems: why an edit of a draft was not made, as values the web layer turns into answers.

Every way a person changes a draft (:mod:`.operations`) answers with an
:class:`~.operations.Outcome` or raises :class:`EditRefused` holding one or more :class:`Problem`:
a :class:`ProblemKind`, where it is in the person's view, and, for a value the draft cannot hold,
the store's own description of why (``detail``). Nothing here is addressed to a browser: statuses
and sentences are the web layer's (one table, :mod:`flask_krm.ui.problems`).

Pure: no Flask, no gevent.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from .errors import (
    InvalidValueError,
    ItemExistsError,
    KeyExistsError,
    MalformedPathError,
    MissingItemError,
    MissingKeyError,
    PathTypeError,
    ReadOnlyPathError,
    StoreError,
    UnknownResourceError,
)
from .items import Address


class ProblemKind(enum.Enum):
    """What is wrong with an edit (see :class:`Problem`)."""

    UNKNOWN_OBJECT = "unknown-object"
    """The store no longer holds the object."""
    MALFORMED_PATH = "malformed-path"
    """The edit names no path of this object (a key where an index belongs, and the like)."""
    READ_ONLY = "read-only"
    """The path is not editable under the store's policy, redactions and machinery rules."""
    SHAPE_CHANGED = "shape-changed"
    """The draft no longer has the shape the edit was made against (a list became text...)."""
    KEY_EXISTS = "key-exists"
    """The key to add, or to rename to, is already in its map (``detail``: the key)."""
    MISSING_KEY = "missing-key"
    """The key to rename is gone."""
    MISSING_ITEM = "missing-item"
    """No item of the keyed list has the keys the edit names (removed or renamed meanwhile)."""
    ITEM_EXISTS = "item-exists"
    """An item with the new item's keys is already in the list."""
    INVALID_VALUE = "invalid-value"
    """A value the draft cannot hold (``detail``: why): not JSON, a wrong type for its place, past
    a size limit (:mod:`.bounds`)."""
    NULL_IN_MAP = "null-in-map"
    """An empty value (null) written into a map, which a merge patch cannot carry."""
    WITHHELD_CHANGED = "withheld-changed"
    """A withheld value (a Secret's) changed or removed in a view that did not show it."""
    WITHHELD_COPIED = "withheld-copied"
    """The placeholder of a withheld value moved or copied elsewhere."""
    NOT_AN_ITEM = "not-an-item"
    """An item edit whose path does not end at a list item."""
    ROW_MOVED = "row-moved"
    """The row of a list of strings the edit started from was changed or removed meanwhile."""
    ALREADY_FIRST = "already-first"
    """An item moved up that is first in its list."""
    ALREADY_LAST = "already-last"
    """An item moved down that is last in its list."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One reason an edit was not made: its kind, where it is in the person's view (the
    operation's path, or the place in a whole-object view), and the store's detail."""

    kind: ProblemKind
    path: Address = ()
    detail: str = ""


class EditRefused(StoreError):
    """An edit that was not made (nothing of it was): every problem found."""

    def __init__(self, problems: tuple[Problem, ...]) -> None:
        super().__init__("; ".join(f"{p.kind.value} at {list(p.path)}" for p in problems))
        self.problems = problems


def problem_of(error: StoreError, path: Address = ()) -> Problem:
    """The problem a typed store error stands for, at ``path`` of the person's view."""
    for kind, types in _KINDS:
        if isinstance(error, types):
            return Problem(kind, path, str(error.key if isinstance(error, MissingItemError) else _detail(error)))
    raise TypeError(f"no problem kind for {type(error).__name__}") from error


def _detail(error: StoreError) -> str:
    if isinstance(error, KeyExistsError) and isinstance(error.path, tuple) and error.path:
        return str(error.path[-1])
    if isinstance(error, InvalidValueError):
        return str(getattr(error, "message", error))
    return ""


_KINDS: tuple[tuple[ProblemKind, type[StoreError] | tuple[type[StoreError], ...]], ...] = (
    (ProblemKind.UNKNOWN_OBJECT, UnknownResourceError),
    (ProblemKind.READ_ONLY, ReadOnlyPathError),
    (ProblemKind.KEY_EXISTS, KeyExistsError),
    (ProblemKind.MISSING_KEY, MissingKeyError),
    (ProblemKind.MISSING_ITEM, MissingItemError),
    (ProblemKind.ITEM_EXISTS, ItemExistsError),
    (ProblemKind.SHAPE_CHANGED, PathTypeError),
    (ProblemKind.MALFORMED_PATH, MalformedPathError),
    (ProblemKind.INVALID_VALUE, InvalidValueError),
)
"""Typed store errors by the problem they are, most specific first (a ``MissingItemError`` is a
``PathError`` too)."""
