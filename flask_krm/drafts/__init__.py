"""Where the person's drafts are kept between requests: the draft backend seam.

:mod:`.backend` defines :class:`~flask_krm.drafts.backend.DraftBackend` and its in-process
implementation (the default); :mod:`.redis_backend` keeps drafts in Redis so that they survive
restarts and are shared by every worker; :mod:`.sync` binds a session's stores to a backend.
:func:`backend_from_url` chooses one from ``KRM_DRAFTS_URL``.
"""

from __future__ import annotations

import typing as t

from .backend import DraftBackend

__all__ = ["backend_from_url", "checked_url"]

REDIS_SCHEMES: t.Final = ("redis", "rediss", "unix")


def checked_url(url: object) -> str | None:
    """``url`` as ``KRM_DRAFTS_URL`` takes it: ``None`` for ``None`` or ``memory://`` (drafts in
    the process), else a ``redis://``, ``rediss://`` or ``unix://`` URL. Raises ``ValueError``
    naming the setting for anything else (only a URL's scheme is shown: it may hold a password)."""
    if url is None or url == "memory://":
        return None
    scheme, separator, _ = url.partition("://") if isinstance(url, str) else (repr(url), "", "")
    if not separator or scheme.lower() not in REDIS_SCHEMES:
        shown = f"{scheme}://..." if separator else scheme
        raise ValueError(f"KRM_DRAFTS_URL must be None, memory:// or a redis://, rediss:// or unix:// URL, got {shown}")
    return t.cast(str, url)


def backend_from_url(url: str | None) -> DraftBackend:
    """The backend ``KRM_DRAFTS_URL`` names: ``None`` or ``memory://`` keep drafts in the process;
    ``redis://``, ``rediss://`` and ``unix://`` URLs keep them in Redis (needs the ``redis`` package:
    ``pip install flask-krm[redis]``). Raises ``ValueError`` for any other URL (:func:`checked_url`)."""
    url = checked_url(url)
    if url is None:
        from .memory_backend import MemoryBackend

        return MemoryBackend()
    from .redis_backend import RedisBackend

    return RedisBackend.from_url(url)
