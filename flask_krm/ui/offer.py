"""What one person is offered on one live component: the write controls they may use.

A component's spec (and so its id) is the same for everyone who shows it; what each person may do
to it is not. An :class:`Offer` is the per-session view of it, passed to rendering beside the
spec: the verbs whose controls are drawn. An editor offers Add and Remove (add a field, an item or
a key; remove a member, an item or a key) only with ``patch``; a list offers a row action only with
the verb it needs (:attr:`~flask_krm.ui.page.RowAction.verb`: ``delete`` for Delete). Renders
shared across sessions are kept per offer, so two people offered the same controls share them and
a person offered fewer never receives another's. Offering is a courtesy, not a guard: every write
is authorized again when it happens (:mod:`flask_krm.save.controls` decides what is offered).
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass

WRITE_VERBS: t.Final = frozenset({"create", "patch", "delete"})
"""The verbs a control may need."""


@dataclass(frozen=True, slots=True)
class Offer:
    """The verbs whose controls one person is shown on one component."""

    verbs: frozenset[str] = WRITE_VERBS

    def allows(self, verb: str | None) -> bool:
        """Whether a control needing ``verb`` is shown (``None``: a control that needs none)."""
        return verb is None or verb in self.verbs

    @property
    def edit(self) -> bool:
        """Whether an editor shows Add and Remove (they change the object: ``patch``)."""
        return "patch" in self.verbs

    @property
    def create(self) -> bool:
        """Whether a create form is shown (for a host's ``krm/list.html``)."""
        return "create" in self.verbs

    @property
    def delete(self) -> bool:
        """Whether a Delete is shown."""
        return "delete" in self.verbs


EVERYTHING: t.Final = Offer()
"""Every control: a render made for no one in particular (tests, tools)."""
NOTHING: t.Final = Offer(frozenset())
"""No control: a person who may not write, or a component refused to its person."""


__all__ = ["EVERYTHING", "NOTHING", "WRITE_VERBS", "Offer"]
