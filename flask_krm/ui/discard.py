"""The "Discard changes" editor action: the session's whole draft of the edited object goes.

:meth:`KrmStream.init_app <flask_krm.KrmStream.init_app>` registers it after Save, so every live
editor gets a second button posting to ``/ui/components/<id>/actions/discard`` (with the page's
CSRF and page headers, like every action). The draft is dropped server-side
(a :class:`~flask_krm.store.operations.Revert` of the whole object, performed like every edit:
every changed field and every open conflict go), so a reload, another tab of the session and the next Save all see the
object as Kubernetes holds it; the editor's body is re-rendered by the page's stream, and the memory
the draft held goes back to the operating system. Nothing is written to Kubernetes, so no write
permission is needed.
"""

from __future__ import annotations

import typing as t

from flask import Response
from markupsafe import Markup

from ..memory import release_freed_memory
from ..store.operations import Revert
from ..store.problems import EditRefused
from .actions import EditorContext
from .render import render_template_fragment
from .state import store_policy

ACTION_NAME: t.Final = "discard"
ACTION_LABEL: t.Final = "Discard changes"
DISCARDED: t.Final = "Your changes were discarded. The editor shows the object as Kubernetes holds it."
NOTHING: t.Final = "There are no changes to discard."
GONE: t.Final = "There is no object here, so there is nothing to discard."


def discard(ctx: EditorContext) -> Response:
    """Drop every unsaved change (and conflict) of the object the editor edits."""
    uid = ctx.uid
    if uid is None:
        return ctx.outcome(_message("unavailable", GONE), 404)
    if not ctx.store.is_dirty(uid) and not ctx.store.conflicts(uid):
        return ctx.outcome(_message("nothing-to-discard", NOTHING))
    try:
        ctx.drafts.edit(
            ctx.component.scope,
            ctx.component.projection,
            lambda: ctx.store.perform(uid, Revert()),
            policy=store_policy(ctx.component),
        )
    except EditRefused:  # the object went meanwhile
        return ctx.outcome(_message("unavailable", GONE), 404)
    release_freed_memory()  # the draft may have been large
    return ctx.outcome(_message("discarded", DISCARDED))


def _message(kind: str, text: str) -> Markup:
    """The outcome as Save outcomes are shown (``data-krm-outcome`` names what happened)."""
    return render_template_fragment("krm/action_outcome.html", kind=kind, message=text)
