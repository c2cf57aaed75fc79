"""Upstream sources: where a stream's source operations (:mod:`flask_krm.ops`) come from.

- :mod:`flask_krm.upstream.scripted` plays a conformance fixture's ``watch:`` script (pure).
- The Kubernetes clients, the raw watch reflector and the shared fan-out hub live in the other
  modules of this package; they import ``kubernetes`` and gevent (through
  :mod:`flask_krm.concurrency`), so this package's ``__init__`` imports none of them:
  ``import flask_krm.upstream.scripted`` stays pure.
"""

from __future__ import annotations
