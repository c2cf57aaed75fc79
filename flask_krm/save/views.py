"""The Save editor action and its outcome fragments.

Importing this module registers the ``save`` editor action (:func:`flask_krm.ui.editor_action`):
every live editor gets a Save button posting to ``/ui/components/<id>/actions/save``. A Save:

1. is refused without I/O unless the principal may ``patch`` the editor's scope (host authorizer),
   the stream is live and no field conflict is open;
2. captures the intent, calls the save hook (default: the conditional merge PATCH as the
   principal), makes the guarded read a 409 or an earlier unknown result calls for;
3. answers the outcome fragment with the outcome's HTTP status (409, 422, 403, 401, 404, 502...),
   never the written object.

An accepted write answers "saved, waiting for live confirmation" together with a hidden element
that posts back at once with ``krm_confirm=1``: that request waits for the watch echo and, when
none arrives within :attr:`SaveSettings.confirm_timeout`, lets a guarded read decide; its answer
replaces the outcome. Per-editor save state lives in the session (``SessionDrafts.page_state``).
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass, field

import gevent.event
from flask import Flask, Response, current_app, request, url_for
from markupsafe import Markup

from ..store import RecoveryCopy, identity_of
from ..ui import EditorContext, editor_action
from ..ui.page import Component
from .actions import Confirmation, EditorTarget, save_edit
from .flow import Phase, SaveFlow
from .fragments import outcome_fragment
from .outcomes import Outcome, OutcomeKind, OutcomeTexts, Path

if t.TYPE_CHECKING:
    from ..sessions import SessionDrafts

SAVE_STATE: t.Final = "krm.save"
CONFIRM_FIELD: t.Final = "krm_confirm"
EXTENSION_KEY: t.Final = "krm.save"


@dataclass(frozen=True, slots=True)
class SaveSettings:
    """How saving behaves in one application (see :func:`configure`).

    :param confirm_timeout: seconds to wait for an accepted write's echo before a guarded read.
    :param texts: outcome wording (defaults from the saving guide; override any outcome).
    """

    confirm_timeout: float = 5.0
    texts: OutcomeTexts = field(default_factory=OutcomeTexts)

    def __post_init__(self) -> None:
        if not isinstance(self.confirm_timeout, (int, float)) or not 0 < self.confirm_timeout <= 300:
            raise ValueError(f"confirm_timeout must be between 0 and 300 seconds, got {self.confirm_timeout!r}")


def configure(app: Flask, *, confirm_timeout: float = 5.0, texts: OutcomeTexts | None = None) -> SaveSettings:
    """Set ``app``'s save settings; returns them. Raises ``ValueError`` for a bad timeout."""
    settings = SaveSettings(confirm_timeout, texts or OutcomeTexts())
    app.extensions[EXTENSION_KEY] = settings
    return settings


def settings_of(app: Flask) -> SaveSettings:
    """``app``'s save settings (the defaults unless :func:`configure` was called)."""
    found = app.extensions.get(EXTENSION_KEY)
    return found if isinstance(found, SaveSettings) else SaveSettings()


@dataclass(eq=False)
class EditorSaveState:
    """One editor's save state in one session."""

    flow: SaveFlow
    shown_causes: tuple[Path, ...] = ()
    """Paths whose error elements the last outcome filled (cleared by the next one)."""
    last_patch: dict[str, t.Any] | None = None
    """The patch of the last Save, offered for copy-out if the object disappears."""


def editor_state(drafts: SessionDrafts, component: Component, uid: str) -> EditorSaveState:
    """The session's save state of ``component`` for object ``uid`` (created on first use)."""
    states = drafts.page_state((SAVE_STATE, component.scope, component.projection))
    state = states.get(uid)
    if not isinstance(state, EditorSaveState):
        state = states[uid] = EditorSaveState(SaveFlow(uid))
    return state


def _target(ctx: EditorContext) -> EditorTarget:
    scope = ctx.component.scope
    return EditorTarget(
        principal=ctx.principal,
        scope=scope,
        projection=ctx.component.projection,
        api=ctx.krm.client_for(scope.target, ctx.principal),
        hook=ctx.krm.saver,
    )


@editor_action("save", label="Save")
def save(ctx: EditorContext) -> Response:
    """The Save action (or, with ``krm_confirm``, the wait for a pending save's confirmation)."""
    settings = settings_of(t.cast(Flask, current_app._get_current_object()))  # type: ignore[attr-defined]
    uid = ctx.uid
    if uid is None:
        return _respond(ctx, None, Outcome(OutcomeKind.UNAVAILABLE, http_status=404), settings)
    state = editor_state(ctx.drafts, ctx.component, uid)
    if request.form.get(CONFIRM_FIELD):
        return _respond(ctx, state, _confirmation(ctx, state, settings), settings)
    scope = ctx.component.scope
    if not ctx.krm.is_authorized(ctx.principal, scope, ctx.component.projection, "patch"):
        return _respond(ctx, state, Outcome(OutcomeKind.ACCESS_DENIED), settings)
    if state.flow.phase is Phase.IDLE:
        state.last_patch = ctx.store.patch(uid)
    outcome = save_edit(_target(ctx), ctx.store, state.flow, live=ctx.live)
    return _respond(ctx, state, outcome, settings)


def _confirmation(ctx: EditorContext, state: EditorSaveState, settings: SaveSettings) -> Outcome:
    """Wait for the pending write's echo, or let a guarded read decide after the timeout."""
    flow = state.flow
    if flow.phase is not Phase.CONFIRMING:
        return flow.last or Outcome(OutcomeKind.NOTHING_TO_SAVE)
    result: gevent.event.AsyncResult[Outcome] = gevent.event.AsyncResult()
    confirmation = Confirmation(_target(ctx), ctx.store, flow, timeout=settings.confirm_timeout, notify=result.set)
    confirmation.start()
    try:
        outcome: Outcome = result.get(timeout=settings.confirm_timeout + 60.0)
        return outcome
    except gevent.Timeout:
        return flow.last or Outcome(OutcomeKind.RECOVERING)
    finally:
        confirmation.cancel()


def _recovery(ctx: EditorContext, state: EditorSaveState | None, outcome: Outcome) -> RecoveryCopy | None:
    if outcome.kind is not OutcomeKind.UNAVAILABLE or state is None:
        return None
    uid = state.flow.uid
    if ctx.store.recovery is not None:
        found = ctx.store.recovery.for_uid(uid)
        if found is not None:
            return found
    server = ctx.store.server(uid)
    patch = ctx.store.patch(uid) if server is not None else state.last_patch
    if not patch:
        return None
    draft = ctx.store.draft(uid) or {}
    return RecoveryCopy(identity_of(server or draft), draft, patch)


def _respond(ctx: EditorContext, state: EditorSaveState | None, outcome: Outcome, settings: SaveSettings) -> Response:
    fragment = outcome_fragment(
        ctx.outcome_id,
        outcome,
        settings.texts,
        ctx.component.element_id,
        cleared=state.shown_causes if state is not None else (),
        recovery=_recovery(ctx, state, outcome),
    )
    if state is not None:
        state.shown_causes = tuple(c.path for c in outcome.causes if c.path)
    if outcome.kind is OutcomeKind.SAVED_PENDING:
        fragment += _confirm_trigger(ctx)
    return Response(fragment, status=outcome.status_code, mimetype="text/html", headers={"Cache-Control": "no-store"})


def _confirm_trigger(ctx: EditorContext) -> Markup:
    url = url_for("krm.ui_action", component_id=ctx.component.id, name="save")
    template = current_app.jinja_env.get_template("krm/save/confirm.html")
    return Markup(template.render(target_id=ctx.outcome_id, url=url, field=CONFIRM_FIELD))
