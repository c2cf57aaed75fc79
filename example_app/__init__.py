"""The flask-krm example application: live, editable views of a Kubernetes namespace.

``create_app(config)`` builds it; ``python -m example_app`` (``make run``) serves it under gevent
against the embedded Kubernetes simulator or a real cluster. The host code a real application
would copy is in :mod:`.access` (authorization and Kubernetes identity), :mod:`.saving` (the save
hook) and :mod:`.audit` (the audit trail); :mod:`.accounts` is the Flask-Login sign-in.

This module imports nothing heavy: ``python -m example_app`` runs it before ``__main__``, which
must monkey-patch the process before Flask, ssl or the Kubernetes client are imported.
"""

from __future__ import annotations

import typing as t
from collections.abc import Mapping

if t.TYPE_CHECKING:
    from flask import Flask


def create_app(config: Mapping[str, t.Any] | None = None) -> Flask:
    """The example application; see :func:`example_app.application.create_app`."""
    from .application import create_app as build

    return build(config)
