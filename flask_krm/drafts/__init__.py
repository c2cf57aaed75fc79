"""Where the person's drafts are kept between requests: the draft backend seam.

:mod:`.backend` defines :class:`~flask_krm.drafts.backend.DraftBackend` and its in-process
implementation (the default); :mod:`.redis_backend` keeps drafts in Redis so that they survive
restarts and are shared by every worker; :mod:`.sync` binds a session's stores to a backend.
"""
