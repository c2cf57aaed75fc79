"""Addresses: paths that name keyed-list items by their keys, not by their position.

A path names a list item by index, which goes stale as soon as someone inserts, removes or reorders
items. An *address* is a path in which an item of a keyed list (``x-kubernetes-list-type: map``,
see :mod:`.keyed_lists`) is named by its key values instead: the segment ``{"name": "web"}`` in
``("spec", "template", "spec", "containers", {"name": "web"}, "image")``. The three-way merge
already keeps a person's edit with its item by key; an address does the same for the edit's
request, which is resolved against the draft only when it is applied.

Resolving refuses precisely: a key segment on a list that is not keyed, or naming other keys than
the list's, is a :class:`~.errors.MalformedPathError`; an index into a keyed list is too (its
position means nothing by the time the edit arrives); a key no item has is a
:class:`~.errors.MissingItemError`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias

from .errors import MalformedPathError, MissingItemError, PathTypeError
from .keyed_lists import identities
from .paths import Path, as_path

ItemKey: TypeAlias = Mapping[str, Any]
"""A keyed-list item's key values, such as ``{"containerPort": 8080, "protocol": "TCP"}``."""
AddressSegment: TypeAlias = str | int | ItemKey
Address: TypeAlias = tuple[AddressSegment, ...]
MapKeys: TypeAlias = Callable[[Path], "tuple[str, ...] | None"]
"""The list-map keys of the list at a (concrete) path, or None when it is not a keyed list."""

_KEY_TYPES = (str, int, float, bool)


def as_address(value: Any) -> Address:
    """Validate ``value`` as an address: a path whose segments may also be item keys."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise MalformedPathError(value, "a path is a sequence of segments, not a string")
    out: list[AddressSegment] = []
    for segment in value:
        if isinstance(segment, Mapping):
            if not segment or not all(isinstance(k, str) and type(v) in _KEY_TYPES for k, v in segment.items()):
                raise MalformedPathError(value, "an item is named by its keys, each a string, number or boolean")
            out.append(dict(segment))
        else:
            out.extend(as_path([segment]))
    return tuple(out)


def keyed_items(items: Any, keys: tuple[str, ...] | None) -> bool:
    """Whether ``items`` is a list merged item by item under ``keys`` (every item keyed, no duplicates)."""
    return keys is not None and identities(items, keys) is not None


def item_key(item: Mapping[str, Any], keys: Sequence[str]) -> dict[str, Any]:
    """The key values of ``item`` (an item of a valid keyed list)."""
    return {key: item[key] for key in keys}


def find_item(items: list[Any], key: ItemKey) -> int | None:
    """The index of the item with exactly these key values (types compared too), or None."""
    for index, item in enumerate(items):
        if all(k in item and type(item[k]) is type(v) and item[k] == v for k, v in key.items()):
            return index
    return None


def resolve(tree: Any, address: Sequence[AddressSegment], map_keys: MapKeys) -> Path:
    """The concrete path (indexes) of ``address`` in ``tree`` now.

    Only the list segments are checked here; whether the rest exists is the edit's business.
    """
    path: list[str | int] = []
    node = tree
    for segment in address:
        if type(node) is list:
            keys = map_keys(tuple(path))
            keyed = keyed_items(node, keys)
            if isinstance(segment, Mapping):
                if keys is None or not keyed:
                    raise MalformedPathError(tuple(path), "this list is not keyed: name its items by position")
                if set(segment) != set(keys):
                    raise MalformedPathError(tuple(path), f"items of this list are named by {', '.join(keys)}")
                index = find_item(node, segment)
                if index is None:
                    raise MissingItemError(tuple(path), segment)
                segment = index
            elif keyed:
                raise MalformedPathError(tuple(path), "name an item of this list by its keys, not its position")
        elif isinstance(segment, Mapping):
            raise PathTypeError(tuple(path), "an item key names an item of a list")
        path.append(segment)
        if type(node) is dict and isinstance(segment, str):
            node = node.get(segment)
        elif type(node) is list and isinstance(segment, int) and segment < len(node):
            node = node[segment]
        else:
            node = None
    return tuple(path)


def address_of(tree: Any, path: Path, map_keys: MapKeys) -> Address:
    """``path`` with each index into a keyed list of ``tree`` replaced by the item's key values."""
    out: list[AddressSegment] = []
    node = tree
    for depth, segment in enumerate(path):
        if type(node) is list and isinstance(segment, int) and segment < len(node):
            keys = map_keys(path[:depth])
            item = node[segment]
            out.append(item_key(item, keys) if keys is not None and keyed_items(node, keys) else segment)
            node = item
            continue
        out.append(segment)
        node = node.get(segment) if type(node) is dict and isinstance(segment, str) else None
    return tuple(out)
