"""The signed-in principal and its default source (Flask-Login).

A principal is opaque to flask-krm apart from its :attr:`Principal.name`, which keys the session's
drafts and the shared upstream watches. It is never logged and never sent to a browser.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass, field

from flask import current_app, has_request_context

from .proxies import unwrap


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a request acts for.

    :param name: a stable, unique identity (Flask-Login's ``user.get_id()`` by default). Two
        principals with the same name share drafts and may share upstream watches.
    :param groups: group names, for hosts that map principals to Kubernetes subjects.
    :param user: the host's own user object, handed back to the host's hooks untouched. It takes
        no part in equality.
    """

    name: str
    groups: tuple[str, ...] = ()
    user: t.Any = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError("a Principal needs a non-empty string name")


def flask_login_principal() -> Principal | None:
    """The principal of Flask-Login's ``current_user`` when it is authenticated, else ``None``.

    Returns ``None`` when the application has no Flask-Login ``LoginManager`` or there is no
    request. Requires an application context.
    """
    if not has_request_context() or not hasattr(current_app, "login_manager"):
        return None
    from flask_login import current_user

    user = unwrap(current_user)
    if user is None or not user.is_authenticated:
        return None
    return Principal(name=str(user.get_id()), user=user)
