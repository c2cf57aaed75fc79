"""Publishing audit records: the reason a write is recorded with, the log line and the signals."""

from __future__ import annotations

from flask_krm.save.outcomes import FieldCause, Outcome, OutcomeKind
from flask_krm.save.publish import audit_reason


def test_the_reason_of_a_refusal_is_recorded_without_values() -> None:
    assert audit_reason(Outcome(OutcomeKind.REFUSED, detail="at most 10 replicas")) == "at most 10 replicas"
    invalid = Outcome(
        OutcomeKind.INVALID,
        causes=(
            FieldCause("data.token", ("data", "token"), "FieldValueInvalid", None),  # withheld: a Secret value
            FieldCause("spec.replicas", ("spec", "replicas"), "FieldValueInvalid", "must be >= 0"),
        ),
    )
    assert audit_reason(invalid) == "data.token: FieldValueInvalid; spec.replicas: must be >= 0"
    assert audit_reason(Outcome(OutcomeKind.SAVED_PENDING)) is None
