"""Outcome fragments: what a Save, create or delete answers the browser.

Fragments are htmx partials (``krm/save/outcome.html``, ``krm/save/review.html``; hosts override
them by path): the outcome region gets the message, 422 causes go to their fields' error elements,
conflicts link to their fields. They carry no object and no redacted value; a Kubernetes message
is shown only as a cause's message, withheld at redacted paths.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from markupsafe import Markup

from ..store import RecoveryCopy, path_to_pointer
from ..ui.recovery import copy_out
from ..ui.render import render_template_fragment
from .checks import CheckResult
from .outcomes import Outcome, OutcomeKind, OutcomeTexts, Path
from .staging import ReviewItem

FieldId = Callable[[Sequence[Any], str], str]
"""``field_id(path, suffix)``: the DOM id of an editor field (``Component.element_id``)."""


def outcome_fragment(
    target_id: str,
    outcome: Outcome,
    texts: OutcomeTexts,
    field_id: FieldId,
    *,
    cleared: Sequence[Path] = (),
    recovery: RecoveryCopy | None = None,
) -> Markup:
    """The outcome partials for the editor whose outcome region is ``target_id``.

    ``cleared`` are paths whose error elements an earlier outcome filled; ``recovery`` (the
    person's unsaved draft) is offered for copy-out, as text, when the object is unavailable.
    """
    causes = [(cause, field_id(cause.path, "-error") if cause.path else None) for cause in outcome.causes]
    shown = {error_id for _, error_id in causes if error_id}
    cleared_ids = [i for i in dict.fromkeys(field_id(path, "-error") for path in cleared) if i not in shown]
    conflicts = [(path_to_pointer(path), field_id(path, "")) for path in outcome.conflicts]
    offered = (
        copy_out(recovery)
        if recovery is not None and outcome.kind is OutcomeKind.UNAVAILABLE and recovery.patch
        else None
    )
    return render_template_fragment(
        "krm/save/outcome.html",
        target_id=target_id,
        outcome=outcome,
        kind=outcome.kind.value,
        message=texts.message(outcome),
        causes=causes,
        listed=[(cause, error_id) for cause, error_id in causes if f"{cause.field}: {cause.message}" != outcome.detail],
        cleared=cleared_ids,
        conflicts=conflicts,
        copy_out=offered,
        recovery=offered.text if offered is not None else None,
    )


def check_fragment(
    target_id: str,
    result: CheckResult | None,
    field_id: FieldId,
    *,
    cleared: Sequence[Path] = (),
    conflicted: bool = False,
) -> Markup:
    """The partials showing a draft's check by the cluster in the editor's check region
    ``target_id`` and at the fields its causes name (``None``: nothing to show, the region and
    the ``cleared`` fields' messages are emptied). A pass of a draft with ``conflicted`` fields
    says the conflicts still stand between it and a Save."""
    causes = [
        (cause, field_id(cause.path, "-error") if cause.path else None) for cause in (result.causes if result else ())
    ]
    shown = {error_id for _, error_id in causes if error_id}
    cleared_ids = [i for i in dict.fromkeys(field_id(path, "-error") for path in cleared) if i not in shown]
    return render_template_fragment(
        "krm/save/check.html",
        target_id=target_id,
        result=result,
        causes=causes,
        cleared=cleared_ids,
        conflicted=conflicted,
    )


def review_fragment(
    target_id: str,
    items: Sequence[ReviewItem],
    texts: OutcomeTexts,
    *,
    save_url: str,
    discard_url: str,
    outcomes: dict[str, Outcome] | None = None,
    refusal: Outcome | None = None,
    saved: int | None = None,
) -> Markup:
    """The review list partial: every pending item with its last outcome, and one Save.

    ``refusal`` is shown above the list (a create that could not be staged); ``saved``, after a
    Save all, says how many changes Kubernetes accepted ("2 changes saved").
    """
    outcomes = outcomes or {}
    rows = []
    for item in items:
        outcome = outcomes.get(item.key) or item.outcome
        rows.append(
            (
                item,
                texts.message(outcome) if outcome else None,
                outcome.kind.value if outcome else None,
                outcome.detail if outcome else None,
            )
        )
    return render_template_fragment(
        "krm/save/review.html",
        target_id=target_id,
        items=rows,
        save_url=save_url,
        discard_url=discard_url,
        refusal=(texts.message(refusal), refusal.detail) if refusal is not None else None,
        saved=saved,
    )
