"""Create and delete through a live list: pending entries, one review list, one Save.

:class:`ReviewViews` is an opt-in blueprint (its routes bind to a live list of the caller's own
page, exactly like editor actions do); the extension registers it with the others::

    KrmStream(app, authorizer=..., review=ReviewViews(policies={("", "configmaps"): CreatePolicy(...)}))

(``app.register_blueprint(ReviewViews(...).blueprint())`` after ``init_app`` does the same.)

A list gets a Delete button on every row with the ``row_actions`` argument of ``krm.list`` (shown
only to a person who may delete: :mod:`flask_krm.save.controls`), and the
review list with an element that loads ``GET <prefix>/<component_id>`` inside the list's section
(overriding ``krm/list.html`` by path, where the create form goes too)::

    {{ krm.list(scope, row_actions=[("Delete", "krm_review.delete")]) }}

``POST <prefix>/<component_id>/{create,delete,discard,save}`` and ``GET <prefix>/<component_id>``
answer the review partial for ``#<component_id>-review``: pending deletes, creates and the list's
edited objects, each with its last outcome, under one "Save all". A create is validated against the
host's :class:`~flask_krm.save.staging.CreatePolicy` for the list's resource and kept under a local
draft id; a delete is bound to the uid the person selected. Every request needs the page and CSRF
headers; every write is authorized (``create``, ``delete``, ``patch``) for the exact scope it
writes to (a create's namespace, a delete's or an edit's object), when it is staged (403, nothing
staged) and again when it is saved, and goes through the save hook as the signed-in principal.
"""

from __future__ import annotations

import logging
import typing as t
from collections.abc import Mapping

from flask import Blueprint, Response, request, url_for

from .. import guards
from ..bodies import JsonRefused, NotFinite, TooLong, load_json
from ..hooks import Verb
from ..htmx import PAGE_HEADER
from ..projection import is_secret
from ..runtime import runtime
from ..sessions import StoreKey, store_id
from ..ui.binding import Binding, Refusal, bind
from ..ui.page import ListSpec
from .editor import SAVE_LOCK_TTL, editor_state, settings_of
from .flow import SaveFlow
from .fragments import review_fragment
from .outcomes import Outcome, OutcomeKind
from .perform import EditorTarget, create_scope, delete_scope, save_review
from .staging import CreatePolicy, CreateRejected, PendingCreate, PendingDelete, Staging, StagingError
from .writer import object_scope

STAGING_STATE: t.Final = "krm.staging"
STAGING_RECORD: t.Final = "staging"
logger = logging.getLogger("flask_krm.review")


def not_permitted(detail: str) -> Outcome:
    """The refusal of a create or delete the principal may not make: nothing is staged."""
    return Outcome(OutcomeKind.ACCESS_DENIED, detail=detail)


class ReviewViews:
    """The create, delete and review endpoints of live lists.

    :param policies: ``(group, resource)`` -> what a create of that resource may contain; a list
        whose resource has no policy refuses creates (deletes and edits still work).
    :param url_prefix: where the blueprint is mounted.
    """

    def __init__(
        self,
        *,
        policies: Mapping[tuple[str, str], CreatePolicy] | None = None,
        url_prefix: str = "/krm/review",
    ) -> None:
        self.policies = dict(policies or {})
        self.url_prefix = url_prefix

    def blueprint(self, name: str = "krm_review") -> Blueprint:
        bp = Blueprint(name, __name__, url_prefix=self.url_prefix)
        guards.install(bp, guards.plain_form)
        bp.add_url_rule("/<component_id>", "show", self._show, methods=["GET"])
        bp.add_url_rule("/<component_id>/create", "create", self._create, methods=["POST"])
        bp.add_url_rule("/<component_id>/delete", "delete", self._delete, methods=["POST"])
        bp.add_url_rule("/<component_id>/discard", "discard", self._discard, methods=["POST"])
        bp.add_url_rule("/<component_id>/save", "save", self._save, methods=["POST"])
        return bp

    # -- views -----------------------------------------------------------------------------

    def _show(self, component_id: str) -> Response:
        return self._handle(component_id, lambda binding, staging: (200, {}))

    def _create(self, component_id: str) -> Response:
        def stage(binding: Binding, staging: Staging) -> tuple[int, dict[str, Outcome]]:
            scope = binding.component.scope
            policy = self.policies.get((scope.group, scope.resource))
            if policy is None:
                return 405, {}
            try:
                body = load_json(request.form.get("body") or "", what="the create body")
            except (NotFinite, TooLong) as refused:
                return 422, {"": Outcome(OutcomeKind.REFUSED, detail=str(refused))}
            except JsonRefused as refused:
                return 400, {"": Outcome(OutcomeKind.REFUSED, detail=str(refused), http_status=400)}
            try:
                validated = policy.validate(body, namespace=scope.namespace or None)
            except CreateRejected as rejected:
                return 422, {"": Outcome(OutcomeKind.REFUSED, detail=str(rejected))}
            where = create_scope(scope, PendingCreate("", validated))
            if not runtime().decide(binding.principal, where, binding.component.projection, "create").allowed:
                return 403, {
                    "": not_permitted(f"You may not create {scope.resource} in {where.namespace or 'this cluster'}.")
                }
            staging.stage_create(validated, policy, namespace=scope.namespace or None)
            return 200, {}

        return self._handle(component_id, stage, write=True)

    def _delete(self, component_id: str) -> Response:
        def stage(binding: Binding, staging: Staging) -> tuple[int, dict[str, Outcome]]:
            uid = request.form.get("uid") or ""
            server = binding.store.server(uid) if uid in binding.store.uids() else None
            if server is None:
                return 404, {}
            metadata = server.get("metadata") or {}
            name = str(metadata.get("name") or "")
            pending = PendingDelete(
                uid, name, metadata.get("namespace") or None, request.form.get("resource_version") or None
            )
            where = delete_scope(binding.component.scope, pending)
            if not runtime().decide(binding.principal, where, binding.component.projection, "delete").allowed:
                return 403, {"": not_permitted(f"You may not delete {name}.")}
            staging.stage_delete(uid, name=name, namespace=pending.namespace, resource_version=pending.resource_version)
            return 200, {}

        return self._handle(component_id, stage, write=True)

    def _discard(self, component_id: str) -> Response:
        def discard(binding: Binding, staging: Staging) -> tuple[int, dict[str, Outcome]]:
            try:
                staging.discard(request.form.get("key") or "")
            except StagingError:
                return 404, {}
            return 200, {}

        return self._handle(component_id, discard, write=True)

    def _save(self, component_id: str) -> Response:
        def save_all(binding: Binding, staging: Staging) -> tuple[int, dict[str, Outcome]]:
            component, principal = binding.component, binding.principal
            krm = runtime()
            target = EditorTarget(
                principal,
                component.scope,
                component.projection,
                krm.client_for(component.scope.target, principal),
                krm.hooks.saver,
            )
            denied = self._denied(binding, staging)
            if denied:
                return 403, {key: Outcome(OutcomeKind.ACCESS_DENIED) for key in denied}

            def flow(uid: str) -> SaveFlow:
                return editor_state(binding.drafts, component, uid).flow

            kind = self._kind(binding)
            name = self._field(binding)
            token = binding.drafts.lock(name, SAVE_LOCK_TTL)
            if token is None:  # another request (on any worker) saves this list's changes now
                return 409, {"": Outcome(OutcomeKind.BUSY)}
            try:
                results = save_review(
                    target, binding.store, staging, flow, kind=kind, live=binding.feed.status.writable
                )
            finally:
                binding.drafts.unlock(name, token)
            outcomes = {r.item.key: r.outcome for r in results}
            worst = max((o.status_code for o in outcomes.values()), default=200)
            return worst, outcomes

        return self._handle(component_id, save_all, write=True, summarize=True)

    # -- plumbing --------------------------------------------------------------------------

    def _handle(
        self,
        component_id: str,
        act: t.Callable[[Binding, Staging], tuple[int, dict[str, Outcome]]],
        *,
        write: bool = False,
        summarize: bool = False,
    ) -> Response:
        try:
            binding = bind(runtime(), request.headers.get(PAGE_HEADER), component_id)
        except Refusal as refusal:
            return Response(refusal.message, status=refusal.status, mimetype="text/plain")
        if not isinstance(binding.component.spec, ListSpec):
            return Response("Creating and deleting apply to lists only.", status=400, mimetype="text/plain")
        component = binding.component
        staging = self._staging(binding)
        status, outcomes = act(binding, staging)
        staging.forget_missing(binding.store)
        if write:
            self._keep(binding, staging)
        settings = settings_of(runtime())
        fragment = review_fragment(
            f"{component.id}-review",
            staging.review(binding.store),
            settings.texts,
            save_url=url_for(".save", component_id=component.id),
            discard_url=url_for(".discard", component_id=component.id),
            outcomes=outcomes,
            refusal=outcomes.get(""),
            saved=sum(1 for key, o in outcomes.items() if key and o.wrote) if summarize else None,
        )
        return Response(fragment, status=status, mimetype="text/html", headers={"Cache-Control": "no-store"})

    @staticmethod
    def _field(binding: Binding) -> str:
        """The record field of the list's pending creates and deletes in the draft backend, and the
        name of the lock a review Save holds."""
        component = binding.component
        return f"{STAGING_RECORD}:{store_id(StoreKey(component.scope, component.projection, None))}"

    @staticmethod
    def _kept(binding: Binding) -> bool:
        """Whether the pending creates and deletes are written to the draft backend: never for a
        list of Secrets, whose staged bodies hold values that never leave the process."""
        return not is_secret(binding.component.scope.group, binding.component.scope.resource)

    def _staging(self, binding: Binding) -> Staging:
        component = binding.component
        states = binding.drafts.page_state((STAGING_STATE, component.scope, component.projection))
        staging = states.get("staging")
        if not isinstance(staging, Staging):
            staging = states["staging"] = Staging()
        if self._kept(binding):
            try:
                staging.adopt(binding.drafts.record(self._field(binding)))
            except ValueError:
                logger.warning("ignoring malformed pending creates and deletes in the draft backend")
        return staging

    def _keep(self, binding: Binding, staging: Staging) -> None:
        if self._kept(binding):
            binding.drafts.write_records({self._field(binding): staging.to_json()})

    def _denied(self, binding: Binding, staging: Staging) -> list[str]:
        """The review items the principal may not write, each asked about the exact scope its write
        goes to: a delete's or an edit's object (namespace and name), a create's namespace."""
        component, principal, store = binding.component, binding.principal, binding.store
        creates = {c.draft_id: c for c in staging.creates()}
        deletes = {d.uid: d for d in staging.deletes()}
        krm = runtime()
        denied = []
        for item in staging.review(store):
            verb: Verb
            if item.kind == "create":
                verb, scope = "create", create_scope(component.scope, creates[item.key])
            elif item.kind == "delete":
                verb, scope = "delete", delete_scope(component.scope, deletes[item.key])
            else:
                verb, scope = "patch", object_scope(component.scope, store.server(item.key) or {})
            if not krm.decide(principal, scope, component.projection, verb).allowed:
                denied.append(item.key)
        return denied

    def _kind(self, binding: Binding) -> str:
        scope = binding.component.scope
        policy = self.policies.get((scope.group, scope.resource))
        if policy is not None:
            return policy.kind
        for uid in binding.store.uids():
            return str((binding.store.server(uid) or {}).get("kind") or scope.resource)
        return scope.resource
