"""Editor fields: which widget shows each value of a projected object, and in what state.

Pure: no Flask, no gevent. :func:`build_editor` walks the draft of one object under the editor's
field roots and returns a tree of :class:`Field` values; the templates turn them into HTML and the
edit views use :func:`widget_for` to read a submitted value back with the same widget the field was
rendered with. Widget choice depends only on the value, the server's value and the path, so a field
keeps its widget (and its DOM node) while a person types.

Widgets:

- ``text``, ``multiline`` (a value or its server value holds a line break), ``number``, ``boolean``
- ``select``: a string whose schema lists the values it may take (``enum``)
- ``items``: a keyed list, one ``item`` (a fieldset of its members) per item; ``rows``: a list of
  strings, one text input per row (see :mod:`flask_krm.ui.list_widgets`)
- ``structured``: any other array, edited as JSON text (edits are merged into the draft by lines)
- ``yaml``: a value its schema leaves open (``x-kubernetes-preserve-unknown-fields``, an object
  that allows anything, a member a preserving object does not declare), edited as YAML text read
  by the YAML tab's loader (:func:`flask_krm.yaml_text.load_yaml_value`)
- ``map``: a string map (labels, annotations, ``data``, ``stringData``...) with add, remove, rename
- ``group``: any other object, its members shown one by one
- ``masked``: a value the projection withholds (a Secret key): the key and its revision, no value
- ``bytes``: a ``binaryData`` value, shown as its size only
- ``absent``: a selected field the object does not have

:data:`WIDGETS` is the one table of the widgets that show a single value: for each kind its
template (``krm/widgets/<kind>.html``, which a host overrides alone by path), how a submitted value
is read back (:attr:`Widget.parse`) and when the browser sends an edit (:attr:`Widget.trigger`).
``map`` and ``group`` hold other fields and are laid out by ``krm/_fields.html``.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import sys
import typing as t
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from ..bodies import JsonRefused, NotFinite, NotJson, TooDeep, load_json
from ..kube_schema import SchemaView, as_view, required_members, types_of
from ..store.items import Address, address_of, item_key
from ..store.keyed_lists import identities
from ..store.paths import MISSING, Path, get_at, path_to_pointer, pointer_to_path, text_path
from ..store.values import json_equal
from ..yaml_text import YamlRefused, dump_yaml, load_yaml_value
from .labels import default_label, humanize
from .list_widgets import KeyInput, is_ordered, item_label, key_inputs, list_kind
from .schema_fields import (
    FieldHints,
    MemberChoice,
    addable_members,
    field_hints,
    in_pod_template,
    is_free_form,
    is_removable,
    is_string_map,
    keeps_unknown,
    shown_absent,
)

WidgetKind: t.TypeAlias = t.Literal[
    "text",
    "multiline",
    "number",
    "boolean",
    "select",
    "structured",
    "yaml",
    "map",
    "group",
    "items",
    "item",
    "rows",
    "masked",
    "bytes",
    "absent",
]

STRING_MAP_PATHS: t.Final[frozenset[tuple[str, ...]]] = frozenset(
    {("metadata", "labels"), ("metadata", "annotations"), ("data",), ("stringData",)}
)
"""Objects always edited as key/value maps (keys added, removed and renamed)."""

STRING_MAP_NAMES: t.Final[frozenset[str]] = frozenset({"labels", "annotations", "matchLabels", "nodeSelector"})
"""Members with these names are key/value maps wherever they appear (selectors, templates)."""

BYTES_MAP_PATHS: t.Final[frozenset[tuple[str, ...]]] = frozenset({("binaryData",)})
"""Maps whose values are base64 bytes, shown as their size only."""

DEFAULT_ROOTS: t.Final[tuple[Path, ...]] = (("metadata", "labels"), ("metadata", "annotations"))
"""Shown first by default (even when empty, if keys can be added); every top-level member except
identity follows (see :func:`default_roots`)."""

_IDENTITY_KEYS: t.Final = frozenset({"apiVersion", "kind", "metadata"})


class ValueRefused(ValueError):
    """Submitted text a widget cannot turn into a value: the HTTP status, what to tell the person
    and whether it is about the field's value (``False``: about the request as a whole)."""

    def __init__(self, status: int, message: str, *, about_value: bool = True) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.about_value = about_value


TYPING_TRIGGER: t.Final = "input delay:400ms, krm-flush"
"""Send the edit a moment after the person stops typing (and before a Save)."""

CHANGE_TRIGGER: t.Final = "change, krm-flush"
"""Send the edit when the control changes (and before a Save)."""

_INTEGER: t.Final = re.compile(r"[+-]?\d+\Z")


def _required(submitted: str | None) -> str:
    if submitted is None:
        raise ValueRefused(400, "The request has no value.", about_value=False)
    return submitted


def normalized_lines(text: str, server_value: t.Any) -> str:
    """Browsers submit text-area line breaks as CRLF; keep CR only where the object had it."""
    if isinstance(server_value, str) and "\r" in server_value:
        return text
    return text.replace("\r\n", "\n")


def parse_text(submitted: str | None, server_value: t.Any) -> str:
    """``text`` and ``multiline``: the text, line breaks as the object writes them."""
    return normalized_lines(_required(submitted), server_value)


def parse_boolean(submitted: str | None, server_value: t.Any) -> bool:
    """``boolean``: a checked box sends its value, an unchecked one nothing."""
    return submitted is not None


def parse_number(submitted: str | None, server_value: t.Any) -> int | float:
    """``number``: an integer when written as one, else a finite float."""
    text = _required(submitted).strip()
    if _INTEGER.match(text):
        try:
            return int(text)
        except ValueError:  # past Python's integer string conversion limit
            raise ValueRefused(422, f"Enter a number of at most {sys.get_int_max_str_digits()} digits.") from None
    try:
        number = float(text)
    except ValueError:
        raise ValueRefused(422, "Enter a number.") from None
    if not math.isfinite(number):
        raise ValueRefused(422, "Enter a finite number.")
    return number


def parse_structured(submitted: str | None, server_value: t.Any) -> list[t.Any]:
    """``structured``: a JSON array."""
    try:
        parsed = load_json(_required(submitted), what="the value")
    except NotJson as exc:
        raise ValueRefused(422, f"Not valid JSON: {exc.detail}.") from None
    except NotFinite:
        raise ValueRefused(422, "Enter finite numbers: JSON has no NaN or Infinity.") from None
    except TooDeep as exc:
        raise ValueRefused(400, f"{str(exc).capitalize()}.") from None
    except JsonRefused as exc:
        raise ValueRefused(422, f"{str(exc).capitalize()}.") from None
    if not isinstance(parsed, list):
        raise ValueRefused(422, 'Enter a JSON array, such as ["a", "b"].')
    return parsed


def parse_yaml(submitted: str | None, server_value: t.Any) -> t.Any:
    """``yaml``: one value of any type, loaded as the YAML tab loads an object (a key written twice,
    an alias bomb or an unreadable text refused, with its line and column)."""
    try:
        return load_yaml_value(_required(submitted))
    except YamlRefused as refused:
        raise ValueRefused(422, f"{refused}.") from None


def yaml_value_text(value: t.Any) -> str:
    """A value as the ``yaml`` widget shows it: block YAML, without the end-of-document marker
    a lone scalar gets."""
    text = dump_yaml(value)
    if text.endswith("\n...\n"):
        text = text[: -len("...\n")]
    return text.rstrip("\n")


@dataclass(frozen=True, slots=True)
class Widget:
    """How one kind of single value is shown and edited."""

    kind: WidgetKind
    parse: Callable[[str | None, t.Any], t.Any] | None = None
    """``parse(submitted, server_value)``: the submitted ``value`` field (``None`` when absent)
    as a value; raises :class:`ValueRefused`. ``None``: the widget is never edited."""
    trigger: str = TYPING_TRIGGER
    """The ``hx-trigger`` of the control's edit request."""

    @property
    def template(self) -> str:
        """The template that renders the control (``krm/widgets/<kind>.html``)."""
        return f"krm/widgets/{self.kind}.html"


WIDGETS: t.Final[Mapping[str, Widget]] = {
    "text": Widget("text", parse_text),
    "multiline": Widget("multiline", parse_text),
    "number": Widget("number", parse_number),
    "boolean": Widget("boolean", parse_boolean, trigger=CHANGE_TRIGGER),
    "select": Widget("select", parse_text, trigger=CHANGE_TRIGGER),
    "structured": Widget("structured", parse_structured),
    "yaml": Widget("yaml", parse_yaml),
    "masked": Widget("masked"),
    "bytes": Widget("bytes"),
    "absent": Widget("absent"),
}
"""Every widget that shows one value, by kind."""


class FieldSelectionError(ValueError):
    """A ``fields=`` entry that is neither an RFC 6901 pointer nor a sequence of segments."""


@dataclass(frozen=True, slots=True)
class ConflictView:
    """Someone else's value at a field the person also changed."""

    path: Address
    theirs_text: str
    """Their value as text (JSON for structured values); empty when they removed it."""
    theirs_removed: bool

    @property
    def pointer(self) -> str:
        """Where the conflict is, as a pointer (items of keyed lists as ``[key=value]``)."""
        return address_pointer(self.path)

    @property
    def path_json(self) -> str:
        """The path as the edit views read it back: a JSON array of segments."""
        return path_json(self.path)


@dataclass(frozen=True, slots=True)
class Field:
    """One rendered field (or a group of them)."""

    path: Address
    """Where the field is, as requests name it (items of keyed lists by their keys)."""
    label: str
    kind: WidgetKind
    editable: bool
    text: str = ""
    """The value as the widget shows it (the input's value, or the read-only text)."""
    checked: bool = False
    dirty: bool = False
    conflict: ConflictView | None = None
    children: tuple[Field, ...] = ()
    entry: bool = False
    """A member of a ``map``: its key is renamed and the entry removed from the map."""
    can_add: bool = False
    """A ``map`` that accepts new keys."""
    revision: int | None = None
    """``masked``: the redaction revision (it grows when the hidden value changes)."""
    size: int | None = None
    """``bytes``: the decoded size."""
    integral: bool = True
    """``number``: whether the value is an integer (the input steps by 1)."""
    keys: tuple[KeyInput, ...] = ()
    """``items``: the key fields a new item is made from."""
    position: int | None = None
    """An item or row of a list: its position (``None`` otherwise)."""
    movable: bool = False
    """An item or row of a list whose order matters: it can be moved up and down."""
    last: bool = False
    """The last item or row of its list."""
    hints: FieldHints | None = None
    """What the field's schema says (help, choices, bounds, default); ``None``: no schema."""
    addable: tuple[MemberChoice, ...] = ()
    """A ``group`` or ``item``: the members its schema declares that it does not have yet."""
    removable: bool = False
    """A member its schema declares optional: it can be removed from its object."""

    @property
    def pointer(self) -> str:
        """Where the field is, as a pointer (items of keyed lists as ``[key=value]``)."""
        return address_pointer(self.path)

    @property
    def path_json(self) -> str:
        """The path as the edit views read it back: a JSON array of segments."""
        return path_json(self.path)

    @property
    def key(self) -> str:
        """The last segment as text (the key of a map entry)."""
        return str(self.path[-1]) if self.path else ""

    @property
    def widget(self) -> Widget | None:
        """The widget showing this field's value (``None`` for a ``map`` or ``group``)."""
        return WIDGETS.get(self.kind)


@dataclass(frozen=True, slots=True)
class EditorView:
    """Every field of one object, plus the conflicts no field shows."""

    fields: tuple[Field, ...]
    other_conflicts: tuple[ConflictView, ...]
    conflict_count: int
    dirty: bool
    too_many: int = 0
    """:data:`MAX_FORM_VALUES` when the editor's fields hold more values than a form shows (no
    fields then: the YAML tab edits them); 0 otherwise."""


@dataclass(frozen=True, slots=True)
class ObjectState:
    """What the store says about one object, gathered for rendering."""

    draft: Mapping[str, t.Any]
    server: Mapping[str, t.Any]
    read_only: Callable[[Path], bool]
    dirty_paths: Collection[Path] = ()
    conflicts: Mapping[Path, t.Any] = field(default_factory=dict)
    """Path -> their value (:data:`~flask_krm.store.paths.MISSING` when they removed it)."""
    redacted: Mapping[Path, int] = field(default_factory=dict)
    """Redacted path (string segments) -> revision."""
    list_keys: Callable[[Path], tuple[str, ...] | None] = field(default=lambda path: None)
    """The list-map keys of the keyed list at a path (``None``: not a keyed list)."""
    schema: Mapping[str, t.Any] | None = None
    """The schema of the object's kind (``None``: none known; widgets follow the values alone)."""


def address_pointer(address: Sequence[t.Any]) -> str:
    """An address as an RFC 6901 pointer whose keyed-list items read ``[name=web]``."""
    return path_to_pointer(
        ["[" + ",".join(f"{k}={v}" for k, v in s.items()) + "]" if isinstance(s, Mapping) else s for s in address]
    )


def path_json(path: Sequence[t.Any]) -> str:
    """A path as a compact JSON array of segments (how fields name their path to the edit views)."""
    return json.dumps(list(path), separators=(",", ":"), ensure_ascii=False)


# ------------------------------------------------------------------------------ selection --


def parse_field_roots(fields: Iterable[t.Any] | None) -> tuple[Path, ...] | None:
    """Normalise a ``fields=`` argument: RFC 6901 pointers or sequences of segments.

    ``None`` means the default selection. Raises :class:`FieldSelectionError` for anything else.
    """
    if fields is None:
        return None
    if isinstance(fields, (str, bytes)):
        raise FieldSelectionError("fields= takes a list of pointers such as ['/data', '/spec/replicas']")
    roots: list[Path] = []
    for item in fields:
        if isinstance(item, str):
            if not item.startswith("/"):
                raise FieldSelectionError(f"field {item!r} is not a JSON pointer (it starts with '/')")
            path: Path = pointer_to_path(item)
        elif isinstance(item, Sequence) and not isinstance(item, bytes):
            if not all(isinstance(s, str) or (isinstance(s, int) and not isinstance(s, bool)) for s in item):
                raise FieldSelectionError(f"field {item!r} has a segment that is neither a key nor an index")
            path = tuple(item)
        else:
            raise FieldSelectionError(f"field {item!r} is neither a JSON pointer nor a sequence of segments")
        if not path:
            raise FieldSelectionError("the whole object cannot be one field; name its members")
        if path not in roots:
            roots.append(path)
    return tuple(roots)


def default_roots(
    draft: Mapping[str, t.Any], server: Mapping[str, t.Any], redacted: Iterable[Path] = ()
) -> tuple[Path, ...]:
    """Labels, annotations, then every top-level member except ``apiVersion``, ``kind`` and
    ``metadata`` (a member whose values are all withheld included)."""
    roots: list[Path] = list(DEFAULT_ROOTS)
    keys = [*server, *draft, *(str(p[0]) for p in redacted if p)]
    for key in keys:
        if key not in _IDENTITY_KEYS and (key,) not in roots:
            roots.append((key,))
    return tuple(roots)


# -------------------------------------------------------------------------------- widgets --


def is_string_map_path(path: Sequence[t.Any]) -> bool:
    """Whether the object at ``path`` is edited as a key/value map."""
    tpath = text_path(path)
    return tpath in STRING_MAP_PATHS or (bool(tpath) and tpath[-1] in STRING_MAP_NAMES)


def widget_for(path: Path, value: t.Any, server_value: t.Any = MISSING) -> WidgetKind:
    """The widget that shows ``value`` at ``path`` (its server value breaks ties for text)."""
    tpath = text_path(path)
    if len(tpath) >= 2 and tpath[:-1] in BYTES_MAP_PATHS:
        return "bytes"
    if value is MISSING:
        value = server_value
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, list):
        return "structured"
    if isinstance(value, Mapping):
        return "map" if is_string_map_path(path) or tpath in BYTES_MAP_PATHS else "group"
    if value is MISSING:
        return "map" if is_string_map_path(path) else "absent"
    if _has_line_break(value) or _has_line_break(server_value):
        return "multiline"
    return "text"


def schema_widget(
    kind: WidgetKind, value: t.Any, node: Mapping[str, t.Any] | None, parent: Mapping[str, t.Any] | None
) -> WidgetKind:
    """The widget ``kind`` (:func:`widget_for`'s for ``value``) as the schema of the field
    (``node``) and of the object holding it (``parent``) refine it: a value the schema leaves open
    is ``yaml``, a string with an ``enum`` a ``select``, an int-or-string or a quantity ``text``,
    an object of strings a ``map``."""
    if kind in ("bytes", "absent", "masked"):
        return kind
    if is_free_form(node) or (node is None and keeps_unknown(parent) and isinstance(value, (Mapping, list))):
        return "yaml"
    hints = field_hints(node)
    if node is None or hints is None:
        return kind
    if kind == "text" and hints.options:
        return "select"
    if kind == "number" and hints.text_value:
        return "text"
    if kind == "group" and is_string_map(node):
        return "map"
    return kind


def _has_line_break(value: t.Any) -> bool:
    return isinstance(value, str) and ("\n" in value or "\r" in value)


def display_text(value: t.Any) -> str:
    """A value as one field shows it: strings as they are, numbers plainly, the rest as JSON."""
    if value is MISSING:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else str(value)
    if value is None:
        return "null"
    return structured_text(value)


def structured_text(value: t.Any) -> str:
    """Arrays and objects as indented JSON text, the form the ``structured`` widget edits."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


def decoded_size(value: t.Any) -> int | None:
    """The byte count of a base64 ``binaryData`` value; ``None`` if it is not valid base64."""
    if not isinstance(value, str):
        return None
    try:
        return len(base64.b64decode(value, validate=True))
    except (binascii.Error, ValueError):
        return None


# ------------------------------------------------------------------------------- building --


Built: t.TypeAlias = "dict[tuple[t.Any, ...], tuple[t.Any, t.Any, Field]]"
"""Fields built for a clean object, by (path, label, address, in list): with the draft's and the
server's values they were built from (see :func:`build_editor`'s ``reuse``)."""


class _Builder:
    def __init__(self, state: ObjectState, reuse: Built | None = None) -> None:
        self.state = state
        self.reuse = reuse
        self.built: Built = {}
        self.dirty = [text_path(p) for p in state.dirty_paths]
        self.conflicts = {text_path(p): (tuple(p), theirs) for p, theirs in state.conflicts.items()}
        self.revisions = {text_path(p): rev for p, rev in state.redacted.items()}
        self.placed: set[tuple[str, ...]] = set()
        self.keys: dict[Path, tuple[str, ...] | None] = {}
        self.indexes: dict[Path, dict[int, int]] = {}
        self.nodes: dict[Path, SchemaView | None] = {(): as_view(state.schema) if state.schema is not None else None}

    def node(self, path: Path) -> SchemaView | None:
        """The schema of the value at ``path`` (``None``: the schema says nothing about it)."""
        if path not in self.nodes:
            parent = self.node(path[:-1])
            segment = path[-1]
            self.nodes[path] = (
                None if parent is None else parent.member(segment) if isinstance(segment, str) else parent.item()
            )
        return self.nodes[path]

    def hints(self, path: Path) -> FieldHints | None:
        node = self.node(path)
        parent = self.node(path[:-1]) if path else None
        required = parent is not None and bool(path) and path[-1] in required_members(parent)
        return field_hints(node, required=required, template=in_pod_template(path))

    def can_add_at(self, path: Path, in_list: bool | None) -> bool:
        """Whether members may be added to the object at ``path``."""
        return not self.state.read_only(path + (_PROBE_KEY,)) if in_list is None else in_list

    def address(self, path: Path) -> Address:
        """``path`` as requests name it (keyed-list items by their keys)."""
        return address_of(self.state.draft, path, self.list_keys)

    def conflict_at(self, path: Path) -> ConflictView | None:
        found = self.conflicts.get(text_path(path))
        if found is None:
            return None
        self.placed.add(text_path(path))
        return conflict_view(self.address(found[0]), found[1])

    def list_keys(self, path: Path) -> tuple[str, ...] | None:
        if path not in self.keys:
            self.keys[path] = self.state.list_keys(path)
        return self.keys[path]

    def server_at(self, path: Path) -> t.Any:
        """The server's value for ``path`` of the draft: the same keyed-list items wherever they are
        (``MISSING`` for an item the person added)."""
        draft: t.Any = self.state.draft
        server: t.Any = self.state.server
        for depth, segment in enumerate(path):
            if type(draft) is list and type(server) is list and isinstance(segment, int):
                index = self.server_index(path[:depth], draft, server).get(segment)
                if index is None:
                    return MISSING
                draft, server = draft[segment], server[index]
                continue
            draft, server = get_at(draft, (segment,)), get_at(server, (segment,))
            if server is MISSING:
                return MISSING
        return server

    def server_index(self, path: Path, draft: list[t.Any], server: list[t.Any]) -> dict[int, int]:
        """Which server item each item of the draft's list at ``path`` is (by key in a keyed list)."""
        found = self.indexes.get(path)
        if found is None:
            keys = self.list_keys(path)
            ours = identities(draft, keys) if keys else None
            theirs = identities(server, keys) if keys and ours is not None else None
            if ours is not None and theirs is not None:
                where = {identity: index for index, identity in enumerate(theirs)}
                found = {index: where[identity] for index, identity in enumerate(ours) if identity in where}
            else:
                found = {index: index for index in range(min(len(draft), len(server)))}
            self.indexes[path] = found
        return found

    def is_dirty(self, path: Path) -> bool:
        tpath = text_path(path)
        n = len(tpath)
        return any(p[:n] == tpath or tpath[: len(p)] == p for p in self.dirty)

    def masked_under(self, tpath: tuple[str, ...]) -> list[str]:
        """Keys of the redacted direct members of the map at ``tpath``, sorted."""
        n = len(tpath)
        return sorted(r[-1] for r in self.revisions if len(r) == n + 1 and r[:-1] == tpath)

    def build(self, path: Path, label: str, address: Address | None = None, in_list: bool | None = None) -> Field:
        """The field at ``path``; ``in_list``: inside a list, as editable as that list (``None``: not
        inside a list). With ``reuse``, a field whose values are the very ones it was built from is
        taken as it was, subtree and all."""
        at: Address = path if address is None else address
        draft_value = get_at(self.state.draft, path)
        server_value = get_at(self.state.server, path) if in_list is None else self.server_at(path)
        if self.reuse is None:
            return self._build(path, label, at, in_list, draft_value, server_value)
        key = (path, label, tuple(tuple(sorted(s.items())) if isinstance(s, Mapping) else s for s in at), in_list)
        before = self.reuse.get(key)
        if before is not None and before[0] is draft_value and before[1] is server_value:
            built = before[2]
        else:
            built = self._build(path, label, at, in_list, draft_value, server_value)
        self.built[key] = (draft_value, server_value, built)
        return built

    def changed(self, built: Field, **changes: t.Any) -> Field:
        """``built`` with ``changes`` (as its parent shows it); with ``reuse``, made once per field."""
        if self.reuse is None:
            return replace(built, **changes)
        key = ("changed", id(built), *sorted(changes.items()))  # the field is kept with it: its id stays its own
        before = self.reuse.get(key)
        made = before[2] if before is not None and before[0] is built else replace(built, **changes)
        self.built[key] = (built, None, made)
        return made

    def _build(
        self, path: Path, label: str, at: Address, in_list: bool | None, draft_value: t.Any, server_value: t.Any
    ) -> Field:
        tpath = text_path(path)
        revision = self.revisions.get(tpath)
        if revision is not None:
            return Field(at, label, "masked", False, revision=revision)
        node = self.node(path)
        hints = self.hints(path)
        shown = server_value if draft_value is MISSING else draft_value
        kind = schema_widget(
            widget_for(path, draft_value, server_value), shown, node, self.node(path[:-1]) if path else None
        )
        editable = not self.state.read_only(path) if in_list is None else in_list
        value = server_value if draft_value is MISSING and not editable else draft_value
        # changes stop at lists: inside one, compare with the server's same item
        dirty = self.is_dirty(path) if in_list is None else not json_equal(draft_value, server_value)
        conflict = self.conflict_at(path)

        def leaf(kind: WidgetKind, **extra: t.Any) -> Field:
            return Field(at, label, kind, editable, dirty=dirty, conflict=conflict, hints=hints, **extra)

        if kind == "bytes":
            return Field(at, label, "bytes", False, size=decoded_size(value), dirty=dirty, conflict=conflict)
        if kind == "map":
            members = value if isinstance(value, Mapping) else {}
            children = [
                self.changed(self.build(path + (key,), str(key), at + (key,), in_list), entry=True) for key in members
            ]
            children += [
                self.changed(self.build(path + (key,), key, at + (key,), in_list), entry=True)
                for key in self.masked_under(tpath)
                if key not in members
            ]
            can_add = not self.state.read_only(path + (_PROBE_KEY,)) if in_list is None else in_list
            return leaf("map", children=tuple(children), can_add=can_add)
        if kind == "group":
            members = value if isinstance(value, Mapping) else {}
            can_add = self.can_add_at(path, in_list)
            emptied = self.emptied(path, members, in_list) if can_add else frozenset()
            return leaf(
                "group",
                children=self.members(path, at, members, in_list, can_add, skip=emptied),
                addable=addable_members(node, members, emptied) if can_add else (),
            )
        if kind == "boolean":
            return leaf("boolean", text=display_text(value), checked=value is True)
        if kind == "number":
            decimal = isinstance(value, float) or (node is not None and types_of(node) == {"number"})
            return leaf("number", text=display_text(value), integral=not decimal)
        if kind == "yaml":
            return leaf("yaml", text=yaml_value_text(value) if value is not MISSING else "")
        if kind == "structured":
            keys = self.list_keys(path)
            shape = list_kind(path, value, keys)
            if shape is not None:
                listed = self.list_members(path, label, at, value, keys if shape == "items" else None, editable)
                item_schema = node.item() if node is not None else None
                inputs = key_inputs(value, keys or (), item_schema)
                return leaf(shape, children=listed, can_add=editable, keys=inputs)
            return leaf("structured", text=structured_text(value) if value is not MISSING else "")
        return leaf(kind, text=display_text(value))

    def emptied(self, path: Path, members: Mapping[str, t.Any], in_list: bool | None) -> frozenset[str]:
        """The members of the object at ``path`` shown as absent (:func:`shown_absent`): empty as
        the server has them, with no conflict."""
        node = self.node(path)
        return frozenset(
            key
            for key, value in members.items()
            if shown_absent(node, key, value)
            and (get_at(self.state.server, path + (key,)) if in_list is None else self.server_at(path + (key,))) == {}
            and text_path(path + (key,)) not in self.conflicts
        )

    def members(
        self,
        path: Path,
        at: Address,
        members: Mapping[str, t.Any],
        in_list: bool | None,
        can_remove: bool,
        skip: t.Collection[str] = (),
    ) -> tuple[Field, ...]:
        """The fields of an object's members (``skip``: a keyed-list item's keys, in its legend)."""
        node = self.node(path)
        return tuple(
            self.changed(
                self.build(path + (key,), humanize(str(key)), at + (key,), in_list),
                removable=can_remove and is_removable(node, key),
            )
            for key in members
            if key not in skip
        )

    def list_members(
        self, path: Path, label: str, at: Address, items: list[t.Any], keys: tuple[str, ...] | None, editable: bool
    ) -> tuple[Field, ...]:
        """The items (``keys`` given) or rows of the list at ``path``."""
        movable = editable and is_ordered(path, "items" if keys else "rows")
        members: list[Field] = []
        for index, item in enumerate(items):
            last = index == len(items) - 1
            if keys is None:
                row = self.build(path + (index,), f"{label} {index + 1}", at + (index,), editable)
                members.append(replace(row, position=index, movable=movable, last=last))
                continue
            item_path = path + (index,)
            item_at = at + (item_key(item, keys),)
            emptied = self.emptied(item_path, item, editable) if editable else frozenset()
            children = self.members(item_path, item_at, item, editable, editable, skip=(*keys, *emptied))
            members.append(
                Field(
                    item_at,
                    item_label(item, keys),
                    "item",
                    editable,
                    dirty=not json_equal(item, self.server_at(item_path)),
                    conflict=self.conflict_at(item_path),
                    children=children,
                    addable=addable_members(self.node(item_path), item, emptied) if editable else (),
                    hints=self.hints(item_path),
                    position=index,
                    movable=movable,
                    last=last,
                )
            )
        return tuple(members)


_PROBE_KEY: t.Final = "\x00new"
"""A key no object has: asking whether it is editable asks whether the map accepts new keys."""


def conflict_view(path: Address, theirs: t.Any) -> ConflictView:
    """How a conflict's other value is shown."""
    if theirs is MISSING:
        return ConflictView(path, "", True)
    if isinstance(theirs, (list, Mapping)):
        return ConflictView(path, structured_text(theirs), False)
    return ConflictView(path, display_text(theirs), False)


MAX_FORM_VALUES: t.Final = 1000
"""The most values one editor shows as form fields: rendering each takes about a millisecond, and a
page must not hold its server for seconds. An object with more is edited on its YAML tab."""


def build_editor(
    state: ObjectState,
    roots: Sequence[Path] | None = None,
    labels: Mapping[Path, str] | None = None,
    *,
    reuse: Built | None = None,
    built: Built | None = None,
) -> EditorView:
    """The fields of one object under ``roots`` (default: :func:`default_roots`), each labelled
    from ``labels`` or by :func:`label_for`; none when they hold more than :data:`MAX_FORM_VALUES`
    values (:attr:`EditorView.too_many`).

    For a clean object whose values are shared, unchanged parts and all, with the one an earlier
    build read (a delivery of the server's truth), ``reuse`` is what that build filled ``built``
    with: each field whose values are the very same objects is taken from it, so a change builds
    only the fields on its way. The caller makes sure everything else the fields follow (the
    schema, the read-only regions, the redactions) is the same, and that neither is dirty."""
    builder = _Builder(state, reuse if reuse is not None or built is None else {})  # asked for: recorded
    selected = roots if roots is not None else default_roots(state.draft, state.server, state.redacted)
    shown = sum(_count_values(get_at(state.draft, tuple(root)), MAX_FORM_VALUES + 1) for root in selected)
    if shown > MAX_FORM_VALUES:
        return EditorView((), (), len(builder.conflicts), bool(builder.dirty), too_many=MAX_FORM_VALUES)
    fields: list[Field] = []
    for root in selected:
        if (
            roots is None
            and (root not in DEFAULT_ROOTS or state.read_only(root + (_PROBE_KEY,)))
            and get_at(state.draft, root) is MISSING
            and get_at(state.server, root) is MISSING
            and not builder.conflicts.get(text_path(root))
            and not builder.masked_under(text_path(root))
        ):
            continue
        fields.append(builder.build(tuple(root), (labels or {}).get(tuple(root)) or label_for(root)))
    others = tuple(
        conflict_view(builder.address(path), theirs)
        for tp, (path, theirs) in builder.conflicts.items()
        if tp not in builder.placed
    )
    if built is not None:
        # what this build did not reach (under a field taken whole) stays offered, if not too much
        kept = reuse if reuse is not None and len(reuse) <= 2 * len(builder.built) + 64 else {}
        built.update(kept)
        built.update(builder.built)
    return EditorView(
        fields=tuple(fields),
        other_conflicts=others,
        conflict_count=len(builder.conflicts),
        dirty=bool(builder.dirty),
    )


def _count_values(value: t.Any, enough: int) -> int:
    """How many values ``value`` holds (itself included), counting no further than ``enough``."""
    total = 0
    pending = [value]
    while pending and total < enough:
        node = pending.pop()
        total += node is not MISSING
        if isinstance(node, Mapping):
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return total


def label_for(path: Sequence[t.Any]) -> str:
    """A root field's default label: its last member in words (``/spec/replicas`` -> "Replicas",
    see :func:`flask_krm.ui.labels.default_label`)."""
    return default_label(tuple(path))
