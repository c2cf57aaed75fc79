"""The draft backends on their own: records, expiry, locks with fencing tokens, messages, layout."""

from __future__ import annotations

import typing as t

import gevent
import pytest

from flask_krm.drafts.backend import BackendUnavailable, DraftBackend, MemoryBackend, backend_from_url, session_tag
from flask_krm.drafts.redis_backend import RedisBackend
from flask_krm.drafts.sync import EDIT, DraftSync, field_name
from flask_krm.store import Edit, EditRecord
from tests.redis_server import RedisServer, free_port
from tests.store.objects import CM_UID, configmap, modified, store_with


def backend(server: RedisServer) -> RedisBackend:
    found = backend_from_url(server.url)
    assert isinstance(found, RedisBackend)
    return found


def test_records_are_written_removed_and_read_back_as_json(clean_redis: RedisServer) -> None:
    drafts = backend(clean_redis)
    assert drafts.read("s1") == {}
    assert drafts.write("s1", {"edit:a:u1": {"uid": "u1", "edits": []}, "page:p": {"id": "p"}}, 60)
    assert drafts.write("s1", {"page:p": None, "flow:a:u1": {"phase": "idle"}}, 60)
    assert drafts.read("s1") == {"edit:a:u1": {"uid": "u1", "edits": []}, "flow:a:u1": {"phase": "idle"}}
    assert drafts.read("s2") == {}
    drafts.drop("s1")
    assert drafts.read("s1") == {}


def test_every_key_of_a_session_shares_one_hash_tag_and_no_key_holds_the_session_id(clean_redis: RedisServer) -> None:
    drafts = backend(clean_redis)
    session_id = "f" * 32
    drafts.write(session_id, {"x": 1}, 60)
    token = drafts.lock(session_id, "flow:a:u1", 5)
    assert token is not None
    keys = sorted(k.decode() for k in clean_redis.client().keys("*"))
    tag = session_tag(session_id)
    assert keys == [
        f"krm:{{{tag}}}:fence:flow:a:u1",
        f"krm:{{{tag}}}:lock:flow:a:u1",
        f"krm:{{{tag}}}:records",
        f"krm:{{{tag}}}:versions",
    ]
    assert session_id not in clean_redis.keys_and_values().decode()


def test_records_expire_with_the_session_lifetime_and_each_write_renews_it(clean_redis: RedisServer) -> None:
    drafts = backend(clean_redis)
    drafts.write("s1", {"x": 1}, 100)
    key = drafts.key("s1", "records")
    assert 95 <= clean_redis.client().ttl(key) <= 100
    drafts.write("s1", {"y": 2}, 3600)
    assert 3590 <= clean_redis.client().ttl(key) <= 3600
    drafts.write("s1", {"z": 3}, 1)
    gevent.sleep(2.2)
    assert drafts.read("s1") == {}


def test_a_lock_gives_growing_fencing_tokens_and_only_its_holder_releases_it(clean_redis: RedisServer) -> None:
    drafts = backend(clean_redis)
    first = drafts.lock("s1", "e", 30)
    assert first is not None
    assert drafts.lock("s1", "e", 30) is None
    assert drafts.lock("s2", "e", 30) is not None  # another session's lock
    drafts.unlock("s1", "e", first + 1)  # not the holder
    assert drafts.lock("s1", "e", 30) is None
    drafts.unlock("s1", "e", first)
    second = drafts.lock("s1", "e", 30)
    assert second is not None and second > first


def test_an_expired_lock_can_be_taken_and_the_old_token_can_no_longer_write(clean_redis: RedisServer) -> None:
    drafts = backend(clean_redis)
    old = drafts.lock("s1", "e", 0.2)
    assert old is not None
    gevent.sleep(0.4)
    new = drafts.lock("s1", "e", 30)
    assert new is not None and new > old
    assert not drafts.write("s1", {"flow": "stale"}, 60, fence=("e", old))
    assert drafts.write("s1", {"flow": "current"}, 60, fence=("e", new))
    assert drafts.read("s1") == {"flow": "current"}


def test_a_write_tells_the_other_workers_through_one_subscription(clean_redis: RedisServer) -> None:
    writer, reader = backend(clean_redis), backend(clean_redis)
    received: list[dict[str, object]] = []

    def listen() -> None:
        for message in reader.messages():
            if message:  # the first, empty, says the subscription holds
                received.append(message)

    listener = gevent.spawn(listen)
    try:
        deadline = 5.0
        while clean_redis.client().pubsub_numsub(reader.channel)[0][1] < 1 and deadline > 0:
            gevent.sleep(0.02)
            deadline -= 0.02
        writer.write("s1", {"x": 1}, 60, message={"worker": "a", "records": {"x": 1}})
        with gevent.Timeout(5):
            while not received:
                gevent.sleep(0.01)
        assert received == [{"versions": {"x": 1}, "worker": "a", "records": {"x": 1}}]
    finally:
        listener.kill()


def test_an_unreachable_server_is_reported_as_unavailable() -> None:
    drafts = backend_from_url(f"redis://127.0.0.1:{free_port()}/0")
    for call in (
        lambda: drafts.read("s1"),
        lambda: drafts.write("s1", {"x": 1}, 60),
        lambda: drafts.lock("s1", "e", 1),
        lambda: drafts.drop("s1"),
        lambda: next(iter(drafts.messages())),
    ):
        with pytest.raises(BackendUnavailable):
            call()


def test_the_memory_backend_keeps_nothing_but_its_locks_and_fences() -> None:
    clock = [0.0]
    drafts = MemoryBackend(lambda: clock[0])
    assert drafts.shared is False
    assert drafts.write("s1", {"x": 1}, 60) and drafts.read("s1") == {}
    first = drafts.lock("s1", "e", 5)
    assert first is not None and drafts.lock("s1", "e", 5) is None
    clock[0] = 6.0
    second = drafts.lock("s1", "e", 5)
    assert second is not None and second > first
    assert not drafts.write("s1", {"x": 1}, 60, fence=("e", first))
    assert drafts.write("s1", {"x": 1}, 60, fence=("e", second))


@pytest.mark.parametrize("url", ["http://example", "redis", "postgres://x", "memcached://127.0.0.1"])
def test_only_redis_urls_name_a_backend(url: str) -> None:
    with pytest.raises(ValueError, match="KRM_DRAFTS_URL"):
        backend_from_url(url)


def test_a_message_overtaken_by_a_newer_record_changes_nothing_and_is_never_written_back(
    clean_redis: RedisServer,
) -> None:
    drafts = backend(clean_redis)
    store = store_with(configmap())
    sync = DraftSync(drafts, "worker-b")
    sync.attach("session", "store-1", store, 60.0)
    name = field_name(EDIT, "store-1", CM_UID)

    def record(value: str, sequence: int) -> dict[str, t.Any]:
        return EditRecord(CM_UID, (Edit(("data", "level"), "info", value),), (), sequence).to_json()

    drafts.write("session", {name: record("second", 2)}, 60.0)  # another worker's newest: version 1
    for late, version in ((record("second", 2), 1), (record("first", 1), 0)):  # its messages, the older one late
        sync.receive(
            {
                "worker": "worker-a",
                "session": session_tag("session"),
                "records": {name: late},
                "versions": {name: version},
            }
        )
    assert store.draft(CM_UID)["data"]["level"] == "second" and store.edit_sequence(CM_UID) == 2
    drafts.write("session", {name: record("third", 3)}, 60.0)  # newer still; its message not here yet
    store.apply(modified(configmap("2", level="info", replicas="4")))  # a server change notifies the store
    assert drafts.read("session")[name] == record("third", 3), "the newest record was overwritten"
    sync.catch_up("session", "store-1")
    assert store.draft(CM_UID)["data"] == {"level": "third", "replicas": "4"}


@pytest.fixture(params=["memory", "redis"])
def any_backend(request: pytest.FixtureRequest) -> DraftBackend:
    if request.param == "memory":
        return MemoryBackend()
    return backend(request.getfixturevalue("clean_redis"))


def test_a_swap_writes_only_over_the_version_it_expects_and_of_two_at_once_exactly_one_lands(
    any_backend: DraftBackend,
) -> None:
    assert any_backend.swap("s1", {"edit:a:u1": {"n": 1}}, {"edit:a:u1": 0}, 60) == {"edit:a:u1": 1}
    assert any_backend.swap("s1", {"edit:a:u1": {"n": 2}}, {"edit:a:u1": 0}, 60) is None  # stale
    assert any_backend.write("s1", {"edit:a:u1": None}, 60)  # removing a record counts as a write
    assert any_backend.read_versioned("s1", "edit:a:")["edit:a:u1"][1] == 2
    landed = gevent.joinall(
        [gevent.spawn(any_backend.swap, "s1", {"edit:a:u1": {"n": n}}, {"edit:a:u1": 2}, 60) for n in range(8)]
    )
    assert sorted(str(g.value) for g in landed) == ["None"] * 7 + ["{'edit:a:u1': 3}"]
    assert any_backend.swap("s2", {"edit:a:u1": {"n": 1}}, {"edit:a:u1": 0}, 60) == {"edit:a:u1": 1}  # per session
    if any_backend.shared:
        assert any_backend.read("s1")["edit:a:u1"] in [{"n": n} for n in range(8)]


def test_page_records_are_kept_apart_and_capped_least_recently_used_first(clean_redis: RedisServer) -> None:
    drafts = RedisBackend(clean_redis.client(), max_pages=5)
    drafts.write("s1", {"edit:a:u1": {"uid": "u1"}}, 60)
    for n in range(5):
        drafts.write("s1", {f"page:p{n}": {"id": n}}, 60)
    assert drafts.read("s1", ["page:p0"]) == {"page:p0": {"id": 0}}  # used: no longer the least recent
    for n in range(5, 8):
        drafts.write("s1", {f"page:p{n}": {"id": n}}, 60)
    held = clean_redis.client().hkeys(drafts.key("s1", "pages"))
    assert sorted(k.decode() for k in held) == ["page:p0", "page:p4", "page:p5", "page:p6", "page:p7"]
    assert drafts.read("s1") == {"edit:a:u1": {"uid": "u1"}}  # the person's records never hold pages
    assert drafts.read("s1", ["page:p1", "page:p7"]) == {"page:p7": {"id": 7}}


def test_reading_with_a_lifetime_and_touching_renew_every_key_of_the_session(clean_redis: RedisServer) -> None:
    drafts = backend(clean_redis)
    drafts.write("s1", {"edit:a:u1": {"uid": "u1"}, "page:p": {"id": "p"}}, 10)
    keys = [drafts.key("s1", name) for name in ("records", "versions", "pages", "pages-used")]
    drafts.read("s1", ["page:p"], lifetime=1000)
    assert all(990 <= clean_redis.client().ttl(key) <= 1000 for key in keys)
    drafts.read_versioned("s1", "edit:", lifetime=2000)
    assert all(1990 <= clean_redis.client().ttl(key) <= 2000 for key in keys)
    drafts.touch("s1", 3000)
    assert all(2990 <= clean_redis.client().ttl(key) <= 3000 for key in keys)


class LostAnswer:
    """A backend whose first swap lands but whose answer is lost (a timeout after the write)."""

    def __init__(self, inner: RedisBackend) -> None:
        self.inner = inner
        self.lost = 0

    def __getattr__(self, name: str) -> t.Any:
        return getattr(self.inner, name)

    def swap(self, *args: t.Any, **kwargs: t.Any) -> dict[str, int] | None:
        written = self.inner.swap(*args, **kwargs)
        if not self.lost:
            self.lost += 1
            raise BackendUnavailable("timed out")
        return written


def test_an_edit_whose_write_landed_without_an_answer_is_neither_lost_nor_made_twice(clean_redis: RedisServer) -> None:
    drafts = LostAnswer(backend(clean_redis))
    store = store_with(configmap())
    sync = DraftSync(t.cast(DraftBackend, drafts), "worker-a")
    sync.attach("session", "store-1", store, 60.0)
    made = []

    def apply() -> None:
        made.append(1)
        store.set_value(CM_UID, ("data", "level"), f"edit-{len(made)}")

    sync.edit("session", "store-1", apply)
    assert drafts.lost == 1 and made == [1] and not sync.unavailable
    name = field_name(EDIT, "store-1", CM_UID)
    held = drafts.inner.read_versioned("session", "edit:")[name]
    assert held[1] == 1 and EditRecord.from_json(held[0]).edits[0].mine == "edit-1"
    sync.edit("session", "store-1", apply)  # the next edit builds on the version that landed
    assert drafts.inner.read_versioned("session", "edit:")[name][1] == 2


def test_the_subscription_outlives_idle_periods_longer_than_the_socket_timeout(clean_redis: RedisServer) -> None:
    """``pubsub.listen()`` on a client with a socket timeout raised ``TimeoutError`` after one idle
    timeout on every redis-py release before 8.0.1 (checked down to 5.0.0, the former floor), so a
    quiet deployment dropped and re-made its subscription every two seconds, losing what was
    published in between: setup.cfg requires ``redis>=8.0.1``."""
    import redis

    short = RedisBackend(redis.Redis.from_url(clean_redis.url, socket_timeout=0.3, socket_connect_timeout=0.3))
    writer = backend(clean_redis)
    received: list[dict[str, object]] = []
    failures: list[BaseException] = []

    def listen() -> None:
        try:
            for message in short.messages():
                received.append(message)
        except BaseException as exc:  # noqa: BLE001 - what ended it is the finding
            failures.append(exc)

    listener = gevent.spawn(listen)
    try:
        with gevent.Timeout(5):
            while clean_redis.client().pubsub_numsub(short.channel)[0][1] < 1:
                gevent.sleep(0.02)
        gevent.sleep(1.0)  # more than three socket timeouts with nothing published
        writer.publish({"worker": "a", "after": "idle"})
        with gevent.Timeout(5):
            while len(received) < 2 and not failures:
                gevent.sleep(0.01)
        assert not failures, failures
        assert received == [{}, {"worker": "a", "after": "idle"}]  # subscribed, then the message
    finally:
        listener.kill()
