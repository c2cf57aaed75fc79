"""What the person is told when an edit is refused: one table, from problem to status and words.

Every edit request (a field, a row, an item, a key, the YAML text, a resolve button) is read into
a store operation and performed by the store (:meth:`flask_krm.store.LiveResourceStore.perform`),
which refuses it with typed problems (:class:`~flask_krm.store.problems.ProblemKind`); what is
wrong with the request itself, before any operation exists (a missing form field, text a widget
cannot read), is a :class:`RequestProblem`. :data:`ANSWERS` gives each of them its HTTP status and
its words, and whether it is about the edited field (its error slot) or the request (the editor's
outcome region). A YAML edit lists its problems by line: :attr:`Answer.listed` words them where
the place is given by the line (a pointer, not "this field").
"""

from __future__ import annotations

import enum
import typing as t
from collections.abc import Mapping
from dataclasses import dataclass

from ..store.paths import path_to_pointer
from ..store.problems import ProblemKind


class RequestProblem(enum.Enum):
    """What is wrong with an edit request, found before the store sees an operation."""

    NO_FIELD = "no-field"
    """A form field the request needs is absent (``detail``: its name)."""
    NOT_A_PATH = "not-a-path"
    """The path field is not a JSON array of keys, indexes and item keys (``detail``: its name)."""
    UNREADABLE_REQUEST = "unreadable-request"
    """A form field that cannot be read at all (``detail``: the reader's sentence: too deep...)."""
    UNKNOWN_OPERATION = "unknown-operation"
    """The ``op`` names no operation (``detail``: what it named)."""
    NO_FIELDS = "no-fields"
    """The component is a list: it has no fields to edit."""
    NO_YAML_TAB = "no-yaml-tab"
    """The editor has no YAML tab."""
    NOT_ONE_VALUE = "not-one-value"
    """The field is not edited as one value (a map, a list of items)."""
    NO_START = "no-start"
    """An edit of a list written as text that does not name the text it started from."""
    ADDED_AS_TEXT = "added-as-text"
    """Items of this list are added by editing its text, not one by one."""
    NO_DIRECTION = "no-direction"
    """A move that says neither up nor down."""
    EMPTY_KEY = "empty-key"
    """A key to add that is empty."""
    EMPTY_NEW_KEY = "empty-new-key"
    """A rename to an empty key."""
    UNREADABLE_VALUE = "unreadable-value"
    """Typed text the field's widget cannot read as a value (``detail``: the widget's sentence)."""
    UNREADABLE_ITEM = "unreadable-item"
    """Key fields that make no item (``detail``: why, as a sentence)."""
    UNREADABLE_YAML = "unreadable-yaml"
    """Typed YAML that cannot be loaded (``detail``: the loader's reason)."""
    UNREADABLE_START = "unreadable-start"
    """The YAML the person started from cannot be loaded (``detail``: the loader's reason)."""
    NO_MEMBER = "no-member"
    """A member to add that the object's schema does not declare."""
    REQUIRED_MEMBER = "required-member"
    """A member to remove that the object's schema requires."""


Kind: t.TypeAlias = ProblemKind | RequestProblem


@dataclass(frozen=True, slots=True)
class Answer:
    """How a problem is answered: the status, the words (``{detail}``: the problem's detail,
    ``{pointer}``: its place), whether they go in the field's error slot (else the outcome
    region), and the words in a list of problems placed by line (``None``: the same words)."""

    status: int
    words: str
    at_field: bool = True
    listed: str | None = None


READ_ONLY: t.Final = "This field is read-only."
NO_OBJECT: t.Final = "The object is no longer here."
ROW_MOVED: t.Final = "This row was changed or removed by someone else meanwhile; nothing was changed."

ANSWERS: t.Final[Mapping[Kind, Answer]] = {
    ProblemKind.UNKNOWN_OBJECT: Answer(404, NO_OBJECT, at_field=False),
    ProblemKind.MALFORMED_PATH: Answer(400, "The path is not a path of this object.", at_field=False),
    ProblemKind.READ_ONLY: Answer(403, READ_ONLY, listed="{pointer} is read-only in this editor."),
    ProblemKind.SHAPE_CHANGED: Answer(409, "This field no longer has that shape."),
    ProblemKind.KEY_EXISTS: Answer(422, "A key named {detail} already exists."),
    ProblemKind.MISSING_KEY: Answer(409, "That key no longer exists."),
    ProblemKind.MISSING_ITEM: Answer(409, "That item is no longer in the list."),
    ProblemKind.ITEM_EXISTS: Answer(422, "An item with these keys is already in the list."),
    ProblemKind.INVALID_VALUE: Answer(422, "This value cannot be stored: {detail}.", listed="{Detail}."),
    ProblemKind.NULL_IN_MAP: Answer(
        422, "An empty value (null) cannot be stored in a map: remove the key, or write '' for an empty string."
    ),
    ProblemKind.WITHHELD_CHANGED: Answer(
        422, "This value is withheld and not shown, so it cannot be changed or removed here."
    ),
    ProblemKind.WITHHELD_COPIED: Answer(
        422, "The placeholder of a withheld value is not a value: it can only stay where it was."
    ),
    ProblemKind.NOT_AN_ITEM: Answer(400, "Name an item of a list.", at_field=False),
    ProblemKind.ROW_MOVED: Answer(
        409, "This row was changed or removed by someone else meanwhile; nothing was changed."
    ),
    ProblemKind.ALREADY_FIRST: Answer(409, "It is already the first."),
    ProblemKind.ALREADY_LAST: Answer(409, "It is already the last."),
    RequestProblem.NO_FIELD: Answer(400, "The request has no {detail}.", at_field=False),
    RequestProblem.NOT_A_PATH: Answer(
        400, "The {detail} is not a JSON array of keys, indexes and item keys.", at_field=False
    ),
    RequestProblem.UNREADABLE_REQUEST: Answer(400, "{detail}", at_field=False),
    RequestProblem.UNKNOWN_OPERATION: Answer(400, "Unknown edit operation '{detail}'.", at_field=False),
    RequestProblem.NO_FIELDS: Answer(400, "A list has no fields to edit.", at_field=False),
    RequestProblem.NO_YAML_TAB: Answer(400, "This view has no YAML tab.", at_field=False),
    RequestProblem.NOT_ONE_VALUE: Answer(400, "This field is not edited as one value."),
    RequestProblem.NO_START: Answer(400, "An edit of a list written as text must name the text it started from."),
    RequestProblem.ADDED_AS_TEXT: Answer(400, "Items of this list are added by editing its text."),
    RequestProblem.NO_DIRECTION: Answer(400, "Say where to move the item: up or down.", at_field=False),
    RequestProblem.EMPTY_KEY: Answer(422, "Enter a key."),
    RequestProblem.EMPTY_NEW_KEY: Answer(422, "A key cannot be empty."),
    RequestProblem.UNREADABLE_VALUE: Answer(422, "{detail}"),
    RequestProblem.UNREADABLE_ITEM: Answer(422, "{detail}"),
    RequestProblem.UNREADABLE_YAML: Answer(422, "{detail}."),
    RequestProblem.UNREADABLE_START: Answer(400, "The text you started from cannot be read: {detail}."),
    RequestProblem.NO_MEMBER: Answer(422, "Choose a field to add."),
    RequestProblem.REQUIRED_MEMBER: Answer(422, "This field cannot be removed: its object needs it."),
}
"""Every problem's answer. A kind missing here is a failing test (``tests/ui/test_problems.py``)."""

UNMAPPED: t.Final = Answer(400, "This change cannot be made.", at_field=False)
"""The answer to a kind :data:`ANSWERS` lacks: never given while the table is complete."""


@dataclass(frozen=True, slots=True)
class Said:
    """A problem as answered: the status, the words and whether they are about the field."""

    status: int
    message: str
    at_field: bool


def say(kind: Kind, detail: str = "", path: t.Sequence[t.Any] = (), *, listed: bool = False) -> Said:
    """The answer to the problem ``kind`` (with its ``detail``, at ``path``); ``listed``: worded
    for a list of problems placed by line."""
    answer = ANSWERS.get(kind, UNMAPPED)
    words = (answer.listed or answer.words) if listed else answer.words
    pointer = _pointer(path)
    message = words.format(
        detail=detail,
        Detail=detail[:1].upper() + detail[1:],
        pointer=pointer,
    )
    return Said(answer.status, message, answer.at_field)


def _pointer(path: t.Sequence[t.Any]) -> str:
    if not path:
        return "The object"
    if all(isinstance(segment, (str, int)) for segment in path):
        return path_to_pointer(tuple(path))
    return "This field"
