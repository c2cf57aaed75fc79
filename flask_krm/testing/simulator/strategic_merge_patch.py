"""Strategic merge patch (``application/strategic-merge-patch+json``), ported from ``k8s.io/apimachinery``.

Maps merge and ``null`` removes, as in a merge patch; lists tagged ``merge`` in ``patch_meta``
merge by their merge key (scalar lists as sets), other lists are replaced. Directives:
``$patch: replace|delete`` in a map or a list item, ``$retainKeys``, ``$setElementOrder/<list>``
and ``$deleteFromPrimitiveList/<list>``. Order of merged lists follows the library: patch items in
patch order, interleaved with server-only items in their server order.

Failures are ``StrategicMergeError`` carrying the HTTP code kube-apiserver answers: 400 for a
malformed directive, 422 for lists of lists, 500 (no reason) for the library's other errors.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from .errors import go_print, go_type_name
from .patch_meta import MERGE, PatchMeta

DIRECTIVE = "$patch"
REPLACE = "replace"
DELETE = "delete"
RETAIN_KEYS = "$retainKeys"
SET_ELEMENT_ORDER = "$setElementOrder"
DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList"

Map = dict[str, Any]


class StrategicMergeError(Exception):
    """The patch cannot be merged: ``code`` is what kube-apiserver answers (400, 422 or 500) with ``message``."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _bad_request(message: str) -> StrategicMergeError:
    return StrategicMergeError(400, message)


def _failure(message: str) -> StrategicMergeError:
    return StrategicMergeError(500, message)


BAD_PRIMITIVE_LIST = "invalid patch format of primitive list"
BAD_RETAIN_KEYS = "invalid patch format of retainKeys"
BAD_SET_ELEMENT_ORDER = "invalid patch format of setElementOrder list"


def _no_merge_key(item: Map, key: str) -> StrategicMergeError:
    return _failure(f"map: {go_print(item)} does not contain declared merge key: {key}")


def _bad_arg_type(expected: str, actual: Any) -> StrategicMergeError:
    return _failure(f"expected a {expected}, but received a {go_type_name(actual)}")


def _bad_patch_type(directive: Any, patch: Map) -> StrategicMergeError:
    return _failure(f"unknown patch type: {go_print(directive)} in map: {go_print(patch)}")


def strategic_merge(original: Map, patch: Map, meta: PatchMeta) -> Map:
    """``patch`` merged into ``original`` (neither is modified); raises ``StrategicMergeError``."""
    return _merge_map(copy.deepcopy(original), copy.deepcopy(patch), meta)


def _same(left: Any, right: Any) -> bool:
    """Go's ``==`` on interface values: same dynamic type and equal."""
    return type(left) is type(right) and left == right


def _merge_map(original: Map | None, patch: Map, meta: PatchMeta) -> Map:
    if DIRECTIVE in patch:
        directive = patch[DIRECTIVE]
        if directive == REPLACE:
            del patch[DIRECTIVE]
            return patch
        if directive == DELETE:
            return {}
        raise _bad_patch_type(directive, patch)
    if original is None:
        original = {}
    _apply_retain_keys(original, patch)
    _merge_ordered_lists(original, patch, meta)
    for key, value in list(patch.items()):
        is_delete_list = key.startswith(DELETE_FROM_PRIMITIVE_LIST)
        if is_delete_list:
            key = _extract_key(key, DELETE_FROM_PRIMITIVE_LIST, BAD_PRIMITIVE_LIST)
        if value is None:
            original.pop(key, None)
            continue
        if key not in original or type(original[key]) is not type(value):
            if not is_delete_list:
                _discard_nulls(value)
                kept, keep = _remove_directives(value)
                if keep:
                    original[key] = kept
                else:
                    original.pop(key, None)
            continue
        field = meta.lookup(key)
        if isinstance(value, dict):
            original[key] = value if field.strategy == REPLACE else _merge_map(original[key], value, field)
        elif isinstance(value, list):
            if field.strategy == MERGE or is_delete_list:
                original[key] = _merge_list(original[key], value, field, field.merge_key, is_delete_list)
            else:
                original[key] = value
        else:
            original[key] = value
    return original


def _extract_key(key: str, prefix: str, malformed: str) -> str:
    head, slash, rest = key.partition("/")
    if not slash or head != prefix:
        raise _bad_request(malformed)
    return rest


def _discard_nulls(value: Any) -> None:
    if isinstance(value, dict):
        for key in [key for key, item in value.items() if item is None]:
            del value[key]
        for item in value.values():
            _discard_nulls(item)
    elif isinstance(value, list):
        for item in value:
            _discard_nulls(item)


def _remove_directives(value: Any) -> tuple[Any, bool]:
    """``value`` without directive maps, and whether the value itself is kept."""
    if isinstance(value, dict):
        if DIRECTIVE in value:
            return None, False
        for key in list(value):
            value[key], keep = _remove_directives(value[key])
            if not keep:
                del value[key]
        return value, True
    if isinstance(value, list):
        kept = [_remove_directives(item) for item in value]
        return [item for item, keep in kept if keep], True
    return value, True


def _apply_retain_keys(original: Map, patch: Map) -> None:
    if RETAIN_KEYS not in patch:
        return
    retained = patch.pop(RETAIN_KEYS)
    if not isinstance(retained, list):
        raise _bad_request(BAD_RETAIN_KEYS)
    allowed = {(type(item), item) for item in retained if not isinstance(item, (dict, list))}
    for key, value in patch.items():
        if value is None or key.startswith((DELETE_FROM_PRIMITIVE_LIST, SET_ELEMENT_ORDER)):
            continue
        if (str, key) not in allowed:
            raise _bad_request(BAD_RETAIN_KEYS)
    for key in [key for key in original if (str, key) not in allowed]:
        del original[key]


def _merge_ordered_lists(original: Map, patch: Map, meta: PatchMeta) -> None:
    """Merge each list that has a ``$setElementOrder/<list>`` directive, ordered by it."""
    for directive_key in [key for key in patch if key.startswith(SET_ELEMENT_ORDER)]:
        order = patch.pop(directive_key)
        if not isinstance(order, list):
            raise _bad_arg_type("[]interface {}", order)
        key = _extract_key(directive_key, SET_ELEMENT_ORDER, BAD_SET_ELEMENT_ORDER)
        original_list, patch_list = original.get(key), patch.get(key)
        for found in (original_list, patch_list):
            if found is not None and not isinstance(found, list):
                raise _bad_arg_type("[]interface {}", found)
        field = meta.lookup(key)
        _check_order(patch_list or [], order, field.merge_key)
        if original_list is not None and patch_list is None:
            merged = original_list
        elif original_list is None and patch_list is not None:
            merged = _remove_directives(patch_list)[0]
        elif original_list is not None and patch_list is not None:
            if field.strategy == MERGE:
                merged = _merge_list(original_list, patch_list, field, field.merge_key, False)
            else:
                merged = patch_list
        else:
            continue
        if field.merge_key:
            patch_items, server_only = _partition_maps(merged, order, field.merge_key)
        else:
            patch_items, server_only = _partition_scalars(merged, order)
        kind = _element_kind(original_list or [], patch_list or [])
        original[key] = _normalize_order(patch_items, server_only, order, original_list or [], field.merge_key, kind)
        patch.pop(key, None)


def _check_order(patch_list: list[Any], order: list[Any], merge_key: str) -> None:
    """``validatePatchWithSetOrderList``: the patch's items appear in the order list, in its order."""
    if not order or not patch_list:
        return
    items = _split_deletions(patch_list)[0] if merge_key else patch_list
    patch_index = order_index = 0
    while patch_index < len(items) and order_index < len(order):
        item = items[patch_index]
        if isinstance(item, dict) and DIRECTIVE in item:
            patch_index += 1
            continue
        if _merge_key_equal(item, order[order_index], merge_key):
            patch_index += 1
        order_index += 1
    if patch_index < len(items) and order_index >= len(order):
        raise _failure(
            f"The order in patch list:\n{go_print(patch_list)}\n doesn't match {SET_ELEMENT_ORDER} list:\n{go_print(order)}\n"
        )


def _merge_key_equal(left: Any, right: Any, merge_key: str) -> bool:
    if not merge_key:
        return _same(left, right)
    for item in (left, right):
        if not isinstance(item, dict):
            raise _bad_arg_type("map[string]interface {}", item)
        if merge_key not in item:
            raise _no_merge_key(item, merge_key)
    return _same(left[merge_key], right[merge_key])


def _element_kind(*lists: list[Any]) -> str:
    """``sliceElementType``: the one Go type of every element (``map`` for objects); no lists of lists."""
    kind: str | None = None
    for items in lists:
        for item in items:
            current = go_type_name(item)
            if kind is None:
                if isinstance(item, list):
                    raise StrategicMergeError(422, "lists of lists are not supported")
                kind = current
            elif kind != current:
                raise _failure(f"list element types are not identical: {go_print(list(lists))}")
    if kind is None:
        raise _failure("no elements in any of the given slices")
    return "map" if kind == "map[string]interface {}" else kind


def _merge_list(
    original: list[Any], patch: list[Any], meta: PatchMeta, merge_key: str, is_delete_list: bool
) -> list[Any]:
    if not original and not patch:
        return original
    kind = _element_kind(original, patch)
    if kind != "map":
        if is_delete_list:
            return [item for item in original if not any(_same(item, gone) for gone in patch)]
        merged = _deduplicate(original + patch)
    else:
        if not merge_key:
            raise _failure("cannot merge lists without merge key for ")
        original, patch = _apply_list_directives(original, patch, merge_key)
        merged = _merge_items(original, patch, merge_key, meta)
    if merge_key:
        patch_items, server_only = _partition_maps(merged, patch, merge_key)
    else:
        patch_items, server_only = _partition_scalars(merged, patch)
    return _normalize_order(patch_items, server_only, patch, original, merge_key, kind)


def _deduplicate(items: list[Any]) -> list[Any]:
    """``deduplicateScalars``: the library's in-place swap-with-last deduplication."""
    result = list(items)
    last = len(result) - 1
    i = 0
    while i < last:
        j = i + 1
        while j <= last:
            if _same(result[i], result[j]):
                result[j] = result[last]
                result = result[:last]
                last -= 1
                j -= 1
            j += 1
        i += 1
    return result


def _apply_list_directives(original: list[Any], patch: list[Any], merge_key: str) -> tuple[list[Any], list[Any]]:
    """Apply ``$patch: delete`` items; with a ``$patch: replace`` item the plain patch items replace the list."""
    plain: list[Any] = []
    replace = False
    for item in patch:
        if DIRECTIVE not in item:
            plain.append(item)
            continue
        directive = item[DIRECTIVE]
        if directive == DELETE:
            if merge_key not in item:
                raise _no_merge_key(item, merge_key)
            original = [
                kept
                for kept in original
                if not (isinstance(kept, dict) and _same(kept.get(merge_key), item[merge_key]))
            ]
        elif directive == REPLACE:
            replace = True
        elif directive == MERGE:
            raise _failure("merging lists cannot yet be specified in the patch")
        else:
            raise _bad_patch_type(directive, item)
    if replace:
        return plain, []
    return original, plain


def _find(items: list[Any], merge_key: str, value: Any) -> int:
    for position, item in enumerate(items):
        if not isinstance(item, dict):
            raise _failure(f"value for key {position} is not a map")
        if merge_key in item and _same(item[merge_key], value):
            return position
    return -1


def _merge_items(original: list[Any], patch: list[Any], merge_key: str, meta: PatchMeta) -> list[Any]:
    merged = list(original)
    for item in patch:
        if merge_key not in item:
            raise _no_merge_key(item, merge_key)
        position = _find(merged, merge_key, item[merge_key])
        if position >= 0:
            merged[position] = _merge_map(merged[position], item, meta)
        else:
            merged.append(item)
    return merged


def _partition_scalars(items: list[Any], by: list[Any]) -> tuple[list[Any], list[Any]]:
    present = [item for item in items if any(_same(item, other) for other in by)]
    absent = [item for item in items if not any(_same(item, other) for other in by)]
    return present, absent


def _partition_maps(items: list[Any], by: list[Any], merge_key: str) -> tuple[list[Any], list[Any]]:
    present: list[Any] = []
    absent: list[Any] = []
    for item in items:
        if not isinstance(item, dict):
            raise _bad_arg_type("map[string]interface {}", item)
        if merge_key not in item:
            raise _no_merge_key(item, merge_key)
        (present if _find(by, merge_key, item[merge_key]) >= 0 else absent).append(item)
    return present, absent


def _split_deletions(items: list[Any]) -> tuple[list[Any], list[Any]]:
    kept: list[Any] = []
    deleted: list[Any] = []
    for item in items:
        if not isinstance(item, dict):
            raise _bad_arg_type("map[string]interface {}", item)
        (deleted if item.get(DIRECTIVE) == DELETE else kept).append(item)
    return kept, deleted


def _position(items: list[Any], value: Any, merge_key: str, kind: str) -> int:
    """``index``: where ``value`` is in ``items``, by merge key for maps; -1 if absent."""

    def key_of(item: Any) -> Any:
        if kind == "map":
            return item.get(merge_key) if isinstance(item, dict) else None
        return item

    wanted = key_of(value)
    return next((position for position, item in enumerate(items) if _same(key_of(item), wanted)), -1)


def _normalize_order(
    patch_items: list[Any],
    server_only: list[Any],
    patch_order: list[Any],
    server_order: list[Any],
    merge_key: str,
    kind: str,
) -> list[Any]:
    """Patch items in patch order, interleaved with server-only items in server order (``normalizeElementOrder``)."""
    patch_items = _sort_by(patch_items, patch_order, merge_key, kind)
    server_only = _sort_by(server_only, server_order, merge_key, kind)

    def before(left: Any, right: Any) -> bool:
        left_at = _position(server_order, left, merge_key, kind)
        right_at = _position(server_order, right, merge_key, kind)
        return left_at >= 0 and right_at >= 0 and left_at < right_at

    merged: list[Any] = []
    i = j = 0
    while i < len(server_only) or j < len(patch_items):
        if j >= len(patch_items) or (i < len(server_only) and before(server_only[i], patch_items[j])):
            merged.append(server_only[i])
            i += 1
        else:
            merged.append(patch_items[j])
            j += 1
    return merged


def _sort_by(items: list[Any], order: list[Any], merge_key: str, kind: str) -> list[Any]:
    """``normalizeSliceOrder``: a stable sort by position in ``order``; ``$patch: delete`` items go last."""
    deleted: list[Any] = []
    if kind == "map":
        for item in items + order:
            if not isinstance(item, dict):
                raise _bad_arg_type("map[string]interface {}", item)
            if merge_key not in item:
                raise _no_merge_key(item, merge_key)
        items, deleted = _split_deletions(items)

    def less(left: Any, right: Any) -> bool:
        left_at = _position(order, left, merge_key, kind)
        right_at = _position(order, right, merge_key, kind)
        return left_at < right_at if left_at >= 0 and right_at >= 0 else True

    return _insertion_sort(items, less) + deleted


def _insertion_sort(items: list[Any], less: Callable[[Any, Any], bool]) -> list[Any]:
    """Go's stable insertion sort (what ``sort.SliceStable`` does for short lists)."""
    result = list(items)
    for i in range(1, len(result)):
        j = i
        while j > 0 and less(result[j], result[j - 1]):
            result[j], result[j - 1] = result[j - 1], result[j]
            j -= 1
    return result
