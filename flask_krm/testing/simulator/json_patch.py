"""RFC 6902 JSON patch as kube-apiserver applies ``application/json-patch+json`` (``evanphx/json-patch`` v4).

Its lenient corners are kept: ``replace`` of a missing object key adds it, a path's first segment
is never looked at (``data/x`` means ``/x``), ``add`` without a ``value`` writes ``null``, negative
array indexes count from the end. Any failing operation (a ``test`` included) is ``PatchFailed``.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from .errors import ApiError, bad_request
from .strategies import json_type

Container = dict[str, Any] | list[Any]
_INDEX = re.compile(r"^[+-]?[0-9]+$")
_ESCAPE = re.compile(r"~[01]")
_MISSING = object()


class PatchFailed(Exception):
    """An operation did not apply; kube-apiserver reports every such failure alike (422)."""


def decode_json_patch(patch: Any) -> list[dict[str, Any]]:
    """The operations of a decoded request body, or the 400 kube-apiserver's strict decoder gives."""
    if not isinstance(patch, list):
        raise _decoding(f"json: cannot unmarshal {json_type(patch)} into Go value of type []handlers.jsonPatchOp")
    for operation in patch:
        if not isinstance(operation, dict):
            raise _decoding(f"json: cannot unmarshal {json_type(operation)} into Go value of type handlers.jsonPatchOp")
        for name in ("op", "path", "from"):
            value = operation.get(name)
            if value is not None and not isinstance(value, str):
                raise _decoding(
                    f"json: cannot unmarshal {json_type(value)} into Go struct field jsonPatchOp.{name} of type string"
                )
    return patch


def _decoding(message: str) -> ApiError:
    return bad_request(f"error decoding patch: {message}")


def apply_json_patch(document: dict[str, Any], operations: list[dict[str, Any]]) -> Any:
    """``document`` after ``operations`` (neither is modified); raises ``PatchFailed``."""
    root: Any = copy.deepcopy(document)
    for operation in operations:
        kind = operation.get("op") if isinstance(operation.get("op"), str) else "unknown"
        if kind == "add":
            _add(root, operation)
        elif kind == "remove":
            container, key = _parent(root, _path(operation, "path"))
            _remove(container, key)
        elif kind == "replace":
            root = _replace(root, operation)
        elif kind == "move":
            container, key = _parent(root, _path(operation, "from"))
            value = _get(container, key)
            _remove(container, key)
            destination, target = _parent(root, _path(operation, "path"))
            _insert(destination, target, value)
        elif kind == "copy":
            container, key = _parent(root, _path(operation, "from"))
            value = copy.deepcopy(_get(container, key))
            destination, target = _parent(root, _path(operation, "path"))
            _insert(destination, target, value)
        elif kind == "test":
            _test(root, operation)
        else:
            raise PatchFailed(f"Unexpected kind: {kind}")
    return root


def _path(operation: dict[str, Any], name: str) -> str:
    value = operation.get(name)
    if not isinstance(value, str):
        raise PatchFailed(f"operation missing {name} field")
    return value


def _value(operation: dict[str, Any]) -> Any:
    return copy.deepcopy(operation.get("value"))


def _unescape(segment: str) -> str:
    return _ESCAPE.sub(lambda match: "/" if match.group() == "~1" else "~", segment)


def _parent(root: Any, path: str) -> tuple[Container, str]:
    """The container holding the last segment of ``path``, and that segment (``findObject``)."""
    segments = path.split("/")
    if len(segments) < 2:
        raise PatchFailed(f"doc is missing path: {path}")
    node: Any = root
    for segment in segments[1:-1]:
        try:
            node = _get(node, _unescape(segment))
        except PatchFailed:
            raise PatchFailed(f"doc is missing path: {path}") from None
        if not isinstance(node, (dict, list)):
            raise PatchFailed(f"doc is missing path: {path}")
    return node, _unescape(segments[-1])


def _array_index(key: str) -> int:
    if not _INDEX.match(key):
        raise PatchFailed(f"value was not a proper array index: '{key}'")
    return int(key)


def _get(container: Any, key: str) -> Any:
    """The value at ``key``: ``None`` for a missing object key, an error for a missing array index."""
    if isinstance(container, dict):
        return container.get(key)
    if not isinstance(container, list):
        raise PatchFailed("unknown object type")
    index = _array_index(key)
    if index < 0:
        if index < -len(container):
            raise PatchFailed(f"Unable to access invalid index: {index}")
        index += len(container)
    if index >= len(container):
        raise PatchFailed(f"Unable to access invalid index: {index}")
    return container[index]


def _insert(container: Container, key: str, value: Any) -> None:
    if isinstance(container, dict):
        container[key] = value
        return
    if key == "-":
        container.append(value)
        return
    index = _array_index(key)
    size = len(container) + 1
    if index >= size or index < -size:
        raise PatchFailed(f"Unable to access invalid index: {index}")
    container.insert(index + size if index < 0 else index, value)


def _remove(container: Container, key: str) -> None:
    if isinstance(container, dict):
        if key not in container:
            raise PatchFailed(f"Unable to remove nonexistent key: {key}")
        del container[key]
        return
    index = _array_index(key)
    if index >= len(container) or index < -len(container):
        raise PatchFailed(f"Unable to access invalid index: {index}")
    del container[index]


def _add(root: Any, operation: dict[str, Any]) -> None:
    container, key = _parent(root, _path(operation, "path"))
    _insert(container, key, _value(operation))


def _replace(root: Any, operation: dict[str, Any]) -> Any:
    path = _path(operation, "path")
    if path == "":
        value = _value(operation)
        if not isinstance(value, (dict, list)):
            raise PatchFailed("replace operation value must be object or array")
        return value
    container, key = _parent(root, path)
    _get(container, key)
    if isinstance(container, list):
        index = _array_index(key)
        container[index] = _value(operation)
    else:
        container[key] = _value(operation)
    return root


def _test(root: Any, operation: dict[str, Any]) -> None:
    path = _path(operation, "path")
    expected = operation.get("value", _MISSING)
    if path == "":
        actual = root
    else:
        container, key = _parent(root, path)
        actual = _get(container, key)
    if actual is None:
        if expected is _MISSING or expected is None:
            return
        raise PatchFailed(f"testing value {path} failed")
    if expected is _MISSING or not _equal(actual, expected):
        raise PatchFailed(f"testing value {path} failed")


def _equal(left: Any, right: Any) -> bool:
    """JSON equality that, like the Go library, tells ``1`` from ``1.0`` and ``true`` from ``1``."""
    if isinstance(left, dict):
        return isinstance(right, dict) and left.keys() == right.keys() and all(_equal(left[k], right[k]) for k in left)
    if isinstance(left, list):
        return isinstance(right, list) and len(left) == len(right) and all(_equal(a, b) for a, b in zip(left, right))
    return type(left) is type(right) and left == right
