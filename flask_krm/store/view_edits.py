"""Edits read from a whole-object view: the diff between the view a person started from and the one
they produced, as leaf-level edits of the current draft.

A person edits a text view of the object (YAML) while the draft moves on under them. The edits are
what changed between ``before`` (the view they started from) and ``after`` (what they typed), not
``after`` itself, so everything they did not touch keeps the draft's current value, including a
server change that arrived meanwhile. Each :class:`ViewEdit` carries the value the person saw
(``seen``): where the draft moved away from it since, the store keeps the person's value and
records the server's as a conflict, as the three-way merge would have had the edit been made first.

Maps are compared key by key; keyed lists (``x-kubernetes-list-type: map``) item by item, matched
by their keys, an item's index translated to where the item now is in the draft; other arrays and
scalars are one value. Items added to or removed from a keyed list become one
:class:`ItemsEdit` applied to the draft's list as it is then. The order of the items that stay
follows the draft.

:data:`WITHHELD` stands for a value the view did not show (a Secret's): it may only stay where it
was; a plan that moves, copies, changes or removes one has a problem (:mod:`.problems`).

Pure: no Flask, no gevent, no network.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from .keyed_lists import Identity, identities
from .paths import MISSING, Path
from .problems import Problem, ProblemKind
from .values import json_equal


class Withheld:
    """The type of :data:`WITHHELD`."""

    __slots__ = ()
    _instance: Withheld | None = None

    def __new__(cls) -> Withheld:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "WITHHELD"

    def __reduce__(self) -> str:
        return "WITHHELD"


WITHHELD: Final = Withheld()
"""A value a view withheld from the person (a Secret's); equal only to itself."""

ListKeys = Callable[[Path], "tuple[str, ...] | None"]


@dataclass(frozen=True, slots=True)
class ViewEdit:
    """Give the draft ``value`` (``MISSING``: remove the key) at ``path``; the view showed ``seen``.

    ``view_path`` is where the edit is in the person's view (a keyed item's index there).
    """

    path: Path
    view_path: Path
    value: Any
    seen: Any


@dataclass(frozen=True, slots=True)
class ItemsEdit:
    """Add and remove items of the keyed list at ``path`` (keys ``keys``), applied to the list as it
    is when the edit applies. ``added`` pairs each new item with the identity it follows in the
    person's view (None: first), its place in the view, and whether the view showed it before (an
    item the person changed that the draft no longer has); ``removed`` pairs identities with the
    item the person saw."""

    path: Path
    view_path: Path
    keys: tuple[str, ...]
    added: tuple[tuple[Identity | None, Any, Path, bool], ...] = ()
    removed: tuple[tuple[Identity, Any, Path], ...] = ()


@dataclass(slots=True)
class ViewPlan:
    """The edits of one view diff, in the order they apply, and the problems found."""

    edits: list[ViewEdit] = field(default_factory=list)
    items: list[ItemsEdit] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def plan_view_edits(before: Any, after: Any, draft: Any, list_keys: ListKeys | None = None) -> ViewPlan:
    """The edits that turn ``before`` into ``after``, addressed in ``draft`` (see the module doc).

    ``list_keys(path)`` gives the keys of the keyed list at ``path`` (None: not keyed).
    """
    plan = ViewPlan()
    _Planner(plan, list_keys or (lambda path: None)).node((), (), before, after, draft)
    return plan


class _Planner:
    def __init__(self, plan: ViewPlan, list_keys: ListKeys) -> None:
        self.plan = plan
        self.list_keys = list_keys

    def node(self, view_path: Path, path: Path, before: Any, after: Any, draft: Any) -> None:
        if before is after or json_equal(before, after):
            return
        if before is WITHHELD:
            self.problem(view_path, ProblemKind.WITHHELD_CHANGED)
            return
        if type(after) is dict and type(before) in (dict, type(MISSING)) and type(draft) in (dict, type(MISSING)):
            if after or before is not MISSING:
                self.map(view_path, path, before if type(before) is dict else {}, after, draft)
                return
        if type(after) is list and type(before) is list and type(draft) is list:
            keys = self.list_keys(path)
            if keys and self.keyed(view_path, path, before, after, draft, keys):
                return
        if _holds_withheld(after):
            self.problem(view_path, ProblemKind.WITHHELD_COPIED)
        elif _holds_withheld(before):
            self.problem(view_path, ProblemKind.WITHHELD_CHANGED)
        else:
            self.plan.edits.append(ViewEdit(path, view_path, after, before))

    def map(self, view_path: Path, path: Path, before: dict[str, Any], after: Any, draft: Any) -> None:
        here = draft if type(draft) is dict else {}
        after_map = after if type(after) is dict else {}
        for key, value in after_map.items():
            self.node(view_path + (key,), path + (key,), before.get(key, MISSING), value, here.get(key, MISSING))
        for key, value in before.items():
            if key not in after_map:
                self.node(view_path + (key,), path + (key,), value, MISSING, here.get(key, MISSING))

    def keyed(
        self, view_path: Path, path: Path, before: list[Any], after: list[Any], draft: list[Any], keys: tuple[str, ...]
    ) -> bool:
        """Plan a keyed list item by item; False when a side is not a valid keyed list."""
        ids_before, ids_after, ids_draft = (identities(x, keys) for x in (before, after, draft))
        if ids_before is None or ids_after is None or ids_draft is None:
            return False
        by_before = {identity: index for index, identity in enumerate(ids_before)}
        by_draft = {identity: index for index, identity in enumerate(ids_draft)}
        added: list[tuple[Identity | None, Any, Path, bool]] = []
        removed: list[tuple[Identity, Any, Path]] = []
        previous: Identity | None = None
        for index, identity in enumerate(ids_after):
            item_view = view_path + (index,)
            seen_at = by_before.get(identity)
            now_at = by_draft.get(identity)
            seen = MISSING if seen_at is None else before[seen_at]
            if now_at is not None:
                self.node(item_view, path + (now_at,), seen, after[index], draft[now_at])
            elif not json_equal(seen, after[index]) or seen_at is None:
                if _holds_withheld(after[index]):
                    self.problem(item_view, ProblemKind.WITHHELD_COPIED)
                else:
                    added.append((previous, after[index], item_view, seen_at is not None))
            previous = identity
        kept = set(ids_after)
        for index, identity in enumerate(ids_before):
            if identity not in kept:
                if _holds_withheld(before[index]):
                    self.problem(view_path + (index,), ProblemKind.WITHHELD_CHANGED)
                else:
                    removed.append((identity, before[index], view_path + (index,)))
        if added or removed:
            self.plan.items.append(ItemsEdit(path, view_path, keys, tuple(added), tuple(removed)))
        return True

    def problem(self, view_path: Path, kind: ProblemKind) -> None:
        self.plan.problems.append(Problem(kind, view_path))


def _holds_withheld(value: Any) -> bool:
    if value is WITHHELD:
        return True
    if type(value) is dict:
        return any(_holds_withheld(v) for v in value.values())
    if type(value) is list:
        return any(_holds_withheld(v) for v in value)
    return False


def apply_items(draft_items: Any, edit: ItemsEdit) -> tuple[list[Any], bool]:
    """The draft's keyed list with ``edit`` applied, and whether it conflicts with a change made
    since the person's view: an item removed there that the draft changed, or one changed there
    that the draft removed."""
    items = list(draft_items) if type(draft_items) is list else []
    ids = identities(items, edit.keys) or []
    conflicting = False
    gone = {identity: seen for identity, seen, _ in edit.removed}
    out: list[Any] = []
    out_ids: list[Identity] = []
    for identity, item in zip(ids, items):
        if identity in gone:
            conflicting = conflicting or not json_equal(item, gone[identity])
            continue
        out.append(item)
        out_ids.append(identity)
    for after, item, _, seen in edit.added:
        new_id = (identities([item], edit.keys) or [()])[0]
        if new_id in out_ids:
            continue
        conflicting = conflicting or seen
        at = out_ids.index(after) + 1 if after in out_ids else (0 if after is None else len(out))
        out.insert(at, item)
        out_ids.insert(at, new_id)
    return out, conflicting
