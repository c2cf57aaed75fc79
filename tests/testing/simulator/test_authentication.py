"""Bearer tokens resolved to the identity a request is made as."""

from __future__ import annotations

import pytest

from flask_krm.testing.simulator.authentication import AUTHENTICATED, MASTERS, Authenticator, Identity, User


@pytest.fixture
def authenticator() -> Authenticator:
    return Authenticator([User("admin", "admin-token", (MASTERS,)), User("viewer", "viewer-token")])


def test_a_known_token_is_its_user_in_system_authenticated(authenticator: Authenticator) -> None:
    assert authenticator.authenticate("Bearer admin-token") == Identity("admin", (MASTERS, AUTHENTICATED), "admin")
    assert authenticator.authenticate("  bearer   viewer-token ") == Identity("viewer", (AUTHENTICATED,), "viewer")


def test_system_authenticated_is_not_added_twice() -> None:
    authenticator = Authenticator([User("robot", "t", (AUTHENTICATED, "team"))])
    identity = authenticator.authenticate("Bearer t")
    assert identity is not None and identity.groups == (AUTHENTICATED, "team")


@pytest.mark.parametrize("header", [None, "", "Bearer", "Bearer unknown", "Basic admin-token", "admin-token"])
def test_a_missing_unknown_or_non_bearer_token_is_nobody(authenticator: Authenticator, header: str | None) -> None:
    assert authenticator.authenticate(header) is None


def test_an_added_user_is_accepted_from_then_on(authenticator: Authenticator) -> None:
    assert authenticator.authenticate("Bearer new-token") is None
    authenticator.add(User("newcomer", "new-token", ("team",)))
    identity = authenticator.authenticate("Bearer new-token")
    assert identity is not None and (identity.name, identity.groups) == ("newcomer", ("team", AUTHENTICATED))
    assert authenticator.users["newcomer"].token == "new-token"
