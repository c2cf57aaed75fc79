"""Outcome classification, cause placement and wording."""

from __future__ import annotations

import pytest

from flask_krm.save.outcomes import (
    DEFAULT_TEXTS,
    FieldCause,
    Outcome,
    OutcomeKind,
    OutcomeTexts,
    WriteVerdict,
    classify_write,
    field_causes,
    field_path,
    status_reason,
)


def status(code: int, reason: str, message: str = "", causes: list[dict[str, str]] | None = None) -> dict:
    details: dict = {"name": "app", "kind": "configmaps"}
    if causes is not None:
        details["causes"] = causes
    return {
        "kind": "Status",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
        "details": details,
    }


@pytest.mark.parametrize(
    ("code", "body", "verdict"),
    [
        (200, None, WriteVerdict.ACCEPTED),
        (201, None, WriteVerdict.ACCEPTED),
        (204, None, WriteVerdict.ACCEPTED),
        (
            409,
            status(409, "Conflict", "the object has been modified; please apply your changes"),
            WriteVerdict.CONFLICT,
        ),
        (
            409,
            status(
                409,
                "Conflict",
                "Precondition failed: the UID in the precondition (a) does not match the UID in record (b)",
            ),
            WriteVerdict.REPLACED,
        ),
        (
            422,
            status(
                422,
                "Invalid",
                "x",
                [{"field": "metadata.uid", "reason": "FieldValueInvalid", "message": "field is immutable"}],
            ),
            WriteVerdict.REPLACED,
        ),
        (
            422,
            status(
                422,
                "Invalid",
                "x",
                [{"field": "metadata.uid", "reason": "r"}, {"field": "spec.replicas", "reason": "r"}],
            ),
            WriteVerdict.INVALID,
        ),
        (422, status(422, "Invalid", "x", []), WriteVerdict.INVALID),
        (404, status(404, "NotFound"), WriteVerdict.NOT_FOUND),
        (403, status(403, "Forbidden"), WriteVerdict.FORBIDDEN),
        (401, status(401, "Unauthorized"), WriteVerdict.UNAUTHORIZED),
        (400, status(400, "BadRequest"), WriteVerdict.REJECTED),
        (415, None, WriteVerdict.REJECTED),
        (429, None, WriteVerdict.REJECTED),
        (408, None, WriteVerdict.UNKNOWN),
        (500, status(500, "InternalError"), WriteVerdict.UNKNOWN),
        (503, None, WriteVerdict.UNKNOWN),
        (504, None, WriteVerdict.UNKNOWN),
    ],
)
def test_classify_write_keeps_kubernetes_categories(code: int, body: dict | None, verdict: WriteVerdict) -> None:
    assert classify_write(code, body) is verdict


@pytest.mark.parametrize(
    ("field", "path"),
    [
        ("spec.replicas", ("spec", "replicas")),
        ("spec.template.spec.containers[0].image", ("spec", "template", "spec", "containers", 0, "image")),
        ("data[app.conf]", ("data", "app.conf")),
        ("metadata.labels", ("metadata", "labels")),
        ("", None),
        ("spec..x", None),
    ],
)
def test_field_path_parses_kubernetes_cause_fields(field: str, path: tuple | None) -> None:
    assert field_path(field) == path


def test_causes_at_redacted_paths_lose_their_message() -> None:
    body = status(
        422,
        "Invalid",
        causes=[
            {"field": "data[token]", "reason": "FieldValueInvalid", "message": 'Invalid value: "s3cr3t"'},
            {"field": "metadata.labels", "reason": "FieldValueInvalid", "message": 'Invalid value: "bad value"'},
        ],
    )
    causes = field_causes(body, ("/data/token",))
    assert causes == (
        FieldCause("data[token]", ("data", "token"), "FieldValueInvalid", None),
        FieldCause("metadata.labels", ("metadata", "labels"), "FieldValueInvalid", 'Invalid value: "bad value"'),
    )


def test_unparseable_cause_field_loses_its_message_when_anything_is_redacted() -> None:
    body = status(422, "Invalid", causes=[{"field": "<nil>??[", "reason": "r", "message": "leak"}])
    assert field_causes(body, ("/data/token",))[0].message is None
    assert field_causes(body)[0].message == "leak"


def test_texts_default_to_the_saving_guide_and_accept_overrides() -> None:
    texts = OutcomeTexts({"busy": "Hold on."})
    assert texts.message(Outcome(OutcomeKind.VERSION_STALE)) == (
        "Configuration refreshed. Your edits are intact; review and save again."
    )
    assert texts.message(OutcomeKind.RECONNECTING) == "Reconnecting. Your unsaved changes are still here."
    assert texts.message(OutcomeKind.UNAVAILABLE) == (
        "This configuration was removed. A replacement must be opened separately."
    )
    assert texts.message(OutcomeKind.BUSY) == "Hold on."
    assert set(DEFAULT_TEXTS) == set(OutcomeKind)


def test_texts_refuse_unknown_outcome_names() -> None:
    with pytest.raises(ValueError, match="savedd"):
        OutcomeTexts({"savedd": "typo"})


def test_status_codes_keep_categories() -> None:
    assert Outcome(OutcomeKind.VERSION_STALE).status_code == 409
    assert Outcome(OutcomeKind.INVALID).status_code == 422
    assert Outcome(OutcomeKind.ACCESS_DENIED).status_code == 403
    assert Outcome(OutcomeKind.SIGNED_OUT).status_code == 401
    assert Outcome(OutcomeKind.UNKNOWN).status_code == 502
    assert Outcome(OutcomeKind.UNAVAILABLE, http_status=404).status_code == 404
    assert Outcome(OutcomeKind.SAVED_PENDING).wrote and not Outcome(OutcomeKind.UNKNOWN).wrote


def test_status_reason_is_value_free() -> None:
    assert status_reason(status(429, "TooManyRequests"), 429) == "TooManyRequests"
    assert status_reason({"reason": 'Invalid value: "s3cr3t"'}, 400) == "HTTP 400"
    assert status_reason(None, 503) == "HTTP 503"
