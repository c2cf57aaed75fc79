"""The signed-in principal: a name it cannot lack, and its default source, Flask-Login."""

from __future__ import annotations

from pathlib import Path

import pytest
from flask import Flask

from flask_krm import KrmStream, Principal, Unauthenticated
from tests.apps import allow


def test_default_principal_comes_from_flask_login(app: Flask, krm: KrmStream) -> None:
    client = app.test_client()
    with client:
        client.get("/logout")
        assert krm.runtime().current_principal() is None
    with client:
        client.get("/login/editor")
        principal = krm.runtime().current_principal()
        assert principal == Principal("editor")
        assert principal is not None and principal.user.get_id() == "editor"


def test_without_flask_login_nobody_is_signed_in(tmp_path: Path) -> None:
    app = Flask("plain", instance_path=str(tmp_path))
    krm = KrmStream(app, authorizer=allow)
    with app.test_request_context():
        assert krm.runtime().current_principal() is None
        with pytest.raises(Unauthenticated):
            krm.runtime().require_principal()


def test_principal_needs_a_name() -> None:
    with pytest.raises(ValueError, match="non-empty string name"):
        Principal("")
