"""Typed store errors as edit problems (``flask_krm.store.problems``)."""

from __future__ import annotations

import pytest

from flask_krm.store.errors import (
    InvalidEventError,
    InvalidValueError,
    ItemExistsError,
    KeyExistsError,
    MalformedPathError,
    MissingItemError,
    MissingKeyError,
    PathTypeError,
    ReadOnlyPathError,
    StoreError,
    UnknownResourceError,
)
from flask_krm.store.problems import EditRefused, Problem, ProblemKind, problem_of


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (UnknownResourceError("u"), ProblemKind.UNKNOWN_OBJECT),
        (ReadOnlyPathError(("status",), "read-only path"), ProblemKind.READ_ONLY),
        (KeyExistsError(("data", "a"), "exists"), ProblemKind.KEY_EXISTS),
        (MissingKeyError(("data", "a"), "gone"), ProblemKind.MISSING_KEY),
        (MissingItemError(("spec",), {"name": "x"}), ProblemKind.MISSING_ITEM),
        (ItemExistsError(("spec",), "exists"), ProblemKind.ITEM_EXISTS),
        (PathTypeError(("spec",), "not a list"), ProblemKind.SHAPE_CHANGED),
        (MalformedPathError("x", "not a path"), ProblemKind.MALFORMED_PATH),
        (InvalidValueError("not JSON"), ProblemKind.INVALID_VALUE),
    ],
)
def test_every_typed_store_error_is_a_problem(error: StoreError, kind: ProblemKind) -> None:
    assert problem_of(error).kind is kind


def test_a_problem_keeps_the_key_and_the_reason_as_detail() -> None:
    assert problem_of(KeyExistsError(("data", "a"), "exists"), ("data", "a")) == Problem(
        ProblemKind.KEY_EXISTS, ("data", "a"), "a"
    )
    assert problem_of(InvalidValueError("not JSON")).detail == "not JSON"


def test_an_error_that_is_no_edit_problem_is_not_hidden() -> None:
    with pytest.raises(TypeError):
        problem_of(InvalidEventError("not an event"))


def test_a_refusal_holds_every_problem() -> None:
    refused = EditRefused(
        (Problem(ProblemKind.READ_ONLY, ("status",)), Problem(ProblemKind.NULL_IN_MAP, ("spec", "x")))
    )
    assert [p.kind for p in refused.problems] == [ProblemKind.READ_ONLY, ProblemKind.NULL_IN_MAP]
    assert "read-only" in str(refused) and isinstance(refused, StoreError)
