"""htmx response markup in one place: out-of-band partials and the page header.

htmx 4 applies every ``<hx-partial hx-target="#id">`` element of a response to its target,
whatever the response's status; flask-krm answers field edits, editor actions and the page
channel's messages with them.
"""

from __future__ import annotations

import typing as t
from urllib.parse import quote

from flask import Response
from markupsafe import Markup, escape

PAGE_HEADER: t.Final = "X-KRM-Page"
"""Request header naming the page of a field edit or an action (set once on the component root)."""

EDITS_HEADER: t.Final = "X-KRM-Edits"
"""Response header of an accepted field edit: the object's edit sequence after it
(:meth:`flask_krm.store.LiveResourceStore.edit_sequence`, the same on every worker). ``krm-field.js``
keeps the field as typed until a render carrying at least that count has arrived."""

SESSION_ENDED_HEADER: t.Final = "X-KRM-Session-Ended"
"""Response header of a refusal that ends the page's session (signed out, expired page, a CSRF
token the session no longer holds): the reason, percent-encoded. ``krm-page.js`` shows it as the
connection state and stops writing."""


def partial(target_id: str, content: str | Markup = "", swap: str | None = None) -> str:
    """An ``<hx-partial>`` replacing the content of ``#target_id`` (``swap``: htmx swap style).

    ``content`` is escaped unless it is :class:`~markupsafe.Markup`; ``target_id`` must be an id
    flask-krm made.
    """
    swap_attr = f' hx-swap="{swap}"' if swap else ""
    return f'<hx-partial hx-target="#{target_id}"{swap_attr}>{escape(content)}</hx-partial>'


def html_response(body: str, status: int = 200) -> Response:
    """An HTML fragment response (partials, or a fragment the request's target swaps in)."""
    return Response(body, status=status, mimetype="text/html")


def edits_marker(count: int) -> Markup:
    """The hidden element a live editor render carries: the object's edit sequence when it was made."""
    return Markup('<span class="krm-edits" hidden data-krm-edits="{}"></span>').format(count)


def outcome_markup(kind: str, message: str, detail: str | None = None) -> Markup:
    """An outcome shown in a component's outcome region (the same markup a Save's outcome has)."""
    extra = Markup('\n  <p class="krm-outcome-detail">{}</p>').format(detail) if detail else Markup("")
    return Markup(
        '<div class="krm-save-outcome krm-outcome-{0}" data-krm-outcome="{0}">\n'
        '  <p class="krm-outcome-message">{1}</p>{2}\n</div>'
    ).format(kind, message, extra)


def refusal_response(
    outcome_id: str,
    status: int,
    message: str,
    *,
    kind: str = "refused",
    detail: str | None = None,
    session_ended: bool = False,
) -> Response:
    """A refused UI request, shown in the outcome region ``#outcome_id`` (an id flask-krm made).

    ``session_ended`` adds :data:`SESSION_ENDED_HEADER` with ``message`` (and shows the outcome
    as ``session-ended`` unless ``kind`` says otherwise).
    """
    if session_ended and kind == "refused":
        kind = "session-ended"
    response = html_response(partial(outcome_id, outcome_markup(kind, message, detail)), status)
    response.headers["Cache-Control"] = "no-store"
    if session_ended:
        response.headers[SESSION_ENDED_HEADER] = quote(message)
    return response
