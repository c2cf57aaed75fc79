"""One access decision: the scope policy first, then the authorizer, and what a refusal becomes
for each kind of caller."""

from __future__ import annotations

import logging
import typing as t

import pytest

from flask_krm.access import (
    CHECK_FAILED_MESSAGE,
    NOT_PERMITTED_MESSAGE,
    UI_CHECK_FAILED,
    UI_NOT_PERMITTED,
    UI_NOT_SERVED,
    Decision,
    Verdict,
    decide,
)
from flask_krm.errors import ScopeDenied
from flask_krm.events import StreamError
from flask_krm.ops import Failure
from flask_krm.scope import AllowedResource, Scope, ScopePolicy
from flask_krm.upstream.authz import AccessDenied

SCOPE = Scope(target="dev", version="v1", resource="configmaps", namespace="app")
POLICY = ScopePolicy(
    targets=frozenset({"dev"}), resources=(AllowedResource(group="", resource="configmaps"),), namespaces={"app"}
)
FULL = "krm-full/v1"


class Asked:
    """An authorizer answering ``answer`` (or raising it) and recording each question."""

    def __init__(self, answer: object) -> None:
        self.answer = answer
        self.questions: list[tuple[t.Any, ...]] = []

    def __call__(self, principal: t.Any, scope: Scope, projection: str, verb: str) -> object:
        self.questions.append((principal, scope, projection, verb))
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer


def test_only_true_allows_and_the_authorizer_is_asked_exactly_the_question() -> None:
    ask = Asked(True)
    decision = decide(ask, "alice", SCOPE, FULL, "watch", policy=POLICY)
    assert decision == Decision(Verdict.ALLOWED, "alice", SCOPE, FULL, "watch")
    assert decision.allowed and decision.message == ""
    assert ask.questions == [("alice", SCOPE, FULL, "watch")]


@pytest.mark.parametrize("answer", [False, None, 1, "yes", object()])
def test_anything_but_true_is_a_refusal(answer: object) -> None:
    decision = decide(Asked(answer), "alice", SCOPE, FULL, "watch")
    assert not decision.allowed
    assert (decision.verdict, decision.code, decision.message) == (Verdict.DENIED, "FORBIDDEN", NOT_PERMITTED_MESSAGE)


def test_a_scope_the_policy_does_not_serve_is_refused_before_the_authorizer_is_asked() -> None:
    ask = Asked(True)
    elsewhere = Scope(target="dev", version="v1", resource="configmaps", namespace="kube-system")
    decision = decide(ask, "alice", elsewhere, FULL, "watch", policy=POLICY)
    assert (decision.verdict, decision.code) == (Verdict.NOT_SERVED, "SCOPE_INVALID")
    assert "kube-system" in decision.message
    assert ask.questions == []


def test_an_access_denied_keeps_its_code_and_message() -> None:
    decision = decide(Asked(AccessDenied("sign in again", "UNAUTHENTICATED")), "alice", SCOPE, FULL, "list")
    assert (decision.verdict, decision.code, decision.message) == (Verdict.DENIED, "UNAUTHENTICATED", "sign in again")


def test_a_failing_authorizer_is_logged_and_never_an_allow(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="flask_krm"):
        decision = decide(Asked(RuntimeError("lookup timed out")), "alice", SCOPE, FULL, "watch")
    assert (decision.verdict, decision.code, decision.message) == (Verdict.FAILED, "INTERNAL", CHECK_FAILED_MESSAGE)
    assert [r.getMessage() for r in caplog.records] == ["the authorizer failed; access is refused"]
    assert caplog.records[0].exc_info is not None


def test_an_allow_covers_exactly_its_principal_scope_projection_and_verb() -> None:
    allowed = decide(Asked(True), "alice", SCOPE, FULL, "watch")
    assert allowed.covers("alice", SCOPE, FULL)
    assert not allowed.covers("bob", SCOPE, FULL)
    assert not allowed.covers("alice", Scope(target="dev", version="v1", resource="secrets"), FULL)
    assert not allowed.covers("alice", SCOPE, "krm-spec/v1")
    assert not allowed.covers("alice", SCOPE, FULL, "patch")
    assert not decide(Asked(False), "alice", SCOPE, FULL, "watch").covers("alice", SCOPE, FULL)


def test_a_refusal_becomes_a_terminal_stream_error_and_a_terminal_failure() -> None:
    refused = decide(Asked(AccessDenied("not yours")), "alice", SCOPE, FULL, "watch")
    assert refused.stream_error() == StreamError("FORBIDDEN", "not yours", terminal=True)
    assert refused.failure() == Failure("FORBIDDEN", "not yours", terminal=True)


def test_the_http_error_carries_the_authorizers_own_words_else_names_verb_and_view() -> None:
    own = decide(Asked(AccessDenied("ask the team lead")), "alice", SCOPE, FULL, "patch").http_error()
    assert isinstance(own, ScopeDenied) and own.description == "ask the team lead"
    for answer in (False, RuntimeError("down")):
        plain = decide(Asked(answer), "alice", SCOPE, FULL, "patch").http_error()
        assert plain.description == f"You may not patch this resource with the {FULL} view."
    not_served = decide(
        Asked(True), "alice", Scope(target="prod", version="v1", resource="configmaps"), FULL, "get", policy=POLICY
    )
    assert not_served.http_error().description == f"You may not get this resource with the {FULL} view."


def test_the_live_ui_says_why_in_words_a_person_reads() -> None:
    elsewhere = Scope(target="prod", version="v1", resource="configmaps", namespace="app")
    assert decide(Asked(True), "a", elsewhere, FULL, "watch", policy=POLICY).ui_message() == UI_NOT_SERVED
    assert decide(Asked(RuntimeError()), "a", SCOPE, FULL, "watch").ui_message() == UI_CHECK_FAILED
    assert decide(Asked(False), "a", SCOPE, FULL, "watch").ui_message() == UI_NOT_PERMITTED
    assert decide(Asked(AccessDenied("x")), "a", SCOPE, FULL, "watch").ui_message() == UI_NOT_PERMITTED
