"""Where the person's drafts are kept between requests: the draft backend seam.

:mod:`.backend` defines :class:`~flask_krm.drafts.backend.DraftBackend` and its in-process
implementation (the default); :mod:`.redis_backend` keeps drafts in Redis so that they survive
restarts and are shared by every worker; :mod:`.sync` binds a session's stores to a backend.
:func:`backend_from_url` chooses one from ``KRM_DRAFTS_URL``.
"""

from __future__ import annotations

from .backend import DraftBackend

__all__ = ["backend_from_url"]


def backend_from_url(url: str | None) -> DraftBackend:
    """The backend ``KRM_DRAFTS_URL`` names: ``None`` or ``memory://`` keep drafts in the process;
    ``redis://``, ``rediss://`` and ``unix://`` URLs keep them in Redis (needs the ``redis`` package:
    ``pip install flask-krm[redis]``). Raises ``ValueError`` for any other URL."""
    if url is None or url == "memory://":
        from .memory_backend import MemoryBackend

        return MemoryBackend()
    scheme, separator, _ = url.partition("://")
    if not separator or scheme.lower() not in ("redis", "rediss", "unix"):
        raise ValueError(f"KRM_DRAFTS_URL must be a redis://, rediss:// or unix:// URL (or memory://), got {scheme!r}")
    from .redis_backend import RedisBackend

    return RedisBackend.from_url(url)
