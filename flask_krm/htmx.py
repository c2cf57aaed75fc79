"""htmx response markup in one place: out-of-band partials and the page header.

htmx 4 applies every ``<hx-partial hx-target="#id">`` element of a response to its target,
whatever the response's status; flask-krm answers field edits, editor actions and the page
channel's messages with them.
"""

from __future__ import annotations

import typing as t

from flask import Response
from markupsafe import Markup, escape

PAGE_HEADER: t.Final = "X-KRM-Page"
"""Request header naming the page of a field edit or an action (set once on the component root)."""


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
