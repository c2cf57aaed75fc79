"""Sign-in with Flask-Login: the demo accounts, the sign-in form and sign-out.

flask-krm reads the signed-in user through Flask-Login by default (its principal is
``Principal(name=user.get_id(), user=user)``), so this module is all a host needs for identity.
Replace the demo accounts with your own user store; keep the shape: a user object with a role.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass
from urllib.parse import urlsplit

from flask import Blueprint, Flask, flash, redirect, render_template, request, url_for
from flask_login import LoginManager, UserMixin, current_user, login_user, logout_user
from werkzeug.security import check_password_hash, generate_password_hash
from werkzeug.wrappers import Response

from flask_krm.csrf import validate_csrf

Role: t.TypeAlias = t.Literal["viewer", "editor"]


@dataclass(frozen=True, eq=False)
class Account(UserMixin):  # type: ignore[misc]
    """A person who can sign in. ``editor`` may change objects; ``viewer`` may only read them."""

    id: str
    role: Role
    password_hash: str

    @property
    def can_write(self) -> bool:
        return self.role == "editor"


DEMO_PASSWORDS: t.Final[dict[str, tuple[Role, str]]] = {
    "editor": ("editor", "editor"),
    "viewer": ("viewer", "viewer"),
}
"""user name -> (role, password) of the demo accounts; the simulator's RBAC gives them the same rights."""

ACCOUNTS: t.Final[dict[str, Account]] = {
    name: Account(name, role, generate_password_hash(password, method="pbkdf2:sha256:1000"))
    for name, (role, password) in DEMO_PASSWORDS.items()
}

bp = Blueprint("accounts", __name__)


def init_accounts(app: Flask) -> LoginManager:
    """Register Flask-Login and the sign-in views on ``app``."""
    login = LoginManager(app)
    login.login_view = "accounts.sign_in"
    login.login_message = "Sign in to see the cluster."
    login.user_loader(ACCOUNTS.get)
    app.register_blueprint(bp)
    return login


def _safe_next(target: str | None) -> str:
    """Only same-site paths are followed after sign-in (no open redirect)."""
    if not target:
        return url_for("pages.home")
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not target.startswith("/") or target.startswith("//"):
        return url_for("pages.home")
    return target


@bp.route("/sign-in", methods=["GET", "POST"])
def sign_in() -> str | Response:
    if request.method == "POST":
        validate_csrf()  # host forms use the same per-session token as flask-krm's own requests
        account = ACCOUNTS.get(request.form.get("username", ""))
        if account is not None and check_password_hash(account.password_hash, request.form.get("password", "")):
            login_user(account)
            return redirect(_safe_next(request.args.get("next")))
        flash("Unknown user name or wrong password.", "error")
    return render_template("example/sign_in.html", demo=DEMO_PASSWORDS)


@bp.post("/sign-out")
def sign_out() -> Response:
    validate_csrf()
    if current_user.is_authenticated:
        logout_user()
    return redirect(url_for("accounts.sign_in"))
