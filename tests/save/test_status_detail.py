"""Kubernetes' own words for a refused write, never a withheld value."""

from __future__ import annotations

from flask_krm.save.outcomes import DETAIL_LIMIT, status_detail


def status(reason: str, message: str) -> dict[str, str]:
    return {"kind": "Status", "status": "Failure", "reason": reason, "message": message}


def test_the_message_is_shown() -> None:
    exists = status("AlreadyExists", 'configmaps "app" already exists')
    assert status_detail(exists, 409) == 'configmaps "app" already exists'
    bad = status("BadRequest", "the body is not valid")
    assert status_detail(bad, 400) == "the body is not valid"


def test_without_a_message_the_reason_or_the_code() -> None:
    assert status_detail({"reason": "TooManyRequests"}, 429) == "TooManyRequests"
    assert status_detail(None, 400) == "HTTP 400"
    assert status_detail(status("Conflict", "   "), 409) == "Conflict"


def test_an_object_with_withheld_values_shows_only_value_free_messages() -> None:
    forbidden = status("Forbidden", 'secrets "db" is forbidden: User "viewer" cannot patch resource "secrets"')
    assert status_detail(forbidden, 403, withheld=True) == forbidden["message"]
    quoting = status("BadRequest", 'invalid value "s3cr3t"')
    assert status_detail(quoting, 400, withheld=True) == "BadRequest"
    assert status_detail(status("Invalid", 'data "s3cr3t"'), 422, withheld=True) == "Invalid"


def test_a_long_message_is_cut() -> None:
    shown = status_detail(status("BadRequest", "x" * 2000), 400)
    assert len(shown) == DETAIL_LIMIT and shown.endswith("…")
