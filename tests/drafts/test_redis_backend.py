"""Redis's own side of the draft backend (the contract it shares with the memory backend is in
test_backend.py): the URLs that name it, its key layout, the lifetimes its keys take, every call
reporting an unreachable server as ``BackendUnavailable``, a subscription across idle periods."""

from __future__ import annotations

import gevent
import pytest

from flask_krm.drafts import backend_from_url, checked_url
from flask_krm.drafts.backend import BackendUnavailable, session_tag
from flask_krm.drafts.redis_backend import RedisBackend
from tests.redis_server import RedisServer, free_port


def redis_backend(server: RedisServer) -> RedisBackend:
    found = backend_from_url(server.url)
    assert isinstance(found, RedisBackend)
    return found


@pytest.mark.parametrize("url", ["http://example", "redis", "postgres://x", "memcached://127.0.0.1"])
def test_only_redis_urls_name_a_backend(url: str) -> None:
    with pytest.raises(ValueError, match="KRM_DRAFTS_URL"):
        backend_from_url(url)


def test_a_refused_url_shows_its_scheme_and_never_its_password() -> None:
    assert checked_url(None) is None and checked_url("memory://") is None
    assert checked_url("rediss://:pw@redis:6380/0") == "rediss://:pw@redis:6380/0"
    with pytest.raises(ValueError, match="got http://...$") as refused:
        checked_url("http://user:secret@example")
    assert "secret" not in str(refused.value)
    with pytest.raises(ValueError, match="got 5$"):
        checked_url(5)


def test_every_key_of_a_session_shares_one_hash_tag_and_no_key_holds_the_session_id(clean_redis: RedisServer) -> None:
    drafts = redis_backend(clean_redis)
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


def test_redis_keys_take_the_lifetime_each_use_gives(clean_redis: RedisServer) -> None:
    drafts = redis_backend(clean_redis)
    drafts.write("s1", {"edit:a:u1": {"uid": "u1"}, "page:p": {"id": "p"}}, 10)
    keys = [drafts.key("s1", name) for name in ("records", "versions", "pages", "pages-used")]
    drafts.read("s1", ["page:p"], lifetime=1000)
    assert all(990 <= clean_redis.client().ttl(key) <= 1000 for key in keys)
    drafts.read_versioned("s1", "edit:", lifetime=2000)
    assert all(1990 <= clean_redis.client().ttl(key) <= 2000 for key in keys)
    drafts.touch("s1", 3000)
    assert all(2990 <= clean_redis.client().ttl(key) <= 3000 for key in keys)
    drafts.write("s1", {"y": 2}, 100)
    assert all(95 <= clean_redis.client().ttl(key) <= 100 for key in keys)


def test_an_unreachable_redis_is_reported_as_unavailable_by_every_call_that_needs_it() -> None:
    drafts = backend_from_url(f"redis://127.0.0.1:{free_port()}/0")
    for call in (
        lambda: drafts.read("s1"),
        lambda: drafts.read_versioned("s1", ""),
        lambda: drafts.write("s1", {"x": 1}, 60),
        lambda: drafts.swap("s1", {"x": 1}, {}, 60),
        lambda: drafts.touch("s1", 60),
        lambda: drafts.lock("s1", "e", 1),
        lambda: drafts.drop("s1"),
        lambda: drafts.publish({"x": 1}),
        lambda: drafts.ping(),
        lambda: next(iter(drafts.messages())),
    ):
        with pytest.raises(BackendUnavailable):
            call()
    drafts.unlock("s1", "e", 1)  # a lock it cannot release expires by itself


def test_the_subscription_outlives_idle_periods_longer_than_the_socket_timeout(clean_redis: RedisServer) -> None:
    """``pubsub.listen()`` on a client with a socket timeout raised ``TimeoutError`` after one idle
    timeout on every redis-py release before 8.0.1 (checked down to 5.0.0, the former floor), so a
    quiet deployment dropped and re-made its subscription every two seconds, losing what was
    published in between: setup.cfg requires ``redis>=8.0.1``."""
    import redis

    short = RedisBackend(redis.Redis.from_url(clean_redis.url, socket_timeout=0.3, socket_connect_timeout=0.3))
    writer = redis_backend(clean_redis)
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
