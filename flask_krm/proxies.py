"""The objects behind Flask's context-local proxies (``current_app``, Flask-Login's ``current_user``).

Signals, weak references and identity checks need the object itself, not the proxy; this is the
one place that asks a proxy for it.
"""

from __future__ import annotations

import typing as t

from flask import Flask, current_app, has_app_context


def unwrap(proxy: t.Any) -> t.Any:
    """The object a werkzeug ``LocalProxy`` stands for in the current context."""
    return proxy._get_current_object()


def current_app_object() -> Flask:
    """The current application itself. Raises ``RuntimeError`` outside an application context."""
    if not has_app_context():
        raise RuntimeError("Working outside of application context: pass the app, or push an app context.")
    return t.cast(Flask, unwrap(current_app))


def current_app_or_none() -> Flask | None:
    """The current application itself, or ``None`` outside an application context."""
    return current_app_object() if has_app_context() else None
