"""Saving: conditional writes, every outcome and its recovery, create and delete, audit.

Pure (no Flask, no gevent, no network):

* :mod:`~flask_krm.save.outcomes`: outcome kinds, their wording (host-overridable) and HTTP status;
* :mod:`~flask_krm.save.flow`: the per-editor save state machine (serialized, live-only, capture
  before I/O, pending confirmation, guarded reads, no blind replay);
* :mod:`~flask_krm.save.staging`: pending creates (local draft ids) and deletes (uids), the review list;
* :mod:`~flask_krm.save.audit`: audit records with RFC 6902 diffs, redacted values withheld;
* :mod:`~flask_krm.save.checks`: a draft's check by the API server (``dryRun=All``): verdicts and
  which result applies to the draft as it is now.

With I/O:

* :mod:`~flask_krm.save.writer`: conditional merge PATCH, uid-bound DELETE, create, uncached GET,
  and :func:`~flask_krm.save.writer.default_save`, the default save hook;
* :mod:`~flask_krm.save.perform`: a Save, its confirmation, creates, deletes and the review Save;
* :mod:`~flask_krm.save.publish`: the audit log line and the ``write_attempted`` / ``saved`` signals;
* :mod:`~flask_krm.save.dry_run`: sending a draft's check, debounced; :mod:`~flask_krm.save.checking`:
  checks while editing and before each Save, shown at the fields; :mod:`~flask_krm.save.controls`:
  which write controls a person is offered (authorizer and SelfSubjectAccessReview, kept briefly);
* :mod:`~flask_krm.save.fragments`, :mod:`~flask_krm.save.editor` (the ``save`` editor action, registered
  by `KrmStream.init_app`) and :mod:`~flask_krm.save.review` (create/delete/review endpoints of live lists).
"""

from __future__ import annotations

from .outcomes import Outcome, OutcomeKind, OutcomeTexts

__all__ = ["Outcome", "OutcomeKind", "OutcomeTexts"]
