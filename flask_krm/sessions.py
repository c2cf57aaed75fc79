"""The per-session draft registry: server-side editing state of each browser session.

Drafts live in memory on the server, in a namespace keyed by ``(session id, principal name)``.
The session id is a random 128-bit value in the host's signed session cookie; the browser never
names a namespace, so guessing another session's store or object identifiers finds nothing.

The browser session's flask-krm state belongs to one principal (:func:`follow_principal`). When
another principal signs in on the same browser, the previous principal's namespace is discarded
and both the session id and the CSRF token are replaced, so the new identity starts with nothing
and no token issued before the sign-in (to an anonymous visitor included) is accepted after it.

A namespace holds one :class:`~flask_krm.store.LiveResourceStore` per :class:`StoreKey` (scope,
projection and the edit policy the store enforces) and arbitrary per-page UI state. It is made
only when something needs storing: a request that merely looks (a channel, an edit naming an
unknown page) adds nothing, so a client that never returns its cookie cannot grow the registry.
Stores without unsaved edits expire after ``KRM_DRAFT_EXPIRY`` seconds unused; stores with unsaved
edits are kept for the session lifetime (the application's ``PERMANENT_SESSION_LIFETIME`` of
inactivity). A namespace holds at most ``KRM_MAX_STORES_PER_SESSION`` stores, the registry at most
``KRM_MAX_SESSIONS`` namespaces: past it, the least recently used namespace without unsaved edits
is dropped.

Every store made here is attached to the draft backend (``KRM_DRAFTS_URL``, :mod:`flask_krm.drafts`;
in the process by default): what the person did is written there as they do it and replayed into
the same session's stores on every worker, and a store made after a restart starts from it when the
backend outlives the process. The registry is this worker's cache of the backend. Signing out ends
the session (:func:`end_session`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
import threading
import time
import typing as t
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from flask import session

from . import csrf
from .drafts import backend_from_url
from .drafts.backend import BackendUnavailable, DraftBackend, Record, session_tag
from .drafts.endings import SessionEndings
from .drafts.sync import DraftSync, EditContended
from .errors import DraftLimitReached, DraftsUnavailable

if t.TYPE_CHECKING:
    from .scope import Scope
    from .store import EditPolicy, LiveResourceStore

logger = logging.getLogger("flask_krm")

SESSION_ID_KEY: t.Final = "_krm_sid"
OWNER_KEY: t.Final = "_krm_owner"

MAX_PAGE_STATES: t.Final = 64
"""Per-page UI state entries one namespace keeps; the least recently used is dropped first."""

_T = t.TypeVar("_T")

NamespaceKey: t.TypeAlias = tuple[str, str]
"""``(session id, principal name)``."""


@dataclass(frozen=True, slots=True)
class StoreKey:
    """Identifies one draft store within a namespace.

    ``policy`` is the edit policy the store enforces (``None``: the store's default). Editors of
    one object under different policies hold separate drafts, so a Save from one never sends what
    another editor changed.
    """

    scope: Scope
    projection: str
    policy: EditPolicy | None = None


def store_id(key: StoreKey) -> str:
    """A stable name of ``key`` for the draft backend (the same in every process)."""
    roots = None if key.policy is None else [list(root) for root in key.policy.roots]
    text = json.dumps([key.scope.canonical_query(key.projection), roots], separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


@dataclass(frozen=True, slots=True)
class Limits:
    """The registry's use-time limits, read from configuration for each access."""

    store_expiry: float
    """Seconds a store without unsaved edits survives unused."""

    session_lifetime: float
    """Seconds a whole namespace (unsaved edits included) survives unused."""

    max_stores: int
    """Stores one namespace may hold."""

    max_sessions: int = 10_000
    """Namespaces the registry holds; past it, the least recently used clean one is dropped."""


@dataclass(slots=True)
class _Entry:
    store: LiveResourceStore
    last_used: float


@dataclass(eq=False, slots=True)
class _Namespace:
    """What one browser session holds for one principal."""

    last_used: float
    entries: dict[StoreKey, _Entry] = field(default_factory=dict)
    pages: dict[Hashable, dict[str, t.Any]] = field(default_factory=dict)

    def has_unsaved_edits(self) -> bool:
        return any(has_unsaved_edits(entry.store) for entry in self.entries.values())

    def expire(self, now: float, store_expiry: float) -> None:
        for key, entry in list(self.entries.items()):
            if now - entry.last_used >= store_expiry and not has_unsaved_edits(entry.store):
                del self.entries[key]


def has_unsaved_edits(store: LiveResourceStore) -> bool:
    """Whether any object of ``store`` has a dirty path or an open conflict."""
    return store.unsaved()


@contextmanager
def answering() -> Iterator[None]:
    """Where a draft backend out of reach (:class:`~flask_krm.drafts.backend.BackendUnavailable`)
    becomes :class:`~flask_krm.errors.DraftsUnavailable` (503) for a request: the one translation."""
    try:
        yield
    except BackendUnavailable:
        raise DraftsUnavailable() from None


class SessionDrafts:
    """The drafts of one browser session for one principal.

    Obtain it through :meth:`KrmRuntime.session_drafts
    <flask_krm.runtime.KrmRuntime.session_drafts>`; never construct it directly. It is a handle:
    the registry holds the namespace only from the first store or page state on. Methods may be
    called from any greenlet.
    """

    def __init__(self, registry: DraftRegistry, key: NamespaceKey, limits: Limits) -> None:
        self._registry = registry
        self._key = key
        self._limits = limits

    def store(
        self,
        scope: Scope,
        projection: str,
        create: Callable[[], LiveResourceStore],
        *,
        policy: EditPolicy | None = None,
    ) -> LiveResourceStore:
        """The store for ``scope``, ``projection`` and ``policy``, made with ``create()`` if there is none.

        ``policy`` is the edit policy ``create()`` gives the store (``None``: its default); it
        keys the store. Making a store beyond the limit first drops the least recently used store
        without unsaved edits. Raises :class:`~flask_krm.errors.DraftLimitReached` (409) when every
        held store has unsaved edits.
        """
        key = StoreKey(scope, projection, policy)
        with self._registry.lock:
            held = self._registry._make(self._key, self._limits)
            now = held.last_used
            entry = held.entries.get(key)
            if entry is None:
                if len(held.entries) >= self._limits.max_stores:
                    _evict_one_clean(held)
                made = create()
                with answering():
                    self._registry.sync.attach(self._key[0], store_id(key), made, self._limits.session_lifetime)
                entry = held.entries[key] = _Entry(made, now)
            entry.last_used = now
            return entry.store

    def find(self, scope: Scope, projection: str, *, policy: EditPolicy | None = None) -> LiveResourceStore | None:
        """The store for ``scope``, ``projection`` and ``policy`` if this namespace holds one."""
        with self._registry.lock:
            held = self._registry._find(self._key)
            entry = held.entries.get(StoreKey(scope, projection, policy)) if held is not None else None
            if held is None or entry is None:
                return None
            entry.last_used = held.last_used
            return entry.store

    def catch_up(self, scope: Scope, projection: str, *, policy: EditPolicy | None = None) -> None:
        """Bring the store for ``scope``, ``projection`` and ``policy`` up to what other workers wrote
        to the draft backend (nothing without such a store). While the backend cannot be read the
        store goes on as it is: no worker can write there then, and this worker's own changes wait
        to be written (:meth:`DraftSync.flush <flask_krm.drafts.sync.DraftSync.flush>`).
        """
        try:
            self._registry.sync.catch_up(self._key[0], store_id(StoreKey(scope, projection, policy)))
        except BackendUnavailable:
            return

    def edit(self, scope: Scope, projection: str, apply: Callable[[], _T], *, policy: EditPolicy | None = None) -> _T:
        """Make the person's edit ``apply()`` on the store for ``scope``, ``projection`` and ``policy``
        so that it lands whatever other workers write at the same time (:meth:`DraftSync.edit
        <flask_krm.drafts.sync.DraftSync.edit>`). Raises what ``apply()`` raises, and
        :class:`~flask_krm.errors.DraftsUnavailable` (503) when the edit never found its object's
        record unchanged."""
        try:
            return self._registry.sync.edit(self._key[0], store_id(StoreKey(scope, projection, policy)), apply)
        except EditContended:
            raise DraftsUnavailable() from None

    def touch(self) -> None:
        """Keep this session's drafts in the backend for the session lifetime from now (a page of it
        is open)."""
        self._registry.sync.touch(self._key[0], self._limits.session_lifetime)

    def watch_end(self, ended: Callable[[], None]) -> Callable[[], None]:
        """Call ``ended()`` when this session ends, on any worker; returns the function that stops it."""
        return self._registry.endings.watch(self._key[0], ended)

    def keys(self) -> list[StoreKey]:
        """The keys of every store held, least recently used first."""
        with self._registry.lock:
            held = self._registry._namespaces.get(self._key)
            if held is None:
                return []
            return sorted(held.entries, key=lambda k: held.entries[k].last_used)

    def discard(self, scope: Scope, projection: str, *, policy: EditPolicy | None = None) -> None:
        """Drop the store for ``scope``, ``projection`` and ``policy`` (unsaved edits included), if any."""
        with self._registry.lock:
            held = self._registry._namespaces.get(self._key)
            if held is not None:
                held.entries.pop(StoreKey(scope, projection, policy), None)

    @property
    def outlives_process(self) -> bool:
        """Whether this session's drafts outlive this process (the draft backend's
        :attr:`~flask_krm.drafts.backend.DraftBackend.outlives_process`): another worker may serve
        its next request, and the next process finds them after a restart."""
        return self._registry.backend.outlives_process

    def records(self) -> dict[str, Record]:
        """Every record the draft backend holds for this session but its page records. Reading
        renews them.

        Raises :class:`~flask_krm.errors.DraftsUnavailable` (503) when it cannot be read.
        """
        with answering():
            return self._registry.backend.read(self._key[0], lifetime=self._limits.session_lifetime)

    def record(self, name: str) -> Record | None:
        """The record ``name`` the draft backend holds for this session, if any; reading renews the
        session's records. Raises :class:`~flask_krm.errors.DraftsUnavailable` (503)."""
        with answering():
            held = self._registry.backend.read(self._key[0], (name,), lifetime=self._limits.session_lifetime)
        return held.get(name)

    def write_records(self, records: t.Mapping[str, Record | None], *, fence: tuple[str, int] | None = None) -> bool:
        """Write ``records`` to the draft backend (``None`` removes one) for the session lifetime.

        With ``fence`` (a lock name and its token), writes nothing and returns ``False`` when a newer
        token was handed out since. Raises :class:`~flask_krm.errors.DraftsUnavailable` (503).
        """
        with answering():
            return self._registry.backend.write(self._key[0], records, self._limits.session_lifetime, fence=fence)

    def lock(self, name: str, ttl: float) -> int | None:
        """Take this session's lock ``name`` (on every worker) for at most ``ttl`` seconds: its
        fencing token, or ``None`` when it is held. Raises :class:`~flask_krm.errors.DraftsUnavailable`."""
        with answering():
            return self._registry.backend.lock(self._key[0], name, ttl)

    def unlock(self, name: str, token: int) -> None:
        """Release this session's lock ``name`` if ``token`` still holds it."""
        self._registry.backend.unlock(self._key[0], name, token)

    def page_state(self, page: Hashable) -> dict[str, t.Any]:
        """A mutable mapping of UI state for ``page`` (any hashable key the UI chooses).

        At most :data:`MAX_PAGE_STATES` pages are kept; the least recently used is dropped.
        """
        with self._registry.lock:
            pages = self._registry._make(self._key, self._limits).pages
            state = pages.pop(page, None)
            if state is None:
                state = {}
                while len(pages) >= MAX_PAGE_STATES:
                    del pages[next(iter(pages))]
            pages[page] = state
            return state

    def find_page_state(self, page: Hashable) -> dict[str, t.Any] | None:
        """The UI state of ``page`` if this session holds it; never creates or evicts anything."""
        with self._registry.lock:
            held = self._registry._namespaces.get(self._key)
            state = held.pages.get(page) if held is not None else None
            if held is not None and state is not None:
                self._registry._find(self._key)
                held.pages[page] = held.pages.pop(page)
            return state


def _evict_one_clean(held: _Namespace) -> None:
    for key in sorted(held.entries, key=lambda k: held.entries[k].last_used):
        if not has_unsaved_edits(held.entries[key].store):
            del held.entries[key]
            return
    raise DraftLimitReached(
        f"This session already holds {len(held.entries)} views with unsaved changes: save or discard one of them first."
    )


class DraftRegistry:
    """Every namespace of one application, with idle expiry and a bound on their number.

    :param clock: monotonic seconds; tests substitute a fake clock.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic, backend: DraftBackend | None = None) -> None:
        self.now = clock
        self.backend: DraftBackend = backend if backend is not None else backend_from_url(None)
        self.sync = DraftSync(self.backend)
        """Keeps this worker's stores in step with the backend."""
        self.sync.on_session_ended = self._ended_elsewhere
        self.endings = SessionEndings()
        """The open channels and streams of each session, told when it ends."""
        self.lock = threading.RLock()
        self._namespaces: dict[NamespaceKey, _Namespace] = {}
        """Least recently used first."""
        self._last_sweep = clock()

    def namespace(self, session_id: str, principal_name: str, limits: Limits) -> SessionDrafts:
        """The drafts of ``(session_id, principal_name)``. Nothing is held until they store something."""
        with self.lock:
            self._sweep(limits)
            return SessionDrafts(self, (session_id, principal_name), limits)

    def discard(self, session_id: str) -> None:
        """Forget every namespace of ``session_id`` and every draft in them, in the backend too."""
        with self.lock:
            for key in [k for k in self._namespaces if k[0] == session_id]:
                del self._namespaces[key]
        self.endings.end(session_tag(session_id))
        try:
            self.sync.end_session(session_id)
        except BackendUnavailable:
            logger.error("the draft backend is unavailable: an ended session's drafts stay there until they expire")

    def counts(self) -> tuple[int, int]:
        """How many sessions hold drafts here, and how many of them have unsaved edits."""
        with self.lock:
            namespaces = list(self._namespaces.values())
        return len(namespaces), sum(1 for namespace in namespaces if namespace.has_unsaved_edits())

    def _ended_elsewhere(self, tag: str) -> None:
        with self.lock:
            for key in [k for k in self._namespaces if session_tag(k[0]) == tag]:
                del self._namespaces[key]
        self.endings.end(tag)

    def __len__(self) -> int:
        return len(self._namespaces)

    def _find(self, key: NamespaceKey) -> _Namespace | None:
        """The namespace ``key`` if held, marked as just used."""
        held = self._namespaces.pop(key, None)
        if held is not None:
            held.last_used = self.now()
            self._namespaces[key] = held
        return held

    def _make(self, key: NamespaceKey, limits: Limits) -> _Namespace:
        """The namespace ``key``, made when not held. Making one past ``limits.max_sessions`` drops
        the least recently used namespace without unsaved edits, or raises
        :class:`~flask_krm.errors.DraftLimitReached` when all have some."""
        held = self._find(key)
        if held is not None:
            return held
        while len(self._namespaces) >= limits.max_sessions:
            self._evict_one_clean()
        held = self._namespaces[key] = _Namespace(self.now())
        return held

    def _evict_one_clean(self) -> None:
        for key, held in self._namespaces.items():
            if not held.has_unsaved_edits():
                del self._namespaces[key]
                return
        raise DraftLimitReached("The server holds as many sessions with unsaved changes as it can: try again later.")

    def _sweep(self, limits: Limits) -> None:
        now = self.now()
        if now - self._last_sweep < limits.store_expiry / 4:
            return
        self._last_sweep = now
        for key, held in list(self._namespaces.items()):
            if now - held.last_used >= limits.session_lifetime:
                del self._namespaces[key]
                self.endings.end(session_tag(key[0]))  # expired: whatever of it is still open ends
                continue
            held.expire(now, limits.store_expiry)
            if not held.entries and not held.pages and now - held.last_used >= limits.store_expiry:
                del self._namespaces[key]


def _owner_tag(principal_name: str) -> str:
    return hashlib.sha256(principal_name.encode()).hexdigest()[:32]


def follow_principal(registry: DraftRegistry, principal_name: str | None) -> bool:
    """Bind the browser session's flask-krm state to the signed-in principal. Requires a request
    context. Returns whether the principal changed.

    When ``principal_name`` differs from the principal the session belongs to (or the session
    belongs to nobody yet, as after an anonymous visit), the previous namespace is discarded, the
    session id dropped (a new one is made when needed) and the CSRF token revoked
    (:func:`flask_krm.csrf.revoke`; a new one is made at the next page). Nobody signed in
    (``None``) changes nothing: a signed-out request is refused as such, and signing in again as
    the same principal keeps the session. The cookie holds only a digest of the principal name.
    """
    if principal_name is None:
        return False
    owner = _owner_tag(principal_name)
    if session.get(OWNER_KEY) == owner:
        return False
    session_id = session.pop(SESSION_ID_KEY, None)
    if isinstance(session_id, str) and session_id:
        registry.discard(session_id)
    csrf.revoke()
    session[OWNER_KEY] = owner
    return True


def end_previous_principal(registry: DraftRegistry, principal_name: str) -> None:
    """A sign-in of ``principal_name`` happened (Flask-Login's ``user_logged_in``): when the browser
    session belonged to another principal, its drafts end now, on every worker, with whatever of it
    is open (page channels, JSON streams). Requires a request context. The CSRF token and the
    session's owner follow at the next flask-krm request (:func:`follow_principal`)."""
    owner = session.get(OWNER_KEY)
    if owner is None or owner == _owner_tag(principal_name):
        return
    session_id = session.pop(SESSION_ID_KEY, None)
    if isinstance(session_id, str) and session_id:
        registry.discard(session_id)


def end_session(registry: DraftRegistry) -> None:
    """End the browser session's flask-krm state: its drafts are discarded on the server (in the
    draft backend too) and the session id dropped. Requires a request context. Called on sign-out
    (Flask-Login's ``user_logged_out``; a host without Flask-Login calls :meth:`KrmStream.end_session
    <flask_krm.KrmStream.end_session>`): a copy of the cookie taken before opens nothing. The session
    then belongs to nobody, so the next sign-in, even of the same principal, starts clean and
    replaces the CSRF token (:func:`follow_principal`); until then a request is refused as signed out."""
    session_id = session.pop(SESSION_ID_KEY, None)
    session.pop(OWNER_KEY, None)
    if isinstance(session_id, str) and session_id:
        registry.discard(session_id)


def session_key(registry: DraftRegistry, principal_name: str) -> str:
    """The current browser session's id for ``principal_name``. Requires a request context.

    Follows a principal change first (:func:`follow_principal`), then creates a random 128-bit id
    on first use.
    """
    follow_principal(registry, principal_name)
    session_id = session.get(SESSION_ID_KEY)
    if isinstance(session_id, str) and session_id:
        return session_id
    session_id = secrets.token_hex(16)
    session[SESSION_ID_KEY] = session_id
    return session_id
