"""The edit pipeline: one entry, :meth:`EditPipeline.perform`, for every way a person changes a draft.

An :mod:`operation <.operations>` is applied under the store's lock, against the draft as it is
then, and answers an :class:`~.operations.Outcome`; or it is refused with every
:class:`~.problems.Problem` found and changes nothing. Subscribers hear of it once, after the lock
is released. The policy for an edit made against a value the draft no longer holds lives here:

- a single value whose draft still holds the value the field showed (``started``), or the person's
  own edit (another tab), is set: what is typed last wins; one a server change moved meanwhile is
  set and the server's value recorded as a conflict, at that field;
- an array written as text is merged by lines (:func:`.text_merge.merge_lines`) into the draft's
  text of it now, never set whole; colliding lines are a conflict;
- a row of a list of strings is found by the text it started from, so a row inserted or removed
  above it meanwhile does not redirect the edit;
- a whole-object view (the YAML text) is applied as the leaf edits between the view the person
  started from and the one they made (:mod:`.view_edits`): all of them, or none.

Pure: no Flask, no gevent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .bounds import DraftRefused, check_draft
from .editing import DraftEditing
from .errors import InvalidValueError, PathTypeError, StoreError
from .held import Held, prefix_of
from .items import Address, resolve
from .merge import Conflict
from .operations import (
    AddItem,
    AddKey,
    EditLines,
    EditView,
    FieldOperation,
    KeepMine,
    MoveItem,
    Operation,
    Outcome,
    RemoveItem,
    RemoveKey,
    RenameKey,
    Revert,
    SetField,
    TakeTheirs,
)
from .paths import MISSING, Path, get_at
from .problems import EditRefused, Problem, ProblemKind, problem_of
from .text_merge import merge_lines
from .values import check_value, delete_in, json_copy, json_equal, set_in
from .view_edits import ItemsEdit, ViewEdit, apply_items, plan_view_edits


def array_text(value: Any) -> str:
    """An array (or any value) as the indented JSON text a person edits it as."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


def _array(text: str) -> list[Any] | None:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if type(value) is list else None


def _present(value: Any) -> Any:
    """A copy of ``value``, or None for :data:`MISSING` (a conflict's removed value)."""
    return None if value is MISSING else json_copy(value)


class EditPipeline(DraftEditing):
    """Apply the person's operations to the drafts (see the module doc)."""

    def perform(self, uid: str, operation: Operation) -> Outcome:
        """Apply ``operation`` to the draft of ``uid``; raises :class:`~.problems.EditRefused` with
        every problem (nothing changed)."""
        with self._collecting() as changed:
            try:
                before = self._get(uid).sequence
                if isinstance(operation, EditView):
                    applied, conflicts = self._edit_view(uid, operation.before, operation.after)
                    path: Path = ()
                else:
                    path = self._apply(uid, operation)
                    held = self._get(uid)
                    applied = 1 if held.sequence != before else 0
                    conflicts = tuple(p for p in held.conflicts if prefix_of(path, p) or prefix_of(p, path))
            except EditRefused:
                raise
            except StoreError as error:
                where = getattr(operation, "path", None) or ()
                raise EditRefused((problem_of(error, where),)) from None
            sequence = self._get(uid).sequence
        self._notify(changed)
        return Outcome(applied, conflicts, path, sequence)

    def _apply(self, uid: str, operation: FieldOperation) -> Path:
        """Apply one field-level operation; the path it landed at."""
        if isinstance(operation, Revert) and operation.path is None:
            self.revert(uid)
            return ()
        self._covered(operation.path)
        if isinstance(operation, RenameKey):
            self._covered(operation.path[:-1] + (operation.new_key,))
        where = self._resolved(uid, operation.path)
        if isinstance(operation, SetField):
            return self._set_field(uid, where, operation)
        if isinstance(operation, EditLines):
            return self._edit_lines(uid, where, operation)
        if isinstance(operation, AddKey):
            self.add_key(uid, where, operation.value)
        elif isinstance(operation, RemoveKey):
            self.remove_key(uid, where)
        elif isinstance(operation, RenameKey):
            if where[-1] == operation.new_key:  # the same name: nothing to rename, if it may be edited
                self._editable(uid, where)
            else:
                self.rename_key(uid, where, operation.new_key)
            return where[:-1] + (operation.new_key,)
        elif isinstance(operation, AddItem):
            return where + (self.insert_item(uid, where, operation.value),)
        elif isinstance(operation, RemoveItem):
            where = self._located(uid, where, operation.row)
            self.remove_item(uid, where)
        elif isinstance(operation, MoveItem):
            return self._move(uid, where, operation)
        elif isinstance(operation, (Revert, TakeTheirs)):
            self.revert(uid, where)
        elif isinstance(operation, KeepMine):
            self.keep_mine(uid, where)
        return where

    def covers(self, address: Address) -> bool:
        """Whether the policy's editable roots cover ``address``: a person's change names a field,
        never a container of fields (``metadata``, or ``spec`` when only some of it may be
        edited). Checked on the address before it is looked for in the draft."""
        text = tuple("\x00item" if isinstance(segment, Mapping) else str(segment) for segment in address)
        return self.policy.covers(text)  # an item key: no policy root passes through a list

    def _covered(self, address: Address | None) -> None:
        if not self.covers(address or ()):
            raise EditRefused((Problem(ProblemKind.READ_ONLY, address or ()),))

    def _resolved(self, uid: str, address: Address | None) -> Path:
        held = self._get(uid)
        return resolve(held.draft, address or (), self._map_keys(held))

    def _set_field(self, uid: str, where: Path, operation: SetField) -> Path:
        held = self._get(uid)
        started = operation.started
        if self._is_row(held, where):
            where = self._row(held, where, started)
        current = get_at(held.draft, where)
        if started is MISSING or json_equal(current, started) or self._dirty_at(held, where):
            # the draft still holds the start, or the person's own edit (typed in another tab, or an
            # answer this field had not shown yet): what was typed last wins
            self.set_value(uid, where, operation.value)
        elif not json_equal(current, operation.value):
            self.set_contested(uid, where, operation.value)
        return where

    def _edit_lines(self, uid: str, where: Path, operation: EditLines) -> Path:
        current = get_at(self._get(uid).draft, where)
        current_text = array_text(current) if current is not MISSING else ""
        merged = merge_lines(operation.started, operation.typed, current_text)
        value = None if merged is None else _array(merged)
        if value is not None:
            try:
                self.set_value(uid, where, value)
                return where
            except InvalidValueError:
                pass  # both changes apply, but not to a value the draft can hold: the person decides
        self.set_contested(uid, where, operation.value)
        return where

    def _is_row(self, held: Held, where: Path) -> bool:
        return bool(where) and isinstance(where[-1], int) and self._map_keys(held)(where[:-1]) is None

    def _row(self, held: Held, where: Path, text: Any) -> Path:
        """The path of the row of a list of strings that holds ``text`` now: ``where`` itself, or
        the one row holding it; ``where`` when ``text`` is unknown or the row itself changed (the
        edit is then set against it and conflicts)."""
        items = get_at(held.draft, where[:-1])
        index = where[-1]
        if type(items) is not list or not isinstance(index, int) or index >= len(items):
            raise EditRefused((Problem(ProblemKind.ROW_MOVED, where),))
        if text is MISSING or json_equal(items[index], text):
            return where
        found = [i for i, item in enumerate(items) if json_equal(item, text)]
        return where[:-1] + (found[0],) if len(found) == 1 else where

    def _located(self, uid: str, where: Path, row: Any) -> Path:
        """The item at ``where``; a row by its text ``row`` (exactly one row must hold it)."""
        held = self._get(uid)
        if not where or not isinstance(where[-1], int):
            raise EditRefused((Problem(ProblemKind.NOT_AN_ITEM, where),))
        if row is MISSING or not self._is_row(held, where):
            return where
        items = get_at(held.draft, where[:-1])
        if type(items) is list and where[-1] < len(items) and items[where[-1]] == row:
            return where
        found = [i for i, item in enumerate(items) if item == row] if type(items) is list else []
        if len(found) != 1:
            raise EditRefused((Problem(ProblemKind.ROW_MOVED, where),))
        return where[:-1] + (found[0],)

    def _move(self, uid: str, where: Path, operation: MoveItem) -> Path:
        where = self._located(uid, where, operation.row)
        items = get_at(self._get(uid).draft, where[:-1])
        index = where[-1]
        if type(items) is not list or not isinstance(index, int):
            raise EditRefused((Problem(ProblemKind.NOT_AN_ITEM, where),))
        to = index + operation.step
        if not 0 <= to < len(items):
            kind = ProblemKind.ALREADY_FIRST if operation.step < 0 else ProblemKind.ALREADY_LAST
            raise EditRefused((Problem(kind, where),))
        self.move_item(uid, where, to)
        return where[:-1] + (to,)

    # -- whole-object views ----------------------------------------------------------------------

    def _edit_view(self, uid: str, before: Any, after: Any) -> tuple[int, tuple[Path, ...]]:
        """Apply the diff of two views as leaf edits of the draft now: the edits applied and the
        paths that now conflict. An edited value the draft moved away from since the view (a server
        change) is kept as the person's, with the server's value as a conflict."""
        held = self._get(uid)
        keys = held.lists.map_keys if held.lists is not None else None
        plan = plan_view_edits(before, after, held.draft, keys)
        problems = list(plan.problems)
        for edit in plan.edits:
            problem = self._view_problem(held, edit)
            if problem is not None:
                problems.append(problem)
        for items in plan.items:
            if not items.path or not held.regions.editable_in(held.draft, items.path):
                problems.append(Problem(ProblemKind.READ_ONLY, items.view_path))
        if problems:
            raise EditRefused(tuple(problems))
        draft, conflicts = held.draft, dict(held.conflicts)
        try:
            for edit in plan.edits:
                current, theirs = get_at(draft, edit.path), get_at(held.server, edit.path)
                moved = not json_equal(current, edit.seen) and not json_equal(current, edit.value)
                if moved and json_equal(current, theirs):
                    conflicts[edit.path] = Conflict(edit.path, _present(theirs), theirs is not MISSING)
                value = json_copy(edit.value)
                draft = delete_in(draft, edit.path) if value is MISSING else set_in(draft, edit.path, value)
            for items in plan.items:
                merged, conflicting = apply_items(get_at(draft, items.path), items)
                if conflicting:
                    theirs = get_at(held.server, items.path)
                    conflicts[items.path] = Conflict(items.path, _present(theirs), theirs is not MISSING)
                draft = set_in(draft, items.path, json_copy(merged))
        except PathTypeError as exc:
            where = exc.path if isinstance(exc.path, tuple) else ()
            raise EditRefused((Problem(ProblemKind.SHAPE_CHANGED, where),)) from None
        edited = [e.path for e in plan.edits] + [i.path for i in plan.items]
        try:
            check_draft(held.server, held.draft, draft, edited)
        except DraftRefused as refused:
            raise EditRefused((_bounds_problem(refused, plan.edits, plan.items),)) from None
        held.conflicts = conflicts
        self._notify(self._commit(uid, held, draft, *edited, checked=True))
        return len(edited), tuple(p for p in edited if p in held.conflicts)

    def _view_problem(self, held: Held, edit: ViewEdit) -> Problem | None:
        if not edit.path or not held.regions.editable_in(held.draft, edit.path):
            return Problem(ProblemKind.READ_ONLY, edit.view_path)
        if edit.value is None and isinstance(edit.path[-1], str):
            return Problem(ProblemKind.NULL_IN_MAP, edit.view_path)
        if edit.value is not MISSING:
            try:
                check_value(edit.value, in_map=isinstance(edit.path[-1], str))
            except InvalidValueError as exc:
                return Problem(ProblemKind.INVALID_VALUE, edit.view_path, str(exc))
        return None


def _bounds_problem(refused: DraftRefused, edits: Sequence[ViewEdit], items: Sequence[ItemsEdit]) -> Problem:
    """``refused`` where the person's view has it: under the edit it came from, or at the first edit."""
    found = ProblemKind.INVALID_VALUE
    edited: list[ViewEdit | ItemsEdit] = [*edits, *items]
    for edit in edited:
        if prefix_of(edit.path, refused.path):
            return Problem(found, edit.view_path + refused.path[len(edit.path) :], refused.message)
    for edit in edited:
        if prefix_of(refused.path, edit.path):  # a limit: at the first edit under it
            where = edit.view_path if refused.limit else edit.view_path[: len(refused.path)]
            return Problem(found, where, refused.message)
    return Problem(found, refused.path, refused.message)
