"""The simulator serves from its own thread and hub, so a monkey-patched process can use it too."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    from gevent import monkey

    monkey.patch_all()

    import gevent
    from flask_krm.testing.simulator import KubeSimulator
    from tests.contract.kube import configmap, request, watch

    CONFIGMAPS = "/api/v1/namespaces/default/configmaps"

    with KubeSimulator() as kube, kube.api_client() as admin:
        start = request(admin, "GET", CONFIGMAPS).body["metadata"]["resourceVersion"]

        def watch_one():
            with watch(admin, CONFIGMAPS, resourceVersion=start, timeoutSeconds=5) as events:
                return events.next()["object"]["metadata"]["name"]

        watcher = gevent.spawn(watch_one)
        assert request(admin, "POST", CONFIGMAPS, body=configmap("from-a-greenlet")).status == 201
        print(watcher.get(timeout=5))
    """
)


def test_a_monkey_patched_process_watches_and_writes() -> None:
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=30, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "from-a-greenlet"
