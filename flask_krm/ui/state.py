"""How the live UI makes session stores, and how long it waits for their feeds.

The stores and feeds themselves live in the application's runtime
(:meth:`flask_krm.runtime.KrmRuntime.store_for`, :meth:`~flask_krm.runtime.KrmRuntime.feed_for`).
"""

from __future__ import annotations

import typing as t
from collections.abc import Mapping

from ..store import BUILTIN_LIST_SCHEMAS, DEFAULT_POLICY, EditPolicy, LiveResourceStore, RecoveryCopies
from ..store.truth import ServerTruth
from .page import Component, EditorSpec

FIRST_PAINT_WAIT: t.Final = 0.3
"""Seconds a page render waits for a new feed to go live, so a watch the hub already holds paints at once."""

RENDER_HOLD: t.Final = 30.0
"""Seconds a rendered page keeps its feeds running while its channel connects (and, with a shared
draft backend, a request on a store keeps that store's feed running)."""


def store_policy(component: Component) -> EditPolicy | None:
    """The edit policy keying ``component``'s session store: ``None`` (the default policy) for
    lists and default editors, else the editor's policy with its roots in a canonical order."""
    spec = component.spec
    if not isinstance(spec, EditorSpec) or set(spec.policy.roots) == set(DEFAULT_POLICY.roots):
        return None
    return EditPolicy(tuple(sorted(set(spec.policy.roots))))


def new_store(
    recovery_lifetime: float | None = None,
    policy: EditPolicy = DEFAULT_POLICY,
    list_schemas: Mapping[tuple[str, str], Mapping[str, t.Any]] | None = None,
    *,
    truth: ServerTruth | None = None,
    published: Mapping[tuple[str, str], Mapping[str, t.Any]] | None = None,
) -> LiveResourceStore:
    """A session store as the UI makes them: ``policy`` (an editor's narrowed one, or the default),
    the schemas the cluster ``published`` for its kinds (over the built-in keyed-list schemas, under
    the host's ``list_schemas``: per kind, the host's override the cluster's) and, given
    a lifetime in seconds, recovery copies of drafts whose objects disappear (the store belongs to
    one session and principal; copies are kept per uid). ``truth``: the server truth it shares
    with the other sessions of its watch (``None``: its own)."""
    recovery = RecoveryCopies(recovery_lifetime) if recovery_lifetime is not None else None
    schemas = {**BUILTIN_LIST_SCHEMAS, **(published or {}), **(list_schemas or {})}
    return LiveResourceStore(policy, schemas, recovery=recovery, truth=truth)


__all__ = ["FIRST_PAINT_WAIT", "RENDER_HOLD", "new_store", "store_policy"]
