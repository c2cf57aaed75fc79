"""``metadata.managedFields``: which field manager last set which fields (an approximation of server-side tracking).

Every create, update and patch records the fields it set under its manager (``fieldManager`` or
the client's user agent), takes them away from other managers and drops fields that were removed.
Unlike kube-apiserver, lists are owned as a whole (no ``k:`` or ``v:`` keys), and ``.`` (owning a
map itself) is given to whoever creates a map of labels, annotations or data, or any object inside
a custom resource, and taken away when a key of it is removed. Server-side apply's entries
(``server_side_apply``) hold exact field sets; an update takes from them every field it changes,
and the whole of a list it changes. Entries are sorted as kube-apiserver sorts them.
"""

from __future__ import annotations

from typing import Any

from . import field_sets
from .catalog import ResourceType

Object = dict[str, Any]
FieldPath = tuple[str, ...]

SYSTEM_METADATA = frozenset(
    {
        "name",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "managedFields",
    }
)
ATOMIC: frozenset[FieldPath] = frozenset({("spec", "selector")})
MAP_FIELDS = frozenset({"labels", "annotations", "data", "binaryData"})


def manager_from_user_agent(user_agent: str) -> str:
    """The default field manager: the user agent up to its first ``/`` (at most 128 characters)."""
    return user_agent.split("/", 1)[0][:128]


def _leaves(value: Any, path: FieldPath, found: dict[FieldPath, Any]) -> None:
    if isinstance(value, dict) and value and path not in ATOMIC:
        for key, item in value.items():
            _leaves(item, path + (key,), found)
    else:
        found[path] = value


def tracked_fields(obj: Object | None, subresource: str, resource: ResourceType) -> dict[FieldPath, Any]:
    """Leaf field paths (and values) a write of ``obj`` through ``subresource`` can own."""
    found: dict[FieldPath, Any] = {}
    if obj is None:
        return found
    for key, value in obj.items():
        if key in ("apiVersion", "kind"):
            continue
        if key == "metadata":
            for meta_key, meta_value in value.items():
                if meta_key not in SYSTEM_METADATA:
                    _leaves(meta_value, ("metadata", meta_key), found)
        elif key == "status" and resource.status_subresource and subresource != "status":
            continue
        else:
            _leaves(value, (key,), found)
    return found


def _to_tree(paths: set[FieldPath]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for path in sorted(paths):
        node = tree
        for key in path:
            node = node.setdefault(key if key == "." else f"f:{key}", {})
    return _sorted_tree(tree)


def _sorted_tree(node: dict[str, Any]) -> dict[str, Any]:
    return {key: _sorted_tree(node[key]) for key in sorted(node)}


def _from_tree(node: dict[str, Any], path: FieldPath, found: set[FieldPath]) -> None:
    children = [key for key in node if key.startswith("f:") or key == "."]
    if not children and path:
        found.add(path)
    for key in children:
        _from_tree(node[key], path + ((".",) if key == "." else (key[2:],)), found)


def _overlaps(owned: FieldPath, touched: set[FieldPath]) -> bool:
    return any(owned[: len(path)] == path or path[: len(owned)] == owned for path in touched)


def _is_map(path: FieldPath, custom: bool) -> bool:
    return path[-1] in MAP_FIELDS or (custom and path[0] != "metadata")


def _created_maps(changed: set[FieldPath], before: dict[FieldPath, Any], custom: bool) -> set[FieldPath]:
    """``.`` entries for the maps a write brought into being (their owner owns the map itself)."""
    created: set[FieldPath] = set()
    for path in changed:
        for end in range(1, len(path)):
            prefix = path[:end]
            if _is_map(prefix, custom) and not any(old[:end] == prefix for old in before):
                created.add(prefix + (".",))
    return created


def record_write(
    resource: ResourceType, old: Object | None, new: Object, manager: str, subresource: str, timestamp: str
) -> list[dict[str, Any]]:
    """The ``managedFields`` of ``new`` after ``manager`` wrote it over ``old`` (``None`` for a create)."""
    before = tracked_fields(old, subresource, resource)
    after = tracked_fields(new, subresource, resource)
    changed = {path for path, value in after.items() if path not in before or before[path] != value}
    removed = set(before) - set(after)
    owned_now = changed | _created_maps(changed, before, resource.custom)
    # removing a key takes the map itself (".") away from its owner too
    touched = changed | removed | {path[:-1] + (".",) for path in removed}
    entries: list[dict[str, Any]] = []
    mine: dict[str, Any] | None = None
    for entry in (old or {}).get("metadata", {}).get("managedFields") or []:
        if entry.get("operation") == "Apply":
            applied = field_sets.from_fields_v1(entry.get("fieldsV1") or {})
            left = {path for path in applied if not _overlaps(_field_names(path), touched)}
            if left:
                entries.append({**entry, "fieldsV1": field_sets.to_fields_v1(left)})
            continue
        owned: set[FieldPath] = set()
        _from_tree(entry.get("fieldsV1") or {}, (), owned)
        kept = {path for path in owned if not _overlaps(path, touched)}
        is_mine = entry.get("manager") == manager and entry.get("subresource", "") == subresource
        if is_mine:
            kept |= owned_now
        if not kept:
            continue
        updated = {**entry, "fieldsV1": _to_tree(kept)}
        if is_mine:
            mine = updated
            if kept != owned:
                updated["time"] = timestamp
        entries.append(updated)
    if mine is None and changed:
        entry = {
            "manager": manager,
            "operation": "Update",
            "apiVersion": resource.api_version,
            "time": timestamp,
            "fieldsType": "FieldsV1",
            "fieldsV1": _to_tree(owned_now),
        }
        if subresource:
            entry["subresource"] = subresource
        entries.append(entry)
    return sorted_entries(entries)


def sorted_entries(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``sortEncodedManagedFields``: by operation, time, manager, API version, subresource."""
    return sorted(
        entries,
        key=lambda e: (
            e["operation"],
            e.get("time", ""),
            e["manager"],
            e.get("apiVersion", ""),
            e.get("subresource", ""),
        ),
    )


def _field_names(path: field_sets.Path) -> FieldPath:
    """An exact path as this module's approximation sees it: its field names up to the first list item."""
    names: list[str] = []
    for element in path:
        if not element.startswith("f:"):
            break
        names.append(element[2:])
    return tuple(names)
