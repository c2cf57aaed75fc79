"""Live components and the pages that hold them.

A host page that calls the ``krm.list`` or ``krm.editor`` macro registers each component on a
:class:`Page` while it renders. The page lives server-side in the browser session's draft
namespace (:meth:`flask_krm.sessions.SessionDrafts.page_state`), so only that session can open
its channel or edit through it, and it disappears with the session's drafts.

With a shared draft backend, a page is also written there as JSON (what it shows, what it was
painted with), so any worker can open its channel and take its edits (:func:`find_page`).

A component's id is derived from what it shows (kind, scope, projection, columns or fields,
policy), never from the page or the session: the same editor on two pages, or in two sessions,
has the same DOM ids, so a fragment rendered for a clean object can be shared by every session
that shows it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import secrets
import typing as t
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from werkzeug.exceptions import NotFound

from ..scope import Scope, ScopeError, parse_scope
from ..store.paths import Path, path_to_pointer, pointer_to_path
from ..store.policy import DEFAULT_POLICY, READ_ONLY_POLICY, EditPolicy
from .labels import default_label, is_labelled
from .list_query import URL_KEY, ListQuery
from .status import CELL_KINDS
from .widgets import FieldSelectionError, parse_field_roots

if t.TYPE_CHECKING:
    from ..sessions import SessionDrafts

Kind: t.TypeAlias = t.Literal["list", "editor"]

PAGE_STATE_PREFIX: t.Final = "krm.page"
PAGE_RECORD: t.Final = "page"


class ComponentSpecError(ValueError):
    """A macro argument that cannot describe a component (a bad column, field or policy)."""


class InvalidObjectName(ComponentSpecError, NotFound):
    """An editor's ``name`` that no Kubernetes object can have (not a DNS-1123 subdomain).

    Names usually come from the page's URL, so rendering such an editor is a 404 for the page
    (werkzeug's ``NotFound``); a host that turns a ``ValueError`` from a macro into a 400 keeps
    doing so.
    """

    def __init__(self, message: str) -> None:
        NotFound.__init__(self, description=message)


@dataclass(frozen=True, slots=True)
class Column:
    """One list column: a header and the RFC 6901 pointer of the value it shows.

    ``cell`` is ``"text"`` (the value) or one of :data:`~flask_krm.ui.status.CELL_KINDS`, which draw
    the row's workload status (badges, conditions, the rollout line) from the whole object.
    """

    header: str
    path: Path
    cell: str = "text"

    @property
    def pointer(self) -> str:
        """The column's RFC 6901 pointer (``/metadata/name``), for templates."""
        return path_to_pointer(self.path)


@dataclass(frozen=True, slots=True)
class RowAction:
    """A button on every row of a live list, posting the row's object to a host endpoint.

    The button posts the form field ``uid`` (the row's object) to ``url_for(endpoint,
    component_id=<the list's id>)`` with the page's CSRF and page headers, so the endpoint can find
    the list on the caller's page (:func:`flask_krm.ui.binding.bind`) and act on the object. A
    button needing a :attr:`verb` is shown only to a person who may use it (see
    :mod:`flask_krm.ui.offer`); rows are shared by every session offered the same buttons, and the
    endpoint still decides what each person may do.
    """

    label: str
    endpoint: str

    @property
    def name(self) -> str:
        """The endpoint's last part (``delete`` for ``krm_review.delete``), for the button's class."""
        return self.endpoint.rpartition(".")[2]

    @property
    def verb(self) -> str | None:
        """The verb a person needs to be offered the button: ``delete`` for an endpoint named
        ``delete`` (as ``krm_review.delete``), else none (the button is offered to everyone)."""
        return VERB_OF_ROW_ACTION.get(self.name)


VERB_OF_ROW_ACTION: t.Final[t.Mapping[str, str]] = {"delete": "delete"}
"""Row action endpoint name -> the verb it needs to be offered."""


DEFAULT_COLUMNS: t.Final = (Column("Name", ("metadata", "name")),)
NAMESPACE_COLUMN: t.Final = Column("Namespace", ("metadata", "namespace"))


@dataclass(frozen=True, slots=True)
class ListSpec:
    """A live list: every object of ``scope``, one row each."""

    scope: Scope
    projection: str
    columns: tuple[Column, ...]
    link: str | None = None
    """A URL pattern for each row's first cell: ``{name}`` and ``{namespace}`` are filled in."""
    title: str | None = None
    row_actions: tuple[RowAction, ...] = ()
    """Buttons on every row, in a last column."""
    page_size: int = 50
    """Rows per page."""
    url_key: str = ""
    """The prefix of the list's URL parameters (``<url_key>.q``, ``.sort``, ``.page``)."""


@dataclass(frozen=True, slots=True)
class EditorSpec:
    """A live editor of the one object ``scope`` names."""

    scope: Scope
    projection: str
    policy: EditPolicy
    fields: tuple[Path, ...] | None = None
    title: str | None = None
    yaml: bool = True
    """Show the YAML and "Your changes" tabs beside the form."""
    labels: tuple[tuple[Path, str], ...] = ()
    """``(path, label)`` of every field in ``fields``: given as ``(label, pointer)`` or made from the path."""


Spec: t.TypeAlias = ListSpec | EditorSpec


@dataclass(frozen=True, slots=True)
class Component:
    """A live component: its id and what it shows."""

    id: str
    spec: Spec

    @property
    def kind(self) -> Kind:
        return "list" if isinstance(self.spec, ListSpec) else "editor"

    @property
    def scope(self) -> Scope:
        return self.spec.scope

    @property
    def projection(self) -> str:
        return self.spec.projection

    @property
    def body_id(self) -> str:
        """The element every live update of this component morphs."""
        return f"{self.id}-body"

    def element_id(self, path: Sequence[t.Any], suffix: str = "") -> str:
        """A stable DOM id for the field at ``path`` (plus an optional suffix)."""
        digest = hashlib.sha256(json.dumps(list(path)).encode()).hexdigest()[:12]
        return f"{self.id}-f{digest}{suffix}"


def component_id(spec: Spec) -> str:
    """The id of the component showing ``spec``: the same everywhere ``spec`` is shown."""
    if isinstance(spec, ListSpec):
        actions = [[a.label, a.endpoint] for a in spec.row_actions]
        columns = [[c.header, list(c.path)] + ([c.cell] if c.cell != "text" else []) for c in spec.columns]
        shape: list[t.Any] = ["list", columns, spec.link, spec.title, actions, spec.page_size, spec.url_key]
    else:
        fields = None if spec.fields is None else [list(p) for p in spec.fields]
        labels = [[list(path), label] for path, label in spec.labels]
        shape = ["editor", [list(r) for r in spec.policy.roots], fields, spec.title, labels]
        if not spec.yaml:
            shape.append("no-yaml")
    canonical = json.dumps([spec.scope.canonical_query(spec.projection), shape], sort_keys=True)
    return "krm-" + hashlib.sha256(canonical.encode()).hexdigest()[:12]


def is_component_id(value: object) -> bool:
    """Whether ``value`` has the form of a component id (so ``<value>-outcome`` is safe to target)."""
    return isinstance(value, str) and re.fullmatch(r"krm-[0-9a-f]{12}", value) is not None


def make_component(spec: Spec) -> Component:
    return Component(component_id(spec), spec)


# ------------------------------------------------------------------------- macro arguments --


def parse_columns(columns: t.Any, scope: Scope) -> tuple[Column, ...]:
    """Columns from a macro argument: pointers, ``(header, pointer)`` pairs, ``(header, pointer,
    cell)`` triples (``("Status", "/status", "status")``, see :data:`~flask_krm.ui.status.CELL_KINDS`),
    or a header->pointer mapping. A column without a header gets
    :func:`~flask_krm.ui.labels.default_label` (``/status/readyReplicas`` -> "Ready replicas").

    ``None`` gives Name (and Namespace when the scope spans namespaces).
    """
    if columns is None:
        return DEFAULT_COLUMNS if scope.namespace else (DEFAULT_COLUMNS[0], NAMESPACE_COLUMN)
    items: Iterable[t.Any] = columns.items() if isinstance(columns, Mapping) else columns
    if isinstance(columns, (str, bytes)):
        raise ComponentSpecError("columns= takes a list such as ['/metadata/name', ('Image', '/spec/image')]")
    parsed: list[Column] = []
    for item in items:
        cell = "text"
        if isinstance(item, str):
            header, pointer = None, item
        elif isinstance(item, Sequence) and len(item) in (2, 3) and all(isinstance(x, str) for x in item):
            header, pointer = item[0], item[1]
            cell = item[2] if len(item) == 3 else cell
        else:
            raise ComponentSpecError(
                f"column {item!r} is neither a pointer, a (header, pointer) pair nor a (header, pointer, cell) triple"
            )
        if cell not in ("text", *CELL_KINDS):
            raise ComponentSpecError(f"column {item!r}: cell {cell!r} is not one of text, {', '.join(CELL_KINDS)}")
        if not pointer.startswith("/"):
            raise ComponentSpecError(f"column {pointer!r} is not a JSON pointer (it starts with '/')")
        path = pointer_to_path(pointer)
        parsed.append(Column(header if header is not None else default_label(path), path, cell))
    if not parsed:
        raise ComponentSpecError("columns= needs at least one column")
    return tuple(parsed)


MAX_PAGE_SIZE: t.Final = 500


def parse_page_size(page_size: t.Any) -> int:
    """Rows per page from a macro argument: a whole number from 1 to :data:`MAX_PAGE_SIZE`."""
    if isinstance(page_size, bool) or not isinstance(page_size, int) or not 1 <= page_size <= MAX_PAGE_SIZE:
        raise ComponentSpecError(f"page_size={page_size!r} is not a whole number from 1 to {MAX_PAGE_SIZE}")
    return page_size


def parse_url_key(url_key: t.Any, scope: Scope) -> str:
    """The prefix of a list's URL parameters: ``url_key``, or the scope's resource by default."""
    key = scope.resource if url_key is None else url_key
    if not isinstance(key, str) or not URL_KEY.match(key):
        raise ComponentSpecError(f"url_key={url_key!r} is not 1 to 40 letters, digits, '-' or '_'")
    return key


def parse_row_actions(row_actions: t.Any) -> tuple[RowAction, ...]:
    """Row actions from a macro argument: a list of :class:`RowAction` or ``(label, endpoint)`` pairs,
    or a label->endpoint mapping. ``None`` gives none."""
    if row_actions is None:
        return ()
    if isinstance(row_actions, (str, bytes)):
        raise ComponentSpecError("row_actions= takes a list such as [('Delete', 'krm_review.delete')]")
    items: Iterable[t.Any] = row_actions.items() if isinstance(row_actions, Mapping) else row_actions
    parsed: list[RowAction] = []
    for item in items:
        if isinstance(item, RowAction):
            action = item
        elif isinstance(item, Sequence) and len(item) == 2 and all(isinstance(x, str) for x in item):
            action = RowAction(item[0], item[1])
        else:
            raise ComponentSpecError(f"row action {item!r} is neither a RowAction nor a (label, endpoint) pair")
        if not action.label.strip() or not action.endpoint:
            raise ComponentSpecError(f"row action {item!r} needs a label and an endpoint")
        if any(action.name == other.name for other in parsed):
            raise ComponentSpecError(f"two row actions end in the same endpoint name {action.name!r}")
        parsed.append(action)
    return tuple(parsed)


def parse_policy(policy: t.Any, fields: tuple[Path, ...] | None = None) -> EditPolicy:
    """An editor policy from a macro argument, for an editor showing ``fields`` (``None``: the
    default selection).

    ``None``: least privilege: with ``fields``, exactly the fields shown (and what is under them)
    where :data:`~flask_krm.store.policy.DEFAULT_POLICY` allows editing
    (:meth:`~flask_krm.store.policy.EditPolicy.within`); without, the default policy.
    ``"default"``: the default policy whatever is shown (asked for explicitly); ``"read-only"``;
    an :class:`~flask_krm.store.policy.EditPolicy`; or a list of editable pointers
    (``["/data"]``). An editor can only narrow the default policy, so every root must lie inside it.
    """
    if policy is None and fields is not None:
        try:
            return DEFAULT_POLICY.within(fields)
        except ValueError as exc:
            raise ComponentSpecError(
                f"fields={[path_to_pointer(f) for f in fields]!r}: {exc}; name the editable regions with policy="
            ) from None
    if policy is None or policy == "default":
        return DEFAULT_POLICY
    if policy == "read-only":
        return READ_ONLY_POLICY
    if isinstance(policy, EditPolicy):
        chosen = policy
    elif isinstance(policy, (list, tuple)):
        try:
            roots = parse_field_roots(policy) or ()
            chosen = EditPolicy.only(*t.cast("tuple[tuple[str, ...], ...]", roots))
        except (FieldSelectionError, ValueError) as exc:
            raise ComponentSpecError(f"policy={policy!r}: {exc}") from None
    else:
        raise ComponentSpecError(
            f"policy={policy!r} is not a policy: use 'default', 'read-only', an EditPolicy "
            "or a list of editable pointers such as ['/data', '/metadata/labels']"
        )
    for root in chosen.roots:
        if not DEFAULT_POLICY.covers(root):
            raise ComponentSpecError(
                f"policy root {path_to_pointer(root)!r} lies outside the default editable regions "
                "(spec, metadata.labels, metadata.annotations, data, stringData); an editor can only narrow them"
            )
    return chosen


def parse_fields(fields: t.Any) -> tuple[Path, ...] | None:
    """The paths of ``fields=`` (see :func:`parse_labelled_fields`)."""
    labelled = parse_labelled_fields(fields)
    return None if labelled is None else tuple(path for path, _ in labelled)


def parse_labelled_fields(fields: t.Any) -> tuple[tuple[Path, str], ...] | None:
    """``fields=`` as ``(path, label)`` pairs: RFC 6901 pointers, sequences of segments, or
    ``(label, pointer)`` pairs (``("Replicas", "/spec/replicas")``); a field without a label gets
    :func:`~flask_krm.ui.labels.default_label`. ``None`` means the default selection."""
    if fields is None:
        return None
    if isinstance(fields, (str, bytes, Mapping)):
        raise ComponentSpecError("fields= takes a list such as ['/data', ('Replicas', '/spec/replicas')]")
    out: dict[Path, str] = {}
    try:
        for item in fields:
            label = item[0].strip() if is_labelled(item) else ""
            if is_labelled(item) and not label:
                raise FieldSelectionError(f"field {item!r} has an empty label")
            roots = parse_field_roots([item[1] if is_labelled(item) else item])
            assert roots is not None
            out.setdefault(roots[0], label or default_label(roots[0]))
    except FieldSelectionError as exc:
        raise ComponentSpecError(str(exc)) from None
    except TypeError:
        raise ComponentSpecError(f"fields={fields!r} is not a list of pointers or (label, pointer) pairs") from None
    if not out:
        raise ComponentSpecError("fields= needs at least one field (leave it out for the default selection)")
    return tuple(out.items())


# ----------------------------------------------------------------------------------- pages --


@dataclass(eq=False)
class Page:
    """The live components of one rendered page, and digests of what its first paint showed
    (what it showed, element by element, is kept in this process only: :mod:`flask_krm.ui.paint`)."""

    id: str
    components: dict[str, Component] = field(default_factory=dict)
    painted: dict[str, str] = field(default_factory=dict)
    """Component id -> digest of the body the page was rendered with."""
    connected_once: bool = False
    bound: dict[str, str] = field(default_factory=dict)
    """Editor component id -> uid of the object this page edits there (see
    :func:`flask_krm.ui.render.edited_object`)."""
    queries: dict[str, ListQuery] = field(default_factory=dict)
    """List component id -> the filter, sort and page this page shows it with (from its URL)."""

    def add(self, component: Component) -> None:
        """Register ``component`` on the page."""
        self.components[component.id] = component


def new_page_id() -> str:
    """An unguessable page id (128 bits, URL-safe)."""
    return secrets.token_urlsafe(16)


def store_page(drafts: SessionDrafts, page: Page) -> None:
    """Keep ``page`` in the session's namespace and in the draft backend (for every worker)."""
    drafts.page_state((PAGE_STATE_PREFIX, page.id))["page"] = page
    drafts.write_records({f"{PAGE_RECORD}:{page.id}": page_to_json(page)})


def find_page(drafts: SessionDrafts, page_id: str) -> Page | None:
    """The page ``page_id`` of this session, or ``None`` (unknown, expired or another session's).

    A page this worker no longer holds (another worker rendered it, or it was dropped here) is read
    from the draft backend.
    """
    if not isinstance(page_id, str) or not page_id or len(page_id) > 64:
        return None
    state = drafts.find_page_state((PAGE_STATE_PREFIX, page_id))
    found = state.get("page") if state is not None else None
    if isinstance(found, Page):
        return found
    held = drafts.record(f"{PAGE_RECORD}:{page_id}")
    try:
        page = page_from_json(held) if held is not None else None
    except (ValueError, TypeError, KeyError):
        return None
    if page is None or page.id != page_id:
        return None
    drafts.page_state((PAGE_STATE_PREFIX, page.id))["page"] = page
    return page


def page_to_json(page: Page) -> dict[str, t.Any]:
    """``page`` as JSON: its components' specs, what it painted, the objects its editors edit."""
    return {
        "id": page.id,
        "components": [_spec_to_json(c.spec) for c in page.components.values()],
        "painted": dict(page.painted),
        "bound": dict(page.bound),
        "queries": {key: _query_to_json(query) for key, query in page.queries.items()},
    }


def page_from_json(data: t.Any) -> Page:
    """The page :func:`page_to_json` described. Raises ``ValueError`` (or ``TypeError``,
    ``KeyError``) when ``data`` is not one."""
    if not isinstance(data, Mapping) or not isinstance(data.get("id"), str):
        raise ValueError("a page is an object with an id")
    page = Page(data["id"])
    for spec in data.get("components", []):
        page.add(make_component(_spec_from_json(spec)))
    for name in ("painted", "bound"):
        held = data.get(name, {})
        if not isinstance(held, Mapping) or not all(isinstance(v, str) for v in held.values()):
            raise ValueError(f"a page's {name} maps component ids to strings")
        getattr(page, name).update({str(k): v for k, v in held.items()})
    queries = data.get("queries", {})
    if not isinstance(queries, Mapping):
        raise ValueError("a page's queries map component ids to list views")
    page.queries.update({str(k): _query_from_json(v) for k, v in queries.items()})
    return page


def _query_to_json(query: ListQuery) -> dict[str, t.Any]:
    return {**dataclasses.asdict(query), "others": [list(pair) for pair in query.others]}


def _query_from_json(data: t.Any) -> ListQuery:
    if not isinstance(data, Mapping):
        raise ValueError("a list view is an object")
    sort = data.get("sort")
    return ListQuery(
        key=str(data["key"]),
        text=str(data.get("text", "")),
        sort=None if sort is None else str(sort),
        descending=bool(data.get("descending", False)),
        page=int(data.get("page", 1)),
        path=str(data.get("path", "")),
        others=tuple((str(name), str(value)) for name, value in data.get("others", [])),
    )


def _spec_to_json(spec: Spec) -> dict[str, t.Any]:
    common = {"scope": spec.scope.to_wire(), "projection": spec.projection, "title": spec.title}
    if isinstance(spec, ListSpec):
        return {
            "kind": "list",
            **common,
            "columns": [[c.header, list(c.path), c.cell] for c in spec.columns],
            "link": spec.link,
            "rowActions": [[a.label, a.endpoint] for a in spec.row_actions],
            "pageSize": spec.page_size,
            "urlKey": spec.url_key,
        }
    fields = None if spec.fields is None else [list(p) for p in spec.fields]
    return {
        "kind": "editor",
        **common,
        "roots": [list(r) for r in spec.policy.roots],
        "fields": fields,
        "yaml": spec.yaml,
        "labels": [[list(path), label] for path, label in spec.labels],
    }


def _spec_from_json(data: t.Any) -> Spec:
    if not isinstance(data, Mapping):
        raise ValueError("a component spec is an object")
    try:
        scope = parse_scope(data["scope"])
    except ScopeError as exc:
        raise ValueError(str(exc)) from None
    projection, title = str(data["projection"]), data.get("title")
    if title is not None and not isinstance(title, str):
        raise ValueError("a title is a string")
    if data.get("kind") == "list":
        columns = tuple(Column(str(header), tuple(path), str(cell)) for header, path, cell in data["columns"])
        actions = tuple(RowAction(str(label), str(endpoint)) for label, endpoint in data.get("rowActions", []))
        link = data.get("link")
        link = link if isinstance(link, str) else None
        page_size, url_key = int(data["pageSize"]), str(data["urlKey"])
        return ListSpec(scope, projection, columns, link, title, actions, page_size, url_key)
    if data.get("kind") == "editor":
        policy = EditPolicy(tuple(tuple(str(s) for s in root) for root in data["roots"]))
        fields = data.get("fields")
        paths = None if fields is None else tuple(tuple(p) for p in fields)
        labels = tuple((tuple(path), str(label)) for path, label in data.get("labels", []))
        return EditorSpec(scope, projection, policy, paths, title, bool(data.get("yaml", True)), labels)
    raise ValueError("a component is a list or an editor")
