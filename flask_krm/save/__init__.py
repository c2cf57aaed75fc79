"""Saving: conditional writes, every outcome and its recovery, create and delete, audit.

* :mod:`~flask_krm.save.outcomes`: outcome kinds, their wording and HTTP status (pure);
* :mod:`~flask_krm.save.flow`: the per-editor save state machine (pure);
* :mod:`~flask_krm.save.staging`: pending creates and deletes and the review list (pure);
* :mod:`~flask_krm.save.audit`: audit records with RFC 6902 diffs, redacted values withheld (pure).
"""

from __future__ import annotations

from .outcomes import Outcome, OutcomeKind, OutcomeTexts

__all__ = ["Outcome", "OutcomeKind", "OutcomeTexts"]
