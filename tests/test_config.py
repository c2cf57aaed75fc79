"""``KRM_*`` configuration: defaults, validation, unknown keys and the use-time accessor."""

from __future__ import annotations

import typing as t
from pathlib import Path

import pytest
from flask import Flask

from flask_krm import KrmStream, ScopePolicy, config
from tests.apps import allow, make_app


def test_defaults_are_written_with_the_prefix(tmp_path: Path) -> None:
    app = Flask("bare", instance_path=str(tmp_path))
    KrmStream(app, authorizer=allow)
    for key, default in config.DEFAULTS.items():
        assert app.config["KRM_" + key] == default
    assert config.get(app, "SCOPE_POLICY") == ScopePolicy()
    assert config.get(app, "TARGETS") == {}


def test_host_values_are_kept(tmp_path: Path) -> None:
    app = make_app(tmp_path, KRM_QUEUE_DEPTH=8, KRM_PROJECTION="krm-spec/v1")
    KrmStream(app, authorizer=allow)
    assert app.config["KRM_QUEUE_DEPTH"] == 8
    assert config.get(app, "PROJECTION") == "krm-spec/v1"


def test_unknown_keys_are_refused_by_name(tmp_path: Path) -> None:
    app = make_app(tmp_path, KRM_HEARTBEAT=5, KRM_SCOPES=())
    with pytest.raises(ValueError, match=r"unknown flask-krm configuration keys: KRM_HEARTBEAT, KRM_SCOPES"):
        KrmStream(app, authorizer=allow)
    assert "krm" not in app.extensions


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("KRM_URL_PREFIX", "krm", "KRM_URL_PREFIX must be a path starting with '/'"),
        ("KRM_URL_PREFIX", "/krm/", "not ending with '/'"),
        ("KRM_HEARTBEAT_INTERVAL", 0, "KRM_HEARTBEAT_INTERVAL must be a positive number"),
        ("KRM_HEARTBEAT_INTERVAL", "20", "KRM_HEARTBEAT_INTERVAL must be a positive number"),
        ("KRM_QUEUE_DEPTH", 0, "KRM_QUEUE_DEPTH must be a positive integer"),
        ("KRM_QUEUE_DEPTH", 2.5, "KRM_QUEUE_DEPTH must be a positive integer"),
        ("KRM_QUEUE_DEPTH", True, "KRM_QUEUE_DEPTH must be a positive integer"),
        ("KRM_WATCH_LINGER", -1, "KRM_WATCH_LINGER must be zero or a positive number"),
        ("KRM_PROJECTION", "krm-status/v1", "KRM_PROJECTION must be one of krm-raw/v1, krm-full/v1, krm-spec/v1"),
        ("KRM_SHUTDOWN_TIMEOUT", None, "KRM_SHUTDOWN_TIMEOUT must be a positive number"),
        ("KRM_DRAFT_EXPIRY", -5, "KRM_DRAFT_EXPIRY must be a positive number"),
        ("KRM_MAX_STORES_PER_SESSION", 0, "KRM_MAX_STORES_PER_SESSION must be a positive integer"),
        ("KRM_SERVE_HTMX", "yes", "KRM_SERVE_HTMX must be True or False"),
        ("KRM_MAX_REQUEST_BYTES", 0, "KRM_MAX_REQUEST_BYTES must be a positive integer"),
        ("KRM_MAX_REQUEST_BYTES", "3MiB", "KRM_MAX_REQUEST_BYTES must be a positive integer"),
        ("KRM_MAX_SESSIONS", 0.5, "KRM_MAX_SESSIONS must be a positive integer"),
        ("KRM_SCOPE_POLICY", {"targets": ["demo"]}, "KRM_SCOPE_POLICY must be a flask_krm.scope.ScopePolicy"),
        ("KRM_TARGETS", ["demo"], "KRM_TARGETS must be a mapping"),
        ("KRM_TARGETS", {"demo": "/etc/kubeconfig"}, r"KRM_TARGETS\['demo'\] must be a mapping"),
        ("KRM_TARGETS", {"demo": {}}, r"KRM_TARGETS\['demo'\] needs exactly one of 'kubeconfig' or 'in_cluster'"),
        (
            "KRM_TARGETS",
            {"demo": {"kubeconfig": "/k", "in_cluster": True}},
            "needs exactly one of 'kubeconfig' or 'in_cluster'",
        ),
        ("KRM_TARGETS", {"demo": {"in_cluster": True, "context": "c"}}, "'context' applies only with 'kubeconfig'"),
        ("KRM_TARGETS", {"demo": {"kubeconfig": "/k", "server": "https://x"}}, "unknown keys server"),
        ("KRM_TARGETS", {"demo": {"kubeconfig": ""}}, r"\['kubeconfig'\] must be a non-empty path"),
        ("KRM_TARGETS", {"demo": {"in_cluster": "yes"}}, r"\['in_cluster'\] must be a bool"),
        (
            "KRM_TARGETS",
            {"demo": {"kubeconfig": "/k", "service_account_dir": "/sa"}},
            "'service_account_dir' applies only with 'in_cluster': True",
        ),
        ("KRM_TARGETS", {"demo": {"in_cluster": True, "service_account_dir": ""}}, "must be a non-empty path"),
        ("KRM_TARGETS", {"Prod_1": {"in_cluster": True}}, r"KRM_TARGETS\['Prod_1'\]: .*a scope could never name it"),
    ],
)
def test_invalid_values_are_refused_at_init(tmp_path: Path, key: str, value: t.Any, message: str) -> None:
    app = make_app(tmp_path, **{key: value})
    with pytest.raises(ValueError, match=message):
        KrmStream(app, authorizer=allow)


def test_target_specs_are_parsed(tmp_path: Path) -> None:
    app = make_app(
        tmp_path,
        KRM_TARGETS={
            "demo": {"kubeconfig": "/etc/kube/config", "context": "kind"},
            "prod": {"in_cluster": True},
            "staging": {"in_cluster": True, "service_account_dir": "/run/sa"},
        },
    )
    KrmStream(app, authorizer=allow)
    assert config.get(app, "TARGETS") == {
        "demo": config.TargetSpec(kubeconfig="/etc/kube/config", context="kind"),
        "prod": config.TargetSpec(in_cluster=True),
        "staging": config.TargetSpec(in_cluster=True, service_account_dir="/run/sa"),
    }


def test_behavioural_keys_are_read_at_use_time(app: Flask) -> None:
    app.config["KRM_QUEUE_DEPTH"] = 4
    assert config.get(app, "QUEUE_DEPTH") == 4
    app.config["KRM_QUEUE_DEPTH"] = -4
    with pytest.raises(ValueError, match="KRM_QUEUE_DEPTH"):
        config.get(app, "QUEUE_DEPTH")


def test_structural_keys_are_read_once(app: Flask, krm: KrmStream) -> None:
    app.config["KRM_SCOPE_POLICY"] = ScopePolicy()
    assert krm.runtime(app).policy.targets == frozenset({"demo"})


def test_accessor_refuses_keys_it_does_not_define(app: Flask, krm: KrmStream) -> None:
    with pytest.raises(KeyError, match="no configuration key KRM_HEARTBEAT"):
        config.get(app, "HEARTBEAT")
    assert krm.runtime(app).setting("QUEUE_DEPTH") == 256
