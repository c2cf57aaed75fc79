"""How the live UI keys and makes session stores (:mod:`flask_krm.ui.state`), without Flask."""

from __future__ import annotations

import typing as t

from flask_krm.scope import parse_scope
from flask_krm.store import BUILTIN_LIST_SCHEMAS, DEFAULT_POLICY, READ_ONLY_POLICY, EditPolicy
from flask_krm.ui.page import Column, EditorSpec, ListSpec, make_component
from flask_krm.ui.state import new_store, store_policy
from tests.store.objects import CM_UID, configmap, deleted, deployment, store_with

SCOPE = parse_scope("target=demo&version=v1&resource=configmaps&namespace=demo")
EDITED = parse_scope("target=demo&version=v1&resource=configmaps&namespace=demo&name=app")


def editor(policy: EditPolicy) -> t.Any:
    return make_component(EditorSpec(EDITED, "krm-full/v1", policy))


def test_lists_and_default_editors_share_the_default_store() -> None:
    listing = make_component(ListSpec(SCOPE, "krm-full/v1", (Column("Name", ("metadata", "name")),)))
    assert store_policy(listing) is None
    assert store_policy(editor(DEFAULT_POLICY)) is None
    reordered = EditPolicy(tuple(reversed(DEFAULT_POLICY.roots)))
    assert store_policy(editor(reordered)) is None


def test_a_narrowed_editor_keys_its_store_by_its_roots_in_one_order() -> None:
    one = store_policy(editor(EditPolicy((("spec",), ("data",)))))
    other = store_policy(editor(EditPolicy((("data",), ("spec",), ("data",)))))
    assert one is not None and one == other
    assert one.roots == (("data",), ("spec",))
    assert store_policy(editor(READ_ONLY_POLICY)) == READ_ONLY_POLICY


def test_a_new_store_has_the_built_in_list_schemas_under_the_published_and_the_hosts() -> None:
    published_schema = {"type": "object", "properties": {"spec": {"type": "object"}}}
    host_schema = {"type": "object"}
    store = new_store(
        list_schemas={("apps/v1", "Deployment"): host_schema},
        published={("apps/v1", "Deployment"): published_schema, ("v1", "ConfigMap"): published_schema},
    )
    store_with(deployment(), configmap(), store=store)
    assert store.kind_schema("deploy-1") == host_schema
    assert store.kind_schema(CM_UID) == published_schema
    assert new_store().policy == DEFAULT_POLICY
    plain = store_with(deployment(), configmap(), store=new_store())
    assert plain.kind_schema("deploy-1") == BUILTIN_LIST_SCHEMAS[("apps/v1", "Deployment")]
    assert plain.kind_schema(CM_UID) is None


def test_a_recovery_lifetime_keeps_the_draft_of_a_deleted_object() -> None:
    from flask_krm.store.operations import SetField

    for lifetime, kept in ((60.0, True), (None, False)):
        store = store_with(configmap(), store=new_store(lifetime, EditPolicy.only(("data",))))
        assert store.policy.roots == (("data",),)
        store.perform(CM_UID, SetField(("data", "level"), "debug"))
        store.apply(deleted(configmap()))
        copy = store.recovery.for_uid(CM_UID) if store.recovery is not None else None
        assert (copy is not None and copy.draft["data"]["level"] == "debug") is kept
