"""Kubernetes writes and guarded reads for saving: only conditional writes are ever sent, answers
are kept to what the save flow needs, and the default save hook reads, validates and writes."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest
import urllib3
from kubernetes.client.exceptions import ApiException

from flask_krm.principal import Principal
from flask_krm.save.flow import ReadResult
from flask_krm.save.outcomes import OutcomeKind
from flask_krm.save.writer import (
    MERGE_PATCH,
    Answer,
    KubeWriter,
    MissingPrecondition,
    SaveRefused,
    WriteRequest,
    WriteResult,
    default_save,
    object_path,
    object_scope,
    read_result,
    written_version,
)
from flask_krm.scope import Scope
from flask_krm.store import SaveIntent

from .test_perform import create_configmap, editor_scope, read


def test_the_writer_never_sends_an_unconditional_write(kube, namespace) -> None:
    created = create_configmap(kube, namespace, "app", {"a": "1"})
    writer = KubeWriter(kube.api_client("admin"))
    path = f"/api/v1/namespaces/{namespace}/configmaps/app"
    scope = editor_scope(namespace, "app")
    uid, version = created["metadata"]["uid"], created["metadata"]["resourceVersion"]
    refused = [
        lambda: writer.request("PUT", path, body=created),
        lambda: writer.request("PATCH", path, body={"data": {"a": "x"}}, content_type="application/merge-patch+json"),
        lambda: writer.request(
            "PATCH",
            path,
            body={"metadata": {"uid": uid}, "data": {"a": "x"}},
            content_type="application/merge-patch+json",
        ),
        lambda: writer.request(
            "PATCH",
            path,
            body={"metadata": {"uid": uid, "resourceVersion": version}},
            content_type="application/json-patch+json",
        ),
        lambda: writer.request("DELETE", path),
        lambda: writer.patch(scope, {"data": {"a": "x"}}, uid="", resource_version=version),
        lambda: writer.patch(scope, {"data": {"a": "x"}}, uid=uid, resource_version=""),
        lambda: writer.delete(scope, uid=""),
    ]
    for attempt in refused:
        with pytest.raises(MissingPrecondition):
            attempt()
    assert read(kube, namespace, "app")["metadata"]["resourceVersion"] == version
    forged = writer.patch(
        scope,
        {"metadata": {"uid": "forged", "resourceVersion": "1"}, "data": {"a": "x"}},
        uid=uid,
        resource_version=version,
    )
    assert forged.ok and read(kube, namespace, "app")["data"] == {"a": "x"}  # the intent's preconditions win


# ---- against scripted answers ------------------------------------------------------------------


class Scripted:
    """An ``ApiClient`` stand-in: records each request and answers from a script (or raises)."""

    def __init__(self, *answers: tuple[int, bytes] | BaseException) -> None:
        self.answers = list(answers)
        self.sent: list[dict[str, Any]] = []

    def param_serialize(self, method: str, path: str, **options: Any) -> tuple[Any, ...]:
        self.sent.append({"method": method, "path": path, **options})
        return method, path, options["header_params"], options["body"], None

    def call_api(self, method: str, url: str, **options: Any) -> Any:
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        status, data = answer
        return type("Response", (), {"status": status, "read": lambda self: data})()


SCOPE = Scope(target="demo", version="v1", resource="configmaps", namespace="app", name="web")
CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web", "uid": "u1", "resourceVersion": "7"}}
SECRET = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "s", "uid": "u2", "resourceVersion": "3"},
    "data": {"password": "c2VjcmV0"},
}


def writer_of(*answers: tuple[int, bytes] | BaseException) -> tuple[KubeWriter, Scripted]:
    api = Scripted(*answers)
    return KubeWriter(api, field_manager="tests"), api  # type: ignore[arg-type]


def test_a_patch_carries_the_intents_preconditions_over_any_in_the_patch() -> None:
    writer, api = writer_of((200, json.dumps(CM).encode()))
    answer = writer.patch(
        SCOPE, {"metadata": {"uid": "forged", "labels": {"a": "b"}}, "data": {"k": "v"}}, uid="u1", resource_version="7"
    )
    assert answer == Answer(200, CM)
    [sent] = api.sent
    assert (sent["method"], sent["path"]) == ("PATCH", "/api/v1/namespaces/app/configmaps/web")
    assert sent["body"] == {"metadata": {"uid": "u1", "resourceVersion": "7", "labels": {"a": "b"}}, "data": {"k": "v"}}
    assert sent["header_params"]["Content-Type"] == MERGE_PATCH
    assert sent["query_params"] == [("fieldManager", "tests")]


def test_a_dry_run_patch_asks_for_dry_run_all() -> None:
    writer, api = writer_of((200, b"{}"))
    writer.patch(SCOPE, {"data": {}}, uid="u1", resource_version="7", dry_run=True)
    assert api.sent[0]["query_params"] == [("fieldManager", "tests"), ("dryRun", "All")]


def test_a_delete_carries_the_uid_and_the_version_when_known() -> None:
    writer, api = writer_of((200, b"{}"), (200, b"{}"))
    writer.delete(SCOPE, uid="u1", resource_version="7")
    writer.delete(SCOPE, uid="u1")
    assert [s["body"]["preconditions"] for s in api.sent] == [{"uid": "u1", "resourceVersion": "7"}, {"uid": "u1"}]
    assert api.sent[0]["body"]["propagationPolicy"] == "Background"


def test_a_create_posts_to_the_collection_and_a_get_reads_the_object() -> None:
    writer, api = writer_of((201, b"{}"), (200, b"{}"))
    writer.create(Scope(target="demo", version="v1", resource="configmaps", namespace="app", label_selector="a=b"), CM)
    writer.get(SCOPE)
    assert [(s["method"], s["path"]) for s in api.sent] == [
        ("POST", "/api/v1/namespaces/app/configmaps"),
        ("GET", "/api/v1/namespaces/app/configmaps/web"),
    ]
    assert "Content-Type" not in api.sent[1]["header_params"]


@pytest.mark.parametrize(
    ("failure", "error"),
    [
        (urllib3.exceptions.ReadTimeoutError(None, "/", "timed out"), "ReadTimeoutError"),
        (ConnectionResetError(), "ConnectionResetError"),
        (ApiException(status=0), "ApiException 0"),
    ],
)
def test_a_transport_failure_is_an_unknown_answer_not_an_exception(failure: BaseException, error: str) -> None:
    writer, _ = writer_of(failure)
    assert writer.get(SCOPE) == Answer(0, error=error)


@pytest.mark.parametrize(("data", "body"), [(b"", None), (b"not json", None), (b"[1]", None), (b"{}", {})])
def test_a_body_is_kept_only_when_it_is_a_json_object(data: bytes, body: Any) -> None:
    writer, _ = writer_of((500, data))
    assert writer.get(SCOPE) == Answer(500, body)


def test_the_status_of_an_answer_is_only_a_failures_status() -> None:
    status = {"kind": "Status", "reason": "Conflict"}
    assert Answer(409, status).status == status
    assert Answer(409, {"kind": "ConfigMap"}).status is None
    assert Answer(200, status).status is None
    assert Answer(0).status is None and not Answer(0).ok


@pytest.mark.parametrize("name", ["", "a/b", ".", ".."])
def test_an_object_path_needs_a_plain_name(name: str) -> None:
    with pytest.raises(ValueError, match="not an object name"):
        object_path(SCOPE, name)


def test_the_object_scope_takes_the_objects_name_and_namespace_and_no_selector() -> None:
    listed = Scope(target="demo", version="v1", resource="configmaps", namespace="app", label_selector="a=b")
    assert object_scope(listed, {"metadata": {"name": "x", "namespace": "other"}}) == Scope(
        target="demo", version="v1", resource="configmaps", namespace="other", name="x"
    )
    assert object_scope(SCOPE, {"metadata": None}) == SCOPE


def test_only_the_written_version_and_uid_are_kept_from_an_accepted_write() -> None:
    assert written_version(Answer(200, CM)) == "7"
    assert written_version(Answer(409, CM)) is None
    assert written_version(Answer(200, {"metadata": {"resourceVersion": 7}})) is None
    result = WriteResult.of(Answer(201, SECRET))
    assert result == WriteResult(201, None, "3", "u2", None)
    assert "c2VjcmV0" not in repr(result)
    refused = WriteResult.of(Answer(403, {"kind": "Status", "reason": "Forbidden"}, None))
    assert refused == WriteResult(403, {"kind": "Status", "reason": "Forbidden"}, None, None, None)


def test_a_guarded_read_is_projected_unless_native() -> None:
    projected = read_result(Answer(200, SECRET), "krm-full/v1")
    assert projected.status == "object" and projected.redacted_paths == ("/data/password",)
    assert projected.obj is not None and "c2VjcmV0" not in json.dumps(projected.obj)
    native = read_result(Answer(200, SECRET), None)
    assert native == ReadResult("object", SECRET, None)


@pytest.mark.parametrize(
    ("answer", "status"),
    [
        (Answer(404), "not-found"),
        (Answer(403), "forbidden"),
        (Answer(401), "unauthorized"),
        (Answer(500), "failed"),
        (Answer(0, error="ReadTimeoutError"), "failed"),
        (Answer(200, {"kind": "ConfigMap"}), "failed"),
    ],
)
def test_a_guarded_read_that_has_no_object_says_why(answer: Answer, status: str) -> None:
    assert read_result(answer, "krm-full/v1") == ReadResult(status)  # type: ignore[arg-type]


def test_a_refusal_naming_a_field_shows_there_too() -> None:
    refused = SaveRefused("at most 10", field="spec.replicas")
    outcome = refused.outcome()
    assert outcome.kind is OutcomeKind.REFUSED and outcome.detail == "spec.replicas: at most 10"
    assert [(c.field, c.path, c.message) for c in outcome.causes] == [
        ("spec.replicas", ("spec", "replicas"), "at most 10")
    ]
    plain = SaveRefused("busy", kind=OutcomeKind.RECOVERING).outcome()
    assert (plain.kind, plain.detail, plain.causes) == (OutcomeKind.RECOVERING, "busy", ())


def request_for(api: Scripted, operation: str = "patch", **fields: Any) -> WriteRequest:
    return WriteRequest(operation, Principal("editor"), SCOPE, "krm-full/v1", api, **fields)  # type: ignore[arg-type]


INTENT = SaveIntent("u1", "7", {"data": {"k": "v"}})


def test_the_default_save_reads_validates_rebases_and_patches() -> None:
    newer = {**CM, "metadata": {**CM["metadata"], "resourceVersion": "9"}}
    api = Scripted((200, json.dumps(newer).encode()), (200, json.dumps(newer).encode()))
    rebased: list[tuple[SaveIntent, Mapping[str, Any] | None]] = []

    def rebase(intent: SaveIntent, current: Mapping[str, Any] | None) -> SaveIntent:
        rebased.append((intent, current))
        return SaveIntent(intent.uid, "9", intent.patch)

    result = default_save(request_for(api, intent=INTENT, rebase=rebase))
    assert result.written_version == "9"
    assert rebased == [(INTENT, newer)], "rebase is handed the object the preflight read returned"
    assert [s["method"] for s in api.sent] == ["GET", "PATCH"]
    assert api.sent[1]["body"]["metadata"] == {"uid": "u1", "resourceVersion": "9"}


@pytest.mark.parametrize("code", [401, 403, 404, 422])
def test_a_read_refused_is_the_answer_the_write_would_get(code: int) -> None:
    api = Scripted((code, b'{"kind": "Status"}'))
    assert default_save(request_for(api, intent=INTENT)).code == code
    assert [s["method"] for s in api.sent] == ["GET"]


@pytest.mark.parametrize("answer", [(503, b"{}"), urllib3.exceptions.ProtocolError("reset")])
def test_a_read_that_failed_refuses_the_save_as_recovering(answer: Any) -> None:
    api = Scripted(answer)
    with pytest.raises(SaveRefused) as refused:
        default_save(request_for(api, intent=INTENT))
    assert refused.value.kind is OutcomeKind.RECOVERING
    assert len(api.sent) == 1


def test_a_patch_the_projection_rejects_is_refused_before_it_is_sent() -> None:
    api = Scripted((200, json.dumps(CM).encode()))
    with pytest.raises(SaveRefused, match="metadata"):
        default_save(request_for(api, intent=SaveIntent("u1", "7", {"metadata": {"managedFields": []}})))
    assert [s["method"] for s in api.sent] == ["GET"]


def test_the_default_save_deletes_and_creates_and_names_what_a_request_lacks() -> None:
    api = Scripted((200, b"{}"), (201, json.dumps(CM).encode()))
    assert default_save(request_for(api, "delete", uid="u1")).code == 200
    assert default_save(request_for(api, "create", body=CM)).uid == "u1"
    with pytest.raises(ValueError, match="needs uid"):
        default_save(request_for(api, "delete"))
    with pytest.raises(ValueError, match="needs intent"):
        default_save(request_for(api))
    with pytest.raises(ValueError, match="unknown write operation 'replace'"):
        default_save(request_for(api, "replace"))
