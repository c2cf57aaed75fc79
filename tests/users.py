"""The test hosts' signed-in people: one Flask-Login user class and the sign-in routes.

``add_sign_in(app)`` gives a host ``GET /login/<name>`` (signs ``name`` in and answers "signed
in") and ``GET /logout``; ``known`` limits who the user loader recognises (everyone by default).
"""

from __future__ import annotations

from collections.abc import Collection

from flask import Flask
from flask_login import LoginManager, UserMixin, login_user, logout_user


class User(UserMixin):  # type: ignore[misc]
    """A Flask-Login user whose id is its name."""

    def __init__(self, name: str) -> None:
        self.id = name


def add_sign_in(app: Flask, known: Collection[str] | None = None) -> LoginManager:
    """Install Flask-Login on ``app`` with ``/login/<name>`` and ``/logout``; returns the manager."""
    login = LoginManager(app)
    login.user_loader(lambda name: User(name) if known is None or name in known else None)

    @app.get("/login/<name>")
    def sign_in(name: str) -> str:
        login_user(User(name))
        return "signed in"

    @app.get("/logout")
    def sign_out() -> str:
        logout_user()
        return "signed out"

    return login
