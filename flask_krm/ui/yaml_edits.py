"""YAML edits: ``POST /ui/components/<id>/yaml`` applies what changed in the YAML tab to the draft.

The form body carries ``before`` (the YAML text the person started from, as the tab last showed
it) and ``yaml`` (what they typed). Both are loaded with the bounded safe loader
(:func:`flask_krm.yaml_text.load_yaml`); their difference is applied to the session's current
draft as leaf-level edits, by the same path as every other edit (:func:`flask_krm.ui.edits.perform`
with a :class:`~flask_krm.store.operations.EditView`) under the editor's policy, so a server change
that arrived meanwhile is kept where the person did not edit, and a change to the same value
becomes a conflict.

The answer is ``<hx-partial>`` fragments for the tab (applied whatever the status): its message
line and its list of problems, each at its line and column, and, on success, the draft's YAML as
it now is (``#<id>-yaml-fresh``), which the tab shows once the person is not typing, and the
``X-KRM-Edits`` header as for a field edit. Refusals change nothing and say why, each from the one
table (:mod:`flask_krm.ui.problems`): 400 for a malformed request or an unreadable starting text, 403 for
a read-only path, 404 for an unknown page, component or object, 409 for a value that no longer
has the edited shape, 422 for text that cannot be loaded or a value that cannot be stored.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass
from functools import partial as bind_arguments

from flask import Response, request

from ..concurrency import sleep
from ..htmx import html_response, partial
from ..store.operations import EditView
from ..store.paths import pointer_to_path
from ..store.problems import EditRefused
from ..yaml_text import LoadedYaml, YamlRefused, load_yaml
from .edits import bind_request, perform, with_edits_header
from .page import Component, EditorSpec
from .problems import Kind, RequestProblem, say
from .render import render_template_fragment
from .yaml_view import draft_yaml

MAX_PROBLEMS: t.Final = 50
"""Problems listed in one answer; the message says how many there are in all."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with the typed YAML, where it is (1-based; None when it is not at a place)."""

    message: str
    line: int | None = None
    column: int | None = None


class YamlEditRefused(Exception):
    """A YAML edit that changes nothing: the status and every problem in the text, or the one
    ``message`` of a refusal that is about no place in it."""

    def __init__(self, status: int, problems: list[Problem], message: str = "") -> None:
        super().__init__(message or problems[0].message)
        self.status = status
        self.problems = problems
        self.message = message


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


def _refused(kind: Kind, detail: str = "", line: int | None = None, column: int | None = None) -> YamlEditRefused:
    said = say(kind, detail)
    if not said.at_field and kind is not RequestProblem.NO_FIELD:
        return YamlEditRefused(said.status, [], f"{said.message[:-1]}: nothing was applied.")
    return YamlEditRefused(said.status, [Problem(said.message, line, column)])


def _load(name: str, *, kind: RequestProblem) -> LoadedYaml:
    text = request.form.get(name)
    if text is None:
        raise _refused(RequestProblem.NO_FIELD, name)
    try:
        return load_yaml(text, pause=bind_arguments(sleep, 0))  # other requests run meanwhile
    except YamlRefused as refused:
        raise _refused(kind, refused.message, refused.line, refused.column) from None


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


def _by_line(refused: EditRefused, before: LoadedYaml, after: LoadedYaml) -> YamlEditRefused:
    """The store's problems, each worded for its line of the typed text (or of the text started from)."""
    problems: list[Problem] = []
    status = 0
    for problem in refused.problems:
        said = say(problem.kind, problem.detail, problem.path, listed=True)
        if not said.at_field:  # about the object, not a place in the text
            return _refused(problem.kind, problem.detail)
        status = max(status, said.status)
        path = problem.path
        problems.append(Problem(said.message, after.line_of(path) or before.line_of(path)))
    return YamlEditRefused(status, sorted(problems, key=lambda p: p.line or 0))


def yaml_response(component_id: str) -> Response:
    """Handle one YAML edit (see the module doc)."""
    binding = bind_request(component_id)
    if isinstance(binding, Response):
        return binding
    component = binding.component
    spec = component.spec
    try:
        if not isinstance(spec, EditorSpec) or not spec.yaml:
            raise _refused(RequestProblem.NO_YAML_TAB)
        before = _load("before", kind=RequestProblem.UNREADABLE_START)
        after = _load("yaml", kind=RequestProblem.UNREADABLE_YAML)
        try:
            uid, outcome = perform(binding, lambda store, uid: EditView(before.value, after.value))
        except EditRefused as refused:
            raise _by_line(refused, before, after) from None
    except YamlEditRefused as refused:
        if refused.message:
            return _answer(component, refused.status, refused.message, [])
        count = len(refused.problems)
        lead = (
            "Nothing was applied: fix the problem below."
            if count == 1
            else f"Nothing was applied: fix the {count} problems below."
            if count <= MAX_PROBLEMS
            else f"Nothing was applied: fix the {count} problems (the first {MAX_PROBLEMS} are below)."
        )
        return _answer(component, refused.status, lead, refused.problems[:MAX_PROBLEMS])
    store = binding.store
    fresh = draft_yaml(store.draft(uid) or {}, [pointer_to_path(r.path) for r in store.redactions(uid)], spec.fields)
    message = _summary(outcome.applied, len(outcome.conflicts))
    return with_edits_header(_answer(component, 200, message, [], fresh), outcome)
