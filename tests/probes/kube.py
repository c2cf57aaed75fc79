"""Streams a Kubernetes target through the hub against the simulator, in a monkey-patched process.

Run by ``tests/test_stream_view_kubernetes.py`` as ``python -m tests.probes.kube``: the hub needs a
gevent-patched process, and the test process is deliberately not patched. Prints one JSON line
describing what happened.
"""

from gevent import monkey

monkey.patch_all()

import json  # noqa: E402
import sys  # noqa: E402
import typing as t  # noqa: E402

import gevent  # noqa: E402

from flask_krm import KrmStream, Principal, Scope, signals  # noqa: E402
from flask_krm.sse import decode_events  # noqa: E402
from flask_krm.testing import KubeSimulator  # noqa: E402
from tests.probes.harness import demo_app  # noqa: E402
from tests.users import add_sign_in  # noqa: E402


def main() -> int:
    seen: dict[str, t.Any] = {"signals": []}
    with KubeSimulator(demo=True, demo_tick=None) as kube:
        app = demo_app(kube.kubeconfig_path)
        add_sign_in(app)

        krm = KrmStream()
        asked: list[tuple[str, str]] = []

        @krm.authorizer
        def authorize(principal: Principal, scope: Scope, projection: str, verb: str) -> bool:
            asked.append((principal.name, verb))
            return principal.name != "viewer"

        @krm.client_loader
        def client(target: str, principal: Principal) -> None:
            if principal.name == "admin":
                raise LookupError("no token stored for admin")
            return None  # the target's own identity, shared

        krm.init_app(app)

        for name in ("watch_started", "watch_stopped", "stream_opened", "stream_closed"):
            getattr(signals, name).connect(
                lambda sender, _name=name, **kw: seen["signals"].append(_name), app, weak=False
            )

        url = "/krm/resource-stream/v1?target=sim&version=v1&resource=configmaps&namespace=demo"
        admin = app.test_client()
        admin.get("/login/admin")
        with gevent.Timeout(10), admin.get(url) as refused:  # closed as a WSGI server closes a response
            seen["client_failure"] = refused.get_data(as_text=True)
        http = app.test_client()
        http.get("/login/editor")
        with gevent.Timeout(10):
            response = http.get(url)
            events: list[dict[str, t.Any]] = []
            chunks = response.iter_encoded()
            while not any(e["type"] == "synced" for e in events):
                events += decode_events(next(chunks))
            seen["first_cycle"] = [e["type"] for e in events]
            seen["names"] = sorted(e["object"]["metadata"]["name"] for e in events if e["type"] == "added")
            seen["seqs"] = [e["seq"] for e in events]
            seen["watches_open"] = krm.runtime(app).hub.watch_count  # type: ignore[union-attr]
            krm.shutdown(app)
            rest = decode_events(b"".join(chunks))
            response.close()
        seen["after_shutdown"] = [(e["type"], e.get("code"), e.get("terminal"), e["seq"]) for e in rest]
        seen["asked"] = asked
        seen["greenlets_left"] = len(krm.runtime(app).group) + len(krm.runtime(app).hub.group)  # type: ignore[union-attr]
    print(json.dumps(seen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
