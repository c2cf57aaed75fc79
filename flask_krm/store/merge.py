"""Three-way merge of a server change into a draft: base (previous server), ours (draft), theirs.

Editable paths follow this table (equality is deep and ignores key order; an absent value is a value):

| base vs ours | base vs theirs | ours vs theirs | result                                          |
|--------------|----------------|----------------|-------------------------------------------------|
| equal        | any            |                | take theirs; a conflict here clears              |
| different    | equal          |                | keep ours; an existing conflict stays            |
| different    | different      | equal          | keep ours; the conflict clears (convergence)     |
| different    | different      | different      | keep ours; record a conflict holding theirs      |

Maps recurse key by key; other values (arrays included) are atomic, except keyed lists, which
merge item by item by key, in the server's order unless only the person moved items (then in
the person's; both moving shared items differently is a conflict at the list). Read-only regions
always follow the server. The merge never mutates its inputs: the result shares every subtree it
can with ``theirs`` or ``ours``.

:func:`flashed_paths` tells, after the fact, which values the server moved where the person had
not edited (for highlighting); it is computed only when asked for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from .keyed_lists import Identity, KeyedLists, identities
from .paths import MISSING, Path
from .regions import Regions
from .values import json_equal


@dataclass(frozen=True, slots=True)
class Conflict:
    """The person's draft and the server disagree at ``path``; ``theirs`` is the server's value.

    ``present`` is False when the server removed the value (``theirs`` is then None).
    """

    path: Path
    theirs: Any
    present: bool = True


@dataclass(frozen=True, slots=True)
class MergeResult:
    """The merged draft and the complete conflict map after the merge."""

    draft: Any
    conflicts: dict[Path, Conflict]


def three_way_merge(
    base: Any,
    ours: Any,
    theirs: Any,
    regions: Regions,
    lists: KeyedLists | None = None,
    conflicts: Mapping[Path, Conflict] | None = None,
) -> MergeResult:
    """Merge ``theirs`` into ``ours`` against ``base`` under ``regions`` (computed from ``theirs``).

    ``conflicts`` are those recorded so far; ones the merge neither clears nor replaces are carried
    over, re-indexed when their keyed-list item moved.
    """
    merger = _Merger(regions, lists, conflicts or {})
    draft = merger.node((), base, ours, theirs)
    return MergeResult(draft, merger.conflicts)


def flashed_paths(base: Any, ours: Any, theirs: Any) -> list[Path]:
    """The values the server moved (``base`` to ``theirs``) where ``ours`` had not edited them.

    Maps recurse; any other value, an array included, counts as one.
    """
    found: list[Path] = []
    _flashed((), base, ours, theirs, found)
    return found


def _flashed(path: Path, base: Any, ours: Any, theirs: Any, found: list[Path]) -> None:
    if base is theirs:
        return
    if type(base) is dict and type(theirs) is dict:
        mine = ours if type(ours) is dict else {}
        for key, value in theirs.items():
            _flashed(path + (key,), base.get(key, MISSING), mine.get(key, MISSING), value, found)
        for key, value in base.items():
            if key not in theirs:
                _flashed(path + (key,), value, mine.get(key, MISSING), MISSING, found)
    elif (ours is base or json_equal(base, ours)) and not json_equal(base, theirs):
        found.append(path)


def _moved(base: list[Identity], other: list[Identity]) -> bool:
    """``other`` orders the items it shares with ``base`` differently."""
    both = set(base) & set(other)
    return [i for i in base if i in both] != [i for i in other if i in both]


def _same_entries(merged: dict[str, Any], reference: Any) -> bool:
    return (
        type(reference) is dict
        and len(merged) == len(reference)
        and all(reference.get(k, MISSING) is v for k, v in merged.items())
    )


class _Merger:
    def __init__(self, regions: Regions, lists: KeyedLists | None, previous: Mapping[Path, Conflict]) -> None:
        self.regions = regions
        self.lists = lists
        self.previous = previous
        self.prefixes = {path[:i] for path in previous for i in range(len(path) + 1)}
        self.conflicts: dict[Path, Conflict] = {}

    def node(self, path: Path, base: Any, ours: Any, theirs: Any) -> Any:
        """Above the editable regions, where draft and output paths coincide."""
        if self.regions.editable(path):
            return self.editable(path, path, base, ours, theirs)
        if ours is not base and self.regions.container(path) and dict in (type(base), type(ours), type(theirs)):
            return self.container(path, base, ours, theirs)
        return theirs

    def container(self, path: Path, base: Any, ours: Any, theirs: Any) -> Any:
        b = base if type(base) is dict else {}
        o = ours if type(ours) is dict else {}
        t = theirs if type(theirs) is dict else {}
        out = {}
        for key in [*o, *(k for k in t if k not in o)]:
            merged = self.node(path + (key,), b.get(key, MISSING), o.get(key, MISSING), t.get(key, MISSING))
            if merged is not MISSING:
                out[key] = merged
        if type(theirs) is dict:
            return theirs if _same_entries(out, theirs) else out
        return out if out else theirs

    def editable(self, path: Path, ours_path: Path, base: Any, ours: Any, theirs: Any) -> Any:
        if ours is base:
            return theirs
        if theirs is base:
            self.carry(ours_path, path)
            return ours
        if type(ours) is dict and type(base) in (dict, type(MISSING)) and type(theirs) in (dict, type(MISSING)):
            return self.editable_map(path, ours_path, base, ours, theirs)
        if self.lists is not None and type(ours) is list and type(base) in (list, type(MISSING)):
            keys = self.lists.map_keys(path) if type(theirs) in (list, type(MISSING)) else None
            merged = self.keyed(path, ours_path, base, ours, theirs, keys) if keys else None
            if merged is not None:
                return merged
        return self.atomic(path, ours_path, base, ours, theirs)

    def editable_map(self, path: Path, ours_path: Path, base: Any, ours: dict[str, Any], theirs: Any) -> Any:
        b = base if type(base) is dict else {}
        t = theirs if type(theirs) is dict else {}
        out = {}
        for key in [*ours, *(k for k in t if k not in ours)]:
            merged = self.editable(
                path + (key,), ours_path + (key,), b.get(key, MISSING), ours.get(key, MISSING), t.get(key, MISSING)
            )
            if merged is not MISSING:
                out[key] = merged
        if not out and theirs is MISSING:
            return MISSING
        if _same_entries(out, theirs):
            return theirs
        return ours if _same_entries(out, ours) else out

    def atomic(self, path: Path, ours_path: Path, base: Any, ours: Any, theirs: Any) -> Any:
        if json_equal(base, ours):
            return theirs
        if json_equal(base, theirs):
            self.carry(ours_path, path)
            return ours
        if json_equal(ours, theirs):
            return theirs
        self.record(path, theirs)
        return ours

    def keyed(self, path: Path, ours_path: Path, base: Any, ours: list[Any], theirs: Any, keys: tuple[str, ...]) -> Any:
        """The keyed list merged item by item, or None when a side is not a valid keyed list."""
        base_items = base if type(base) is list else []
        their_items = theirs if type(theirs) is list else []
        base_ids, our_ids, their_ids = (identities(x, keys) for x in (base_items, ours, their_items))
        if base_ids is None or our_ids is None or their_ids is None:
            return None
        by_base = dict(zip(base_ids, base_items))
        by_theirs = dict(zip(their_ids, their_items))
        by_ours = {identity: index for index, identity in enumerate(our_ids)}
        out: list[Any] = []
        for identity in self.order(path, base_ids, our_ids, their_ids, theirs):
            b = by_base.get(identity, MISSING)
            t = by_theirs.get(identity, MISSING)
            index = by_ours.get(identity)
            o = MISSING if index is None else ours[index]
            item_path = path + (len(out),)
            our_item_path = None if index is None else ours_path + (index,)
            if our_item_path is None or b is MISSING or t is MISSING:
                merged = self.item(path, item_path, our_item_path, b, o, t, theirs)
            else:
                merged = self.editable(item_path, our_item_path, b, o, t)
            if merged is not MISSING:
                out.append(merged)
        if not out and theirs is MISSING:
            return MISSING
        if type(theirs) is list and len(out) == len(theirs) and all(x is y for x, y in zip(out, theirs)):
            return theirs
        return out

    def order(
        self, path: Path, base: list[Identity], ours: list[Identity], theirs: list[Identity], their_list: Any
    ) -> list[Identity]:
        """The order of a merged keyed list: theirs, with the items only ours has at the end; ours
        (with theirs' new items at the end) when only ours moved items; ours and a conflict at the
        list when both moved the items they share differently."""
        their_ids, our_ids = set(theirs), set(ours)
        their_order = [*theirs, *(i for i in ours if i not in their_ids)]
        if not _moved(base, ours):
            return their_order
        if _moved(base, theirs):
            shared = set(base) & set(ours) & set(theirs)
            if [i for i in ours if i in shared] == [i for i in theirs if i in shared]:
                return their_order
            self.record(path, their_list)
        return [*ours, *(i for i in theirs if i not in our_ids)]

    def item(
        self,
        list_path: Path,
        item_path: Path,
        ours_path: Path | None,
        base: Any,
        ours: Any,
        theirs: Any,
        their_list: Any,
    ) -> Any:
        """A keyed item missing on some side, merged as one value."""
        if json_equal(base, ours):
            return theirs
        if json_equal(base, theirs):
            if ours_path is not None:
                self.carry(ours_path, item_path)
            return ours
        if json_equal(ours, theirs):
            return theirs
        if ours is MISSING:
            self.record(list_path, their_list)  # deleted here, changed there: the list conflicts
        else:
            self.record(item_path, theirs)
        return ours

    def record(self, path: Path, theirs: Any) -> None:
        present = theirs is not MISSING
        self.conflicts[path] = Conflict(path, theirs if present else None, present)

    def carry(self, ours_path: Path, path: Path) -> None:
        """Keep the conflicts recorded at or under ``ours_path``, moved to ``path``."""
        if ours_path not in self.prefixes:
            return
        depth = len(ours_path)
        for old_path, conflict in self.previous.items():
            if old_path[:depth] == ours_path:
                new_path = path + old_path[depth:]
                self.conflicts[new_path] = replace(conflict, path=new_path)
