"""Invariant 16: one session never sees or changes another session's drafts.

Three browser sessions watch the same object: two of the same user and one of another user. A
draft, a page, a save outcome, a staged delete and the recovery copy of a deleted object's draft
stay in the session that made them, whatever ids the others send. Signing out and in as someone
else on the same cookie starts from nothing, and a cookie kept from before reaches nothing new.
"""

from __future__ import annotations

import re
import secrets
import typing as t
from collections.abc import Iterator
from urllib.parse import quote

import pytest
from flask import Flask

from flask_krm import Scope
from flask_krm.csrf import FIELD
from flask_krm.testing.simulator import KubeSimulator

from .hosts import (
    TARGET,
    Browser,
    Page,
    Recorder,
    Stream,
    configmap,
    create,
    csrf_headers,
    make_example,
    make_host,
    make_namespace,
    read,
    shut_down,
)

NAMESPACE: t.Final = "isolation"
NAME: t.Final = "shared"


@pytest.fixture(scope="module")
def host(kube: KubeSimulator) -> Iterator[Flask]:
    make_namespace(kube, NAMESPACE)
    create(kube, NAMESPACE, "configmaps", configmap(NAME, NAMESPACE, {"greeting": "hello"}))
    app = make_host(kube, Recorder())
    yield app
    shut_down(app)


def both_url() -> str:
    scope = Scope(target=TARGET, version="v1", resource="configmaps", namespace=NAMESPACE)
    return (
        f"/both?scope={quote(scope.canonical_query(), safe='')}&name={NAME}&column=/metadata/name&column=/metadata/uid"
    )


@t.final
class Session:
    """One browser session with the page open and its channel read."""

    def __init__(self, app: Flask, user: str) -> None:
        self.browser = Browser(app, user)
        self.page: Page = self.browser.open(both_url())
        self.editor = self.page.component("editor")
        self.listed = self.page.component("list")
        self.channel: Stream = self.page.channel().until_text(": connected")
        if 'data-krm-stream="live"' not in self.page.html:
            self.channel.until_text('data-krm-stream="live"')

    def post(self, path: str, data: dict[str, str] | None = None, page_id: str | None = None) -> t.Any:
        headers = self.page.headers(self.editor)
        if page_id is not None:
            headers = csrf_headers(self.browser.csrf_token(), page_id)
        return self.browser.post(path, data or {}, headers)

    def edit(self, form: dict[str, str], page_id: str | None = None) -> t.Any:
        return self.post(f"/krm/ui/components/{self.editor}/edit", form, page_id)

    def reload(self) -> str:
        return self.browser.open(both_url()).html

    def seen(self) -> str:
        """Everything this session was sent: its pages and its channel."""
        self.channel.drain(0.3)
        return self.page.html + self.channel.text

    def close(self) -> None:
        self.browser.close()


@pytest.fixture
def sessions(host: Flask) -> Iterator[tuple[Session, Session, Session]]:
    opened = (Session(host, "editor"), Session(host, "editor"), Session(host, "viewer"))
    yield opened
    for session in opened:
        session.close()


def test_drafts_pages_and_save_state_stay_in_their_session(
    sessions: tuple[Session, Session, Session], kube: KubeSimulator
) -> None:
    mine, same_user, other_user = sessions
    draft = f"draft-{secrets.token_hex(6)}"
    assert mine.edit({"op": "set", "path": '["data", "greeting"]', "value": draft}).status_code == 200
    mine.channel.until_text(draft)
    assert draft in mine.reload()
    for other in (same_user, other_user):
        assert draft not in other.seen() + other.reload()

    # another session sends this session's page id: the page is not theirs
    for other in (same_user, other_user):
        answer = other.edit({"op": "set", "path": '["data", "greeting"]', "value": "hijack"}, page_id=mine.page.page_id)
        assert answer.status_code == 404
        assert (
            other.post(f"/krm/ui/components/{mine.editor}/actions/save", page_id=mine.page.page_id).status_code == 404
        )
        stolen = other.browser.stream(mine.page.channel_url or "").until_end()
        assert "krm-close" in stolen.text and draft not in stolen.text
    assert "hijack" not in mine.seen() + mine.reload()

    # a refused save leaves its outcome in this session only
    assert (
        mine.edit({"op": "add_key", "path": '["metadata", "labels"]', "key": "bad", "value": "not valid!"}).status_code
        == 200
    )
    refused = mine.post(f"/krm/ui/components/{mine.editor}/actions/save")
    assert 'data-krm-outcome="invalid"' in refused.get_data(as_text=True)
    for other in (same_user, other_user):
        answer = other.post(f"/krm/ui/components/{other.editor}/actions/save", {"krm_confirm": "1"})
        assert 'data-krm-outcome="nothing-to-save"' in answer.get_data(as_text=True), answer.get_data(as_text=True)
        assert 'data-krm-outcome="nothing-to-save"' in other.post(
            f"/krm/ui/components/{other.editor}/actions/save"
        ).get_data(as_text=True)
    assert read(kube, NAMESPACE, "configmaps", NAME)["data"] == {"greeting": "hello"}  # type: ignore[index]


def test_staged_deletes_stay_in_their_session(sessions: tuple[Session, Session, Session], kube: KubeSimulator) -> None:
    mine, same_user, other_user = sessions
    uid = read(kube, NAMESPACE, "configmaps", NAME)["metadata"]["uid"]  # type: ignore[index]
    staged = mine.browser.post(f"/krm/review/{mine.listed}/delete", {"uid": uid}, mine.page.headers(mine.listed))
    assert staged.status_code == 200 and 'data-krm-review-kind="delete"' in staged.get_data(as_text=True)
    for other in (same_user, other_user):
        review = other.browser.client.get(f"/krm/review/{other.listed}", headers=other.page.headers(other.listed))
        assert 'data-krm-review-kind="delete"' not in review.get_data(as_text=True)
        saved = other.browser.post(f"/krm/review/{other.listed}/save", {}, other.page.headers(other.listed))
        assert saved.status_code == 200
        assert read(kube, NAMESPACE, "configmaps", NAME) is not None  # nobody else's Save deletes it
        key = re.search(r'hx-vals=\'\{"key": "([^"]+)"\}\'', staged.get_data(as_text=True))
        assert key is not None
        discard = other.browser.post(
            f"/krm/review/{other.listed}/discard", {"key": key.group(1)}, other.page.headers(other.listed)
        )
        assert discard.status_code == 404
    assert (
        mine.browser.post(
            f"/krm/review/{mine.listed}/discard", {"key": uid}, mine.page.headers(mine.listed)
        ).status_code
        == 200
    )


def test_the_recovery_copy_of_a_deleted_object_stays_in_its_session(
    sessions: tuple[Session, Session, Session], kube: KubeSimulator
) -> None:
    mine, same_user, other_user = sessions
    draft = f"rescued-{secrets.token_hex(6)}"
    assert mine.edit({"op": "set", "path": '["data", "greeting"]', "value": draft}).status_code == 200
    mine.channel.until_text(draft)
    from .hosts import admin_writer

    current = read(kube, NAMESPACE, "configmaps", NAME)
    assert current is not None
    try:
        assert (
            admin_writer(kube)
            .delete(
                Scope(target=TARGET, version="v1", resource="configmaps", namespace=NAMESPACE, name=NAME),
                uid=current["metadata"]["uid"],
            )
            .ok
        )
        mine.channel.until_text("krm-recovery")
        assert draft in mine.channel.text.split("krm-recovery", 1)[1]
        for other in (same_user, other_user):
            other.channel.until_text("does not exist")
            assert draft not in other.seen() + other.reload()
            assert "krm-recovery" not in other.seen()
    finally:
        create(kube, NAMESPACE, "configmaps", configmap(NAME, NAMESPACE, {"greeting": "hello"}))


# ------------------------------------------------------------------- sign-out, then sign-in --


@pytest.fixture(scope="module")
def example(kube: KubeSimulator) -> Iterator[Flask]:
    app = make_example(kube)
    yield app
    shut_down(app)


def sign_in(browser: Browser, user: str) -> None:
    browser.open("/sign-in")
    answer = browser.post("/sign-in", {"username": user, "password": user, FIELD: browser.csrf_token() or ""})
    assert answer.status_code == 302, answer.get_data(as_text=True)


def sign_out(browser: Browser) -> None:
    assert browser.post("/sign-out", {FIELD: browser.csrf_token() or ""}).status_code == 302


def test_another_user_on_the_same_cookie_never_sees_the_first_users_drafts(example: Flask) -> None:
    url = "/namespaces/demo/configmaps/app-config"
    browser = Browser(example)
    sign_in(browser, "editor")
    page = browser.open(url)
    editor = page.component("editor")
    draft = f"editor-only-{secrets.token_hex(6)}"
    answer = browser.post(
        f"/krm/ui/components/{editor}/edit",
        {"op": "add_key", "path": '["data"]', "key": "private", "value": draft},
        page.headers(editor),
    )
    assert answer.status_code == 200
    assert draft in browser.open(url).html
    with browser.client.session_transaction() as session:
        kept_cookie = dict(session)  # what someone holding the old cookie could replay

    sign_out(browser)
    sign_in(browser, "viewer")
    viewer_page = browser.open(url)
    channel = viewer_page.channel().until_text(": connected").drain(0.5)
    assert draft not in viewer_page.html + channel.text
    old_channel = browser.stream(page.channel_url or "").until_end()
    assert "krm-close" in old_channel.text and draft not in old_channel.text
    stale = browser.post(
        f"/krm/ui/components/{editor}/edit",
        {"op": "revert", "path": '["data"]'},
        csrf_headers(browser.csrf_token(), page.page_id),
    )
    assert stale.status_code == 404

    sign_out(browser)
    sign_in(browser, "editor")  # the same person again, after someone else used the browser
    assert draft not in browser.open(url).html

    replayed = Browser(example)
    with replayed.client.session_transaction() as session:
        session.update(kept_cookie)
    assert draft not in replayed.open(url).html
    browser.close()
