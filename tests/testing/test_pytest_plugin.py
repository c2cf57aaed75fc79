"""The pytest plugin's own parts: the application factory setting, the patched-process check, how a
live page reads its markup and applies its channel's partials, and a Save's outcome. (Its fixtures
run a host's tests in ``tests/example/test_host_suite.py``.)"""

from __future__ import annotations

import html
import json
import typing as t

import gevent.monkey
import gevent.queue
import pytest
from werkzeug.wrappers import Response

from flask_krm.sse import SSEMessage
from flask_krm.testing import pytest_plugin
from flask_krm.testing.pytest_plugin import (
    LiveEditor,
    LivePage,
    SaveOutcome,
    load_factory,
    parse_outcome,
    require_patched,
)
from tests.apps import make_app


def test_the_factory_is_named_module_colon_function() -> None:
    assert load_factory("tests.apps:make_app") is make_app
    for spec, complaint in [
        ("tests.apps", "must look like 'package.module:create_app'"),
        (":make_app", "must look like"),
        ("tests.nowhere:make_app", "cannot be loaded: No module named 'tests.nowhere'"),
        ("tests.apps:make_nothing", "cannot be loaded: module 'tests.apps' has no attribute 'make_nothing'"),
    ]:
        with pytest.raises(pytest.UsageError, match=complaint):
            load_factory(spec)


def test_an_unpatched_process_fails_the_test_with_advice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gevent.monkey, "is_module_patched", lambda name: False)
    with pytest.raises(pytest.fail.Exception, match="python -m gevent.monkey --module pytest"):
        require_patched()
    monkeypatch.setattr(gevent.monkey, "is_module_patched", lambda name: name == "socket")
    require_patched()


PAGE = """<html><body>
<div id="krm-channel" hx-sse:connect="/krm/channel?page=p1"></div>
<section id="e1" data-krm-component data-krm-kind="editor" hx-headers:inherited='{"X-Krm-Page": "p1"}'>
  <h2 id="e1-title">ConfigMap <b>app</b></h2>
  <div id="e1-body"><div id="e1-f1">one</div><div id="e1-f2">two</div></div>
</section>
<section id="l1" data-krm-component data-krm-kind="list">
  <h2 id="l1-title">Deployments</h2>
  <div id="l1-body"><table><tr id="l1-r1"><td>web</td></tr></table></div>
</section>
</body></html>"""


def page_of(markup: str = PAGE) -> LivePage:
    parser = pytest_plugin._PageParser()
    parser.feed(markup)
    bodies = {cid: pytest_plugin._element_inner(markup, f"{cid}-body") for cid in parser.components}
    return LivePage(t.cast(t.Any, None), markup, parser.channel_url, parser.components, bodies)


def test_a_page_s_components_channel_and_bodies_are_read() -> None:
    page = page_of()
    assert page.channel_url == "/krm/channel?page=p1"
    assert page.components == {
        "e1": {"kind": "editor", "headers": {"X-Krm-Page": "p1"}, "title": "ConfigMap app"},
        "l1": {"kind": "list", "headers": {}, "title": "Deployments"},
    }
    assert page.headers("e1") == {"X-Krm-Page": "p1"} and page.headers("e1") is not page.components["e1"]["headers"]
    assert page.bodies["e1"] == '<div id="e1-f1">one</div><div id="e1-f2">two</div>'
    assert page.list_body("Deploy") == '<table><tr id="l1-r1"><td>web</td></tr></table>'
    assert page.editor("app").component_id == "e1" and page.editor().component_id == "e1"
    with pytest.raises(LookupError, match="the page has no editor titled 'Secret'"):
        page.editor("Secret")
    assert page_of("<p>static</p>").channel_url is None


def test_an_unclosed_body_runs_to_the_end_and_a_missing_one_is_empty() -> None:
    assert pytest_plugin._element_inner('<div id="b"><div>x</div>', "b") == "<div>x</div>"
    assert pytest_plugin._element_inner("<p>none</p>", "b") == ""


@pytest.mark.parametrize(
    ("swap", "content", "after"),
    [
        ("outerHTML", '<li id="x-2">B</li>', '<ul id="x"><li id="x-1">a</li><li id="x-2">B</li></ul>'),
        ("delete", "", '<ul id="x"><li id="x-1">a</li></ul>'),
        (
            "beforebegin",
            '<li id="x-0">0</li>',
            '<ul id="x"><li id="x-1">a</li><li id="x-0">0</li><li id="x-2">b</li></ul>',
        ),
    ],
)
def test_a_partial_swaps_its_target_element(swap: str, content: str, after: str) -> None:
    before = '<ul id="x"><li id="x-1">a</li><li id="x-2">b</li></ul>'
    assert pytest_plugin._swapped(before, "x-2", swap, content) == after


def test_beforeend_appends_inside_and_a_missing_target_changes_nothing() -> None:
    before = '<ul id="x"><li id="x-1">a</li></ul>'
    assert (
        pytest_plugin._swapped(before, "x", "beforeend", "<li>z</li>")
        == '<ul id="x"><li id="x-1">a</li><li>z</li></ul>'
    )
    assert pytest_plugin._swapped(before, "gone", "outerHTML", "<p/>") == before


def test_a_line_swap_changes_the_lines_of_an_element_s_text() -> None:
    before = '<pre id="y">a: 1\nb: &lt;2&gt;\nc: 3</pre>'
    changes = html.escape(json.dumps({"from": 3, "changes": [[1, 2, ["b: <4>", "bb: 5"]]]}))
    assert (
        pytest_plugin._swapped(before, "y", "krmLines", changes) == '<pre id="y">a: 1\nb: &lt;4&gt;\nbb: 5\nc: 3</pre>'
    )


def partial(target: str, content: str, swap: str = "") -> str:
    swapped = f' hx-swap="{swap}"' if swap else ""
    return f'<hx-partial hx-target="#{target}"{swapped}>{content}</hx-partial>'


def test_channel_messages_replace_bodies_and_their_elements() -> None:
    page = page_of()
    page._apply(
        SSEMessage(partial("e1-f2", '<div id="e1-f2">TWO</div>', "outerHTML") + partial("l1-body", "<p>empty</p>"))
    )
    assert page.bodies == {"e1": '<div id="e1-f1">one</div><div id="e1-f2">TWO</div>', "l1": "<p>empty</p>"}
    page._apply(SSEMessage("bye", "krm-close"))
    page._apply(None)
    assert page.closed_reason == "bye", "the first reason is kept"


def test_waiting_applies_messages_until_the_condition_holds() -> None:
    page = page_of()
    page._messages = gevent.queue.Queue()
    page._messages.put(SSEMessage(partial("e1-body", '<div data-krm-stream="live">ready</div>')))
    editor = page.editor().wait_live(timeout=1)
    assert editor.stream == "live" and editor.text == "ready" and not editor.has_conflict


def test_waiting_fails_the_test_naming_what_it_waited_for() -> None:
    page = page_of()
    page._messages = gevent.queue.Queue()
    with pytest.raises(pytest.fail.Exception, match=r"^timed out after 0.05s waiting for the sky$"):
        page.wait_until(lambda: False, timeout=0.05, what="the sky")
    page.closed_reason = "signed out"
    with pytest.raises(pytest.fail.Exception, match=r"\(the channel closed: signed out\)$"):
        page.wait_until(lambda: False, timeout=5, what="anything")


def test_an_editor_s_state_is_read_from_its_body() -> None:
    page = page_of()
    editor = LiveEditor(page, "e1")
    assert editor.stream == "connecting", "a body without a stream state is still connecting"
    page.bodies["e1"] = '<div data-krm-stream="retrying"><span class="krm-conflicted">a &amp; b</span></div>'
    assert (editor.stream, editor.has_conflict, editor.text) == ("retrying", True, "a & b")


def test_a_save_s_outcome_is_read_from_its_response() -> None:
    body = (
        '<div data-krm-outcome="version-stale"><p class="krm-outcome-message">Someone <b>else</b> saved</p>'
        '<p class="krm-outcome-detail">reload &amp; retry</p></div>'
    )
    outcome = parse_outcome(t.cast(t.Any, Response(body, status=409)))
    assert outcome == SaveOutcome("version-stale", "Someone else saved", "reload & retry", 409)
    bare = parse_outcome(t.cast(t.Any, Response('<p data-krm-outcome="saved"></p>')))
    assert (bare.kind, bare.message, bare.detail) == ("saved", "", "")
    with pytest.raises(AssertionError, match="the Save answered HTTP 500 without an outcome"):
        parse_outcome(t.cast(t.Any, Response("oops", status=500)))
