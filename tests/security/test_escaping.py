"""Invariant 17 (second half): every rendered value is escaped.

Hostile text is put everywhere an object can carry it (names, uids, label keys and values,
annotation keys and values, data keys and values, a conflicting value someone else wrote) and
everywhere an error can echo it (a 422 cause quoting a label value, a host's refusal, a refused
create naming a field, an edit naming a key). Every page, channel message, edit, save and review
answer is parsed as a browser would: no element or attribute a payload tried to introduce may exist,
every partial targets one of the component's own elements, and the payload is still shown as text.
The last test reviews every ``Markup(`` and ``|safe`` in the package and the example.
"""

from __future__ import annotations

import copy
import html
import json
import re
import typing as t
from collections.abc import Iterator, Mapping
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote

import gevent
import gevent.queue
import pytest
from flask import Flask
from werkzeug.test import TestResponse

from flask_krm import AllowedResource, Principal, Scope, ScopePolicy
from flask_krm.ops import Change, Snapshot, SourceOp
from flask_krm.save.writer import SaveRefused, WriteRequest, WriteResult
from flask_krm.scope import ANY_NAMESPACE
from flask_krm.testing.simulator import KubeSimulator

from .hosts import (
    STREAM_URL,
    TARGET,
    Browser,
    Recorder,
    Stream,
    configmap,
    create,
    event_types,
    make_example,
    make_host,
    make_namespace,
    shut_down,
)

ROOT: t.Final = Path(__file__).resolve().parents[2]
PAYLOADS: t.Final = (
    '<script>alert("p1")</script>',
    '"><img src=x onerror=alert("p2")>',
    "' onmouseover='alert(\"p3\")' x='",
    '</textarea><svg onload=alert("p4")>',
    '</hx-partial><hx-partial hx-target="#krm-channel">p5</hx-partial>',
    "{{ 7*191 }}{% raw %}p6",
    "line\r\n\r\nevent: krm-close\ndata: p7\r\n",
)
P1, P2, P3, P4, P5, P6, P7 = PAYLOADS
FORBIDDEN_TAGS: t.Final = frozenset({"img", "svg", "iframe", "object", "embed"})
PARTIAL_TARGET: t.Final = re.compile(r"#krm-[0-9a-f]{12}(-[a-z0-9-]+)?\Z")
EVIL: t.Final = "evil"
NAMESPACE: t.Final = "app"


class Markup_(HTMLParser):
    """What a browser would build from a response: tags, attributes, partial targets and text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    handle_startendtag = handle_starttag

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def assert_inert(markup: str, where: str) -> str:
    """Fail if a payload became markup; returns the document's text (what a person reads)."""
    parser = Markup_()
    parser.feed(markup)
    parser.close()
    for tag, attrs in parser.tags:
        assert tag not in FORBIDDEN_TAGS, f"{where}: a <{tag}> element was injected: {attrs}"
        if tag == "script":
            assert attrs.get("src"), f"{where}: an inline <script> was injected"
        for name in attrs:
            assert not name.startswith("on"), f"{where}: an event handler attribute {name!r} was injected on <{tag}>"
            assert name in KNOWN_ATTRIBUTES or name.startswith(("data-", "aria-", "hx-")), (
                f"{where}: unexpected attribute {name!r} on <{tag}>"
            )
        if tag == "hx-partial":
            target = attrs.get("hx-target") or ""
            assert PARTIAL_TARGET.match(target), f"{where}: a partial targets {target!r}"
    assert "1337" not in markup, f"{where}: a template expression in a value was evaluated"
    return "".join(parser.text)


KNOWN_ATTRIBUTES: t.Final = frozenset(
    {
        "id",
        "class",
        "type",
        "name",
        "value",
        "for",
        "role",
        "hidden",
        "disabled",
        "checked",
        "href",
        "rel",
        "src",
        "lang",
        "charset",
        "content",
        "rows",
        "spellcheck",
        "autocomplete",
        "step",
        "inputmode",
        "title",
        "scope",
        "open",
        "method",
        "action",
        "required",
        "pattern",
        "autofocus",
        "nonce",
        "defer",
        "maxlength",
        "placeholder",
    }
)


def sse_data(stream: Stream) -> str:
    """The data of every channel message, joined (what the browser hands to htmx)."""
    return "\n".join(message.data for message in stream.messages)


# ----------------------------------------------------------------------- a hostile upstream --


def hostile_objects() -> list[dict[str, t.Any]]:
    victim = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "victim",
            "namespace": NAMESPACE,
            "uid": f"uid-{P2}",
            "resourceVersion": "10",
            "labels": {P1: P2, "tier": P3},
            "annotations": {P3: P4, "note": P5},
        },
        "data": {P1: P6, P2: "plain", "multi": P7, "k": "mine-before"},
    }
    others = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": payload,
                "namespace": NAMESPACE,
                "uid": f"u{index}-{payload}",
                "resourceVersion": str(index + 1),
                "labels": {"payload": payload},
            },
            "data": {payload: payload},
        }
        for index, payload in enumerate(PAYLOADS)
    ]
    return [victim, *others]


class HostileUpstream:
    """A plugged source serving hostile objects; :meth:`modify` sends someone else's change."""

    def __init__(self) -> None:
        self.objects = hostile_objects()
        self.queues: list[gevent.queue.Queue[SourceOp]] = []

    def source(self, scope: Scope, projection: str, principal: Principal) -> Iterator[SourceOp]:
        queue: gevent.queue.Queue[SourceOp] = gevent.queue.Queue()
        self.queues.append(queue)
        yield Snapshot([copy.deepcopy(o) for o in self.objects if _in_scope(scope, o)])
        while True:
            yield queue.get()

    def modify(self, obj: Mapping[str, t.Any]) -> None:
        for queue in self.queues:
            queue.put(Change("MODIFIED", copy.deepcopy(dict(obj))))
        gevent.sleep(0.05)


def _in_scope(scope: Scope, obj: Mapping[str, t.Any]) -> bool:
    metadata = obj["metadata"]
    return (
        scope.resource == "configmaps"
        and metadata["namespace"] == scope.namespace
        and (not scope.name or metadata["name"] == scope.name)
    )


POLICY: t.Final = ScopePolicy(
    targets=frozenset({TARGET, EVIL}),
    resources=(AllowedResource("", "configmaps"),),
    namespaces=frozenset({ANY_NAMESPACE}),
)


@pytest.fixture(scope="module")
def upstream() -> HostileUpstream:
    return HostileUpstream()


@pytest.fixture(scope="module")
def host(kube: KubeSimulator, upstream: HostileUpstream) -> Iterator[Flask]:
    app = make_host(kube, Recorder(), KRM_SCOPE_POLICY=POLICY)
    app.extensions["krm"].extension.plug_source(EVIL, upstream.source, app)
    yield app
    shut_down(app)


def page_url(path: str, scope: Scope, **params: str | list[str]) -> str:
    pairs = [(k, v) for k, values in params.items() for v in ([values] if isinstance(values, str) else values)]
    return f"{path}?scope={quote(scope.canonical_query(), safe='')}" + "".join(
        f"&{k}={quote(v, safe='')}" for k, v in pairs
    )


def evil_scope(name: str = "") -> Scope:
    return Scope(target=EVIL, version="v1", resource="configmaps", namespace=NAMESPACE, name=name)


COLUMNS: t.Final = ["/metadata/name", "/metadata/uid", "/metadata/labels", "/metadata/annotations", "/data"]


def test_hostile_objects_render_as_text_in_lists_editors_and_channels(host: Flask, upstream: HostileUpstream) -> None:
    browser = Browser(host, "editor")
    page = browser.open(page_url("/both", evil_scope(), name="victim", column=COLUMNS))
    text = assert_inert(page.html, "the page")
    for payload in (P1, P2, P3, P4, P5):
        assert payload in text or payload in html.unescape(page.html), f"{payload!r} is not shown"
    linked = browser.open(page_url("/list", evil_scope(), link="/objects/{namespace}/{name}", delete="1"))
    assert_inert(linked.html, "the linked list")
    row_uids = [
        json.loads(html.unescape(v))["uid"]
        for v in re.findall(r"hx-vals='([^']*)'", linked.html)
        if "uid" in html.unescape(v)
    ]
    assert sorted(row_uids) == sorted(o["metadata"]["uid"] for o in upstream.objects)  # hostile uids stay data
    links = [html.unescape(h) for h in re.findall(r'href="([^"]*)"', linked.html) if h.startswith("/objects/")]
    assert len(links) == len(upstream.objects)
    assert all(re.fullmatch(r"/objects/app/[A-Za-z0-9%._~-]+", link) for link in links), links  # every name URL-encoded

    editor = page.component("editor")
    headers = page.headers(editor)
    channel = page.channel().until_text(": connected")
    answers: list[TestResponse] = [
        browser.post(f"/krm/ui/components/{editor}/edit", form, headers)
        for form in (
            {"op": "set", "path": '["data", "k"]', "value": "mine"},
            {"op": "add_key", "path": '["data"]', "key": P2, "value": P4},
            {"op": "add_key", "path": '["data"]', "key": P2, "value": "again"},  # exists: the message names the key
            {"op": "add_key", "path": '["metadata", "labels"]', "key": P1, "value": "x"},
            {"op": P1, "path": '["data"]'},
            {"op": "set", "path": P2, "value": "x"},
            {"op": "rename_key", "path": '["data"]', "key": P1, "new_key": P3},
        )
    ]
    theirs = copy.deepcopy(upstream.objects[0])
    theirs["metadata"]["resourceVersion"] = "11"
    theirs["data"]["k"] = P4  # someone else's hostile value lands on an edited field: a conflict
    upstream.modify(theirs)
    channel.until_text("krm-conflict")
    for answer in answers:
        assert answer.status_code in (200, 400, 403, 409, 422), answer.get_data(as_text=True)
        assert_inert(answer.get_data(as_text=True), f"an edit answer ({answer.status_code})")
    assert "already exists" in html.unescape("".join(a.get_data(as_text=True) for a in answers))
    shown = assert_inert(sse_data(channel), "the channel")
    assert P4 in shown  # their value, as text, in the conflict panel
    assert not [m for m in channel.messages if m.event not in (None, "", "message")]  # no injected event
    channel.close()
    browser.close()


def test_hostile_values_cannot_break_the_json_stream_framing(host: Flask, upstream: HostileUpstream) -> None:
    browser = Browser(host, "editor")
    stream = browser.stream(f"{STREAM_URL}?{evil_scope().canonical_query()}").until(
        lambda s: "synced" in event_types(s)
    )
    browser.close()
    assert event_types(stream) == ["reset"] + ["added"] * len(upstream.objects) + ["synced"]
    assert not [m for m in stream.messages if m.event not in (None, "", "message")]
    delivered = {e["object"]["metadata"]["uid"]: e["object"] for e in stream.events if e["type"] == "added"}
    for original in upstream.objects:
        assert delivered[original["metadata"]["uid"]]["data"] == original["data"]  # every byte round-trips as data


def test_the_example_templates_render_hostile_objects_as_text(kube: KubeSimulator) -> None:
    upstream = HostileUpstream()
    # acting as itself: the objects come from a plugged source, not from a namespace of the cluster
    # where Kubernetes' RBAC would let ``editor`` delete, and the delete buttons must be drawn
    app = make_example(kube, EXAMPLE_NAMESPACES=(NAMESPACE,), EXAMPLE_IMPERSONATE=False)
    app.extensions["krm"].extension.plug_source(TARGET, upstream.source, app)  # the example's target, served hostile
    try:
        browser = Browser(app, "editor")
        overview = browser.open(f"/namespaces/{NAMESPACE}")
        shown = assert_inert(overview.html, "the example overview")
        assert P1 in shown and "Delete" in shown  # names as text; the managed list's delete buttons
        uids = [json.loads(html.unescape(v))["uid"] for v in re.findall(r"hx-vals='([^']*uid[^']*)'", overview.html)]
        assert f"uid-{P2}" in uids  # a hostile uid survives as data in the delete button, not as markup
        editor_page = browser.open(f"/namespaces/{NAMESPACE}/configmaps/victim")
        assert_inert(editor_page.html, "the example editor")
        channel = editor_page.channel().until_text(": connected").drain(0.3)
        assert_inert(sse_data(channel), "the example channel")
        browser.close()
    finally:
        shut_down(app)


# ------------------------------------------------------------------- errors echoing a value --


@pytest.fixture(scope="module")
def cluster_namespace(kube: KubeSimulator) -> str:
    namespace = make_namespace(kube, "escaping")
    create(
        kube, namespace, "configmaps", configmap("plain", namespace, {"greeting": "hello"}, annotations={"note": P2})
    )
    return namespace


def test_errors_that_echo_hostile_values_render_as_text(host: Flask, cluster_namespace: str) -> None:
    scope = Scope(target=TARGET, version="v1", resource="configmaps", namespace=cluster_namespace)
    browser = Browser(host, "editor")
    page = browser.open(page_url("/both", scope, name="plain", column=["/metadata/name", "/metadata/uid"]))
    assert_inert(page.html, "the page")
    editor, listed = page.component("editor"), page.component("list")
    headers = page.headers(editor)
    channel = page.channel().until_text(": connected")
    if 'data-krm-stream="live"' not in page.html:
        channel.until_text('data-krm-stream="live"')

    # Kubernetes refuses an invalid label value and quotes it in the 422 cause
    assert (
        browser.post(
            f"/krm/ui/components/{editor}/edit",
            {"op": "add_key", "path": '["metadata", "labels"]', "key": "bad", "value": P2[:60]},
            headers,
        ).status_code
        == 200
    )
    invalid = browser.post(f"/krm/ui/components/{editor}/actions/save", {}, headers)
    assert invalid.status_code == 422, invalid.get_data(as_text=True)
    shown = assert_inert(invalid.get_data(as_text=True), "the 422 outcome")
    assert "onerror=alert" in shown  # the quoted value, as text

    # a host's save hook refusing with a hostile reason, and one answering a hostile Status
    krm = host.extensions["krm"].extension
    original = krm.hooks.saver
    answers = []
    try:

        def refuse(request: WriteRequest) -> WriteResult:
            raise SaveRefused(P1)

        krm.save_hook(refuse)
        answers.append(browser.post(f"/krm/ui/components/{editor}/actions/save", {}, headers))
        causes = [
            {"field": P2, "message": P1, "reason": P3},
            {"field": "metadata.labels[bad]", "message": P4, "reason": "FieldValueInvalid"},
        ]
        krm.save_hook(
            lambda request: WriteResult(
                422, status={"kind": "Status", "reason": P5, "message": P1, "details": {"causes": causes}}
            )
        )
        answers.append(browser.post(f"/krm/ui/components/{editor}/actions/save", {}, headers))
        krm.save_hook(lambda request: WriteResult(400, status={"kind": "Status", "reason": P1, "message": P2}))
        answers.append(browser.post(f"/krm/ui/components/{editor}/actions/save", {}, headers))
    finally:
        krm.save_hook(original)
    for answer in answers:
        assert answer.status_code >= 400
        assert_inert(answer.get_data(as_text=True), f"a save outcome ({answer.status_code})")

    # a refused create names the hostile field; the review list renders it as text
    review = f"/krm/review/{listed}"
    list_headers = page.headers(listed)
    refused = browser.post(
        f"{review}/create", {"body": json.dumps({"metadata": {"name": "x"}, "spec": {P2: 1}})}, list_headers
    )
    assert refused.status_code == 422
    assert "onerror=alert" in assert_inert(refused.get_data(as_text=True), "a refused create")
    action = browser.post(f"/krm/ui/components/{editor}/actions/{quote(P2, safe='')}", {}, headers)
    assert action.status_code == 404, action.get_data(as_text=True)
    assert "onerror=alert" in assert_inert(action.get_data(as_text=True), "an unknown action's refusal")
    channel.drain(0.3)
    assert_inert(sse_data(channel), "the channel")
    channel.close()
    browser.close()


# ----------------------------------------------------------------------- the Markup review --

REVIEWED_MARKUP: t.Final = {
    # (file, the call's argument as written): why it is safe
    ("flask_krm/ui/render.py", "template.render(context)"): "an autoescaped .html template's output",
    ("flask_krm/ui/live.py", "render_template(template, **context)"): "an autoescaped .html template's output",
    ("flask_krm/save/fragments.py", "template.render(**context)"): "an autoescaped .html template's output",
    (
        "flask_krm/save/editor.py",
        "template.render(target_id=ctx.outcome_id, url=url, field=CONFIRM_FIELD)",
    ): "an autoescaped .html template's output",
    ("flask_krm/ui/assets.py", "' nonce=\"{}\"'"): "a literal; .format() escapes the nonce",
    ("flask_krm/ui/assets.py", '""'): "a literal",
    ("flask_krm/ui/assets.py", '\'<link rel="stylesheet" href="{}"{}>\''): "a literal; .format() escapes the URL",
    ("flask_krm/ui/assets.py", "'<script src=\"{}\"{}></script>'"): "a literal; .format() escapes the URL",
    ("flask_krm/ui/assets.py", '"\\n"'): "a literal joining escaped tags",
    ("flask_krm/htmx.py", '""'): "a literal",
    (
        "flask_krm/htmx.py",
        '\'<div class="krm-save-outcome krm-outcome-{0}" data-krm-outcome="{0}">\\n\'\n'
        "        '  <p class=\"krm-outcome-message\">{1}</p>{2}\\n</div>'",
    ): "a literal; .format() escapes the kind and the message (the detail is this module's escaped markup)",
    ("flask_krm/htmx.py", '\'<span class="krm-edits" hidden data-krm-edits="{}"></span>\''): (
        "a literal; .format() escapes the count"
    ),
    ("flask_krm/htmx.py", "'\\n  <p class=\"krm-outcome-detail\">{}</p>'"): "a literal; .format() escapes the detail",
    ("flask_krm/ui/editor_updates.py", "rendered_element"): (
        "one element rendered alone from its (autoescaped) template, stripped of surrounding whitespace,"
        " with an integer attribute added to its start tag"
    ),
}
_MARKUP_CALL = re.compile(r"\bMarkup\((?!\))")


def _argument(source: str, start: int) -> str:
    depth, position = 1, start
    while depth:
        char = source[position]
        depth += char == "("
        depth -= char == ")"
        position += 1
    return source[start : position - 1].strip()


def test_every_markup_and_safe_filter_is_reviewed() -> None:
    found: set[tuple[str, str]] = set()
    for path in sorted([*ROOT.glob("flask_krm/**/*.py"), *ROOT.glob("example_app/**/*.py")]):
        if "testing" in path.parts:
            continue
        source = path.read_text()
        for match in _MARKUP_CALL.finditer(source):
            found.add((str(path.relative_to(ROOT)), _argument(source, match.end())))
    assert found, "the search found no Markup() call at all"
    assert found <= set(REVIEWED_MARKUP), f"review these Markup() calls: {sorted(found - set(REVIEWED_MARKUP))}"
    unsafe = re.compile(r"\|\s*safe\b|autoescape\s+false|Markup\.unescape|\|\s*striptags")
    for path in sorted([*ROOT.glob("flask_krm/templates/**/*"), *ROOT.glob("example_app/templates/**/*")]):
        if path.is_file():
            assert path.suffix == ".html", f"{path} is not autoescaped by Flask (only .html, .htm, .xml, .xhtml are)"
            assert not unsafe.search(path.read_text()), f"{path} turns escaping off"


def test_the_hosts_escape_every_template_they_render(host: Flask) -> None:
    names = [name for name in host.jinja_env.list_templates() if name.startswith("krm/")]
    assert "krm/editor_body.html" in names
    for name in names:
        assert host.select_jinja_autoescape(name), name
    assert host.select_jinja_autoescape(None)  # render_template_string (the hosts' pages) escapes too
