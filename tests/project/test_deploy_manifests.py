"""``deploy/`` and the ``Dockerfile``, read without a cluster: the hardening a Deployment needs, the
RBAC file generated from the Deployment's own configuration, the image's command."""

from __future__ import annotations

import yaml

from tests.project.deployment import (
    APP_NAMESPACE,
    BASE,
    RBAC_ARGUMENTS,
    REDIS_OVERLAY,
    app_container,
    container_environment,
    find,
    flask_krm,
    host_environment,
    image_entrypoint,
    kustomize,
    objects,
)


def test_the_committed_rbac_is_what_flask_krm_rbac_prints_for_the_deployments_configuration() -> None:
    env = container_environment(objects(kustomize(BASE)))
    printed = flask_krm(host_environment(env), *RBAC_ARGUMENTS)
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout == (BASE / "rbac.yaml").read_text()
    granted = list(yaml.safe_load_all(printed.stdout))
    assert [(o["kind"], o["metadata"]["namespace"]) for o in granted if o] == [
        ("Role", "demo"),
        ("RoleBinding", "demo"),
    ]


def test_the_deployment_runs_hardened_with_probes_resources_and_a_pre_stop_pause() -> None:
    rendered = objects(kustomize(BASE))
    pod = find(rendered, "Deployment")["spec"]["template"]["spec"]
    container = app_container(rendered)
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["serviceAccountName"] == "flask-krm-example"
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz/live"
    assert container["readinessProbe"]["httpGet"]["path"] == "/healthz/ready"
    assert container["lifecycle"]["preStop"] == {"sleep": {"seconds": 5}}
    assert pod["terminationGracePeriodSeconds"] > 5 + 10  # preStop + gunicorn's graceful_timeout
    assert set(container["resources"]) == {"requests", "limits"}
    mounts = {mount["mountPath"]: mount["name"] for mount in container["volumeMounts"]}
    assert mounts == {"/app/instance": "instance", "/tmp": "tmp"}
    assert {volume["name"] for volume in pod["volumes"] if "emptyDir" in volume} == {"instance", "tmp"}
    kinds = sorted(o["kind"] for o in rendered)
    assert kinds == [
        "Deployment",
        "NetworkPolicy",
        "PodDisruptionBudget",
        "Role",
        "RoleBinding",
        "Service",
        "ServiceAccount",
    ]
    assert {o["metadata"]["namespace"] for o in rendered if o["kind"] not in ("Role", "RoleBinding")} == {APP_NAMESPACE}


def test_the_redis_component_shares_drafts_across_replicas_and_workers() -> None:
    rendered = objects(kustomize(REDIS_OVERLAY))
    env = container_environment(rendered)
    assert env["FLASK_KRM_DRAFTS_URL"].startswith("redis://flask-krm-redis.")
    assert env["GUNICORN_CMD_ARGS"] == "--workers 3"
    assert find(rendered, "Deployment")["spec"]["replicas"] == 2
    assert find(rendered, "PodDisruptionBudget")["spec"] == {
        "minAvailable": 1,
        "selector": {"matchLabels": {"app.kubernetes.io/name": "flask-krm-example"}},
    }
    redis = find(rendered, "Deployment", "flask-krm-redis")["spec"]["template"]["spec"]
    assert redis["securityContext"]["runAsNonRoot"] is True
    assert redis["containers"][0]["securityContext"]["readOnlyRootFilesystem"] is True
    egress_ports = [p["port"] for rule in find(rendered, "NetworkPolicy")["spec"]["egress"] for p in rule["ports"]]
    assert 6379 in egress_ports


def test_the_image_runs_gunicorn_in_exec_form_as_the_deployments_non_root_user() -> None:
    entrypoint = image_entrypoint()
    assert entrypoint[0] == "gunicorn"
    assert entrypoint[entrypoint.index("--config") + 1] == "example_app/gunicorn_conf.py"
    assert entrypoint[-1] == "example_app:create_app()"
    dockerfile = (BASE.parent.parent / "Dockerfile").read_text()
    pod = find(objects(kustomize(BASE)), "Deployment")["spec"]["template"]["spec"]
    assert f"USER {pod['securityContext']['runAsUser']}:{pod['securityContext']['runAsGroup']}" in dockerfile
    port = app_container(objects(kustomize(BASE)))["ports"][0]["containerPort"]
    assert f"0.0.0.0:{port}" in entrypoint
