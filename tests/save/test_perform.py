"""Saving an edit (``save_edit``) against the simulator over HTTP, races included: every outcome
reached through real requests."""

from __future__ import annotations

import typing as t
from collections.abc import Callable
from typing import Any, NamedTuple

import pytest

from flask_krm.principal import Principal
from flask_krm.save.flow import Phase, SaveFlow
from flask_krm.save.outcomes import OutcomeKind
from flask_krm.save.perform import EditorTarget, confirm_now, create, create_scope, delete, delete_scope, save_edit
from flask_krm.save.publish import write_attempted
from flask_krm.save.staging import PendingCreate, PendingDelete
from flask_krm.save.writer import KubeWriter, SaveRefused, WriteRequest, WriteResult, default_save
from flask_krm.scope import Scope
from flask_krm.store import LiveResourceStore
from flask_krm.testing.simulator import KubeSimulator
from flask_krm.testing.simulator import WriteRequest as SimulatorWrite

from .conftest import LiveFeed, admin_delete, editor_target, new_store, unconditional_patch, wait_for


def create_configmap(kube: KubeSimulator, namespace: str, name: str, data: dict[str, str]) -> dict[str, Any]:
    answer = KubeWriter(kube.api_client("admin")).request(
        "POST",
        f"/api/v1/namespaces/{namespace}/configmaps",
        body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data},
    )
    assert answer.ok and answer.body is not None
    return dict(answer.body)


def read(kube: KubeSimulator, namespace: str, name: str) -> dict[str, Any] | None:
    answer = KubeWriter(kube.api_client("admin")).request("GET", f"/api/v1/namespaces/{namespace}/configmaps/{name}")
    return dict(answer.body) if answer.ok and answer.body else None


def admin_patch(kube: KubeSimulator, namespace: str, name: str, patch: dict[str, Any]) -> None:
    unconditional_patch(kube, f"/api/v1/namespaces/{namespace}/configmaps/{name}", patch)


def editor_scope(namespace: str, name: str) -> Scope:
    return Scope(target="dev", version="v1", resource="configmaps", namespace=namespace, name=name)


class Editing(NamedTuple):
    uid: str
    scope: Scope
    store: LiveResourceStore
    feed: LiveFeed


def edited(
    kube: KubeSimulator,
    namespace: str,
    feeds: Callable[..., LiveFeed],
    data: dict[str, str],
    edit: tuple[tuple[str, ...], Any] = (("data", "a"), "mine"),
) -> Editing:
    """Create ConfigMap "app", follow it as the editor in a new store, and set one draft value."""
    uid = create_configmap(kube, namespace, "app", data)["metadata"]["uid"]
    scope = editor_scope(namespace, "app")
    store = new_store()
    feed = feeds(store, scope, kube.api_client("editor"))
    path, value = edit
    store.set_value(uid, path, value)
    return Editing(uid, scope, store, feed)


def test_a_write_between_capture_and_patch_is_a_409_then_refreshed_then_saved(kube, namespace, feeds) -> None:
    uid, scope, store, feed = edited(kube, namespace, feeds, {"a": "1", "b": "1"})

    def colleague_first(request: WriteRequest) -> WriteResult:
        admin_patch(kube, namespace, "app", {"data": {"b": "colleague"}})
        return default_save(request)

    flow = SaveFlow(uid)
    outcome = save_edit(editor_target(kube, scope, hook=colleague_first), store, flow, live=feed.live)
    assert outcome.kind is OutcomeKind.VERSION_STALE and outcome.status_code == 409
    assert store.draft(uid)["data"] == {"a": "mine", "b": "colleague"}
    assert read(kube, namespace, "app")["data"] == {"a": "1", "b": "colleague"}

    outcome = save_edit(editor_target(kube, scope), store, flow, live=feed.live)
    assert outcome.kind in (OutcomeKind.SAVED_PENDING, OutcomeKind.SAVED)  # SAVED when the echo won the race
    assert read(kube, namespace, "app")["data"] == {"a": "mine", "b": "colleague"}
    wait_for(lambda: flow.observe(store) or flow.phase is Phase.IDLE, what="the echo")
    assert flow.last is not None and flow.last.kind is OutcomeKind.SAVED
    assert store.dirty(uid) == []


def test_a_lagging_watch_never_bases_a_save_on_a_read_that_changed_the_edited_field(kube, namespace, feeds) -> None:
    """The preflight read is newer than the watch and shows a colleague's value where the person
    edited: it is not their base, so the held version goes out, is refused once, and the three-way
    merge shows the conflict. The colleague's value is never written over."""
    uid, scope, store, feed = edited(kube, namespace, feeds, {"a": "1", "b": "1"})
    held = store.server(uid)
    assert held is not None
    lagging = read(kube, namespace, "app")  # all the watch will have delivered
    patches: list[str] = []

    def count(write: SimulatorWrite) -> None:
        if write.namespace == namespace and write.verb == "patch" and write.new["data"].get("a") == "mine":
            patches.append(write.new["metadata"].get("resourceVersion", ""))

    remove = kube.faults.mutate_writes(count)
    kube.faults.hold_watch_events()
    try:
        admin_patch(kube, namespace, "app", {"data": {"a": "colleague"}})
        flow = SaveFlow(uid)
        outcome = save_edit(editor_target(kube, scope), store, flow, live=feed.live, newest=lambda _: lagging)
    finally:
        kube.faults.release_watch_events()
        remove()
    assert outcome.kind is OutcomeKind.DRAFT_CONFLICT and outcome.conflicts == (("data", "a"),)
    assert patches == [held["metadata"]["resourceVersion"]], "one PATCH, on the held version, refused"
    assert read(kube, namespace, "app")["data"] == {"a": "colleague", "b": "1"}
    assert store.draft(uid)["data"]["a"] == "mine" and flow.phase is Phase.IDLE


def test_deleted_and_recreated_under_the_same_name_is_unavailable_and_the_replacement_untouched(
    kube, namespace, feeds
) -> None:
    uid, scope, store, feed = edited(kube, namespace, feeds, {"a": "1"})
    admin = KubeWriter(kube.api_client("admin"))
    replacement: dict[str, Any] = {}

    def replaced_first(request: WriteRequest) -> WriteResult:
        assert admin.delete(Scope(version="v1", resource="configmaps", namespace=namespace, name="app"), uid=uid).ok
        replacement.update(create_configmap(kube, namespace, "app", {"a": "replacement"}))
        return default_save(request)

    flow = SaveFlow(uid)
    outcome = save_edit(editor_target(kube, scope, hook=replaced_first), store, flow, live=feed.live)
    assert outcome.kind is OutcomeKind.UNAVAILABLE
    assert outcome.replacement_uid == replacement["metadata"]["uid"] != uid
    current = read(kube, namespace, "app")
    assert current["data"] == {"a": "replacement"}
    assert current["metadata"]["resourceVersion"] == replacement["metadata"]["resourceVersion"]
    # the old draft is never applied to the replacement, and a later Save writes nothing
    wait_for(lambda: uid not in store.uids(), what="the delete event")
    again = save_edit(editor_target(kube, scope), store, flow, live=feed.live)
    assert again.kind is OutcomeKind.UNAVAILABLE
    assert read(kube, namespace, "app")["metadata"]["resourceVersion"] == replacement["metadata"]["resourceVersion"]
    assert store.recovery is not None and store.recovery.for_uid(uid).patch == {"data": {"a": "mine"}}


def test_a_webhook_restoring_the_field_gives_no_echo_and_a_guarded_read_decides(kube, namespace, feeds) -> None:
    uid, scope, store, feed = edited(kube, namespace, feeds, {"a": "1"})

    def restore(write: SimulatorWrite) -> None:
        if write.verb == "patch" and write.namespace == namespace and write.old is not None:
            write.new["data"] = dict(write.old["data"])

    remove = kube.faults.mutate_writes(restore)
    try:
        flow = SaveFlow(uid)
        target = editor_target(kube, scope)
        assert save_edit(target, store, flow, live=feed.live).kind is OutcomeKind.SAVED_PENDING
        assert flow.observe(store) is None and flow.phase is Phase.CONFIRMING
        outcome = confirm_now(target, store, flow)
    finally:
        remove()
    assert outcome is not None and outcome.kind is OutcomeKind.NOT_APPLIED
    assert store.draft(uid)["data"]["a"] == "mine" and store.dirty(uid) == [("data", "a")]
    assert read(kube, namespace, "app")["data"] == {"a": "1"}


def test_a_lost_response_is_unknown_and_the_next_save_reads_instead_of_writing_again(kube, namespace, feeds) -> None:
    uid, scope, store, feed = edited(kube, namespace, feeds, {"a": "1"})
    writes: list[str] = []

    def count(write: SimulatorWrite) -> None:
        if write.namespace == namespace and write.verb == "patch":
            writes.append(write.name)

    remove = kube.faults.mutate_writes(count)
    try:
        flow = SaveFlow(uid)
        kube.faults.lose_next_write_response()
        outcome = save_edit(editor_target(kube, scope), store, flow, live=feed.live)
        assert outcome.kind is OutcomeKind.UNKNOWN and outcome.status_code == 502
        assert flow.phase is Phase.NEEDS_READ
        second = save_edit(editor_target(kube, scope), store, flow, live=feed.live)
    finally:
        remove()
    assert second.kind is OutcomeKind.SAVED
    assert writes == ["app"]
    assert read(kube, namespace, "app")["data"] == {"a": "mine"}
    assert store.dirty(uid) == []


def test_422_causes_are_shown_at_their_fields_never_as_a_conflict(kube, namespace, feeds) -> None:
    uid, scope, store, feed = edited(
        kube, namespace, feeds, {"a": "1"}, edit=(("metadata", "labels"), {"tier": "not a valid value!"})
    )
    flow = SaveFlow(uid)
    outcome = save_edit(editor_target(kube, scope), store, flow, live=feed.live)
    assert outcome.kind is OutcomeKind.INVALID and outcome.status_code == 422
    assert [cause.path for cause in outcome.causes] == [("metadata", "labels")]
    assert outcome.causes[0].message and "not a valid value!" in outcome.causes[0].message
    assert outcome.conflicts == () and flow.phase is Phase.IDLE
    assert store.draft(uid)["metadata"]["labels"] == {"tier": "not a valid value!"}


def test_revoked_access_is_explained_not_retried_and_not_a_conflict(kube, namespace, feeds) -> None:
    uid, scope, store, feed = edited(kube, namespace, feeds, {"a": "1"})
    assert admin_delete(
        kube, f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/rolebindings/krm-demo-edit-editor"
    )
    flow = SaveFlow(uid)
    outcome = save_edit(editor_target(kube, scope), store, flow, live=feed.live)
    assert outcome.kind is OutcomeKind.ACCESS_DENIED and outcome.status_code == 403
    assert outcome.conflicts == () and flow.phase is Phase.IDLE
    assert store.draft(uid)["data"]["a"] == "mine"
    assert read(kube, namespace, "app")["data"] == {"a": "1"}


def test_a_signed_out_principal_is_told_so(kube, namespace, feeds) -> None:
    uid, scope, store, feed = edited(kube, namespace, feeds, {"a": "1"})
    target = editor_target(kube, scope)
    target.api.configuration.refresh_api_key_hook = None
    target.api.configuration.api_key = {"BearerToken": "Bearer expired-token"}
    outcome = save_edit(target, store, SaveFlow(uid), live=feed.live)
    assert outcome.kind is OutcomeKind.SIGNED_OUT and outcome.status_code == 401


def test_no_write_while_the_stream_is_not_live(kube, namespace, feeds) -> None:
    uid, scope, store, _feed = edited(kube, namespace, feeds, {"a": "1"})
    outcome = save_edit(editor_target(kube, scope), store, SaveFlow(uid), live=False)
    assert outcome.kind is OutcomeKind.RECONNECTING
    assert read(kube, namespace, "app")["data"] == {"a": "1"}


def test_a_host_hook_can_refuse_and_an_unexpected_hook_error_is_an_unknown_outcome(kube, namespace, feeds) -> None:
    uid, scope, store, feed = edited(kube, namespace, feeds, {"a": "1"})

    def deny(request: WriteRequest) -> WriteResult:
        raise SaveRefused("changes to this object need a second approver", kind=OutcomeKind.ACCESS_DENIED)

    def broken(request: WriteRequest) -> WriteResult:
        raise RuntimeError("audit backend down")

    flow = SaveFlow(uid)
    refused = save_edit(editor_target(kube, scope, hook=deny), store, flow, live=feed.live)
    assert (
        refused.kind is OutcomeKind.ACCESS_DENIED and refused.detail == "changes to this object need a second approver"
    )
    assert flow.phase is Phase.IDLE
    unknown = save_edit(editor_target(kube, scope, hook=broken), store, flow, live=feed.live)
    assert unknown.kind is OutcomeKind.UNKNOWN and flow.phase is Phase.NEEDS_READ
    assert read(kube, namespace, "app")["data"] == {"a": "1"}


# ---- creates and deletes through a host hook, without a cluster ---------------------------------


LIST_SCOPE = Scope(target="dev", version="v1", resource="secrets", namespace="team", label_selector="app=web")
SECRET_BODY = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "creds", "namespace": "team"},
    "data": {"password": "c2VjcmV0"},
}


def hooked(answer: WriteResult | Exception) -> tuple[EditorTarget, list[WriteRequest]]:
    sent: list[WriteRequest] = []

    def hook(request: WriteRequest) -> WriteResult:
        sent.append(request)
        if isinstance(answer, Exception):
            raise answer
        return answer

    return EditorTarget(Principal("editor"), LIST_SCOPE, "krm-full/v1", None, hook), sent  # type: ignore[arg-type]


def test_a_create_goes_to_the_bodys_namespace_of_the_collection_and_a_delete_to_its_object() -> None:
    pending = PendingCreate("draft-1", {"metadata": {"name": "x", "namespace": "other"}})
    assert create_scope(LIST_SCOPE, pending) == Scope(target="dev", version="v1", resource="secrets", namespace="other")
    assert create_scope(LIST_SCOPE, PendingCreate("draft-2", {"metadata": None})).namespace == "team"
    assert delete_scope(LIST_SCOPE, PendingDelete("u1", "web")) == Scope(
        target="dev", version="v1", resource="secrets", namespace="team", name="web"
    )
    assert delete_scope(LIST_SCOPE, PendingDelete("u1", "web", namespace="else")).namespace == "else"


@pytest.mark.parametrize(
    ("result", "kind", "http_status"),
    [
        (WriteResult(201, written_version="5", uid="u9"), OutcomeKind.CREATED, None),
        (WriteResult(403, {"kind": "Status", "reason": "Forbidden", "message": "no"}), OutcomeKind.ACCESS_DENIED, None),
        (WriteResult(401), OutcomeKind.SIGNED_OUT, None),
        (WriteResult(404), OutcomeKind.UNAVAILABLE, 404),
        (WriteResult(409, {"kind": "Status", "reason": "AlreadyExists"}), OutcomeKind.REJECTED, 409),
        (WriteResult(0, error="ReadTimeoutError"), OutcomeKind.UNKNOWN, None),
    ],
)
def test_a_creates_answer_keeps_its_kubernetes_category(
    result: WriteResult, kind: OutcomeKind, http_status: int | None
) -> None:
    target, sent = hooked(result)
    outcome = create(target, PendingCreate("draft-1", SECRET_BODY), "Secret")
    assert outcome.kind is kind
    if http_status is not None:
        assert outcome.http_status == http_status
    assert [(r.operation, r.body, r.scope.label_selector) for r in sent] == [("create", SECRET_BODY, "")]


def test_an_invalid_create_names_its_causes_and_never_a_secret_value() -> None:
    status = {
        "kind": "Status",
        "reason": "Invalid",
        "details": {"causes": [{"field": "data[password]", "message": "c2VjcmV0 is not valid", "reason": "x"}]},
    }
    target, _ = hooked(WriteResult(422, status))
    attempts: list[t.Any] = []
    with write_attempted.connected_to(lambda sender, record: attempts.append(record)):
        outcome = create(target, PendingCreate("draft-1", SECRET_BODY), "Secret")
    assert outcome.kind is OutcomeKind.INVALID
    assert [c.field for c in outcome.causes] == ["data[password]"]
    assert "c2VjcmV0" not in repr(outcome) and "c2VjcmV0" not in repr(attempts)
    assert attempts[0].redacted_paths == ("/data/password",)


def test_a_delete_is_bound_to_the_uid_and_audited_with_the_call() -> None:
    target, sent = hooked(WriteResult(200))
    attempts: list[t.Any] = []
    with write_attempted.connected_to(lambda sender, record: attempts.append(record)):
        outcome = delete(target, PendingDelete("u1", "web", resource_version="4"), "Secret")
    assert outcome.kind is OutcomeKind.DELETED
    assert [(r.operation, r.uid, r.resource_version, r.scope.name) for r in sent] == [("delete", "u1", "4", "web")]
    [made] = attempts
    assert (made.operation, made.identity.uid, made.outcome) == ("delete", "u1", "deleted")
    assert made.call is not None and made.call.code == 200


def test_a_hooks_refusal_sends_nothing_and_its_failure_is_an_unknown_outcome(caplog: pytest.LogCaptureFixture) -> None:
    target, _ = hooked(SaveRefused("not on Fridays"))
    attempts: list[t.Any] = []
    with write_attempted.connected_to(lambda sender, record: attempts.append(record)):
        refused = delete(target, PendingDelete("u1", "web"), "Secret")
    assert (refused.kind, refused.detail) == (OutcomeKind.REFUSED, "not on Fridays")
    assert attempts[0].call is None and attempts[0].reason == "not on Fridays"
    broken, _ = hooked(RuntimeError("bug in the host"))
    assert delete(broken, PendingDelete("u1", "web"), "Secret").kind is OutcomeKind.UNKNOWN
    assert "the save hook failed for delete secrets" in caplog.text
