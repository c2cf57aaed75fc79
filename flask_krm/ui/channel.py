"""The page channel: one SSE connection carrying every live component of a page.

``GET /ui/pages/<page_id>/channel`` (the page's ``hx-sse:connect``). The channel holds the feed of
each component, listens to its store and its stream state, and sends one unnamed SSE message per
wake-up with ``<hx-partial>`` elements for exactly what changed since it last sent one (the first
connection starts from what the page painted; a reconnection resends every body whole, since a
message may have been lost with the old connection; no ``id:`` is ever sent, so there is no resume
position). A list is followed row by row (:class:`~flask_krm.ui.list_updates.ListUpdates`): its
message carries only the rows, count and pager that changed. An editor is followed element by
element (:class:`~flask_krm.ui.editor_updates.EditorUpdates`): its message carries only the
elements that changed (a field's control, a field with its conflict, the stream state, the YAML
tab's parts), or the whole body (``innerMorph``) when its structure changed.
Store notifications only set a flag (and, for a list, note the changed uids), so a burst of changes
costs one render per component. A component whose store was just made and holds nothing yet (a
worker other than the one that painted the page, with a shared draft backend) is not rendered until
its objects come: a placeholder would replace what the page shows, the field being typed in too.
Each component is rendered with the controls its person is offered (:class:`~flask_krm.ui.offer.Offer`,
from :func:`flask_krm.save.controls.offer_for`, asked again once ``KRM_PERMISSION_CACHE`` passes), so
a session offered fewer controls never receives another's in a shared row or editor part.
An editor's render made after the person's edits of its object carries the object's edit sequence
(:meth:`flask_krm.store.LiveResourceStore.edit_sequence`, read before the render): a hidden marker at
the end of a whole body, an attribute on each element sent alone. It tells ``krm-field.js`` which edits
the render already shows, and makes the render after an edit differ from the one before it. The
sequence travels with the draft's edit record, so a render made by any worker is compared with an
edit answered by any other.

A channel watches its browser session: when the session ends on any worker (sign-out, a sign-in
as someone else, expiry), each editor with unsaved changes is replaced by their copy-out, and the
stream closes with the signed-out reason, within a second. With a shared draft backend it also
tells the page, with the named event ``krm-drafts`` (``unavailable`` or ``available``), while the
backend cannot be reached (edits are kept in the page and on the worker meanwhile), and each
heartbeat renews the session's drafts there.

The stream never just ends: that would make the browser reconnect twice a second. It sends
heartbeats while idle and, to stop for good, the named event ``krm-close`` carrying the reason
(``hx-sse:close="krm-close"`` on the channel element), after which the browser stops reconnecting:
for an unknown or expired page, a signed-out session, shutdown, or when every component's stream
ended with a terminal error. Every answer, refusals included, is ``text/event-stream``, so the
browser's SSE extension owns it. The response is an :class:`~flask_krm.sse_response.SSEResponse`:
chunks go to the server as they are, and a client that closes the connection is noticed at once
(under gevent) and its channel released, rather than at the next heartbeat.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import typing as t
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from flask import Response, stream_with_context

from .. import concurrency
from ..log_fields import new_stream_id, request_id
from ..runtime import KrmRuntime, runtime
from ..save.checking import ChannelChecks
from ..save.controls import offer_for
from ..sse import HEARTBEAT, heartbeat_interval, message, released
from ..sse_response import sse_response
from .binding import SIGNED_OUT, Refusal, attach, authorize, page_of, session_of
from .editor_updates import EditorUpdates
from .list_updates import ListUpdates
from .offer import NOTHING, Offer
from .page import Component, ListSpec, Page
from .paint import find_painted
from .render import (
    EditedObject,
    StreamStatus,
    body_partial,
    edited_object,
    model_of_editor,
    render_restart_copy_out,
    render_whole,
)
from .state import store_policy

if t.TYPE_CHECKING:
    from ..principal import Principal
    from ..sessions import SessionDrafts
    from ..store import LiveResourceStore
    from .feeds import Feed

logger = logging.getLogger("flask_krm")

CLOSE_EVENT: t.Final = "krm-close"
DRAFTS_EVENT: t.Final = "krm-drafts"
"""The named event saying whether the shared draft backend can be reached (``available``/``unavailable``)."""
SHUTDOWN_REASON: t.Final = "The server is restarting: reload the page in a moment."
RESTART_RETRY: t.Final = b"retry: 1000\n\n"
"""The last frame of a stream ended by a restart with a shared draft backend: reconnect in a second."""
RESPONSE_HEADERS: t.Final = (
    ("Content-Type", "text/event-stream"),
    ("Cache-Control", "no-store"),
    ("X-Accel-Buffering", "no"),
)


def _digest(body: str) -> str:
    return hashlib.sha256(body.encode()).hexdigest()


FRAMES_KEPT: t.Final = 64
"""How many framed messages :func:`framed` keeps, for the sessions sending the same partials."""
_FRAMES: dict[tuple[int, ...], tuple[tuple[str, ...], bytes]] = {}
_FRAMES_LOCK = threading.Lock()


def framed(parts: list[str]) -> bytes:
    """The SSE message carrying ``parts``. Sessions that show the same change get the very same
    partials (made once per change, see :mod:`~flask_krm.ui.list_updates` and
    :mod:`~flask_krm.ui.editor_updates`), so the message is framed once for all of them: per
    session, a look-up by the partials' identities."""
    key = tuple(map(id, parts))
    made = _FRAMES.get(key)
    if made is not None and all(a is b for a, b in zip(made[0], parts, strict=True)):
        return made[1]
    sent = message("\n".join(parts))
    with _FRAMES_LOCK:
        _FRAMES[key] = (tuple(parts), sent)  # the partials are kept alive, so their identities stay theirs
        while len(_FRAMES) > FRAMES_KEPT:
            del _FRAMES[next(iter(_FRAMES))]
    return sent


def close_frame(reason: str) -> bytes:
    """The event that ends the page's stream for good, with the reason the page shows."""
    return message(reason, event=CLOSE_EVENT)


def refusal_form(status: int, message: str, kind: str) -> Response:
    """How a page channel's guards refuse (:func:`flask_krm.guards.refuses_as`): its close event,
    since its answers are always event streams."""
    return event_stream(iter([close_frame(message)]))


def event_stream(chunks: Iterator[bytes], on_close: Callable[[], None] = lambda: None) -> Response:
    """A page channel's response: ``chunks`` handed to the server as they are (see
    :class:`~flask_krm.sse_response.SSEResponse`), ``on_close`` run when the client goes."""
    return sse_response(chunks, list(RESPONSE_HEADERS), on_close)


@dataclass(eq=False)
class _Link:
    """One component on the channel: its store and feed, or why it is refused."""

    component: Component
    store: LiveResourceStore | None
    feed: Feed | None
    refused: StreamStatus | None = None

    @property
    def status(self) -> StreamStatus:
        if self.refused is not None:
            return self.refused
        assert self.feed is not None
        return self.feed.status


def _still_empty(link: _Link) -> bool:
    """Whether the link's store was just made and holds nothing yet: a worker other than the one
    that painted the page (a shared draft backend), whose watch has not delivered its snapshot. A
    render now would replace what the page shows, the field being typed in included, with a
    placeholder; the store's snapshot (or its stream retrying or ending) wakes the channel."""
    return (
        link.store is not None
        and link.status.state in ("connecting", "syncing")
        and not link.store.snapshot_complete
        and not link.store.uids()
    )


@dataclass(eq=False)
class Channel:
    """One open connection of one page."""

    krm: KrmRuntime
    principal: Principal
    drafts: SessionDrafts
    page: Page
    resend_all: bool
    links: list[_Link] = field(default_factory=list)
    _wake: concurrency.Event = field(default_factory=concurrency.Event)
    _dirty: set[str] = field(default_factory=set)
    _changed_uids: dict[str, set[str]] = field(default_factory=dict)
    """List component id -> the objects changed since the last message."""
    _lists: dict[str, ListUpdates] = field(default_factory=dict)
    _editors: dict[str, EditorUpdates] = field(default_factory=dict)
    _closing: str | None = None
    _gone: bool = False
    _session_ended: bool = False
    _drafts_available: bool | None = None
    """What the page was last told about the draft backend (``None``: nothing yet)."""
    _checks: ChannelChecks = field(init=False)
    """The drafts' checks by the cluster this connection shows (:mod:`flask_krm.save.checking`)."""

    def __post_init__(self) -> None:
        self._checks = ChannelChecks(self.krm, self.principal, self.drafts, self._mark)

    def end_for_session(self) -> None:
        """The page's browser session ended (on any worker): show unsaved changes for copy-out and
        close the stream. Must not block."""
        self._session_ended = True
        self._wake.set()

    def _availability_changed(self, available: bool) -> None:
        self._wake.set()

    def _drafts_frames(self) -> Iterator[bytes]:
        available = not self.krm.drafts.sync.unavailable
        if available != (self._drafts_available is not False):
            yield message("available" if available else "unavailable", event=DRAFTS_EVENT)
        self._drafts_available = available

    def _session_end_frames(self) -> Iterator[bytes]:
        """The end of the stream of a session that ended: the copy-out of each editor with unsaved
        changes, then the close event with the signed-out reason."""
        parts = []
        for link in self.links:
            body = render_restart_copy_out(link.component, link.store, link.status, self.page, signed_out=True)
            if body is not None:
                parts.append(body_partial(link.component, body))
        if parts:
            yield from released(message("\n".join(parts)))
        yield close_frame(SIGNED_OUT)

    fields: dict[str, str] = field(default_factory=dict)
    """The structured log fields of this connection (see :mod:`flask_krm.log_fields`)."""

    def client_closed(self) -> None:
        """The client closed the connection: end the stream without writing anything more."""
        self._gone = True
        self._wake.set()

    def end_for_shutdown(self) -> None:
        """Called by the extension's shutdown: the stream ends with a close event."""
        self._closing = SHUTDOWN_REASON
        self._wake.set()

    def _mark(self, component: Component) -> Callable[..., None]:
        component_id, rows = component.id, isinstance(component.spec, ListSpec)

        def mark(*changed: t.Any) -> None:
            self._dirty.add(component_id)
            if rows and changed:  # a store's notification names the objects; a status change names none
                self._changed_uids.setdefault(component_id, set()).update(changed[0])
            self._wake.set()

        return mark

    def _list_parts(self, link: _Link) -> list[str]:
        component = link.component
        updates = self._lists.get(component.id)
        if updates is None:
            painted = None if self.resend_all else find_painted(self.drafts, self.page.id)
            shown = painted.lists.get(component.id) if painted is not None else None
            updates = self._lists[component.id] = ListUpdates(component, self.page, self.krm.cache, shown)
        uids = self._changed_uids.pop(component.id, set())
        return updates.changes(link.store, link.status, uids, self._offer(link))

    def _shutdown_frames(self) -> Iterator[bytes]:
        """The end of the stream when the server stops. When the drafts outlive this process the
        stream just ends, so the browser reconnects to another (or the next) worker, where the
        drafts are all there. Otherwise the drafts go with this process: each editor with unsaved
        changes shows them for copy-out, and the stream closes for good with the reason."""
        if self.drafts.outlives_process:
            yield RESTART_RETRY
            return
        parts = []
        for link in self.links:
            body = render_restart_copy_out(link.component, link.store, link.status, self.page)
            if body is not None:
                parts.append(body_partial(link.component, body))
        if parts:
            yield from released(message("\n".join(parts)))
        yield close_frame(self._closing or SHUTDOWN_REASON)

    def _offer(self, link: _Link) -> Offer:
        """What ``link``'s component shows this person (asked again after ``KRM_PERMISSION_CACHE``)."""
        if link.store is None:
            return NOTHING  # refused: its body shows no object
        return offer_for(self.krm, self.principal, self.drafts, link.component)

    def _editor_parts(self, link: _Link) -> list[str]:
        component, store = link.component, link.store
        edited = edited_object(store, component, self.page) if store is not None else EditedObject(None)
        # read before rendering: the render holds at least these edits
        edits = store.edit_sequence(edited.uid) if store is not None and edited.uid is not None else 0
        model = model_of_editor(component, store, link.status, self.page, edited=edited, offer=self._offer(link))
        updates = self._editors.get(component.id)
        if updates is None:
            # What the first paint showed, element by element, is known only to the worker that painted;
            # when the drafts outlive this process a channel may be this page's second, after one on
            # another worker.
            first = not self.resend_all and not self.drafts.outlives_process
            painted = find_painted(self.drafts, self.page.id) if first else None
            shown = painted.editors.get(component.id) if painted is not None else None
            digest = None if self.resend_all else self.page.painted.get(component.id)
            if (
                shown is None
                and not edits
                and digest is not None
                and digest == _digest(render_whole(component, model, self.krm.cache))
            ):
                shown = model  # the page still shows what it was painted with
            updates = self._editors[component.id] = EditorUpdates(component, self.krm.cache, shown)
        return updates.changes(model, edits) + self._checks.parts(component, store, link.feed, edited.uid)

    def _link_components(self) -> list[Callable[[], None]]:
        undo: list[Callable[[], None]] = []
        for component in self.page.components.values():
            try:
                authorize(self.krm, self.principal, component)
                store, feed = attach(self.krm, self.principal, self.drafts, component)
            except Refusal as refusal:
                self.links.append(_Link(component, None, None, StreamStatus("terminal", refusal.message)))
                continue
            self.links.append(_Link(component, store, feed))
            undo.append(store.subscribe(self._mark(component)))
            undo.append(feed.on_status(self._mark(component)))
            feed.acquire()
            undo.append(feed.release)
        return undo

    def _keep_stores(self) -> None:
        """Mark the stores used, so the session's idle expiry never drops one a page still shows."""
        for link in self.links:
            if link.store is not None:
                self.drafts.find(link.component.scope, link.component.projection, policy=store_policy(link.component))

    def stream(self) -> Iterator[bytes]:
        """The SSE byte chunks of this connection (ends only with a close event or disconnect)."""
        krm = self.krm
        undo = self._link_components()
        undo.append(self._checks.close)
        undo.append(krm.track_stream(self))
        undo.append(self.drafts.watch_end(self.end_for_session))
        undo.append(krm.drafts.sync.on_availability(self._availability_changed))
        heartbeat = heartbeat_interval(krm.setting("HEARTBEAT_INTERVAL"))
        self.page.connected_once = True
        self._dirty.update(link.component.id for link in self.links)
        metrics = krm.metrics
        if metrics is not None:
            metrics.stream_opened("page")
        logger.debug("page channel opened", extra={**self.fields, "krm_event": "stream-open"})
        outcome = "client-closed"
        try:
            yield b": connected\n\n"
            while not self._gone:
                if self._session_ended:
                    yield from self._session_end_frames()
                    return
                if self._closing is not None or krm.shut_down:
                    outcome = "shutdown"
                    yield from self._shutdown_frames()
                    return
                self._wake.clear()
                yield from self._drafts_frames()
                changed, self._dirty = self._dirty, set()
                parts = []
                for link in self.links:
                    if link.component.id not in changed:
                        continue
                    if _still_empty(link):  # the page shows more than this store holds yet
                        self._dirty.add(link.component.id)
                        continue
                    if isinstance(link.component.spec, ListSpec):
                        parts.extend(self._list_parts(link))
                        continue
                    parts.extend(self._editor_parts(link))
                if parts:
                    sent = framed(parts)
                    if metrics is not None:
                        metrics.page_delivered(len(sent))
                    yield from released(sent)
                    del sent
                terminal = [link.status for link in self.links if link.status.state == "terminal"]
                if self.links and len(terminal) == len(self.links):
                    outcome = "ended"
                    yield close_frame(terminal[0].reason)
                    return
                if not self._wake.wait(heartbeat):
                    self._keep_stores()
                    yield HEARTBEAT
                self.drafts.touch()  # at most once per tenth of the session lifetime
        finally:
            for step in reversed(undo):
                step()
            if metrics is not None:
                metrics.stream_closed("page")
            logger.debug(
                "page channel closed: %s",
                outcome,
                extra={**self.fields, "krm_event": "stream-close", "outcome": outcome},
            )


def channel_response(page_id: str) -> Response:
    """The SSE response for page ``page_id`` of the caller's session."""
    krm = runtime()
    try:
        principal, drafts = session_of(krm)
        page = page_of(drafts, page_id)
    except Refusal as refusal:
        return event_stream(iter([close_frame(refusal.message)]))
    if krm.shut_down:
        # drafts that outlive this process let another worker (or the next process) serve the page
        return event_stream(iter([RESTART_RETRY if drafts.outlives_process else close_frame(SHUTDOWN_REASON)]))
    resend_all = page.connected_once
    fields = {"request_id": request_id(), "stream_id": new_stream_id(), "kind": "page"}
    channel = Channel(krm, principal, drafts, page, resend_all, fields=fields)
    return event_stream(stream_with_context(channel.stream()), channel.client_closed)
