"""The save hook: the host's last word before a write reaches Kubernetes.

flask-krm hands every write (a Save's merge patch, a create, a delete) to the save hook as a
:class:`~flask_krm.save.writer.WriteRequest`. The default hook performs the conditional write:
the patch is validated against the current object and sent with the uid and resourceVersion
captured when the person pressed Save. Wrap it instead of replacing it: check what your
application forbids, raise :class:`~flask_krm.save.writer.SaveRefused` (the person sees the
reason, at the field when the refusal names one, and keeps their edits), and delegate everything
else.
"""

from __future__ import annotations

import typing as t
from collections.abc import Mapping

from flask_krm.save.writer import SaveHook, SaveRefused, WriteRequest, WriteResult, default_save


def requested_replicas(request: WriteRequest) -> int | None:
    """The ``spec.replicas`` a patch or create would write, if any."""
    body: t.Any = request.intent.patch if request.intent is not None else request.body
    spec = body.get("spec") if isinstance(body, Mapping) else None
    replicas = spec.get("replicas") if isinstance(spec, Mapping) else None
    return replicas if isinstance(replicas, int) and not isinstance(replicas, bool) else None


def limit_replicas(max_replicas: int, write: SaveHook = default_save) -> SaveHook:
    """A save hook that refuses more than ``max_replicas`` replicas, then lets ``write`` write."""

    def save(request: WriteRequest) -> WriteResult:
        replicas = requested_replicas(request)
        if replicas is not None and replicas > max_replicas:
            # Refused before any I/O: nothing reaches Kubernetes, the draft stays as it is.
            limit = f"at most {max_replicas} replicas may be set from this application"
            raise SaveRefused(limit, field="spec.replicas")
        return write(request)

    return save
