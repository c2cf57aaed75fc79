"""The per-session draft registry: server-side editing state of each browser session.

Drafts live in memory on the server, in a namespace keyed by ``(session id, principal name)``.
The session id is a random 128-bit value in the host's signed session cookie; the browser never
names a namespace, so guessing another session's store or object identifiers finds nothing. When
the principal of a browser session changes (sign-out, another user), the session id is replaced,
so the new identity starts with an empty namespace and the old one is discarded.

A namespace holds one :class:`~flask_krm.store.LiveResourceStore` per ``(scope, projection)`` (the
scope includes its target) and arbitrary per-page UI state. Stores without unsaved edits expire
after ``KRM_DRAFT_EXPIRY`` seconds unused; stores with unsaved edits are kept for the session
lifetime (the application's ``PERMANENT_SESSION_LIFETIME`` of inactivity). A namespace holds at most
``KRM_MAX_STORES_PER_SESSION`` stores.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
import typing as t
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from flask import session
from gevent.lock import Semaphore

from .errors import DraftLimitReached

if t.TYPE_CHECKING:
    from .scope import Scope
    from .store import LiveResourceStore

SESSION_ID_KEY: t.Final = "_krm_sid"
OWNER_KEY: t.Final = "_krm_owner"

MAX_PAGE_STATES: t.Final = 64
"""Per-page UI state entries one namespace keeps; the least recently used is dropped first."""


@dataclass(frozen=True, slots=True)
class StoreKey:
    """Identifies one draft store within a namespace."""

    scope: Scope
    projection: str


@dataclass(frozen=True, slots=True)
class Limits:
    """The registry's use-time limits, read from configuration for each access."""

    store_expiry: float
    """Seconds a store without unsaved edits survives unused."""

    session_lifetime: float
    """Seconds a whole namespace (unsaved edits included) survives unused."""

    max_stores: int
    """Stores one namespace may hold."""


@dataclass(slots=True)
class _Entry:
    store: LiveResourceStore
    last_used: float
    save_lock: Semaphore = field(default_factory=Semaphore)


def has_unsaved_edits(store: LiveResourceStore) -> bool:
    """Whether any object of ``store`` has a dirty path or an open conflict."""
    return any(store.dirty(uid) or store.conflicts(uid) for uid in store.uids())


class SessionDrafts:
    """The drafts of one browser session for one principal.

    Obtain it through :meth:`flask_krm.KrmStream.drafts`; never construct it directly. Methods
    may be called from any greenlet.
    """

    def __init__(self, registry: DraftRegistry, limits: Limits) -> None:
        self._registry = registry
        self._limits = limits
        self._entries: dict[StoreKey, _Entry] = {}
        self._pages: dict[Hashable, dict[str, t.Any]] = {}
        self.last_used = registry.now()

    def store(
        self, scope: Scope, projection: str, create: Callable[[], LiveResourceStore]
    ) -> LiveResourceStore:
        """The store for ``scope`` and ``projection``, made with ``create()`` if there is none.

        Making a store beyond the limit first drops the least recently used store without unsaved
        edits. Raises :class:`~flask_krm.errors.DraftLimitReached` (409) when every held store has
        unsaved edits.
        """
        key = StoreKey(scope, projection)
        with self._registry.lock:
            now = self._touch()
            entry = self._entries.get(key)
            if entry is None:
                if len(self._entries) >= self._limits.max_stores:
                    self._evict_one_clean()
                entry = self._entries[key] = _Entry(create(), now)
            entry.last_used = now
            return entry.store

    def find(self, scope: Scope, projection: str) -> LiveResourceStore | None:
        """The store for ``scope`` and ``projection`` if this namespace holds one."""
        with self._registry.lock:
            now = self._touch()
            entry = self._entries.get(StoreKey(scope, projection))
            if entry is None:
                return None
            entry.last_used = now
            return entry.store

    def keys(self) -> list[StoreKey]:
        """The keys of every store held, least recently used first."""
        with self._registry.lock:
            return sorted(self._entries, key=lambda k: self._entries[k].last_used)

    def discard(self, scope: Scope, projection: str) -> None:
        """Drop the store for ``scope`` and ``projection`` (unsaved edits included), if any."""
        with self._registry.lock:
            self._entries.pop(StoreKey(scope, projection), None)

    def save_lock(self, scope: Scope, projection: str) -> Semaphore:
        """The lock that serializes saves through the store for ``scope`` and ``projection``.

        Raises ``KeyError`` when no such store is held.
        """
        with self._registry.lock:
            return self._entries[StoreKey(scope, projection)].save_lock

    def page_state(self, page: Hashable) -> dict[str, t.Any]:
        """A mutable mapping of UI state for ``page`` (any hashable key the UI chooses).

        At most :data:`MAX_PAGE_STATES` pages are kept; the least recently used is dropped.
        """
        with self._registry.lock:
            self._touch()
            state = self._pages.pop(page, None)
            if state is None:
                state = {}
                while len(self._pages) >= MAX_PAGE_STATES:
                    del self._pages[next(iter(self._pages))]
            self._pages[page] = state
            return state

    def find_page_state(self, page: Hashable) -> dict[str, t.Any] | None:
        """The UI state of ``page`` if this session holds it; never creates or evicts anything."""
        with self._registry.lock:
            state = self._pages.get(page)
            if state is not None:
                self._touch()
                self._pages[page] = self._pages.pop(page)
            return state

    def _touch(self) -> float:
        self.last_used = now = self._registry.now()
        return now

    def _evict_one_clean(self) -> None:
        for key in sorted(self._entries, key=lambda k: self._entries[k].last_used):
            if not has_unsaved_edits(self._entries[key].store):
                del self._entries[key]
                return
        raise DraftLimitReached(
            f"This session already holds {len(self._entries)} views with unsaved changes: "
            "save or discard one of them first."
        )

    def _expire(self, now: float) -> None:
        for key, entry in list(self._entries.items()):
            if now - entry.last_used >= self._limits.store_expiry and not has_unsaved_edits(entry.store):
                del self._entries[key]

    def _is_empty(self) -> bool:
        return not self._entries and not self._pages


class DraftRegistry:
    """Every namespace of one application, with idle expiry.

    :param clock: monotonic seconds; tests substitute a fake clock.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.now = clock
        self.lock = threading.RLock()
        self._namespaces: dict[tuple[str, str], SessionDrafts] = {}
        self._last_sweep = clock()

    def namespace(self, session_id: str, principal_name: str, limits: Limits) -> SessionDrafts:
        """The namespace of ``(session_id, principal_name)``, created empty if there is none."""
        with self.lock:
            self._sweep(limits)
            key = (session_id, principal_name)
            drafts = self._namespaces.get(key)
            if drafts is None:
                drafts = self._namespaces[key] = SessionDrafts(self, limits)
            drafts._limits = limits
            drafts._touch()
            return drafts

    def discard(self, session_id: str) -> None:
        """Forget every namespace of ``session_id`` and every draft in them."""
        with self.lock:
            for key in [k for k in self._namespaces if k[0] == session_id]:
                del self._namespaces[key]

    def __len__(self) -> int:
        return len(self._namespaces)

    def _sweep(self, limits: Limits) -> None:
        now = self.now()
        if now - self._last_sweep < limits.store_expiry / 4:
            return
        self._last_sweep = now
        for key, drafts in list(self._namespaces.items()):
            if now - drafts.last_used >= limits.session_lifetime:
                del self._namespaces[key]
                continue
            drafts._expire(now)
            if drafts._is_empty() and now - drafts.last_used >= limits.store_expiry:
                del self._namespaces[key]


def _owner_tag(principal_name: str) -> str:
    return hashlib.sha256(principal_name.encode()).hexdigest()[:32]


def session_key(registry: DraftRegistry, principal_name: str) -> str:
    """The current browser session's id for ``principal_name``. Requires a request context.

    Creates a random 128-bit id on first use. When the session was bound to another principal,
    that principal's namespace is discarded and a fresh id replaces the old one. The cookie holds
    only a digest of the principal name.
    """
    owner = _owner_tag(principal_name)
    session_id = session.get(SESSION_ID_KEY)
    if isinstance(session_id, str) and session_id and session.get(OWNER_KEY) == owner:
        return session_id
    if isinstance(session_id, str) and session_id:
        registry.discard(session_id)
    session_id = secrets.token_hex(16)
    session[SESSION_ID_KEY] = session_id
    session[OWNER_KEY] = owner
    return session_id
