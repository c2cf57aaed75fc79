"""Operations: every way a person changes a draft, as small immutable values.

A web request (a field, a row, an item, a key, the YAML text, a resolve or discard button) is read
into one operation and handed to :meth:`LiveResourceStore.perform
<flask_krm.store.pipeline.EditPipeline.perform>`, which applies it under the store's lock and
answers an :class:`Outcome`, or refuses it with typed problems (:mod:`.problems`) and changes
nothing. Paths are addresses (:mod:`.items`): an item of a keyed list is named by its keys, and
resolved against the draft only when the operation is applied.

An operation carries values, never text a widget must read: the web layer parses what the person
typed with the field's widget first. What a person saw (``started``, ``row``, a view's ``before``)
travels with the operation, so the store decides, with the draft as it is then, whether a change
that reached the draft meanwhile makes the edit a conflict.

Pure: no Flask, no gevent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias

from .items import Address
from .paths import MISSING, Path


@dataclass(frozen=True, slots=True)
class SetField:
    """Give the field at ``path`` the ``value`` the person typed over ``started`` (the value the
    field showed when they began; ``MISSING``: unknown, what is typed last wins).

    Where the draft still holds ``started``, or the person's own edit, the value is set; where a
    server change moved it meanwhile, it is set and the server's value becomes a conflict at the
    field. A row of a list of strings is found by ``started``, wherever it now is.
    """

    path: Address
    value: Any
    started: Any = MISSING


@dataclass(frozen=True, slots=True)
class EditLines:
    """Apply the change from the text ``started`` to the text ``typed`` of an array edited as
    JSON text (``value``: ``typed`` read as an array) to the draft's text of it now, by lines; when
    the changes collide, or do not make an array together, ``value`` is set as a conflict."""

    path: Address
    typed: str
    started: str
    value: list[Any]


@dataclass(frozen=True, slots=True)
class AddKey:
    """Add the map key that ends ``path`` with ``value``."""

    path: Address
    value: Any = ""


@dataclass(frozen=True, slots=True)
class RemoveKey:
    """Remove the map key at ``path`` (nothing happens when it is absent)."""

    path: Address


@dataclass(frozen=True, slots=True)
class RenameKey:
    """Rename the map key at ``path`` to ``new_key`` in place."""

    path: Address
    new_key: str


@dataclass(frozen=True, slots=True)
class AddItem:
    """Append ``value`` to the list at ``path`` (a keyed list's item with all its keys)."""

    path: Address
    value: Any


@dataclass(frozen=True, slots=True)
class RemoveItem:
    """Remove the list item at ``path``; a row of a list of strings is found by its text ``row``
    (``MISSING``: by position)."""

    path: Address
    row: Any = MISSING


@dataclass(frozen=True, slots=True)
class MoveItem:
    """Move the list item at ``path`` by ``step`` places (-1: up, 1: down); a row is found by its
    text ``row``, as for :class:`RemoveItem`."""

    path: Address
    step: int
    row: Any = MISSING


@dataclass(frozen=True, slots=True)
class Revert:
    """Give ``path`` the server's value again (undo the person's change there); ``None``: the
    whole object (discard every change). The conflicts there clear."""

    path: Address | None = None


@dataclass(frozen=True, slots=True)
class TakeTheirs:
    """Resolve the conflict at ``path`` by taking the server's value."""

    path: Address


@dataclass(frozen=True, slots=True)
class KeepMine:
    """Resolve the conflicts at, under or around ``path`` by keeping the draft's value."""

    path: Address


@dataclass(frozen=True, slots=True)
class EditView:
    """Apply what changed from the whole-object view ``before`` to ``after`` (the YAML text, as
    loaded) as leaf-level edits of the draft now (:mod:`.view_edits`): all of them, or none."""

    before: Any
    after: Any


FieldOperation: TypeAlias = (
    SetField
    | EditLines
    | AddKey
    | RemoveKey
    | RenameKey
    | AddItem
    | RemoveItem
    | MoveItem
    | Revert
    | TakeTheirs
    | KeepMine
)
"""Every operation on one place of the draft."""
Operation: TypeAlias = FieldOperation | EditView
"""Every way a person changes a draft."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What an operation did: the edits it applied (0: the draft already held them), the paths
    where it left a conflict, where it landed (a row found elsewhere, a new item's index) and the
    object's edit sequence after it."""

    applied: int
    conflicts: tuple[Path, ...]
    path: Path
    sequence: int
