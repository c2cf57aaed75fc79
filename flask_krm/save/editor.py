"""The Save editor action and its outcome fragments.

:func:`save` is the ``save`` editor action (:mod:`flask_krm.ui.actions`), which
:meth:`KrmStream.init_app <flask_krm.KrmStream.init_app>` registers: every live editor gets a Save
button posting to ``/ui/components/<id>/actions/save``. A Save:

1. is refused without I/O unless the principal may ``patch`` the editor's scope (host authorizer),
   the stream is live and no field conflict is open, and without a write while the API server's
   check of the draft (``dryRun=All``, :mod:`flask_krm.save.checking`) refuses it;
2. captures the intent, calls the save hook (default: the conditional merge PATCH as the
   principal), makes the guarded read a 409 or an earlier unknown result calls for;
3. answers the outcome fragment with the outcome's HTTP status (409, 422, 403, 401, 404, 502...),
   never the written object.

An accepted write answers "saved, waiting for live confirmation" together with a hidden element
that posts back at once with ``krm_confirm=1``: that request waits for the watch echo and, when
none arrives within ``KRM_SAVE_CONFIRM_TIMEOUT`` seconds, lets a guarded read decide; its answer
replaces the outcome. Per-editor save state lives in the session (``SessionDrafts.page_state``).

With a shared draft backend (several workers, or drafts kept across restarts), one Save at a time
runs per editor across every worker: a Save takes the editor's lock (a fencing token) first and
answers "busy" when another worker holds it, starts from the save state the backend holds, and
writes every change of that state there (fenced) before acting on it. So a Save whose answer was
lost on one worker is never re-sent by another: the state says a write was in flight, and the next
Save is a guarded read.

When the object an editor edited with unsaved changes is deleted, or replaced under the same name,
the editor shows the removal with the changes for copy-out (:func:`flask_krm.ui.render.edited_object`)
and a Save answers "unavailable" without writing anything; an unavailable outcome the flow finds
itself (a 404, or a 409 whose read names a replacement) offers the copy-out in the outcome.
"""

from __future__ import annotations

import logging
import typing as t
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial

from flask import Response, request, url_for
from markupsafe import Markup

from ..concurrency import AsyncResult, Timeout
from ..drafts.sync import field_name
from ..errors import DraftsUnavailable
from ..runtime import KrmRuntime
from ..sessions import StoreKey, store_id
from ..store import RecoveryCopy, StoreError
from ..ui.actions import EditorContext
from ..ui.page import Component
from ..ui.recovery import recovery_copy
from ..ui.render import EditedObject, render_template_fragment
from ..ui.state import store_policy
from .checking import before_save
from .flow import Phase, SaveFlow
from .fragments import outcome_fragment
from .outcomes import Outcome, OutcomeKind, OutcomeTexts, Path
from .perform import Confirmation, EditorTarget, save_edit

if t.TYPE_CHECKING:
    from ..sessions import SessionDrafts

logger = logging.getLogger("flask_krm")

ACTION_NAME: t.Final = "save"
ACTION_LABEL: t.Final = "Save"
SAVE_STATE: t.Final = "krm.save"
FLOW_RECORD: t.Final = "flow"
SAVE_LOCK_TTL: t.Final = 10.0
"""Seconds one worker may hold an editor's save lock. A worker that died holding it delays the next Save by
at most this; a write outliving it is safe: its flow state says a write is in flight, so the next Save
reads first, and the late worker's own state writes are fenced out."""
CONFIRM_FIELD: t.Final = "krm_confirm"
COPY_SHOWN: t.Final = "Your unsaved changes are shown above, to copy out."


@dataclass(frozen=True, slots=True)
class SaveSettings:
    """How saving behaves in one application, as read for one request (see :func:`settings_of`).

    :param confirm_timeout: seconds to wait for an accepted write's echo before a guarded read
        (``KRM_SAVE_CONFIRM_TIMEOUT``).
    :param texts: outcome wording (``KRM_OUTCOME_TEXTS`` over the defaults).
    """

    confirm_timeout: float = 5.0
    texts: OutcomeTexts = field(default_factory=OutcomeTexts)


def settings_of(krm: KrmRuntime) -> SaveSettings:
    """The application's save settings now: ``KRM_SAVE_CONFIRM_TIMEOUT`` and ``KRM_OUTCOME_TEXTS``
    (both validated at each call)."""
    return SaveSettings(krm.setting("SAVE_CONFIRM_TIMEOUT"), krm.outcome_texts())


@dataclass(eq=False)
class EditorSaveState:
    """One editor's save state in one session."""

    flow: SaveFlow
    shown_causes: tuple[Path, ...] = ()
    """Paths whose error elements the last outcome filled (cleared by the next one)."""


def editor_state(drafts: SessionDrafts, component: Component, uid: str) -> EditorSaveState:
    """The session's save state of ``component`` for object ``uid`` (created on first use)."""
    states = drafts.page_state((SAVE_STATE, component.scope, component.projection, store_policy(component)))
    state = states.get(uid)
    if not isinstance(state, EditorSaveState):
        state = states[uid] = EditorSaveState(SaveFlow(uid))
    return state


def _flow_field(component: Component, uid: str) -> str:
    key = StoreKey(component.scope, component.projection, store_policy(component))
    return field_name(FLOW_RECORD, store_id(key), uid)


def _locked_save(ctx: EditorContext, state: EditorSaveState, run: t.Callable[[], Outcome]) -> Outcome:
    """``run()`` under the editor's lock on every worker, on the flow state the backend holds,
    writing each change of it there (fenced by the lock's token). ``BUSY`` when the lock is held."""
    drafts, name = ctx.drafts, _flow_field(ctx.component, state.flow.uid)
    token = drafts.lock(name, SAVE_LOCK_TTL)
    if token is None:
        return Outcome(OutcomeKind.BUSY)
    try:
        held = drafts.record(name)
        if held is not None:
            try:
                state.flow = SaveFlow.resumed(held)
            except ValueError:
                logger.warning("ignoring a malformed save state in the draft backend")

        def write_out(flow: SaveFlow) -> None:
            if not drafts.write_records({name: flow.state()}, fence=(name, token)):
                raise DraftsUnavailable("Another worker took over this Save: its state was not recorded here.")

        state.flow.observer = write_out
        try:
            return run()
        finally:
            state.flow.observer = None
    finally:
        drafts.unlock(name, token)


def _target(ctx: EditorContext) -> EditorTarget:
    scope = ctx.component.scope
    return EditorTarget(
        principal=ctx.principal,
        scope=scope,
        projection=ctx.component.projection,
        api=ctx.krm.client_for(scope.target, ctx.principal),
        hook=ctx.krm.hooks.saver,
    )


def save(ctx: EditorContext) -> Response:
    """The Save action (or, with ``krm_confirm``, the wait for a pending save's confirmation)."""
    settings = settings_of(ctx.krm)
    edited = ctx.edited
    uid = edited.removed.identity.uid if edited.removed is not None else edited.uid
    if uid is None:
        return _respond(ctx, None, Outcome(OutcomeKind.UNAVAILABLE, http_status=404), settings)
    state = editor_state(ctx.drafts, ctx.component, uid)
    if request.form.get(CONFIRM_FIELD):
        confirm = partial(_confirmation, ctx, state, settings)
        outcome = _locked_save(ctx, state, confirm)
        return _respond(ctx, state, _named(outcome, edited), settings)
    if edited.removed is not None:  # deleted or replaced with unsaved changes: nothing to write to
        gone = Outcome(OutcomeKind.UNAVAILABLE, replacement_uid=edited.replacement)
        return _respond(ctx, state, gone if edited.replacement else replace(gone, http_status=404), settings)
    scope = ctx.component.scope
    if not ctx.krm.decide(ctx.principal, scope, ctx.component.projection, "patch").allowed:
        return _respond(ctx, state, Outcome(OutcomeKind.ACCESS_DENIED), settings)
    refused = before_save(ctx, state.flow)  # the cluster's check of this very draft (dryRun=All)
    if refused is not None:
        return _respond(ctx, state, refused, settings)

    def write() -> Outcome:
        return save_edit(_target(ctx), ctx.store, state.flow, live=ctx.live, newest=ctx.feed.newest_known)

    outcome = _locked_save(ctx, state, write)
    return _respond(ctx, state, outcome, settings)


def _named(outcome: Outcome, edited: EditedObject) -> Outcome:
    """``outcome``, naming the replacement the page knows of when it reports the object unavailable."""
    if outcome.kind is OutcomeKind.UNAVAILABLE and outcome.replacement_uid is None and edited.replacement:
        return replace(outcome, replacement_uid=edited.replacement, http_status=None)
    return outcome


def _confirmation(ctx: EditorContext, state: EditorSaveState, settings: SaveSettings) -> Outcome:
    """Wait for the pending write's echo, or let a guarded read decide after the timeout."""
    flow = state.flow
    if flow.phase is not Phase.CONFIRMING:
        return flow.last or Outcome(OutcomeKind.NOTHING_TO_SAVE)
    result: AsyncResult[Outcome] = AsyncResult()
    confirmation = Confirmation(_target(ctx), ctx.store, flow, timeout=settings.confirm_timeout, notify=result.set)
    confirmation.start()
    try:
        outcome: Outcome = result.get(timeout=settings.confirm_timeout + 60.0)
        return outcome
    except Timeout:
        return flow.last or Outcome(OutcomeKind.RECOVERING)
    finally:
        confirmation.cancel()


def _recovery(ctx: EditorContext, state: EditorSaveState | None, outcome: Outcome) -> RecoveryCopy | None:
    """The person's unsaved draft, offered for copy-out when the object is unavailable."""
    if outcome.kind is not OutcomeKind.UNAVAILABLE or state is None:
        return None
    return recovery_copy(ctx.store, state.flow.uid)


def _field_id(ctx: EditorContext) -> Callable[[Sequence[t.Any], str], str]:
    """The DOM id of the field at a path of the draft, whose keyed-list items are named by key."""
    uid = ctx.uid

    def field_id(path: Sequence[t.Any], suffix: str) -> str:
        try:
            address: Sequence[t.Any] = ctx.store.address(uid, path) if uid is not None else path
        except StoreError:
            address = path
        return ctx.component.element_id(address, suffix)

    return field_id


def _respond(ctx: EditorContext, state: EditorSaveState | None, outcome: Outcome, settings: SaveSettings) -> Response:
    recovery = _recovery(ctx, state, outcome)
    if recovery is not None and ctx.edited.removed is not None:
        recovery = None  # the editor already shows the removal with the copy-out: say so, not twice
        outcome = replace(outcome, detail=outcome.detail or COPY_SHOWN)
    fragment = outcome_fragment(
        ctx.outcome_id,
        outcome,
        settings.texts,
        _field_id(ctx),
        cleared=state.shown_causes if state is not None else (),
        recovery=recovery,
    )
    if state is not None:
        state.shown_causes = tuple(c.path for c in outcome.causes if c.path)
    if outcome.kind is OutcomeKind.SAVED_PENDING:
        fragment += _confirm_trigger(ctx)
    return Response(fragment, status=outcome.status_code, mimetype="text/html", headers={"Cache-Control": "no-store"})


def _confirm_trigger(ctx: EditorContext) -> Markup:
    url = url_for("krm.ui_action", component_id=ctx.component.id, name=ACTION_NAME)
    return render_template_fragment("krm/save/confirm.html", target_id=ctx.outcome_id, url=url, field=CONFIRM_FIELD)
