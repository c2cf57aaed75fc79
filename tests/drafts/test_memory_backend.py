"""The memory backend's own properties (the contract it shares with Redis is in test_backend.py):
what it holds ends with the process, and its expiry follows the clock it is given."""

from __future__ import annotations

from flask_krm.drafts import backend_from_url
from flask_krm.drafts.memory_backend import MemoryBackend
from tests.redis_server import RedisServer


def test_memory_drafts_end_with_the_process_and_redis_drafts_outlive_it(clean_redis: RedisServer) -> None:
    assert backend_from_url(None).outlives_process is False
    assert backend_from_url("memory://").outlives_process is False
    assert backend_from_url(clean_redis.url).outlives_process is True


def test_memory_records_and_locks_follow_the_clock_given() -> None:
    clock = [0.0]
    drafts = MemoryBackend(lambda: clock[0])
    drafts.write("s1", {"x": 1}, 60)
    first = drafts.lock("s1", "e", 5)
    clock[0] = 59.0
    assert drafts.read("s1", lifetime=60) == {"x": 1} and drafts.lock("s1", "e", 5) is not None
    clock[0] = 118.0
    assert drafts.read("s1") == {"x": 1}
    clock[0] = 119.5
    assert drafts.read("s1") == {}
    assert first is not None and not drafts.write("s1", {"x": 1}, 60, fence=("e", first))


def test_a_subscription_gets_what_is_published_after_it_subscribed_until_it_is_closed() -> None:
    drafts = MemoryBackend()
    drafts.publish({"before": True})  # nobody subscribed: goes nowhere
    first, second = drafts.messages(), drafts.messages()
    assert next(first) == {} and next(second) == {}
    drafts.publish({"n": 1})
    assert next(first) == {"n": 1} and next(second) == {"n": 1}
    first.close()
    drafts.publish({"n": 2})
    assert next(second) == {"n": 2}
