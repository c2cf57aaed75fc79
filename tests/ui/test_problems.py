"""The one table from edit problems to statuses and words (``flask_krm.ui.problems``)."""

from __future__ import annotations

import enum

import pytest

from flask_krm.store.problems import ProblemKind
from flask_krm.ui.problems import ANSWERS, UNMAPPED, Kind, RequestProblem, say

EVERY_KIND: list[Kind] = [*ProblemKind, *RequestProblem]


def test_every_problem_kind_has_an_answer() -> None:
    """A kind added without its answer fails here, instead of reaching a person as a bare refusal."""
    unmapped = [kind for kind in EVERY_KIND if kind not in ANSWERS]
    assert unmapped == []
    assert set(ANSWERS) == set(EVERY_KIND)  # and the table names nothing else


def test_a_kind_the_table_lacks_is_caught_by_the_completeness_check() -> None:
    class Stray(enum.Enum):
        NEW = "new"

    kinds = [*EVERY_KIND, Stray.NEW]
    assert [kind for kind in kinds if kind not in ANSWERS] == [Stray.NEW]
    said = say(Stray.NEW)  # type: ignore[arg-type]
    assert (said.status, said.message) == (UNMAPPED.status, UNMAPPED.words)  # never a 500


@pytest.mark.parametrize("kind", EVERY_KIND, ids=lambda kind: kind.value)
def test_every_answer_is_a_4xx_with_a_sentence(kind: Kind) -> None:
    said = say(kind, "the detail", ("spec", "replicas"))
    assert 400 <= said.status < 500
    assert said.message and "{" not in said.message
    listed = say(kind, "the detail", ("spec", "replicas"), listed=True)
    assert listed.status == said.status and listed.message


@pytest.mark.parametrize(
    ("kind", "detail", "path", "status", "message"),
    [
        (ProblemKind.READ_ONLY, "", ("status",), 403, "This field is read-only."),
        (ProblemKind.KEY_EXISTS, "team", ("metadata", "labels"), 422, "A key named team already exists."),
        (ProblemKind.MISSING_ITEM, "", (), 409, "That item is no longer in the list."),
        (ProblemKind.UNKNOWN_OBJECT, "", (), 404, "The object is no longer here."),
        (ProblemKind.INVALID_VALUE, "a label is text", (), 422, "This value cannot be stored: a label is text."),
        (ProblemKind.ALREADY_FIRST, "", (), 409, "It is already the first."),
        (RequestProblem.NO_FIELD, "path", (), 400, "The request has no path."),
        (RequestProblem.UNREADABLE_VALUE, "Enter a number.", (), 422, "Enter a number."),
        (
            RequestProblem.UNREADABLE_START,
            "bad indent",
            (),
            400,
            "The text you started from cannot be read: bad indent.",
        ),
    ],
)
def test_problems_are_worded_with_their_detail(
    kind: Kind, detail: str, path: tuple[str, ...], status: int, message: str
) -> None:
    said = say(kind, detail, path)
    assert (said.status, said.message) == (status, message)


def test_listed_words_name_the_place() -> None:
    assert say(ProblemKind.READ_ONLY, path=("spec", "paused"), listed=True).message == (
        "/spec/paused is read-only in this editor."
    )
    assert say(ProblemKind.READ_ONLY, path=(), listed=True).message == "The object is read-only in this editor."
    assert say(ProblemKind.INVALID_VALUE, "too big", listed=True).message == "Too big."


def test_problems_about_the_request_are_not_shown_at_a_field() -> None:
    about_request = {kind for kind in EVERY_KIND if not ANSWERS[kind].at_field}
    assert ProblemKind.UNKNOWN_OBJECT in about_request and ProblemKind.MALFORMED_PATH in about_request
    assert ProblemKind.READ_ONLY not in about_request and RequestProblem.UNREADABLE_VALUE not in about_request


def test_a_detail_with_braces_is_not_a_format_string() -> None:
    said = say(ProblemKind.INVALID_VALUE, "{pointer} {0} {detail}")
    assert said.message == "This value cannot be stored: {pointer} {0} {detail}."
