"""The page channel: one stream per page, fragments for exactly the components that changed."""

from __future__ import annotations

import json
import re
import typing as t

import gevent
import pytest
from flask import Flask
from flask.testing import FlaskClient

from flask_krm.runtime import runtime
from flask_krm.sse import message
from flask_krm.ui.channel import framed
from tests.ui.conftest import (
    CONFIGMAPS,
    ChannelReader,
    PageHandle,
    Upstream,
    configmap,
    connect,
    field_id,
    open_page,
)
from tests.ui.test_rendering import editor_url


def targets(data: str) -> list[str]:
    return re.findall(r'<hx-partial hx-target="#([^"]+)" hx-swap="innerMorph">', data)


def nothing_more(reader: ChannelReader, wait: float = 0.3) -> bool:
    try:
        reader.next(timeout=wait)
    except gevent.Timeout:
        return True
    return False


def test_only_the_component_that_changed_is_sent(client: FlaskClient, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1"}))
    page = open_page(client, "/both")
    list_id, editor_id = page.component_ids
    reader = connect(page)
    assert nothing_more(reader), "the first connection resent what the page painted"
    upstream.modified(configmap("demo", {"a": "2"}, rv="2"))
    message = reader.next()
    assert message.event is None
    assert targets(message.data) == [], "the editor sends the changed field alone, not its body"
    assert f'<hx-partial hx-target="#{field_id(editor_id, ("data", "a"))}" hx-swap="outerMorph">' in message.data
    assert 'value="2"' in message.data and list_id not in message.data
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "2"}, rv="2"), configmap("zeta", {}))
    message = reader.next()
    assert targets(message.data) == [], "the list sends the new row alone, not its body"
    assert f'<hx-partial hx-target="#{list_id}-rows" hx-swap="beforeend"><tr' in message.data
    assert ">zeta</th>" in message.data and f"{editor_id}-body" not in message.data
    reader.close()


def test_a_reconnection_resends_every_component(client: FlaskClient, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1"}))
    page = open_page(client, "/both")
    connect(page).close()
    reader = connect(page)
    message = reader.next()
    assert sorted(targets(message.data)) == sorted(f"{cid}-body" for cid in page.component_ids)
    reader.close()


def test_an_edit_reaches_every_tab_of_the_session_and_no_other_session(
    app: Flask, client: FlaskClient, upstream: Upstream
) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1"}))
    first = open_page(client, editor_url())
    second = open_page(client, editor_url())
    assert first.page_id != second.page_id
    stranger_client = app.test_client()
    stranger_client.get("/login/editor")
    stranger = open_page(stranger_client, editor_url())
    readers = [connect(first), connect(second), connect(stranger)]
    cid = first.component_ids[0]
    assert first.edit(cid, op="set", path=json.dumps(["data", "a"]), value="draft-value").status_code == 200
    for reader in readers[:2]:
        message = reader.next()
        assert 'value="draft-value"' in message.data
        assert "krm-dirty-marker" in message.data
    assert nothing_more(readers[2])
    upstream.modified(configmap("demo", {"a": "1", "b": "new"}, rv="2"))
    stranger_message = readers[2].next()
    assert "draft-value" not in stranger_message.data and 'value="new"' in stranger_message.data
    assert 'value="draft-value"' in readers[0].next().data
    for reader in readers:
        reader.close()


def test_a_conflict_is_announced_and_its_panel_pushed(client: FlaskClient, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1"}))
    page = open_page(client, editor_url())
    cid = page.component_ids[0]
    reader = connect(page)
    page.edit(cid, op="set", path=json.dumps(["data", "a"]), value="mine")
    reader.next()
    upstream.modified(configmap("demo", {"a": "theirs"}, rv="2"))
    message = reader.next()
    assert f'id="{field_id(cid, ("data", "a"))}-conflict"' in message.data
    assert re.search(r'role="status" aria-live="polite">1 field was changed by someone else', message.data)
    assert 'value="mine"' in message.data
    reader.close()


def test_an_unknown_page_is_closed_for_good(client: FlaskClient, upstream: Upstream) -> None:
    response = client.get("/krm/ui/pages/not-a-page/channel", buffered=True)
    assert response.status_code == 200 and response.mimetype == "text/event-stream"
    assert (
        response.get_data(as_text=True) == "event: krm-close\ndata: This page has expired: reload it to continue.\n\n"
    )
    assert response.headers["Cache-Control"] == "no-store"


def test_a_signed_out_session_is_closed_for_good(client: FlaskClient, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1"}))
    page = open_page(client, editor_url())
    client.get("/logout")
    response = client.get(page.channel_url or "", buffered=True)
    assert "event: krm-close\ndata: You are signed out" in response.get_data(as_text=True)


def test_a_terminal_error_shows_its_reason_then_closes(client: FlaskClient, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1"}))
    page = open_page(client, editor_url())
    reader = connect(page)
    upstream.fail(CONFIGMAPS, "FORBIDDEN", "access revoked", terminal=True)
    message = reader.next()
    assert 'data-krm-stream="terminal" data-krm-reason="You may not view this."' in message.data
    close = reader.next()
    assert (close.event, close.data) == ("krm-close", "You may not view this.")
    reader.close()


def test_an_unavailable_upstream_is_shown_as_retrying(client: FlaskClient, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1"}))
    page = open_page(client, editor_url())
    reader = connect(page)
    upstream.fail(CONFIGMAPS, "UPSTREAM_UNAVAILABLE", "connection refused", terminal=False)
    message = reader.next()
    assert 'data-krm-stream="retrying"' in message.data
    cid = page.component_ids[0]
    # the fields keep what they show: only the stream state is replaced
    assert re.findall(r'hx-target="#([^"]+)"', message.data) == [f"{cid}-stream"]
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1"}))
    assert 'data-krm-stream="live"' in reader.next().data
    reader.close()


def test_shutdown_closes_the_channel_with_a_reason(app: Flask, client: FlaskClient, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1"}))
    page = open_page(client, editor_url())
    reader = connect(page)
    assert nothing_more(reader, 0.1)
    stopping = gevent.spawn(runtime(app).shutdown)
    close = reader.next()
    assert close.event == "krm-close" and "restarting" in close.data
    with pytest.raises(EOFError):
        reader.next()
    stopping.join(timeout=5)
    assert stopping.successful()


def test_shutdown_offers_unsaved_changes_for_copy_out_before_it_closes(
    app: Flask, client: FlaskClient, upstream: Upstream
) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1"}))
    page = open_page(client, editor_url())
    clean = open_page(client, "/configmaps")
    reader, clean_reader = connect(page), connect(clean)
    cid = page.component_ids[0]
    assert page.edit(cid, op="set", path=json.dumps(["data", "a"]), value="typed-here").status_code == 200
    assert 'value="typed-here"' in reader.next().data
    stopping = gevent.spawn(runtime(app).shutdown)
    copy_out = reader.next()
    assert "server is restarting" in copy_out.data and "krm-recovery-copy" in copy_out.data
    assert "typed-here" in copy_out.data and 'value="typed-here"' not in copy_out.data  # text to copy, no form
    assert reader.next().event == "krm-close"
    assert clean_reader.next().event == "krm-close", "nothing unsaved there: no copy-out"
    stopping.join(timeout=5)
    assert stopping.successful()


def test_an_idle_channel_sends_heartbeats(app: Flask, client: FlaskClient, upstream: Upstream) -> None:
    app.config["KRM_HEARTBEAT_INTERVAL"] = 0.05
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1"}))
    page = open_page(client, editor_url())
    reader = connect(page)
    assert reader.chunk() == b": connected\n\n"
    assert reader.chunk() == b": heartbeat\n\n"
    reader.close()


def test_a_clean_object_is_rendered_once_for_every_session(app: Flask, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1"}))
    cache = runtime(app).cache
    pages: list[PageHandle] = []
    for _ in range(3):
        session = app.test_client()
        session.get("/login/editor")
        pages.append(open_page(session, editor_url()))
    bodies = {re.search(r'<div id="krm-[0-9a-f]+-body".*?</section>', p.html, re.S).group(0) for p in pages}  # type: ignore[union-attr]
    assert len(bodies) == 1
    assert cache.misses == 1 and cache.hits == 2
    cid = pages[0].component_ids[0]
    pages[0].edit(cid, op="set", path=json.dumps(["data", "a"]), value="mine")
    before = (cache.hits, cache.misses)
    drafted = open_page(pages[0].client, editor_url())
    assert (cache.hits, cache.misses) == before, "a session's draft went through the shared cache"
    assert 'value="mine"' in drafted.html
    assert 'value="mine"' not in open_page(pages[1].client, editor_url()).html


def test_the_upstream_subscription_ends_when_no_page_holds_it(
    app: Flask, client: FlaskClient, upstream: Upstream, monkeypatch: t.Any
) -> None:
    import flask_krm.ui.live as live

    monkeypatch.setattr(live, "RENDER_HOLD", 0.05)
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1"}))
    page = open_page(client, editor_url())
    reader = connect(page)
    gevent.sleep(0.1)
    assert len(upstream.connections) == 1, "the channel holds the feed after the render hold"
    reader.close()
    with gevent.Timeout(2):
        while upstream.connections:
            gevent.sleep(0.01)
    assert not next(iter(runtime(app).feeds.values())).running


def test_the_same_partials_are_framed_once_for_every_session() -> None:
    parts = ['<hx-partial hx-target="#a">one\ntwo</hx-partial>', '<hx-partial hx-target="#b">3</hx-partial>']
    first = framed(list(parts))
    assert first == message("\n".join(parts))
    assert framed(list(parts)) is first  # the same partials (as every clean session gets them): one message
    equal = [part.encode().decode() for part in parts]  # equal text, other objects: framed again, the same
    assert framed(equal) == first
    assert framed(parts[:1]) == message(parts[0])
