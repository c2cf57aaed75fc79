"""JSON value trees as the store holds them: copied once, compared, shared, updated by path copying.

The store never mutates a tree it holds. Incoming objects are copied once (:func:`share` reuses
every subtree of the previous server object that did not change, so most later comparisons are
identity checks), and edits build a new spine from the root to the edited node (:func:`set_in`,
:func:`delete_in`, :func:`rename_in`), leaving every other subtree shared. That is what makes a
merge cost about one copy of the incoming object.
"""

from __future__ import annotations

import functools
import json
import math
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from .errors import InvalidValueError, KeyExistsError, MissingKeyError, PathTypeError
from .paths import MISSING, Path, Segment

_SCALARS = frozenset({str, int, float, bool, type(None)})


def json_copy(value: Any) -> Any:
    """A deep copy of a JSON tree; mappings become ``dict`` and tuples ``list``."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict or isinstance(value, Mapping):
        return {k: v if type(v) in _SCALARS else json_copy(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [v if type(v) in _SCALARS else json_copy(v) for v in value]
    return value


def json_equal(a: Any, b: Any) -> bool:
    """Deep JSON equality: key order ignored, ``true`` never equal to ``1``."""
    if a is b:
        return True
    kind = type(a)
    if kind is not type(b):
        return kind in (int, float) and type(b) in (int, float) and a == b
    if kind is dict:
        if len(a) != len(b):
            return False
        for key, value in a.items():
            other = b.get(key, MISSING)
            if other is MISSING or not json_equal(value, other):
                return False
        return True
    if kind is list:
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    return bool(a == b)


def share(new: Any, old: Any) -> Any:
    """A copy of ``new`` that reuses every subtree of ``old`` equal to it (same key order too).

    Returns ``old`` itself when nothing changed, so ``result is old`` means "unchanged".
    """
    kind = type(new)
    if kind in _SCALARS:
        return old if type(old) is kind and old == new else new
    if kind is dict or isinstance(new, Mapping):
        if type(old) is not dict:
            return json_copy(new)
        out = {}
        same = len(new) == len(old)
        old_keys = iter(old)
        for key, value in new.items():
            previous = old.get(key, MISSING)
            if type(value) in _SCALARS:
                merged = previous if type(previous) is type(value) and previous == value else value
            elif previous is MISSING:
                merged = json_copy(value)
            else:
                merged = share(value, previous)
            if same and (merged is not previous or next(old_keys) != key):
                same = False
            out[key] = merged
        return old if same else out
    if kind is list or kind is tuple:
        if type(old) is not list:
            return json_copy(new)
        items = [share(v, old[i]) if i < len(old) else json_copy(v) for i, v in enumerate(new)]
        if len(items) == len(old) and all(x is y for x, y in zip(items, old)):
            return old
        return items
    return old if type(old) is kind and old == new else new


DEFAULT_INT_DIGITS = 4300
"""Python's default integer string conversion limit, used when the interpreter sets none."""


def int_digit_limit() -> int:
    """The most decimal digits an integer of a draft may have: as many as Python converts to text
    (``sys.get_int_max_str_digits()``), the number field's limit."""
    return sys.get_int_max_str_digits() or DEFAULT_INT_DIGITS


@functools.lru_cache(maxsize=4)
def _int_bound(digits: int) -> int:
    bound: int = 10**digits
    return bound


def printable_int(value: int) -> bool:
    """Whether ``value`` has at most :func:`int_digit_limit` decimal digits (checked without
    converting it to text)."""
    return -_int_bound(int_digit_limit()) < value < _int_bound(int_digit_limit())


def is_plain_scalar(value: Any) -> bool:
    """A JSON scalar the store can edit and write back: UTF-8 text, a finite number of at most
    :func:`int_digit_limit` digits, a bool, null."""
    if value is None or type(value) is bool:
        return True
    if type(value) is int:
        return printable_int(value)
    if type(value) is float:
        return math.isfinite(value)
    if type(value) is str:
        return value.isascii() or _encodes(value)
    return False


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def opaque_paths(root: Any) -> list[Path]:
    """Paths of leaves that are not plain JSON scalars (bytes, non-UTF-8 text, other objects)."""
    try:
        json.dumps(root, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError):
        return list(_walk_opaque(root, ()))
    return []


def _walk_opaque(value: Any, path: Path) -> Iterator[Path]:
    if type(value) is dict:
        for key, child in value.items():
            yield from _walk_opaque(child, path + (key,))
    elif type(value) is list:
        for index, child in enumerate(value):
            yield from _walk_opaque(child, path + (index,))
    elif not is_plain_scalar(value):
        yield path


def check_value(value: Any, *, in_map: bool) -> None:
    """Refuse a value an edit must not write; ``in_map`` says the value goes into a map."""
    if type(value) is dict:
        for key, child in value.items():
            if type(key) is not str:
                raise InvalidValueError(f"map key {key!r} is not a string")
            check_value(child, in_map=True)
    elif type(value) is list:
        for child in value:
            check_value(child, in_map=False)
    elif value is None:
        if in_map:
            raise InvalidValueError("null inside a map cannot be written by a merge patch; remove the key instead")
    elif type(value) is int and not printable_int(value):
        raise InvalidValueError(f"a number of more than {int_digit_limit()} digits cannot be stored")
    elif not is_plain_scalar(value):
        raise InvalidValueError(f"{type(value).__name__} value {value!r} is not writable JSON")


def type_name(value: Any) -> str:
    """The JSON type of ``value``, for error messages."""
    if value is MISSING:
        return "missing value"
    if isinstance(value, dict):
        return "map"
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    return type(value).__name__


def set_in(root: Any, path: Path, value: Any) -> Any:
    """``root`` with ``value`` at ``path``; missing maps (or lists, for an index) are created."""
    return _set(root, path, 0, value)


def _set(node: Any, path: Path, depth: int, value: Any) -> Any:
    if depth == len(path):
        return value
    segment = path[depth]
    if node is MISSING:
        node = [] if isinstance(segment, int) else {}
    if type(node) is dict:
        if not isinstance(segment, str):
            raise PathTypeError(path, f"segment {depth} indexes a map with {segment!r}")
        out = dict(node)
        out[segment] = _set(node.get(segment, MISSING), path, depth + 1, value)
        return out
    if type(node) is list:
        index = _index(node, path, depth, allow_end=True)
        items = list(node)
        child = _set(node[index] if index < len(node) else MISSING, path, depth + 1, value)
        if index == len(node):
            items.append(child)
        else:
            items[index] = child
        return items
    raise PathTypeError(path, f"segment {depth} indexes into a {type_name(node)}")


def _index(node: list[Any], path: Path, depth: int, *, allow_end: bool) -> int:
    segment = path[depth]
    if not isinstance(segment, int):
        raise PathTypeError(path, f"segment {depth} indexes a list with the key {segment!r}")
    if segment > len(node) or (segment == len(node) and not allow_end):
        raise PathTypeError(path, f"index {segment} is past the end of a list of {len(node)}")
    return segment


def delete_in(root: Any, path: Path) -> Any:
    """``root`` without the map key at ``path``; unchanged when the key is already absent."""
    return _delete(root, path, 0)


def _delete(node: Any, path: Path, depth: int) -> Any:
    segment = path[depth]
    last = depth == len(path) - 1
    if type(node) is dict:
        if not isinstance(segment, str):
            raise PathTypeError(path, f"segment {depth} indexes a map with {segment!r}")
        if segment not in node:
            return node
        out = dict(node)
        if last:
            del out[segment]
        else:
            child = _delete(node[segment], path, depth + 1)
            if child is node[segment]:
                return node
            out[segment] = child
        return out
    if type(node) is list and not last:
        if not isinstance(segment, int):
            raise PathTypeError(path, f"segment {depth} indexes a list with the key {segment!r}")
        if segment >= len(node):
            return node
        child = _delete(node[segment], path, depth + 1)
        if child is node[segment]:
            return node
        items = list(node)
        items[segment] = child
        return items
    if type(node) is list:
        raise PathTypeError(path, "only a map key can be removed; set the whole list instead")
    raise PathTypeError(path, f"segment {depth} indexes into a {type_name(node)}")


def rename_in(root: Any, path: Path, new_key: str) -> Any:
    """``root`` with the map key at ``path`` renamed to ``new_key``, keeping its position."""
    parent_path, old_key = path[:-1], path[-1]
    parent = _get_strict(root, parent_path)
    if parent is MISSING:
        raise MissingKeyError(path, "no such key to rename")
    if type(parent) is not dict or not isinstance(old_key, str):
        raise PathTypeError(path, f"only a map key can be renamed; the parent is a {type_name(parent)}")
    if old_key not in parent:
        raise MissingKeyError(path, "no such key to rename")
    if new_key in parent:
        raise KeyExistsError(parent_path + (new_key,), "the new key already exists")
    renamed = {(new_key if key == old_key else key): value for key, value in parent.items()}
    return set_in(root, parent_path, renamed) if parent_path else renamed


def _get_strict(root: Any, path: Sequence[Segment]) -> Any:
    node = root
    for depth, segment in enumerate(path):
        if type(node) is dict and isinstance(segment, str):
            node = node.get(segment, MISSING)
        elif type(node) is list and isinstance(segment, int) and segment < len(node):
            node = node[segment]
        else:
            raise PathTypeError(tuple(path), f"segment {depth} does not address a value")
    return node
