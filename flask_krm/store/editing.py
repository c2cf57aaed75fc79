"""Draft edits: the person's changes of one object's draft, each checked before anything changes.

Every edit names an editable path (:class:`~.errors.ReadOnlyPathError` otherwise), keeps the draft
within its bounds (:mod:`.bounds`) and settles the conflicts it answers. Pure: no Flask, no gevent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .errors import (
    InvalidValueError,
    ItemExistsError,
    KeyExistsError,
    MalformedPathError,
    PathTypeError,
    ReadOnlyPathError,
)
from .held import Held, StoreCore, prefix_of
from .items import Address, address_of, as_address, keyed_items, resolve
from .keyed_lists import identities
from .merge import Conflict
from .patch import changes
from .paths import MISSING, Path, as_path, get_at
from .values import check_value, delete_in, json_copy, json_equal, rename_in, set_in


class DraftEditing(StoreCore):
    """Change the person's drafts."""

    def set_value(self, uid: str, path: Sequence[Any], value: Any) -> None:
        """Set the draft's value at ``path``, creating missing maps (or a list for index 0)."""
        with self._lock:
            held, where = self._editable(uid, path)
            value = json_copy(value)
            check_value(value, in_map=isinstance(where[-1], str))
            changed = self._commit(uid, held, set_in(held.draft, where, value), where)
        self._notify(changed)

    def add_key(self, uid: str, path: Sequence[Any], value: Any = "") -> None:
        """Add the map key ``path[-1]`` with ``value``; raises KeyExistsError if it is there."""
        with self._lock:
            held, where = self._editable(uid, path)
            if not isinstance(where[-1], str):
                raise PathTypeError(where, "add_key adds a map key; the last segment is an index")
            parent = get_at(held.draft, where[:-1])
            if isinstance(parent, dict) and where[-1] in parent:
                raise KeyExistsError(where, "the key already exists")
            value = json_copy(value)
            check_value(value, in_map=True)
            changed = self._commit(uid, held, set_in(held.draft, where, value), where)
        self._notify(changed)

    def remove_key(self, uid: str, path: Sequence[Any]) -> None:
        """Remove the map key at ``path`` from the draft (nothing happens if it is absent)."""
        with self._lock:
            held, where = self._editable(uid, path)
            changed = self._commit(uid, held, delete_in(held.draft, where), where)
        self._notify(changed)

    def rename_key(self, uid: str, path: Sequence[Any], new_key: str) -> None:
        """Rename the map key at ``path`` to ``new_key`` in place; both keys must be editable."""
        with self._lock:
            held, where = self._editable(uid, path)
            if not isinstance(new_key, str):
                raise MalformedPathError(new_key, "a map key is a string")
            target = where[:-1] + (new_key,)
            if not held.regions.editable_in(held.draft, target):
                raise ReadOnlyPathError(target, "read-only path")
            draft = rename_in(held.draft, where, new_key)
            changed = self._commit(uid, held, draft, where, target)
        self._notify(changed)

    def revert(self, uid: str, path: Sequence[Any] | None = None) -> None:
        """Give ``path`` (or the whole object) the server's value again; its conflicts clear."""
        with self._lock:
            held = self._get(uid)
            if path is None:
                had_conflicts = bool(held.conflicts)
                held.conflicts = {}
                changed = self._commit(uid, held, held.server) | ({uid} if had_conflicts else set())
            else:
                changed = self._commit(uid, held, self._reverted(held, as_path(path)), as_path(path))
        self._notify(changed)

    def _reverted(self, held: Held, where: Path) -> Any:
        if where and held.regions.editable_in(held.draft, where):
            return self._revert_at(held, held.draft, where)
        if not held.regions.container(where):
            raise ReadOnlyPathError(where, "read-only path")
        draft = held.draft
        for change in changes(held.regions, held.server, held.draft):
            if prefix_of(where, change.path):
                draft = self._revert_at(held, draft, change.path)
        return draft

    def take_theirs(self, uid: str, path: Sequence[Any]) -> None:
        """Resolve a conflict by taking the server's value at ``path`` (the same as :meth:`revert`)."""
        self.revert(uid, as_path(path))

    def keep_mine(self, uid: str, path: Sequence[Any]) -> None:
        """Resolve the conflicts at, under or around ``path`` by keeping the draft; the next Save sends it."""
        with self._lock:
            held = self._get(uid)
            where = as_path(path)
            if not (held.regions.editable_in(held.draft, where) or held.regions.container(where)):
                raise ReadOnlyPathError(where, "read-only path")
            kept = {p: c for p, c in held.conflicts.items() if not (prefix_of(p, where) or prefix_of(where, p))}
            if len(kept) == len(held.conflicts):
                return
            held.conflicts = kept
            held.sequence += 1
            self._resources[uid] = held
        self._notify({uid})

    def _revert_at(self, held: Held, draft: Any, path: Path) -> Any:
        """``draft`` with the server's value at ``path``, widening to the enclosing value if needed."""
        where = path
        while True:
            theirs = self._server_at(held, draft, where)
            try:
                if theirs is not MISSING:
                    return set_in(draft, where, theirs)
                items = get_at(draft, where[:-1])
                if where and isinstance(where[-1], int) and type(items) is list and where[-1] < len(items):
                    return set_in(draft, where[:-1], [*items[: where[-1]], *items[where[-1] + 1 :]])
                return delete_in(draft, where)
            except PathTypeError:
                parent = where[:-1]
                if not parent or not held.regions.editable_in(draft, parent):
                    raise
                where = parent

    def _editable(self, uid: str, path: Sequence[Any]) -> tuple[Held, Path]:
        held = self._get(uid)
        where = as_path(path)
        if not where or not held.regions.editable_in(held.draft, where):
            raise ReadOnlyPathError(where, "read-only path")
        return held, where

    def list_keys(self, uid: str, path: Sequence[Any]) -> tuple[str, ...] | None:
        """The list-map keys of the list at ``path`` by the kind's schema, or None: not a keyed list."""
        with self._lock:
            held = self._get(uid)
            return self._map_keys(held)(as_path(path))

    def resolve(self, uid: str, address: Sequence[Any]) -> Path:
        """The path in the draft now of ``address``, whose keyed-list items are named by their keys
        (see :mod:`.items`); raises ``MalformedPathError``, ``MissingItemError`` or ``PathTypeError``."""
        with self._lock:
            held = self._get(uid)
            return resolve(held.draft, as_address(address), self._map_keys(held))

    def address(self, uid: str, path: Sequence[Any]) -> Address:
        """``path`` of the draft with the items of keyed lists named by their keys."""
        with self._lock:
            held = self._get(uid)
            return address_of(held.draft, as_path(path), self._map_keys(held))

    def insert_item(self, uid: str, path: Sequence[Any], value: Any, index: int | None = None) -> int:
        """Insert ``value`` into the list at ``path`` (at ``index``; the end by default) and return
        its index. A keyed list takes only an item with all its keys, unlike every other item's
        (``InvalidValueError``, ``ItemExistsError``)."""
        with self._lock:
            held, where = self._editable(uid, path)
            items = self._list_at(held, where, allow_missing=True)
            at = len(items) if index is None else index
            if not 0 <= at <= len(items):
                raise PathTypeError(where + (at,), f"index {at} is outside a list of {len(items)}")
            value = json_copy(value)
            check_value(value, in_map=False)
            updated = [*items[:at], value, *items[at:]]
            keys = self._map_keys(held)(where)
            if keys is not None:
                if type(value) is not dict or not all(value.get(k) is not None for k in keys):
                    raise InvalidValueError(f"an item of this list needs {', '.join(keys)}")
                if identities(updated, keys) is None:
                    raise ItemExistsError(where, "an item with these keys already exists")
            changed = self._commit(uid, held, set_in(held.draft, where, updated), where)
        self._notify(changed)
        return at

    def remove_item(self, uid: str, path: Sequence[Any]) -> None:
        """Remove the list item at ``path`` (a path ending in an index) from the draft."""
        with self._lock:
            held, where = self._editable(uid, path)
            items, at = self._item_at(held, where)
            updated = [*items[:at], *items[at + 1 :]]
            changed = self._commit(uid, held, set_in(held.draft, where[:-1], updated), where[:-1])
        self._notify(changed)

    def move_item(self, uid: str, path: Sequence[Any], index: int) -> None:
        """Move the list item at ``path`` to position ``index`` of its list."""
        with self._lock:
            held, where = self._editable(uid, path)
            items, at = self._item_at(held, where)
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(items):
                raise PathTypeError(where, f"position {index!r} is outside a list of {len(items)}")
            updated = [*items[:at], *items[at + 1 :]]
            updated.insert(index, items[at])
            changed = self._commit(uid, held, set_in(held.draft, where[:-1], updated), where[:-1])
        self._notify(changed)

    def set_contested(self, uid: str, path: Sequence[Any], value: Any) -> None:
        """Set the draft's value at ``path`` like :meth:`set_value`, for an edit made against a value
        the draft no longer holds: unless the result equals the server's, a conflict is recorded
        holding the server's value (at the item field, or at the first list merged whole).
        """
        with self._lock:
            held, where = self._editable(uid, path)
            value = json_copy(value)
            check_value(value, in_map=isinstance(where[-1], str))
            changed = self._commit(uid, held, set_in(held.draft, where, value), where)
            at = self._merged_whole(held, where)
            theirs = self._server_at(held, held.draft, at)
            if not json_equal(get_at(held.draft, at), theirs):
                present = theirs is not MISSING
                held.conflicts[at] = Conflict(at, theirs if present else None, present)
                changed = {uid}
        self._notify(changed)

    def _list_at(self, held: Held, where: Path, *, allow_missing: bool = False) -> list[Any]:
        items = get_at(held.draft, where)
        if items is MISSING and allow_missing:
            return []
        if type(items) is not list:
            raise PathTypeError(where, "not a list")
        return items

    def _item_at(self, held: Held, where: Path) -> tuple[list[Any], int]:
        at = where[-1]
        if not isinstance(at, int):
            raise PathTypeError(where, "an item is named by its position in its list")
        items = self._list_at(held, where[:-1])
        if at >= len(items):
            raise PathTypeError(where, f"index {at} is past the end of a list of {len(items)}")
        return items, at

    def _merged_whole(self, held: Held, where: Path) -> Path:
        """``where`` cut at the first list the merge treats as one value (not keyed)."""
        keys_of = self._map_keys(held)
        node: Any = held.draft
        for depth, segment in enumerate(where):
            if type(node) is list and not keyed_items(node, keys_of(where[:depth])):
                return where[:depth]
            node = get_at(node, (segment,))
        return where
