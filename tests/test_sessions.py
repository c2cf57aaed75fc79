"""Per-session drafts: isolation between principals and sessions, expiry, bounds."""

from __future__ import annotations

import dataclasses
import json
import re
import typing as t
from collections.abc import Iterator
from pathlib import Path

import gevent
import pytest
from flask import Flask, render_template_string, request
from flask.testing import FlaskClient

from flask_krm import DraftLimitReached, KrmStream, Principal, Scope, Unauthenticated
from flask_krm.events import Reset, Synced, Upsert
from flask_krm.ops import Snapshot, SourceOp
from flask_krm.sessions import MAX_PAGE_STATES, DraftRegistry, Limits, SessionDrafts
from flask_krm.store import EditPolicy, LiveResourceStore
from tests import corpus
from tests.apps import make_app

CONFIGMAPS = Scope(target="demo", version="v1", resource="configmaps", namespace="app")
SECRETS = Scope(target="demo", version="v1", resource="secrets", namespace="app")
DEPLOYMENTS = Scope(target="demo", group="apps", version="v1", resource="deployments", namespace="app")
FULL = "krm-full/v1"
UID = "cm-app-0001"
HX_HEADERS = re.compile(r"hx-headers(?::inherited)?='([^']+)'")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def loaded_store() -> LiveResourceStore:
    """A store holding the corpus ConfigMap ``app-config`` after a complete snapshot cycle."""
    store = LiveResourceStore()
    store.apply(Reset(scope=CONFIGMAPS.to_wire(), projection=FULL))
    store.apply(Upsert("added", corpus.body("cm-app.v1")))
    store.apply(Synced())
    return store


def edit(store: LiveResourceStore, value: str = "debug") -> None:
    store.set_value(UID, ("data", "log-level"), value)


LIMITS = Limits(store_expiry=60.0, session_lifetime=3600.0, max_stores=2)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def registry(clock: Clock) -> DraftRegistry:
    return DraftRegistry(clock)


def namespace(registry: DraftRegistry, name: str = "editor", sid: str = "s1") -> SessionDrafts:
    return registry.namespace(sid, name, LIMITS)


# ------------------------------------------------------------------------------ the registry --


def test_a_store_is_made_once_per_scope_and_projection(registry: DraftRegistry) -> None:
    drafts = namespace(registry)
    store = drafts.store(CONFIGMAPS, FULL, loaded_store)
    assert drafts.store(CONFIGMAPS, FULL, pytest.fail) is store
    assert drafts.find(CONFIGMAPS, FULL) is store
    assert drafts.find(CONFIGMAPS, "krm-spec/v1") is None
    assert drafts.store(CONFIGMAPS, "krm-spec/v1", LiveResourceStore) is not store
    assert namespace(registry).find(CONFIGMAPS, FULL) is store  # another handle on the same namespace


def test_each_edit_policy_gets_its_own_store(registry: DraftRegistry) -> None:
    drafts = namespace(registry)
    default = drafts.store(CONFIGMAPS, FULL, loaded_store)
    labels_only = EditPolicy.only(("metadata", "labels"))
    narrowed = drafts.store(CONFIGMAPS, FULL, loaded_store, policy=labels_only)
    assert narrowed is not default
    assert drafts.find(CONFIGMAPS, FULL, policy=labels_only) is narrowed
    assert drafts.find(CONFIGMAPS, FULL) is default
    assert drafts.find(CONFIGMAPS, FULL, policy=EditPolicy.only(("data",))) is None


def test_namespaces_are_keyed_by_session_and_principal(registry: DraftRegistry) -> None:
    mine = namespace(registry, "editor", "s1").store(CONFIGMAPS, FULL, loaded_store)
    assert namespace(registry, "viewer", "s1").find(CONFIGMAPS, FULL) is None
    assert namespace(registry, "editor", "s2").find(CONFIGMAPS, FULL) is None
    assert namespace(registry, "editor", "s1").find(CONFIGMAPS, FULL) is mine


def test_idle_clean_stores_expire_and_dirty_ones_are_kept(registry: DraftRegistry, clock: Clock) -> None:
    drafts = namespace(registry)
    clean = drafts.store(CONFIGMAPS, FULL, loaded_store)
    dirty = drafts.store(SECRETS, FULL, loaded_store)
    edit(dirty)
    clock.now += 59
    namespace(registry)
    assert drafts.find(CONFIGMAPS, FULL) is clean
    clock.now += 61
    namespace(registry)
    assert drafts.find(CONFIGMAPS, FULL) is None
    clock.now += 1000
    assert namespace(registry).find(SECRETS, FULL) is dirty


def test_a_namespace_expires_with_the_session_lifetime(registry: DraftRegistry, clock: Clock) -> None:
    drafts = namespace(registry, "editor")
    edit(drafts.store(CONFIGMAPS, FULL, loaded_store))
    namespace(registry, "viewer").page_state("page")
    assert len(registry) == 2
    clock.now += 3601
    namespace(registry, "viewer")
    assert len(registry) == 0
    assert namespace(registry, "editor").find(CONFIGMAPS, FULL) is None


def test_a_namespace_left_empty_by_expiry_is_forgotten(registry: DraftRegistry, clock: Clock) -> None:
    namespace(registry, "editor").store(CONFIGMAPS, FULL, loaded_store)
    assert len(registry) == 1
    clock.now += 61
    namespace(registry, "viewer")
    assert len(registry) == 0


def test_looking_holds_nothing(registry: DraftRegistry) -> None:
    """A namespace is made by the first store or page state, never by a lookup."""
    for n in range(100):
        drafts = namespace(registry, "editor", f"s{n}")
        assert drafts.find(CONFIGMAPS, FULL) is None
        assert drafts.find_page_state("page") is None
        assert drafts.keys() == []
        drafts.discard(CONFIGMAPS, FULL)
    assert len(registry) == 0
    namespace(registry, "editor", "s1").page_state("page")
    assert len(registry) == 1


def test_the_registry_drops_its_least_recently_used_clean_namespace(registry: DraftRegistry, clock: Clock) -> None:
    limits = dataclasses.replace(LIMITS, max_sessions=3)
    first = registry.namespace("s1", "editor", limits).store(CONFIGMAPS, FULL, loaded_store)
    dirty = registry.namespace("s2", "editor", limits).store(CONFIGMAPS, FULL, loaded_store)
    edit(dirty)
    registry.namespace("s3", "editor", limits).page_state("page")
    clock.now += 1
    assert registry.namespace("s1", "editor", limits).find(CONFIGMAPS, FULL) is first  # s1 used again: s3 is older
    registry.namespace("s4", "editor", limits).page_state("page")
    assert len(registry) == 3
    assert registry.namespace("s3", "editor", limits).find_page_state("page") is None
    assert registry.namespace("s1", "editor", limits).find(CONFIGMAPS, FULL) is first
    assert registry.namespace("s2", "editor", limits).find(CONFIGMAPS, FULL) is dirty


def test_a_registry_full_of_unsaved_edits_refuses_a_new_namespace(registry: DraftRegistry) -> None:
    limits = dataclasses.replace(LIMITS, max_sessions=2)
    for sid in ("s1", "s2"):
        edit(registry.namespace(sid, "editor", limits).store(CONFIGMAPS, FULL, loaded_store))
    with pytest.raises(DraftLimitReached) as caught:
        registry.namespace("s3", "editor", limits).page_state("page")
    assert caught.value.code == 409
    assert len(registry) == 2
    assert registry.namespace("s1", "editor", limits).find(CONFIGMAPS, FULL) is not None


def test_the_least_recently_used_clean_store_makes_room(registry: DraftRegistry, clock: Clock) -> None:
    drafts = namespace(registry)
    first = drafts.store(CONFIGMAPS, FULL, loaded_store)
    clock.now += 1
    drafts.store(SECRETS, FULL, loaded_store)
    clock.now += 1
    drafts.find(CONFIGMAPS, FULL)
    clock.now += 1
    drafts.store(DEPLOYMENTS, FULL, loaded_store)
    assert drafts.find(SECRETS, FULL) is None
    assert drafts.find(CONFIGMAPS, FULL) is first
    assert [key.scope for key in drafts.keys()] == [CONFIGMAPS, DEPLOYMENTS]


def test_stores_with_unsaved_edits_are_never_evicted(registry: DraftRegistry) -> None:
    drafts = namespace(registry)
    edit(drafts.store(CONFIGMAPS, FULL, loaded_store))
    edit(drafts.store(SECRETS, FULL, loaded_store))
    with pytest.raises(DraftLimitReached, match="2 views with unsaved changes") as caught:
        drafts.store(DEPLOYMENTS, FULL, loaded_store)
    assert caught.value.code == 409
    assert len(drafts.keys()) == 2


def test_discard_drops_a_store_with_its_drafts(registry: DraftRegistry) -> None:
    drafts = namespace(registry)
    edit(drafts.store(CONFIGMAPS, FULL, loaded_store))
    drafts.discard(CONFIGMAPS, FULL)
    assert drafts.find(CONFIGMAPS, FULL) is None


def test_a_sessions_locks_are_its_own_and_fence_out_an_older_holder(registry: DraftRegistry) -> None:
    drafts, other = namespace(registry), namespace(registry, sid="s2")
    token = drafts.lock("flow:a:u1", 10)
    assert token is not None and drafts.lock("flow:a:u1", 10) is None
    assert other.lock("flow:a:u1", 10) is not None and drafts.lock("flow:a:u2", 10) is not None
    drafts.unlock("flow:a:u1", token)
    newer = drafts.lock("flow:a:u1", 10)
    assert newer is not None and newer > token
    assert not drafts.write_records({"flow:a:u1": {"phase": "late"}}, fence=("flow:a:u1", token))
    assert drafts.write_records({"flow:a:u1": {"phase": "now"}}, fence=("flow:a:u1", newer))
    assert drafts.record("flow:a:u1") == {"phase": "now"} and other.record("flow:a:u1") is None


def test_page_state_persists_and_is_bounded(registry: DraftRegistry) -> None:
    drafts = namespace(registry)
    drafts.page_state("first")["scroll"] = 10
    for n in range(MAX_PAGE_STATES - 1):
        drafts.page_state(n)
    drafts.page_state("first")
    drafts.page_state("one more")
    assert drafts.page_state("first") == {"scroll": 10}
    assert drafts.page_state(0) == {}


# ----------------------------------------------------------------------- through the requests --


def drafts_app(tmp_path: Path) -> tuple[Flask, KrmStream]:
    """An app with routes that show and edit the caller's draft of ``app-config``."""
    app = make_app(tmp_path, KRM_TARGETS={})
    krm = KrmStream(app, authorizer=lambda *args: True)

    @app.get("/drafts")
    def show() -> str:
        scope = dataclasses.replace(CONFIGMAPS, name=request.args.get("name", ""))
        store = krm.runtime().session_drafts().find(scope, FULL)
        return "none" if store is None else json.dumps(store.draft(UID))

    @app.get("/drafts/edit/<value>")
    def change(value: str) -> str:
        edit(krm.runtime().session_drafts().store(CONFIGMAPS, FULL, loaded_store), value)
        return "ok"

    return app, krm


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Flask, KrmStream]]:
    app, krm = drafts_app(tmp_path)
    yield app, krm
    krm.shutdown(app)


@pytest.fixture
def app(served: tuple[Flask, KrmStream]) -> Flask:
    return served[0]


@pytest.fixture
def krm(served: tuple[Flask, KrmStream]) -> KrmStream:
    return served[1]


def signed_in(app: Flask, name: str) -> FlaskClient:
    client = app.test_client()
    client.get(f"/login/{name}")
    return client


def test_two_users_never_share_drafts(app: Flask) -> None:
    editor = signed_in(app, "editor")
    viewer = signed_in(app, "viewer")
    editor.get("/drafts/edit/debug")
    assert viewer.get("/drafts").data == b"none"
    viewer.get("/drafts/edit/trace")
    assert json.loads(editor.get("/drafts").data)["data"]["log-level"] == "debug"
    assert json.loads(viewer.get("/drafts").data)["data"]["log-level"] == "trace"


def test_the_session_id_is_random_128_bits_and_the_cookie_names_no_principal(app: Flask) -> None:
    first, second = signed_in(app, "editor"), signed_in(app, "editor")
    first.get("/drafts")
    second.get("/drafts")
    with first.session_transaction() as one, second.session_transaction() as two:
        assert re.fullmatch(r"[0-9a-f]{32}", one["_krm_sid"])
        assert one["_krm_sid"] != two["_krm_sid"]
        assert "editor" not in one["_krm_owner"]
    assert second.get("/drafts").data == b"none"


def test_a_principal_change_on_the_same_browser_gets_fresh_drafts(app: Flask, krm: KrmStream) -> None:
    browser = signed_in(app, "editor")
    browser.get("/drafts/edit/debug")
    with browser.session_transaction() as session:
        editor_sid = session["_krm_sid"]
    browser.get("/logout")
    browser.get("/login/viewer")
    assert browser.get("/drafts").data == b"none"
    with browser.session_transaction() as session:
        assert session["_krm_sid"] != editor_sid
    browser.get("/logout")
    browser.get("/login/editor")
    assert browser.get("/drafts").data == b"none", "drafts of an earlier sign-in were reused"
    assert all(key[0] != editor_sid for key in krm.runtime(app).drafts._namespaces)


def test_sign_out_ends_the_draft_session_and_a_copied_cookie_opens_nothing(app: Flask, krm: KrmStream) -> None:
    browser = signed_in(app, "editor")
    browser.get("/drafts/edit/debug")
    with browser.session_transaction() as session:
        sid = session["_krm_sid"]
    cookie = browser.get_cookie("session")
    assert cookie is not None

    replayed = app.test_client()
    replayed.set_cookie("session", cookie.value)  # signed in, with the session's id
    assert json.loads(replayed.get("/drafts").data)["data"]["log-level"] == "debug"  # the copy works...
    browser.get("/logout")
    with browser.session_transaction() as session:
        assert "_krm_sid" not in session and "_krm_owner" not in session
    assert all(key[0] != sid for key in krm.runtime(app).drafts._namespaces)
    replayed.set_cookie("session", cookie.value)
    answer = replayed.get("/drafts")  # ...until the person signs out: then it opens nothing
    assert answer.status_code in (200, 401) and b"debug" not in answer.data and b"log-level" not in answer.data
    browser.get("/login/editor")
    assert browser.get("/drafts").data == b"none", "signing in again starts clean"


def test_end_session_is_the_call_for_hosts_without_flask_login(app: Flask, krm: KrmStream) -> None:
    app.add_url_rule("/end", "end", lambda: (krm.end_session(), "ended")[1])
    browser = signed_in(app, "editor")
    browser.get("/drafts/edit/debug")
    with browser.session_transaction() as session:
        sid = session["_krm_sid"]
    assert browser.get("/end").data == b"ended"
    assert all(key[0] != sid for key in krm.runtime(app).drafts._namespaces)
    assert browser.get("/drafts").data == b"none"


def test_a_replayed_session_id_is_useless_to_another_principal(app: Flask) -> None:
    editor = signed_in(app, "editor")
    editor.get("/drafts/edit/debug")
    with editor.session_transaction() as session:
        stolen = session["_krm_sid"]
    viewer = signed_in(app, "viewer")
    with viewer.session_transaction() as session:
        session["_krm_sid"] = stolen
    assert viewer.get("/drafts").data == b"none"
    with viewer.session_transaction() as session:
        assert session["_krm_sid"] != stolen


def test_drafts_need_a_signed_in_principal(app: Flask, krm: KrmStream) -> None:
    with app.test_request_context(), pytest.raises(Unauthenticated):
        krm.runtime().session_drafts()
    assert app.test_client().get("/drafts").status_code == 401


# --------------------------------------------------- guessed identifiers through the live UI --


class OneConfigMap:
    """A plugged source: a snapshot of ``app-config``, then nothing until the stream closes."""

    def __call__(self, scope: Scope, projection: str, principal: Principal) -> Iterator[SourceOp]:
        yield Snapshot([corpus.body("cm-app.v1")])
        gevent.sleep(3600)


def test_another_user_cannot_edit_a_draft_through_guessed_identifiers(tmp_path: Path) -> None:
    # Not the ``app`` fixture: pytest-flask's pushed context would share ``g`` (and so the page
    # being rendered) between the two users' requests, which never happens in production.
    app, krm = drafts_app(tmp_path)
    krm.plug_source("demo", OneConfigMap(), app)

    @app.get("/editor")
    def editor_page() -> str:
        return render_template_string(
            '{% import "krm/_macros.html" as krm %}'
            '{{ krm.editor("target=demo&version=v1&resource=configmaps&namespace=app", "app-config") }}'
        )

    owner = signed_in(app, "editor")
    with gevent.Timeout(5):
        page = owner.get("/editor").get_data(as_text=True)
    edit_url = re.search(r'/krm/ui/components/[^/"]+/edit', page)
    headers = HX_HEADERS.search(page)
    assert edit_url is not None and headers is not None
    owner_headers = json.loads(headers.group(1))
    form = {"op": "set", "path": json.dumps(["data", "log-level"]), "value": "debug"}
    assert owner.post(edit_url.group(0), headers=owner_headers, data=form).status_code == 200
    assert json.loads(owner.get("/drafts?name=app-config").data)["data"]["log-level"] == "debug"

    intruder = signed_in(app, "viewer")
    with gevent.Timeout(5):
        intruder_page = intruder.get("/editor").get_data(as_text=True)
    intruder_match = HX_HEADERS.search(intruder_page)
    assert intruder_match is not None
    intruder_headers = json.loads(intruder_match.group(1))
    guessed = {**intruder_headers, "X-KRM-Page": owner_headers["X-KRM-Page"]}
    response = intruder.post(edit_url.group(0), headers=guessed, data={**form, "value": "trace"})
    assert response.status_code == 404
    assert json.loads(owner.get("/drafts?name=app-config").data)["data"]["log-level"] == "debug"
    assert json.loads(intruder.get("/drafts?name=app-config").data)["data"]["log-level"] == "info"
    krm.shutdown(app)
    assert not krm.runtime(app).group


def test_looking_up_unknown_pages_never_evicts_a_real_one(registry: DraftRegistry) -> None:
    drafts = namespace(registry)
    drafts.page_state("real")["page"] = "kept"
    for n in range(MAX_PAGE_STATES * 2):
        assert drafts.find_page_state(f"guessed-{n}") is None
    assert drafts.find_page_state("real") == {"page": "kept"}


# ------------------------------------------------------------- clients that drop the cookie --


def cookieless_app(tmp_path: Path, **config: t.Any) -> tuple[Flask, KrmStream]:
    """An app whose principal comes from a header (as behind an authenticating proxy), so a client
    can be signed in on every request while never returning the session cookie."""
    app, krm = drafts_app(tmp_path)
    app.config.update(config)
    krm.principal_loader(lambda: Principal(request.headers["X-User"]) if "X-User" in request.headers else None)
    krm.plug_source("demo", OneConfigMap(), app)

    @app.get("/editor")
    def editor_page() -> str:
        return render_template_string(
            '{% import "krm/_macros.html" as krm %}'
            '{{ krm.editor("target=demo&version=v1&resource=configmaps&namespace=app", "app-config") }}'
        )

    return app, krm


def test_requests_that_only_look_hold_nothing_for_a_client_without_cookies(tmp_path: Path) -> None:
    app, krm = cookieless_app(tmp_path)
    registry = krm.runtime(app).drafts
    headers = {"X-User": "editor"}
    for n in range(50):
        client = app.test_client(use_cookies=False)
        assert client.get("/drafts", headers=headers).data == b"none"
        channel = client.get(f"/krm/ui/pages/page-{n}/channel", headers=headers)
        assert b"krm-close" in channel.get_data()
    assert len(registry) == 0
    krm.shutdown(app)


def test_pages_rendered_for_a_client_without_cookies_stay_within_max_sessions(tmp_path: Path) -> None:
    app, krm = cookieless_app(tmp_path, KRM_MAX_SESSIONS=3)
    registry = krm.runtime(app).drafts
    for _ in range(6):
        with gevent.Timeout(5):
            page = app.test_client(use_cookies=False).get("/editor", headers={"X-User": "editor"})
        assert page.status_code == 200 and "krm-channel" in page.get_data(as_text=True)
        assert 1 <= len(registry) <= 3
    assert len(registry) == 3
    krm.shutdown(app)
