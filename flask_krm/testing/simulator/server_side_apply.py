"""Server-side apply (``application/apply-patch+yaml``): merge, field ownership, conflicts and ``force``.

A faithful subset of structured-merge-diff's apply as kube-apiserver runs it:

- the applied configuration's field set (``field_sets.object_set``) becomes the manager's ``Apply``
  entry; keyed lists merge item by item, ``set`` lists by value, other lists are replaced whole;
- a field the configuration sets to a value other than the live one, while another manager (an
  ``Apply`` or ``Update`` entry) owns it, is a conflict: 409 naming each, unless ``force`` moves
  the field to the applier; the same value applied by two managers is owned by both;
- a field the manager applied before and no longer applies is removed, unless another manager
  owns it too;
- the applier's entry gets the time only when the apply changed the object (an entry that only
  shares fields has no time); entries are sorted as kube-apiserver sorts them (operation, time,
  manager).
"""

from __future__ import annotations

import copy
import json
from typing import Any

from . import field_sets
from .catalog import ResourceType
from .errors import ApiError
from .field_sets import Path, Schema
from .managed_fields import sorted_entries

APPLY, UPDATE = "Apply", "Update"


def entry_set(entry: dict[str, Any]) -> set[Path]:
    return field_sets.from_fields_v1(entry.get("fieldsV1") or {})


def apply(
    resource: ResourceType,
    live: dict[str, Any] | None,
    applied: dict[str, Any],
    manager: str,
    force: bool,
    timestamp: str,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The object after ``manager`` applies ``applied`` over ``live`` (``None``: a create), and its ``managedFields``.

    Raises a 409 ``ApiError`` for conflicts unless ``force``.
    """
    schema = field_sets.kind_schema(resource)
    applied_set = field_sets.object_set(resource, applied)
    entries = copy.deepcopy((live or {}).get("metadata", {}).get("managedFields") or [])
    mine = next(
        (e for e in entries if e["manager"] == manager and e["operation"] == APPLY and not e.get("subresource")), None
    )
    others = [e for e in entries if e is not mine]
    if live is None:
        merged = copy.deepcopy(applied)
    else:
        changed = {path for path in applied_set if _differs(schema, live, applied, path)}
        conflicts = [
            (entry, path)
            for entry in others
            for path in sorted(_overlapping(entry_set(entry), changed))
            if not entry.get("subresource")
        ]
        if conflicts and not force:
            raise conflict_error(conflicts)
        for entry in others:
            if not entry.get("subresource"):
                owned = entry_set(entry)
                taken = _overlapping(owned, changed)
                if taken:
                    entry["fieldsV1"] = field_sets.to_fields_v1(owned - taken)
        merged = _merge(schema, copy.deepcopy(live), applied)
        previous = entry_set(mine) if mine else set()
        still_owned = set().union(*(entry_set(entry) for entry in others)) if others else set()
        for path in sorted(previous - applied_set, key=len, reverse=True):
            if path not in still_owned:
                _remove(schema, merged, path)
    new_entry: dict[str, Any] = {"manager": manager, "operation": APPLY, "apiVersion": resource.api_version}
    if live is None or _content(merged) != _content(live):
        new_entry["time"] = timestamp  # the apply changed the object
    elif mine is not None and "time" in mine:
        new_entry["time"] = mine["time"]
    new_entry.update(fieldsType="FieldsV1", fieldsV1=field_sets.to_fields_v1(applied_set))
    kept = [entry for entry in others if entry_set(entry)]
    result = kept + ([new_entry] if applied_set else [])
    return merged, sorted_entries(result)


def _content(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` without its managedFields (what an apply's change is judged by)."""
    metadata = {key: value for key, value in obj.get("metadata", {}).items() if key != "managedFields"}
    return {**obj, "metadata": metadata}


def _overlapping(owned: set[Path], changed: set[Path]) -> set[Path]:
    """Owned paths a change reaches: the same path, or an owned whole (an atomic list or map) the change lies inside.

    Owning a keyed list's item (its ``.``) is not owning its fields.
    """
    return {
        path
        for path in owned
        if path in changed or (path[-1].startswith("f:") and any(change[: len(path)] == path for change in changed))
    }


def conflict_error(conflicts: list[tuple[dict[str, Any], Path]]) -> ApiError:
    """``NewConflictError``: 409 Conflict, one ``FieldManagerConflict`` cause per conflicting field."""
    causes = [
        {
            "reason": "FieldManagerConflict",
            "message": f"conflict with {_manager(entry)}",
            "field": field_sets.path_string(path),
        }
        for entry, path in conflicts
    ]
    if len(conflicts) == 1:
        entry, path = conflicts[0]
        message = f"Apply failed with 1 conflict: conflict with {_manager(entry)}: {field_sets.path_string(path)}"
    else:
        lines: list[str] = []
        for name in sorted({entry["manager"] for entry, _ in conflicts}):
            of_manager = [(entry, path) for entry, path in conflicts if entry["manager"] == name]
            lines.append(f"conflicts with {_manager(of_manager[0][0])}:")
            lines += [f"- {field_sets.path_string(path)}" for _, path in of_manager]
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return ApiError(409, "Conflict", message, {"causes": causes})


def _manager(entry: dict[str, Any]) -> str:
    """``printManager``: an applier by name, an updater with the API version it used."""
    text = json.dumps(entry["manager"])
    if entry.get("subresource"):
        text += f" with subresource {json.dumps(entry['subresource'])}"
    return f"{text} using {entry.get('apiVersion', '')}" if entry["operation"] == UPDATE else text


def _find(schema: Schema | None, value: Any, path: Path) -> tuple[bool, Any]:
    """The value at ``path`` in ``value`` (``(False, None)`` when absent)."""
    for element in path:
        kind, _, rest = element.partition(":")
        if kind == "f":
            if not isinstance(value, dict) or rest not in value:
                return False, None
            schema, value = field_sets.child(schema, rest), value[rest]
        elif isinstance(value, list):
            match = [item for item in value if _element(schema, item) == element]
            if not match:
                return False, None
            schema, value = field_sets.items(schema), match[0]
        else:
            return False, None
    return True, value


def _element(schema: Schema | None, item: Any) -> str:
    return (
        field_sets.item_key(schema, item) if field_sets.list_type(schema) == "map" else field_sets.value_element(item)
    )


def _differs(schema: Schema | None, live: Any, applied: Any, path: Path) -> bool:
    """Whether applying changes the field at ``path``: a new field, or a leaf with another value."""
    live_found, live_value = _find(schema, live, path)
    if not live_found:
        return True
    if path[-1].startswith(("k:", "v:")):
        return False  # the item is there; its fields are compared one by one
    _, applied_value = _find(schema, applied, path)
    return bool(live_value != applied_value)


def _merge(schema: Schema | None, live: Any, applied: Any) -> Any:
    """``applied`` merged into ``live``: objects field by field, keyed and set lists by item, the rest replaced."""
    if isinstance(live, dict) and isinstance(applied, dict) and not field_sets.is_atomic_map(schema):
        for key, value in applied.items():
            live[key] = _merge(field_sets.child(schema, key), live[key], value) if key in live else copy.deepcopy(value)
        return live
    if isinstance(live, list) and isinstance(applied, list) and field_sets.list_type(schema) in ("map", "set"):
        item_schema = field_sets.items(schema)
        merged = list(live)
        positions = {_element(schema, item): index for index, item in enumerate(merged)}
        for item in applied:
            element = _element(schema, item)
            if element in positions:
                merged[positions[element]] = _merge(item_schema, merged[positions[element]], item)
            else:
                positions[element] = len(merged)
                merged.append(copy.deepcopy(item))
        return merged
    return copy.deepcopy(applied)


def _remove(schema: Schema | None, obj: Any, path: Path) -> None:
    """Delete the field or list item at ``path`` from ``obj`` (nothing when it is not there)."""
    parent_path, last = path[:-1], path[-1]
    found, parent = _find(schema, obj, parent_path)
    if not found:
        return
    parent_schema = _schema_at(schema, parent_path)
    kind, _, rest = last.partition(":")
    if kind == "f" and isinstance(parent, dict):
        parent.pop(rest, None)
    elif isinstance(parent, list):
        parent[:] = [item for item in parent if _element(parent_schema, item) != last]


def _schema_at(schema: Schema | None, path: Path) -> Schema | None:
    for element in path:
        kind, _, rest = element.partition(":")
        schema = field_sets.child(schema, rest) if kind == "f" else field_sets.items(schema)
    return schema
