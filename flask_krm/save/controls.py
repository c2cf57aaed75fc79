"""Which write controls a person is offered: Save, Add, Remove, Create, Delete.

:func:`may` answers "may this principal ``verb`` this scope?" for offering a control: the host's
authorizer and, when the principal's client acts as the person, Kubernetes itself (a
SelfSubjectAccessReview as that user), kept per session for ``KRM_PERMISSION_CACHE`` seconds
(:class:`flask_krm.permissions.Permissions`). :func:`offer_for` turns the answers into what a
component shows its person (:class:`~flask_krm.ui.offer.Offer`): an editor whose person may not
``patch`` its object offers no Save, Add or Remove; a list offers a row's Delete only to a person who
may ``delete``; a host's create form asks ``offered("create")``. What is offered is never what is
allowed: every write is authorized again when it happens (a forged request is still refused with 403).
"""

from __future__ import annotations

import typing as t

from kubernetes.client import ApiClient

from ..hooks import MissingHook
from ..permissions import Permissions, kubernetes_allows
from ..principal import Principal
from ..runtime import KrmRuntime
from ..scope import Scope
from ..ui.offer import Offer
from ..ui.page import Component, EditorSpec
from ..upstream.clients import UnknownTargetError

if t.TYPE_CHECKING:
    from ..sessions import SessionDrafts

PERMISSIONS_STATE: t.Final = ("krm.permissions",)
VERB_OF_ACTION: t.Final[t.Mapping[str, str]] = {"save": "patch"}
"""The verb an editor action needs to be offered (others are always offered)."""


def permissions(krm: KrmRuntime, drafts: SessionDrafts) -> Permissions:
    """The session's kept answers (made on first use, with ``KRM_PERMISSION_CACHE``)."""
    state = drafts.page_state(PERMISSIONS_STATE)
    held = state.get("answers")
    ttl = float(krm.setting("PERMISSION_CACHE"))
    if not isinstance(held, Permissions) or held.ttl != ttl:
        held = state["answers"] = Permissions(ttl)
    return held


def may(
    krm: KrmRuntime, principal: Principal, drafts: SessionDrafts, scope: Scope, projection: str | None, verb: str
) -> bool:
    """Whether to offer ``principal`` a control that will ``verb`` ``scope`` (seen under
    ``projection``): the authorizer allows it and, acting as the person, so does Kubernetes."""
    view = projection or str(krm.setting("PROJECTION"))

    def ask() -> bool:
        if not krm.decide(principal, scope, view, t.cast(t.Any, verb)).allowed:
            return False
        return kubernetes_allows(client_of(krm, scope.target, principal), scope, verb)

    return permissions(krm, drafts).allowed((principal, verb, scope, view), ask)


def verbs_shown(component: Component) -> frozenset[str]:
    """The verbs whose controls ``component``'s body may show: ``patch`` for an editor (Add,
    Remove), each row action's for a list (``delete``)."""
    if isinstance(component.spec, EditorSpec):
        return frozenset({"patch"})
    return frozenset(action.verb for action in component.spec.row_actions if action.verb is not None)


def offer_for(krm: KrmRuntime, principal: Principal, drafts: SessionDrafts, component: Component) -> Offer:
    """What ``component``'s body shows ``principal``: the verbs of :func:`verbs_shown` they may use."""
    return Offer(
        frozenset(
            verb
            for verb in verbs_shown(component)
            if may(krm, principal, drafts, component.scope, component.projection, verb)
        )
    )


def client_of(krm: KrmRuntime, target: str, principal: Principal) -> ApiClient | None:
    """The client writes for ``principal`` to ``target`` go through, or ``None`` when Kubernetes
    cannot be reached from here (a plugged target without a client loader or target settings)."""
    try:
        return krm.client_for(target, principal)
    except (MissingHook, UnknownTargetError):
        return None
