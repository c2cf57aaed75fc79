"""Drafts checked by the API server while they are edited and before each Save.

When an editor's draft changes, its page channel asks for a check (:meth:`ChannelChecks.parts`):
once the draft has been still for ``KRM_DRY_RUN_DELAY`` seconds, one greenlet per session and
object captures what a Save would send now and sends it with ``dryRun=All``
(:mod:`flask_krm.save.dry_run`). Kubernetes' refusal (its field causes, an admission webhook's or a
CRD schema's message) is shown at the fields it names and in the editor's check region
(``#<id>-check``), marked as checked by the cluster; a pass says so. A result for a draft that
changed meanwhile is discarded; a 409 (the object changed on the server) is shown as nothing, and
the draft is checked again on the newer version.

A Save first makes sure the draft it is about to send has been checked (:func:`before_save`): it
uses the check of exactly that draft, or sends one now, and refuses with the cluster's own message
while the check refuses, without writing anything; the refused Save is audited as a save hook's
refusal is (:func:`~flask_krm.save.perform.audit_unsent_save`). A dry run is never retried and never becomes a
write; only a check whose person may ``patch`` the object is sent. ``KRM_DRY_RUN = False`` turns
all of this off.
"""

from __future__ import annotations

import typing as t
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from markupsafe import Markup

from ..principal import Principal
from ..runtime import KrmRuntime
from ..store import LiveResourceStore, StoreError
from ..ui.page import Component
from ..ui.state import store_policy
from .checks import CheckResult, CheckVerdict, DraftCheck, draft_key
from .controls import client_of, may
from .dry_run import Debouncer, capture_check, send_check
from .flow import Phase, SaveFlow
from .fragments import check_fragment
from .outcomes import Outcome, OutcomeKind, Path
from .perform import audit_unsent_save
from .publish import audit_reason

if t.TYPE_CHECKING:
    from ..sessions import SessionDrafts
    from ..ui.actions import EditorContext
    from ..ui.feeds import Feed

CHECK_STATE: t.Final = "krm.check"
SHOWN: t.Final = frozenset({CheckVerdict.PASSED, CheckVerdict.REFUSED})
"""Verdicts a page shows; a stale or unchecked draft shows nothing."""
CHECK_REFUSED_REASON: t.Final = "refused by the cluster's check of the draft (dryRun=All)"
"""How an audit record names a Save the check refused; Kubernetes' reasons follow it."""
REFUSED_BEFORE_SAVE: t.Final = "Checked by the cluster before saving: nothing was written. Fix the marked fields first."


@dataclass(eq=False)
class EditorCheck:
    """One editor's draft check in one session: the state, its debouncer, and whom to tell."""

    check: DraftCheck
    debouncer: Debouncer | None = None
    listeners: set[Callable[[], None]] = field(default_factory=set)

    def notify(self) -> None:
        for listener in list(self.listeners):
            listener()


def editor_check(drafts: SessionDrafts, component: Component, uid: str) -> EditorCheck:
    """The session's check of ``component``'s draft of object ``uid`` (made on first use)."""
    states = drafts.page_state((CHECK_STATE, component.scope, component.projection, store_policy(component)))
    state = states.get(uid)
    if not isinstance(state, EditorCheck):
        state = states[uid] = EditorCheck(DraftCheck(uid))
    return state


def enabled(krm: KrmRuntime) -> bool:
    """Whether drafts are checked (``KRM_DRY_RUN``)."""
    return bool(krm.setting("DRY_RUN"))


@dataclass(frozen=True, slots=True)
class CheckTarget:
    """Where a check of one editor's draft goes, and who sends it."""

    krm: KrmRuntime
    principal: Principal
    component: Component
    store: LiveResourceStore
    feed: Feed

    def capture(self, uid: str) -> tuple[str, t.Any] | None:
        """The key and intent of what a Save would send now, or ``None``."""
        intent = capture_check(self.store, uid, self.component.projection, self.feed.newest_known)
        return (draft_key(intent.uid, intent.patch), intent) if intent is not None else None

    def send(self, state: EditorCheck, key: str, intent: t.Any) -> CheckResult:
        """Send one dry run of ``intent`` and record its answer (discarded if the draft changed)."""
        api = client_of(self.krm, self.component.scope.target, self.principal)
        if api is None:  # nowhere to send it: the Save decides
            return CheckResult(key, intent.resource_version, CheckVerdict.UNCHECKED)
        state.check.running = key
        try:
            result = send_check(api, self.component.scope, self.store, intent)
        finally:
            if state.check.running == key:
                state.check.running = None
        current = self.capture(intent.uid)
        if state.check.record(result, current[0] if current is not None else None):
            state.notify()
        return result


def _run_check(target: CheckTarget, state: EditorCheck) -> None:
    """The debounced check: the draft as it is now, if it needs one."""
    uid = state.check.uid
    with target.krm.app.app_context():
        captured = target.capture(uid)
        if captured is None:
            # nothing to save any more: the check is withdrawn; a colleague's change in conflict
            # holds the same draft back, and the causes shown at its fields stay
            if not _held_by_conflicts(target.store, uid) and state.check.withdraw():
                state.notify()
            return
        key, intent = captured
        if not target.feed.status.writable or not state.check.due(key, intent.resource_version):
            return
        target.send(state, key, intent)


def _held_by_conflicts(store: LiveResourceStore, uid: str) -> bool:
    """Whether the draft of ``uid`` is unchanged but held back from saving by open conflicts."""
    try:
        return bool(store.conflicts(uid))
    except StoreError:
        return False


def schedule(target: CheckTarget, state: EditorCheck, *, edited: bool = True) -> None:
    """Check the draft once it has been still for ``KRM_DRY_RUN_DELAY`` seconds. A change that is
    not an edit (``edited=False``: the server's) does not postpone a check already due."""
    if state.debouncer is None:
        delay = float(target.krm.setting("DRY_RUN_DELAY"))
        state.debouncer = Debouncer(target.krm.group, delay, lambda: _run_check(target, state))
    state.debouncer.poke(postpone=edited)


def refusal(result: CheckResult) -> Outcome:
    """What a Save answers while the cluster refuses the draft: its causes, at their fields."""
    detail = REFUSED_BEFORE_SAVE if result.causes else f"{REFUSED_BEFORE_SAVE} {result.detail or ''}".strip()
    return Outcome(OutcomeKind.INVALID, causes=result.causes, detail=detail)


def before_save(ctx: EditorContext, flow: SaveFlow) -> Outcome | None:
    """The refusal a Save answers when the cluster refuses the draft it is about to send, or
    ``None`` (go ahead). Uses the check of exactly this draft, or sends one now; nothing is written
    either way, and a refusal is audited. A Save that will read rather than write, or is not live,
    is left to the save flow."""
    uid = ctx.uid
    if uid is None or not enabled(ctx.krm) or not ctx.live or flow.phase is not Phase.IDLE:
        return None
    target = CheckTarget(ctx.krm, ctx.principal, ctx.component, ctx.store, ctx.feed)
    captured = target.capture(uid)
    if captured is None:
        return None
    key, intent = captured
    state = editor_check(ctx.drafts, ctx.component, uid)
    result = state.check.applies(key)
    if result is None or state.check.due(key, intent.resource_version):
        result = target.send(state, key, intent)
    if not result.refused:
        return None
    refused = refusal(result)
    audit_unsent_save(
        ctx.principal,
        ctx.component.scope,
        ctx.component.projection,
        ctx.store,
        intent,
        refused,
        audit_reason_of(result),
    )
    return refused


def audit_reason_of(result: CheckResult) -> str:
    """Why the cluster's check refused a Save, value-free, for its audit record: Kubernetes' causes
    (field and message), else its message."""
    cluster = Outcome(OutcomeKind.INVALID, causes=result.causes, detail=None if result.causes else result.detail)
    return f"{CHECK_REFUSED_REASON}: {audit_reason(cluster) or 'refused'}"


def field_id_of(
    store: LiveResourceStore, component: Component, uid: str | None
) -> Callable[[Sequence[t.Any], str], str]:
    """The DOM id of the field at a path of the draft, whose keyed-list items are named by key."""

    def field_id(path: Sequence[t.Any], suffix: str) -> str:
        try:
            address: Sequence[t.Any] = store.address(uid, path) if uid is not None else path
        except StoreError:
            address = path
        return component.element_id(address, suffix)

    return field_id


@dataclass(eq=False)
class ChannelChecks:
    """The checks one page channel shows: it asks for them as drafts change and sends each result
    once (and again on a new connection)."""

    krm: KrmRuntime
    principal: Principal
    drafts: SessionDrafts
    wake: Callable[[Component], Callable[..., None]]
    _sent: dict[str, tuple[str, int, bool]] = field(default_factory=dict)
    _shown: dict[str, tuple[Path, ...]] = field(default_factory=dict)
    _listening: dict[tuple[str, str], tuple[EditorCheck, Callable[[], None]]] = field(default_factory=dict)
    _edits: dict[str, int] = field(default_factory=dict)
    """The edit sequence of each editor's object when its check was last asked for."""

    def parts(
        self, component: Component, store: LiveResourceStore | None, feed: Feed | None, uid: str | None
    ) -> list[str]:
        """The check partials of an editor whose store just changed (or whose check did), if any."""
        if uid is None or store is None or feed is None:
            return []
        listening = self._listening.get((component.id, uid))
        if listening is not None and self._quiet(component, store, uid, listening[0]):
            return []
        if not enabled(self.krm):
            return []
        if not may(self.krm, self.principal, self.drafts, component.scope, component.projection, "patch"):
            return []
        state = editor_check(self.drafts, component, uid)
        if (component.id, uid) not in self._listening:
            listener = self.wake(component)
            state.listeners.add(listener)
            self._listening[component.id, uid] = (state, listener)
        try:
            dirty = store.is_dirty(uid)
        except StoreError:  # the object is gone (its editor shows what became of the draft): nothing to check
            return []
        if dirty or state.check.result is not None:
            edits = store.edit_sequence(uid)
            edited = self._edits.get(component.id) != edits
            self._edits[component.id] = edits
            schedule(CheckTarget(self.krm, self.principal, component, store, feed), state, edited=edited)
        result = state.check.result
        visible = result if result is not None and result.verdict in SHOWN else None
        # a pass that can't be saved yet: asked only while a pass is shown, not per change
        conflicted = visible is not None and not visible.refused and dirty and _held_by_conflicts(store, uid)
        shown, sent = (uid, state.check.generation, conflicted), self._sent.get(component.id)
        if sent == shown:
            return []
        self._sent[component.id] = shown
        if sent is None and visible is None:
            return []  # a new connection: the page shows no check, and there is none to show
        field_id = field_id_of(store, component, uid)
        fragment: Markup = check_fragment(
            f"{component.id}-check",
            visible,
            field_id,
            cleared=self._shown.get(component.id, ()),
            conflicted=conflicted,
        )
        self._shown[component.id] = tuple(c.path for c in visible.causes if c.path) if visible is not None else ()
        return [str(fragment)]

    def _quiet(self, component: Component, store: LiveResourceStore, uid: str, state: EditorCheck) -> bool:
        """Whether an editor already followed here has nothing to check and nothing new to show: a
        clean draft without a check result whose (empty) region was sent. A server change to an
        object nobody edited here costs a dictionary look-up, not a permission look-up."""
        if state.check.result is not None or self._sent.get(component.id) != (uid, state.check.generation, False):
            return False
        try:
            return not store.is_dirty(uid)
        except StoreError:
            return True  # the object is gone: nothing to check (as below)

    def close(self) -> None:
        """Stop listening (the channel ended)."""
        for state, listener in self._listening.values():
            state.listeners.discard(listener)
        self._listening.clear()
