"""The page's scripts and stylesheet: vendored htmx, its SSE extension, and flask-krm's own."""

from __future__ import annotations

import typing as t

from flask import current_app, url_for
from markupsafe import Markup

from .. import config

HTMX_VERSION: t.Final = "4.0.1"
"""The vendored htmx release (``scripts/refresh-htmx`` replaces it; a test pins it)."""

STATIC_DIR: t.Final = "krm/"
"""The package's static files live in ``flask_krm/static/krm/`` (``url_for("krm.static", filename="krm/...")``)."""
HTMX_FILE: t.Final = f"htmx-{HTMX_VERSION}.js"
SSE_FILE: t.Final = f"hx-sse-{HTMX_VERSION}.js"
SCRIPT_FILES: t.Final = (
    "krm.js",
    "krm-widgets.js",
    "krm-field.js",
    "krm-outcome.js",
    "krm-page.js",
    "krm-send.js",
    "krm-keys.js",
    "krm-lines.js",
    "krm-yaml.js",
    "krm-filter.js",
)
"""flask-krm's page scripts, in the order they must run (``krm.js`` describes each)."""
STYLESHEET_FILE: t.Final = "krm.css"


def krm_script(nonce: str | None = None) -> Markup:
    """The ``<link>`` and ``<script>`` tags every page with live components needs, once, in ``<head>``.

    Emits ``krm.css``, the vendored htmx and its SSE extension (unless ``KRM_SERVE_HTMX`` is False and
    the host loads htmx 4 itself), then flask-krm's page scripts in their order (:data:`SCRIPT_FILES`).
    ``nonce`` is set on every tag, for a Content-Security-Policy with nonces. Template global ``krm_script``.
    """
    nonce_attr = Markup(' nonce="{}"').format(nonce) if nonce else Markup("")
    files = [HTMX_FILE, SSE_FILE] if config.get(current_app, "SERVE_HTMX") else []
    files += SCRIPT_FILES
    tags = [
        Markup('<link rel="stylesheet" href="{}"{}>').format(
            url_for("krm.static", filename=STATIC_DIR + STYLESHEET_FILE), nonce_attr
        )
    ]
    tags += [
        Markup('<script src="{}"{}></script>').format(url_for("krm.static", filename=STATIC_DIR + name), nonce_attr)
        for name in files
    ]
    return Markup("\n").join(tags)
