"""What a person may do, for offering controls: answers kept per key a while; Kubernetes asked as the person."""

from __future__ import annotations

from typing import Any

from flask_krm.permissions import Permissions, acts_as_person, kubernetes_allows
from flask_krm.scope import Scope


def test_answers_are_kept_for_the_ttl_per_key() -> None:
    now = [100.0]
    asked: list[str] = []
    kept = Permissions(30.0, clock=lambda: now[0])

    def ask(answer: bool, name: str) -> Any:
        return lambda: asked.append(name) or answer

    assert kept.allowed(("p", "patch"), ask(True, "patch"))
    assert kept.allowed(("p", "patch"), ask(False, "again"))  # kept: not asked
    assert not kept.allowed(("p", "delete"), ask(False, "delete"))
    now[0] += 30.0
    assert not kept.allowed(("p", "patch"), ask(False, "expired"))
    assert asked == ["patch", "delete", "expired"]
    never = Permissions(0.0, clock=lambda: now[0])
    assert never.allowed("k", ask(True, "a")) and not never.allowed("k", ask(False, "b"))
    assert asked[-2:] == ["a", "b"]


def test_kubernetes_is_asked_only_through_a_client_acting_as_the_person() -> None:
    scope = Scope(target="t", version="v1", resource="configmaps", namespace="n", name="a")
    assert not acts_as_person(None) and not acts_as_person(object())
    assert kubernetes_allows(None, scope, "patch")  # the application's own identity: the authorizer decides
