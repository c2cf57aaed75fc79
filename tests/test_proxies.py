"""The objects behind Flask's context-local proxies: the application itself, and a precise error
outside an application context."""

from __future__ import annotations

import pytest
from flask import Flask, current_app

from flask_krm.proxies import current_app_object, current_app_or_none, unwrap


def test_the_current_application_is_the_object_not_the_proxy() -> None:
    app = Flask("proxied")
    with app.app_context():
        assert current_app_object() is app and current_app_or_none() is app
        assert current_app_object() is not current_app  # the proxy only stands for it
        assert unwrap(current_app) is app


def test_outside_an_application_context_there_is_none_or_a_precise_error() -> None:
    assert current_app_or_none() is None
    with pytest.raises(RuntimeError, match="outside of application context: pass the app"):
        current_app_object()
