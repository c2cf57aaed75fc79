"""A draft's check by the API server: verdicts, and which result applies to the draft now."""

from __future__ import annotations

from typing import Any

from flask_krm.save.checks import CheckResult, CheckVerdict, DraftCheck, classify_check, draft_key


def _invalid(*causes: dict[str, str], message: str = 'Deployment.apps "web" is invalid') -> dict[str, Any]:
    return {
        "kind": "Status",
        "status": "Failure",
        "reason": "Invalid",
        "code": 422,
        "message": message,
        "details": {"causes": list(causes)},
    }


REPLICAS = {"reason": "FieldValueInvalid", "message": "must be greater than or equal to 0", "field": "spec.replicas"}


def test_a_422_refuses_with_its_causes_at_their_fields() -> None:
    result = classify_check("k", "7", 422, _invalid(REPLICAS))
    assert result.verdict is CheckVerdict.REFUSED and result.refused
    assert [(c.field, c.path, c.message) for c in result.causes] == [
        ("spec.replicas", ("spec", "replicas"), "must be greater than or equal to 0")
    ]
    assert result.key == "k" and result.resource_version == "7"


def test_an_admission_webhooks_refusal_without_causes_keeps_its_message() -> None:
    status = {"kind": "Status", "reason": "BadRequest", "code": 400, "message": 'admission webhook "x" denied: no'}
    result = classify_check("k", "7", 400, status)
    assert result.refused and result.causes == () and result.detail == 'admission webhook "x" denied: no'


def test_a_refusal_under_a_redacted_path_withholds_messages() -> None:
    cause = {"reason": "FieldValueInvalid", "message": "quotes the value s3cret", "field": "data[token]"}
    result = classify_check("k", "7", 422, _invalid(cause, message="quotes s3cret"), ("/data/token",))
    assert result.refused and result.causes[0].message is None
    assert "s3cret" not in (result.detail or "")


def test_409_is_stale_and_other_failures_leave_the_save_to_decide() -> None:
    assert classify_check("k", "7", 200, None).verdict is CheckVerdict.PASSED
    assert classify_check("k", "7", 409, {"reason": "Conflict"}).verdict is CheckVerdict.STALE
    for code in (0, 401, 403, 404, 429, 500, 503):
        assert classify_check("k", "7", code, None).verdict is CheckVerdict.UNCHECKED, code
    replaced = _invalid({"reason": "FieldValueInvalid", "message": "uid differs", "field": "metadata.uid"})
    assert classify_check("k", "7", 422, replaced).verdict is CheckVerdict.UNCHECKED


def test_a_draft_key_names_uid_and_patch_whatever_the_key_order() -> None:
    assert draft_key("u", {"a": 1, "b": {"c": 2}}) == draft_key("u", {"b": {"c": 2}, "a": 1})
    assert draft_key("u", {"a": 1}) != draft_key("u", {"a": 2}) != draft_key("v", {"a": 2})


def test_a_check_is_due_for_a_new_draft_and_not_twice_for_the_same() -> None:
    check = DraftCheck("u")
    assert not check.due(None, None)
    assert check.due("one", "7")
    check.running = "one"
    assert not check.due("one", "7")  # in flight already
    assert check.record(CheckResult("one", "7", CheckVerdict.REFUSED, detail="no"), "one")
    assert check.running is None and not check.due("one", "7") and not check.due("one", "8")
    assert check.due("two", "7")


def test_a_stale_check_is_due_again_only_on_a_newer_base() -> None:
    check = DraftCheck("u")
    assert not check.record(CheckResult("one", "7", CheckVerdict.STALE), "one")  # nothing shown changed
    assert not check.due("one", "7") and check.due("one", "8")


def test_a_result_for_an_older_draft_is_discarded() -> None:
    check = DraftCheck("u")
    check.running = "one"
    assert not check.record(CheckResult("one", "7", CheckVerdict.REFUSED), "two")
    assert check.result is None and check.generation == 0 and check.running is None
    assert check.applies("two") is None


def test_what_is_shown_changes_the_generation_once_per_change() -> None:
    check = DraftCheck("u")
    refused = CheckResult("one", "7", CheckVerdict.REFUSED, detail="no")
    assert check.record(refused, "one") and check.generation == 1
    assert not check.record(CheckResult("one", "8", CheckVerdict.REFUSED, detail="no"), "one")
    assert check.applies("one") is not None and check.applies("two") is None
    assert check.record(CheckResult("two", "8", CheckVerdict.PASSED), "two") and check.generation == 2
    assert check.withdraw() and check.generation == 3 and check.result is None
    assert not check.withdraw()
