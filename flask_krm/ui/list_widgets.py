"""Editor lists: which arrays are edited item by item or row by row, and how a new item is made.

Pure: no Flask, no gevent. An array is shown one of three ways (:func:`list_kind`):

- ``items``: a keyed list (``x-kubernetes-list-type: map``: containers and env by ``name``, ports
  by ``containerPort``/``protocol``, volumes, volumeMounts...): every item its own fieldset with a
  widget per member, named in requests by its keys (:mod:`flask_krm.store.items`), so an edit stays
  with its item whoever inserts, removes or reorders items meanwhile. Its keys are its identity:
  shown in the item's legend, set when the item is added, never edited in place.
- ``rows``: a list of strings (``args``, ``command``): one text input per row.
- anything else stays ``structured`` JSON text, whose edits are merged by lines
  (:mod:`flask_krm.store.text_merge`).
"""

from __future__ import annotations

import typing as t
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..kube_schema import as_view, types_of
from ..store.items import keyed_items
from ..store.paths import Path
from .labels import humanize

ListKind: t.TypeAlias = t.Literal["items", "rows"]

ROW_LIST_NAMES: t.Final[frozenset[str]] = frozenset({"args", "command"})
"""Lists of strings shown as rows even while empty."""

ORDERED_LIST_NAMES: t.Final[frozenset[str]] = frozenset(
    {"args", "command", "initContainers", "containers", "env", "envFrom"}
)
"""Lists whose order means something (arguments, init order, the default container, env
references), whose items and rows can be moved up and down. Rows of any list can be."""

INTEGER_KEYS: t.Final[frozenset[str]] = frozenset({"containerPort", "hostPort", "port"})
"""Item keys that are numbers in Kubernetes' schemas (read when no schema of the items is known)."""

KEY_DEFAULTS: t.Final[Mapping[str, str]] = {"protocol": "TCP"}
"""What a new item's key field starts with when no schema says (ports default to TCP, as the API
server does)."""

NEW_ITEM_MEMBERS: t.Final[Mapping[str, Mapping[str, t.Any]]] = {
    "containers": {"image": ""},
    "initContainers": {"image": ""},
    "ephemeralContainers": {"image": ""},
    "env": {"value": ""},
    "volumeMounts": {"name": ""},
    "volumeDevices": {"name": ""},
    "hostAliases": {"hostnames": []},
}
"""Members a new item of a well-known list gets besides its keys, so it has fields to fill in."""


class ItemRefused(ValueError):
    """A new item's submitted keys that cannot make an item (422)."""


@dataclass(frozen=True, slots=True)
class KeyInput:
    """One key field of a keyed list's add row."""

    name: str
    default: str
    numeric: bool

    @property
    def label(self) -> str:
        """The key in words ("Container port")."""
        return humanize(self.name)


def list_kind(path: Path, value: t.Any, keys: tuple[str, ...] | None) -> ListKind | None:
    """How the array ``value`` at ``path`` is edited (``None``: as structured JSON text).

    ``keys`` are the list-map keys the schema gives the list (``None``: not a keyed list).
    """
    if type(value) is not list:
        return None
    if keys is not None and keyed_items(value, keys):
        return "items"
    if all(type(item) is str for item in value) and (value or _name(path) in ROW_LIST_NAMES):
        return "rows"
    return None


def is_ordered(path: Path, kind: ListKind) -> bool:
    """Whether the items of the list at ``path`` may be moved (see :data:`ORDERED_LIST_NAMES`)."""
    return kind == "rows" or _name(path) in ORDERED_LIST_NAMES


def item_label(item: Mapping[str, t.Any], keys: Sequence[str]) -> str:
    """An item's name as its legend shows it: its key values joined by '/' (``8080/TCP``)."""
    return "/".join(str(item.get(key, "")) for key in keys)


ItemSchema: t.TypeAlias = "Mapping[str, t.Any] | None"


def key_inputs(items: t.Any, keys: Sequence[str], item_schema: ItemSchema = None) -> tuple[KeyInput, ...]:
    """The key fields a new item of the list ``items`` is made from; a key is a number or text
    and starts from a default as ``item_schema`` (the schema of the list's items) says."""
    return tuple(KeyInput(key, _key_default(key, item_schema), _numeric(items, key, item_schema)) for key in keys)


def new_item(
    path: Path, items: t.Any, keys: Sequence[str], submitted: Mapping[str, str | None], item_schema: ItemSchema = None
) -> dict[str, t.Any]:
    """A new item of the keyed list ``items`` at ``path`` (whose items have the schema
    ``item_schema``, when known) from the submitted key values.

    Raises :class:`ItemRefused` for a missing key or a number that is not one.
    """
    item: dict[str, t.Any] = dict(NEW_ITEM_MEMBERS.get(_name(path), {}))
    for key in keys:
        text = (submitted.get(key) or "").strip()
        if not text:
            raise ItemRefused(f"Enter the {key} of the new item.")
        if _numeric(items, key, item_schema):
            if not text.isdigit() or len(text) > 9:
                raise ItemRefused(f"The {key} is a whole number, such as 8080.")
            item[key] = int(text)
        else:
            item[key] = text
    return item


def _key_schema(key: str, item_schema: ItemSchema) -> Mapping[str, t.Any] | None:
    return as_view(item_schema).member(key) if item_schema is not None else None


def _key_default(key: str, item_schema: ItemSchema) -> str:
    node = _key_schema(key, item_schema)
    if node is not None:
        default = node.get("default")
        # a text default only: the published schemas give a required number the default 0
        return default if isinstance(default, str) else ""
    return KEY_DEFAULTS.get(key, "")


def _numeric(items: t.Any, key: str, item_schema: ItemSchema = None) -> bool:
    """Whether the key ``key`` is a whole number: as the items' schema types it, else as the
    list's items have it, else as :data:`INTEGER_KEYS` says."""
    node = _key_schema(key, item_schema)
    types = types_of(node) if node is not None else frozenset()
    if types:
        return "integer" in types and "string" not in types
    if type(items) is list:
        for item in items:
            if isinstance(item, Mapping) and key in item:
                return type(item[key]) is int
    return key in INTEGER_KEYS


def _name(path: Path) -> str:
    return path[-1] if path and isinstance(path[-1], str) else ""
