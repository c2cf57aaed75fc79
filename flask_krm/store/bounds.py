"""What a draft may hold: the types Kubernetes gives the places people edit, and its size limits.

Every edit of a draft, whichever way it came (a field, an item, a row, a YAML text, a review), is
checked here before the draft changes (:func:`check_draft`), so no stored draft can make its page
or its Save fail:

- **Types.** A member of a string map (labels, annotations, selectors' ``matchLabels``,
  ``nodeSelector``; a ConfigMap's ``data`` and ``binaryData``; a Secret's ``data`` and
  ``stringData``) is a string, and the map itself a map (unless the server's object holds another
  kind of value there: then it is not the map Kubernetes' built-in kinds define). Other wrong types
  are Kubernetes' to answer at Save, with its own message; they never break the page.
- **Sizes**, as the API server counts them: annotations at most :data:`MAX_ANNOTATION_BYTES` in
  all, a ConfigMap's or Secret's data at most :data:`MAX_DATA_BYTES`, the whole object at most
  :data:`MAX_OBJECT_BYTES` as JSON, and at most :data:`MAX_DRAFT_VALUES` values (or as many as the
  server's object has), so the editor that shows the draft stays quick to render. A limit refuses
  only an edit that grows past it: a draft already past one (because the object on the server is)
  may still shrink.

Pure: no Flask, no gevent, no network.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Final, TypeAlias

from .errors import InvalidValueError
from .paths import MISSING, Path, get_at, path_to_pointer

MAX_OBJECT_BYTES: Final = 1_572_864
"""The largest object, as JSON: etcd's default request limit (1.5 MiB), which the API server enforces."""
MAX_DATA_BYTES: Final = 1_048_576
"""The most data a ConfigMap (keys and values) or a Secret (values) may hold (1 MiB)."""
MAX_ANNOTATION_BYTES: Final = 262_144
"""The most annotations (keys and values) one object may have (256 KiB)."""
MAX_DRAFT_VALUES: Final = 10_000
"""The most values (every map, list and scalar) a draft may grow to, unless its server object has more."""

STRING_MAP_NAMES: Final = frozenset({"labels", "annotations", "matchLabels", "nodeSelector"})
"""Members with these names are maps of strings wherever they are, in every built-in kind."""
KIND_STRING_MAPS: Final[Mapping[tuple[str, str], frozenset[Path]]] = {
    ("v1", "ConfigMap"): frozenset({("data",), ("binaryData",)}),
    ("v1", "Secret"): frozenset({("data",), ("stringData",)}),
}
"""Maps of strings of one kind, by ``(apiVersion, kind)``."""


Measure: TypeAlias = Callable[[Mapping[str, Any]], int]


class DraftRefused(InvalidValueError):
    """An edit that would give the draft what its object cannot hold; ``path`` is where
    (``limit``: the place whose size limit the edits under it would pass)."""

    def __init__(self, path: Path, message: str, *, limit: bool = False) -> None:
        super().__init__(message)
        self.path = path
        self.message = message
        self.limit = limit


def check_draft(
    server: Mapping[str, Any], before: Mapping[str, Any], draft: Mapping[str, Any], edited: Iterable[Path]
) -> None:
    """Refuse (:class:`DraftRefused`) ``draft``, made from ``before`` by edits at ``edited``, when a
    value at or under an edited path has the wrong type for its place or the draft grew past a
    size limit (see the module doc)."""
    kind = (str(server.get("apiVersion", "")), str(server.get("kind", "")))
    string_maps = KIND_STRING_MAPS.get(kind, frozenset())
    for path in edited:
        _check_types(server, draft, path, string_maps)
    _check_sizes(kind, server, before, draft)


def _string_map(path: Path, string_maps: frozenset[Path]) -> bool:
    return path in string_maps or (bool(path) and isinstance(path[-1], str) and path[-1] in STRING_MAP_NAMES)


def _shape(value: Any) -> str:
    if type(value) is dict:
        return "a map"
    if type(value) is list:
        return "a list"
    return "text" if type(value) is str else "a value"


def _check_types(
    server: Mapping[str, Any], draft: Mapping[str, Any], edited: Path, string_maps: frozenset[Path]
) -> None:
    for depth in range(1, len(edited)):  # what an edit below creates on its way
        _check_place(server, edited[:depth], get_at(draft, edited[:depth]), string_maps, whole=False)
    for path, value in _walk(edited, get_at(draft, edited)):
        _check_place(server, path, value, string_maps, whole=True)


def _check_place(
    server: Mapping[str, Any], path: Path, value: Any, string_maps: frozenset[Path], *, whole: bool
) -> None:
    if value is MISSING:
        return
    theirs = get_at(server, path)
    if path and _string_map(path[:-1], string_maps) and type(value) is not str:
        if type(get_at(server, path[:-1])) in (dict, type(MISSING)):
            raise DraftRefused(
                path, f"{path_to_pointer(path)} is an entry of a map of strings: it holds text, not {_shape(value)}"
            )
    if whole and _string_map(path, string_maps) and type(value) is not dict and value is not None:
        if theirs is MISSING or type(theirs) is dict:
            raise DraftRefused(path, f"{path_to_pointer(path)} is a map of strings, not {_shape(value)}")


def _walk(path: Path, value: Any) -> Iterator[tuple[Path, Any]]:
    pending = [(path, value)]
    while pending:
        where, node = pending.pop()
        yield where, node
        if type(node) is dict:
            pending.extend((where + (key,), child) for key, child in node.items())
        elif type(node) is list:
            pending.extend((where + (index,), child) for index, child in enumerate(node))


def _check_sizes(
    kind: tuple[str, str], server: Mapping[str, Any], before: Mapping[str, Any], draft: Mapping[str, Any]
) -> None:
    measures: list[tuple[Path, Measure, int, str]] = [
        (("metadata", "annotations"), _annotation_bytes, MAX_ANNOTATION_BYTES, "annotations")
    ]
    if kind in KIND_STRING_MAPS:
        measures.append(((), _data_bytes(kind), MAX_DATA_BYTES, f"the data of a {kind[1]}"))
    for path, measure, limit, what in measures:
        size = measure(draft)
        if size > limit and size > measure(before):
            raise DraftRefused(path, f"{what} would take {size} bytes; Kubernetes accepts at most {limit}", limit=True)
    size = _json_bytes(draft)
    if size > MAX_OBJECT_BYTES and size > _json_bytes(before):
        raise DraftRefused(
            (), f"the object would take {size} bytes; Kubernetes stores at most {MAX_OBJECT_BYTES}", limit=True
        )
    values = count_values(draft)
    if values > max(MAX_DRAFT_VALUES, count_values(server)) and values > count_values(before):
        raise DraftRefused(
            (), f"the object would hold {values} values; an editor holds at most {MAX_DRAFT_VALUES}", limit=True
        )


def _text_bytes(value: Any) -> int:
    return len(value.encode("utf-8", "surrogatepass")) if type(value) is str else _json_bytes(value)


def _annotation_bytes(obj: Mapping[str, Any]) -> int:
    annotations = get_at(obj, ("metadata", "annotations"))
    if type(annotations) is not dict:
        return 0
    return sum(_text_bytes(key) + _text_bytes(value) for key, value in annotations.items())


def _data_bytes(kind: tuple[str, str]) -> Measure:
    secret = kind[1] == "Secret"

    def measure(obj: Mapping[str, Any]) -> int:
        total = 0
        for member in sorted(KIND_STRING_MAPS[kind]):
            entries = get_at(obj, member)
            if type(entries) is not dict:
                continue
            base64 = member[0] in ("binaryData", "data") and (secret or member[0] == "binaryData")
            for key, value in entries.items():
                size = _text_bytes(value)
                total += (size * 3 // 4 if base64 else size) + (0 if secret else _text_bytes(key))
        return total

    return measure


def _json_bytes(value: Any) -> int:
    try:
        return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))
    except (TypeError, ValueError):
        return 0


def count_values(value: Any) -> int:
    """How many values ``value`` is made of (itself, and every map, list and scalar in it)."""
    total = 0
    pending = [value]
    while pending:
        node = pending.pop()
        total += 1
        if type(node) is dict:
            pending.extend(node.values())
        elif type(node) is list:
            pending.extend(node)
    return total
