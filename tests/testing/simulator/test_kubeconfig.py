"""The simulator's kubeconfig: the official client loads each user's context unmodified, and the
file is its owner's only, even when it existed before."""

from __future__ import annotations

import base64
from pathlib import Path

import kubernetes.config

from flask_krm.testing.simulator.authentication import User
from flask_krm.testing.simulator.kubeconfig import write_kubeconfig

USERS = (User("admin", "admin-token"), User("viewer", "viewer-token", ("readers",)))
CA = b"-----BEGIN CERTIFICATE-----\nnot checked here\n-----END CERTIFICATE-----\n"


def test_the_official_client_loads_every_user_s_context(tmp_path: Path) -> None:
    path = tmp_path / "kube" / "config"
    write_kubeconfig(path, "https://127.0.0.1:6443", CA, USERS, current="viewer")
    contexts, current = kubernetes.config.list_kube_config_contexts(str(path))
    assert [context["name"] for context in contexts] == ["admin", "viewer"] and current["name"] == "viewer"
    for user in USERS:
        configuration = kubernetes.client.Configuration()
        kubernetes.config.load_kube_config(str(path), context=user.name, client_configuration=configuration)
        assert configuration.host == "https://127.0.0.1:6443"
        assert configuration.api_key == {"BearerToken": f"Bearer {user.token}"}
        assert configuration.ssl_ca_cert and Path(configuration.ssl_ca_cert).read_bytes() == CA


def test_the_file_is_its_owner_s_only_even_when_it_existed(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text("old")
    path.chmod(0o644)
    write_kubeconfig(path, "https://127.0.0.1:6443", CA, USERS, current="admin")
    assert path.stat().st_mode & 0o777 == 0o600
    assert base64.b64encode(CA).decode() in path.read_text()
