"""The saving host app as gunicorn serves it to the multi-worker browser tests.

``gunicorn ... tests.browser.workers_app:app`` with ``KRM_TEST_KUBECONFIG`` (the simulator the test
runs) and ``KRM_TEST_DRAFTS_URL`` (the test's redis-server) in the environment; every worker makes
the same application (same secret key), drafts in Redis.
"""

from __future__ import annotations

import os
import tempfile

from tests.browser.host_app import create_app

app, krm = create_app(
    os.environ["KRM_TEST_KUBECONFIG"],
    tempfile.mkdtemp(prefix="krm-workers-"),
    saving=True,
    drafts_url=os.environ["KRM_TEST_DRAFTS_URL"],
)
