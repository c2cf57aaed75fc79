"""``LiveResourceStore``: server objects and the person's drafts, per uid, for one stream.

One store serves one target, projection and session. It keeps what Kubernetes says (the server
object, replaced whole by every event) apart from what the person typed (the draft), and merges
every server change into the draft three-way, so an edit is never lost: it is kept, converges,
or becomes a conflict holding the server's value. Dirty paths, changes and patches are derived
from draft vs server on every read. Every getter returns a copy; the store never aliases a
caller's object.

The server objects live in a :class:`~.truth.ServerTruth`: the store's own, fed by :meth:`apply`,
or one shared by every store of the same stream (the live UI's sessions of one watch), fed once by
its own writer. The store itself holds only what its person did (:class:`~.held.Held`, made at the
first edit, restore or adopted object of a uid): a clean object is read from the truth.

The store is made of its parts, one responsibility each, over one shared state
(:class:`~.held.StoreCore`): stream application (:mod:`.streaming`), edits (:mod:`.editing`, and
the one entry for a person's change, :meth:`perform`, in :mod:`.pipeline`),
reading (:mod:`.reading`), edit records (:mod:`.records`) and save capture (:mod:`.capture`).
"""

from __future__ import annotations

from .capture import SaveCapture
from .pipeline import EditPipeline
from .reading import DraftReading
from .records import EditRecords
from .streaming import StreamApplication


class LiveResourceStore(StreamApplication, EditPipeline, DraftReading, EditRecords, SaveCapture):
    """Server objects, drafts, conflicts and redactions per uid, for one target and projection.

    ``policy`` decides what is editable (:data:`DEFAULT_POLICY`: spec, labels, annotations, data,
    stringData); ``schemas`` maps ``(apiVersion, kind)`` to a structural OpenAPI schema whose keyed
    lists merge by key; ``recovery`` keeps copies of drafts whose objects disappear; ``truth`` is a
    :class:`~.truth.ServerTruth` shared with other stores of the same stream and fed by its own
    writer (``None``: a private one, fed by :meth:`apply`).
    """
