"""Field sets from the kinds' schemas: keyed and set list items, atomic parts, ``fieldsV1`` both ways, path strings,
and the release the schemas come from."""

from __future__ import annotations

import json
from importlib import resources

from flask_krm.testing.simulator import field_sets
from flask_krm.testing.simulator.catalog import CONFIGMAPS, DEPLOYMENTS, FLUNDERS
from tests.realkube import pinned_kubernetes_version


def test_a_deployment_s_containers_and_ports_are_keyed_and_its_selector_atomic() -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "n", "labels": {"app": "web"}, "finalizers": ["a/b"]},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "i",
                            "ports": [{"containerPort": 80, "protocol": "TCP"}],
                            "args": ["x"],
                        }
                    ]
                }
            },
        },
        "status": {"replicas": 1},
    }
    fields = field_sets.to_fields_v1(field_sets.object_set(DEPLOYMENTS, deployment))
    assert fields == {
        "f:metadata": {"f:finalizers": {'v:"a/b"': {}}, "f:labels": {"f:app": {}}},
        "f:spec": {
            "f:selector": {},
            "f:template": {
                "f:spec": {
                    "f:containers": {
                        'k:{"name":"app"}': {
                            ".": {},
                            "f:args": {},
                            "f:image": {},
                            "f:name": {},
                            "f:ports": {
                                'k:{"containerPort":80,"protocol":"TCP"}': {
                                    ".": {},
                                    "f:containerPort": {},
                                    "f:protocol": {},
                                }
                            },
                        }
                    }
                }
            },
        },
    }
    assert field_sets.from_fields_v1(fields) == field_sets.object_set(DEPLOYMENTS, deployment)


def test_paths_print_as_structured_merge_diff_prints_them() -> None:
    path = ("f:spec", "f:template", "f:spec", "f:containers", 'k:{"name":"app"}', "f:ports")
    assert field_sets.path_string(path + ('k:{"containerPort":80,"protocol":"TCP"}',)) == (
        '.spec.template.spec.containers[name="app"].ports[containerPort=80,protocol="TCP"]'
    )
    assert field_sets.path_string(("f:metadata", "f:finalizers", 'v:"a/b"')) == '.metadata.finalizers[="a/b"]'


def test_custom_resources_follow_their_crd_and_keep_unknown_objects_granular() -> None:
    flunder = {"metadata": {"name": "f"}, "spec": {"ports": [{"name": "a"}], "extra": {"deep": 1}}, "status": {"x": 1}}
    assert field_sets.to_fields_v1(field_sets.object_set(FLUNDERS, flunder)) == {
        "f:spec": {"f:extra": {"f:deep": {}}, "f:ports": {'k:{"name":"a"}': {".": {}, "f:name": {}}}}
    }
    assert field_sets.object_set(CONFIGMAPS, {"metadata": {"name": "c"}, "data": {}}) == {("f:data",)}


def test_the_field_tables_come_from_the_pinned_release() -> None:
    table = json.loads(resources.files("flask_krm.testing.simulator").joinpath("field_schemas.json").read_text())
    assert table["source"] == f"k8s.io/kubernetes {pinned_kubernetes_version()} api/openapi-spec/v3"
    assert set(table["kinds"]) == {
        "Namespace",
        "ConfigMap",
        "Secret",
        "Deployment",
        "Scale",
        "Role",
        "RoleBinding",
        "ClusterRole",
        "ClusterRoleBinding",
    }
