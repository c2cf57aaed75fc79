"""The Flask application of the top-level modules' tests (fixtures ``app``, ``krm`` and
``authorizer`` in ``conftest.py``).

gevent: these tests run in an ordinary, unpatched pytest process. Everything the extension does
for a plugged source (pump greenlets, bounded queues, heartbeat timeouts) uses gevent primitives,
which cooperate with the test's main greenlet whenever it blocks on one of them: reading a
streaming response blocks in ``gevent.queue.Queue.get`` and so lets the pumps run. Every blocking
read is wrapped in ``gevent.Timeout`` so a bug fails fast instead of hanging. Kubernetes targets
need real sockets to yield, so the extension refuses to stream them in an unpatched process; the
tests assert that refusal rather than patching the shared pytest process (which would change the
behaviour of every other suite run in it).

Signing in uses Flask-Login, the default principal source, with the demo users of the simulator
(``admin``, ``editor``, ``viewer``): ``client.get("/login/editor")``.
"""

from __future__ import annotations

import json
import typing as t
from pathlib import Path

from flask import Flask

from flask_krm import AllowedResource, Principal, Scope, ScopePolicy
from tests.redis_server import free_port
from tests.users import add_sign_in

USERS: t.Final = ("admin", "editor", "viewer")

POLICY: t.Final = ScopePolicy(
    targets=frozenset({"demo"}),
    resources=(
        AllowedResource(group="", resource="configmaps"),
        AllowedResource(group="", resource="secrets"),
        AllowedResource(group="apps", resource="deployments"),
    ),
    namespaces=frozenset({"app"}),
)


class AuthorizerLog:
    """An authorizer that records its calls and allows what ``allow`` says."""

    def __init__(self) -> None:
        self.calls: list[tuple[Principal, Scope, str, str]] = []
        self.denied_users: set[str] = set()

    def __call__(self, principal: Principal, scope: Scope, projection: str, verb: str) -> bool:
        self.calls.append((principal, scope, projection, verb))
        return principal.name not in self.denied_users


def allow(principal: Principal, scope: Scope, projection: str, verb: str) -> bool:
    """An authorizer that allows everything: for tests about something else."""
    return True


def make_app(tmp_path: Path, **config: t.Any) -> Flask:
    """A Flask app with Flask-Login sign-in routes and flask-krm configuration (not registered)."""
    app = Flask(__name__, instance_path=str(tmp_path))
    app.config.update(
        TESTING=True,
        SECRET_KEY="test secret",
        KRM_TARGETS={"demo": {"kubeconfig": str(tmp_path / "kubeconfig")}},
        KRM_SCOPE_POLICY=POLICY,
        KRM_HEARTBEAT_INTERVAL=30.0,
    )
    app.config.update(config)
    add_sign_in(app, USERS)

    return app


def unreachable_kubeconfig(path: Path) -> str:
    """A kubeconfig naming an API server nobody listens on."""
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{free_port()}"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return str(path)
