"""YAML edits: ``POST /ui/components/<id>/yaml`` applies what changed in the YAML tab to the draft.

The form body carries ``before`` (the YAML text the person started from, as the tab last showed
it) and ``yaml`` (what they typed). Both are loaded with the bounded safe loader
(:func:`flask_krm.yaml_text.load_yaml`); their difference is applied to the session's current
draft as leaf-level edits (:meth:`flask_krm.store.LiveResourceStore.edit_view`) under the editor's
policy, so a server change that arrived meanwhile is kept where the person did not edit, and a
change to the same value becomes a conflict.

The answer is ``<hx-partial>`` fragments for the tab (applied whatever the status): its message
line and its list of problems, each at its line and column, and, on success, the draft's YAML as
it now is (``#<id>-yaml-fresh``), which the tab shows once the person is not typing. Refusals
change nothing and say why: 400 for a malformed request or an unreadable starting text, 403 for
a read-only path, 404 for an unknown page, component or object, 409 for a value that no longer
has the edited shape, 422 for text that cannot be loaded or a value that cannot be stored.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass
from functools import partial as bind_arguments

import gevent
from flask import Response, request

from ..htmx import html_response, partial
from ..store import UnknownResourceError
from ..store.paths import Path, pointer_to_path, text_path
from ..store.view_edits import ViewEditRefused
from ..yaml_text import LoadedYaml, YamlRefused, load_yaml
from .edits import bind_request
from .page import Component, EditorSpec
from .render import edited_object, render_template_fragment
from .state import store_policy
from .yaml_view import draft_yaml

if t.TYPE_CHECKING:
    from ..store import LiveResourceStore

OUTSIDE_FIELDS: t.Final = "This field is not editable in this editor."
MAX_PROBLEMS: t.Final = 50
"""Problems listed in one answer; the message says how many there are in all."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with the typed YAML, where it is (1-based; None when it is not at a place)."""

    message: str
    line: int | None = None
    column: int | None = None


class YamlEditRefused(Exception):
    """A YAML edit that changes nothing: the status and every problem."""

    def __init__(self, status: int, problems: list[Problem]) -> None:
        super().__init__(problems[0].message)
        self.status = status
        self.problems = problems


def _slot(component: Component, name: str) -> str:
    return f"{component.id}-yaml-{name}"


def _answer(
    component: Component, status: int, message: str, problems: list[Problem], fresh: str | None = None
) -> Response:
    body = partial(_slot(component, "message"), message)
    body += partial(
        _slot(component, "problems"),
        render_template_fragment("krm/yaml_problems.html", problems=problems),
    )
    if fresh is not None:
        body += partial(_slot(component, "fresh"), render_template_fragment("krm/yaml_fresh.html", text=fresh))
    return html_response(body, status)


def _load(name: str, *, status: int) -> LoadedYaml:
    text = request.form.get(name)
    if text is None:
        raise YamlEditRefused(400, [Problem(f"The request has no {name}.")])
    try:
        return load_yaml(text, pause=bind_arguments(gevent.sleep, 0))  # other requests run meanwhile
    except YamlRefused as refused:
        prefix = "" if name == "yaml" else "The text you started from cannot be read: "
        raise YamlEditRefused(status, [Problem(prefix + refused.message + ".", refused.line, refused.column)]) from None


def _summary(applied: int, conflicts: int) -> str:
    if not applied:
        return "No changes to apply."
    message = f"Applied {applied} {'change' if applied == 1 else 'changes'} to your draft."
    if conflicts:
        message += (
            f" {conflicts} {'was' if conflicts == 1 else 'were'} also changed by someone else meanwhile: "
            "choose “Keep mine” or “Take theirs” below."
        )
    return message


def apply_yaml(spec: EditorSpec, store: LiveResourceStore, uid: str) -> tuple[str, str]:
    """Apply the request's YAML edit to ``uid``; returns the message and the draft's YAML now."""
    before = _load("before", status=400)
    after = _load("yaml", status=422)

    def refuse(path: Path) -> str | None:
        return None if spec.policy.covers(text_path(path)) else OUTSIDE_FIELDS

    try:
        result = store.edit_view(uid, before.value, after.value, refuse)
    except ViewEditRefused as refused:
        status = max(p.status for p in refused.problems)
        problems = []
        for problem in refused.problems:
            line = after.line_of(problem.view_path) or before.line_of(problem.view_path)
            problems.append(Problem(problem.message, line))
        raise YamlEditRefused(status, sorted(problems, key=lambda p: p.line or 0)) from None
    fresh = draft_yaml(store.draft(uid) or {}, [pointer_to_path(r.path) for r in store.redactions(uid)], spec.fields)
    return _summary(result.applied, len(result.conflicts)), fresh


def yaml_response(component_id: str) -> Response:
    """Handle one YAML edit (see the module doc)."""
    binding = bind_request(component_id)
    if isinstance(binding, Response):
        return binding
    component = binding.component
    spec = component.spec
    if not isinstance(spec, EditorSpec) or not spec.yaml:
        return _answer(component, 400, "This view has no YAML tab.", [])
    uid = edited_object(binding.store, component, binding.page).uid
    if uid is None:
        return _answer(component, 404, "The object is no longer here: nothing was applied.", [])
    try:
        message, fresh = binding.drafts.edit(
            component.scope,
            component.projection,
            lambda: apply_yaml(spec, binding.store, uid),
            policy=store_policy(component),
        )
    except YamlEditRefused as refused:
        count = len(refused.problems)
        lead = (
            "Nothing was applied: fix the problem below."
            if count == 1
            else f"Nothing was applied: fix the {count} problems below."
            if count <= MAX_PROBLEMS
            else f"Nothing was applied: fix the {count} problems (the first {MAX_PROBLEMS} are below)."
        )
        return _answer(component, refused.status, lead, refused.problems[:MAX_PROBLEMS])
    except UnknownResourceError:
        return _answer(component, 404, "The object is no longer here: nothing was applied.", [])
    return _answer(component, 200, message, [], fresh)
