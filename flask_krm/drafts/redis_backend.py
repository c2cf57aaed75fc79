"""Drafts in Redis: they survive restarts and every worker of a deployment shares them.

Key layout (every key of one browser session shares one hash tag, so a Redis Cluster keeps them
in one slot and a multi-key script stays legal; the tag is a digest of the session id, never the
id itself)::

    <prefix>:{<session digest>}:records       hash: field -> JSON record (page records aside)
    <prefix>:{<session digest>}:versions      hash: field -> how many times it was written
    <prefix>:{<session digest>}:pages         hash: page:<page id> -> JSON page record
    <prefix>:{<session digest>}:pages-used    sorted set: page:<page id> -> when last used (ms)
    <prefix>:{<session digest>}:lock:<name>   the holder's fencing token; expires with the lock
    <prefix>:{<session digest>}:fence:<name>  the last fencing token given for <name>
    <prefix>:changes                          the one pub/sub channel every worker subscribes to

The first four expire together, with the session lifetime from the session's last use (a read
with a lifetime, a write, :meth:`RedisBackend.touch`). Page records live apart from the person's
records, so reading those (each request does) never costs more with the pages a session loaded,
and at most ``max_pages`` of them are kept: a write past it drops the least recently used.

The ``redis`` client is used as is (with ``hiredis`` parsing replies where it is installed); under
gevent its sockets cooperate with other greenlets.
"""

from __future__ import annotations

import json
import time
import typing as t
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager

import redis
import redis.exceptions

from .backend import MAX_PAGE_RECORDS, BackendUnavailable, Message, Record, Versioned, dump, is_page_field, session_tag

UNAVAILABLE: t.Final = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)
"""The client's errors that mean "Redis cannot be reached now" (a loading server included)."""


@contextmanager
def reaching() -> Iterator[None]:
    """Where the client's :data:`UNAVAILABLE` errors become :class:`BackendUnavailable`: the one
    translation, around every call that talks to Redis."""
    try:
        yield
    except UNAVAILABLE as exc:
        raise BackendUnavailable(str(exc)) from None


FENCE_LIFETIME: t.Final = 7 * 24 * 3600
"""Seconds a fencing counter outlives its last lock (far beyond any session)."""

_LOCK = """
if redis.call('exists', KEYS[1]) == 1 then return 0 end
local token = redis.call('incr', KEYS[2])
redis.call('set', KEYS[1], token, 'PX', ARGV[1])
redis.call('expire', KEYS[2], ARGV[2])
return token
"""

_WRITE = """
if ARGV[2] ~= '' and redis.call('get', KEYS[5]) ~= ARGV[2] then return {0} end
local i = 8
for _ = 1, tonumber(ARGV[7]) do
  if tonumber(redis.call('hget', KEYS[2], ARGV[i]) or '0') ~= tonumber(ARGV[i + 1]) then return {-1} end
  i = i + 2
end
local out, versions, pages = {1}, {}, false
while i <= #ARGV do
  local name, value = ARGV[i], ARGV[i + 1]
  if string.sub(name, 1, 5) == 'page:' then
    pages = true
    if value == '' then
      redis.call('hdel', KEYS[3], name)
      redis.call('zrem', KEYS[4], name)
    else
      redis.call('hset', KEYS[3], name, value)
      redis.call('zadd', KEYS[4], ARGV[5], name)
    end
  else
    if value == '' then redis.call('hdel', KEYS[1], name) else redis.call('hset', KEYS[1], name, value) end
    local version = redis.call('hincrby', KEYS[2], name, 1)
    versions[name] = version
    out[#out + 1] = name
    out[#out + 1] = version
  end
  i = i + 2
end
if pages then
  local extra = redis.call('zcard', KEYS[4]) - tonumber(ARGV[6])
  if extra > 0 then
    redis.call('hdel', KEYS[3], unpack(redis.call('zrange', KEYS[4], 0, extra - 1)))
    redis.call('zremrangebyrank', KEYS[4], 0, extra - 1)
  end
end
for k = 1, 4 do redis.call('expire', KEYS[k], ARGV[1]) end
if ARGV[3] ~= '' then
  local encoded = '{}'
  if #out > 1 then encoded = cjson.encode(versions) end
  redis.call('publish', ARGV[3], '{"versions":' .. encoded .. ',' .. string.sub(ARGV[4], 2))
end
return out
"""
"""Set and remove fields of a session's records, count their versions, keep at most ``max_pages``
page records, renew the session's expiry and publish a change (its new versions added), in one
round trip. Answers ``{1, field, version, ...}``; ``{0}`` when a fencing token is given and a newer
one was handed out since; ``{-1}`` when a field is no longer at the version expected."""

_UNLOCK = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""


class RedisBackend:
    """A :class:`~flask_krm.drafts.backend.DraftBackend` on one Redis server (or a proxy to many).

    :param client: a ``redis.Redis`` client (``decode_responses`` off).
    :param prefix: the first part of every key and of the channel.
    """

    outlives_process = True

    def __init__(self, client: redis.Redis, prefix: str = "krm", *, max_pages: int = MAX_PAGE_RECORDS) -> None:
        self.client = client
        self.prefix = prefix
        self.max_pages = max_pages
        self.channel = f"{prefix}:changes"
        self._write_script = client.register_script(_WRITE)
        self._lock_script = client.register_script(_LOCK)
        self._unlock_script = client.register_script(_UNLOCK)

    @classmethod
    def from_url(cls, url: str, prefix: str = "krm") -> RedisBackend:
        """A backend on the Redis server at ``url`` (short timeouts: a draft never waits long)."""
        client = redis.Redis.from_url(url, socket_timeout=2.0, socket_connect_timeout=2.0, health_check_interval=15)
        return cls(client, prefix)

    def key(self, session_id: str, name: str) -> str:
        """The Redis key ``name`` (``records``, ``lock:<editor>``, ...) of ``session_id``."""
        return f"{self.prefix}:{{{session_tag(session_id)}}}:{name}"

    def _keys(self, session_id: str) -> list[str]:
        """The keys that expire together: records, versions, pages, pages-used."""
        return [self.key(session_id, name) for name in ("records", "versions", "pages", "pages-used")]

    def _renewing(self, pipe: t.Any, session_id: str, lifetime: float | None) -> None:
        if lifetime is not None:
            for key in self._keys(session_id):
                pipe.expire(key, _seconds(lifetime))

    def read(
        self, session_id: str, fields: Collection[str] | None = None, *, lifetime: float | None = None
    ) -> dict[str, Record]:
        records, _, pages, used = self._keys(session_id)
        pipe = self.client.pipeline(transaction=False)
        if fields is None:
            pipe.hgetall(records)
            names: list[str] = []
        else:
            names = [name for name in fields if not is_page_field(name)]
            page_names = [name for name in fields if is_page_field(name)]
            pipe.hmget(records, names) if names else pipe.echo(b"")
            pipe.hmget(pages, page_names) if page_names else pipe.echo(b"")
            if page_names:
                pipe.zadd(used, {name: _now_ms() for name in page_names}, xx=True)
        self._renewing(pipe, session_id, lifetime)
        with reaching():
            answers = pipe.execute()
        if fields is None:
            held = t.cast(dict[bytes, bytes], answers[0])
            return {field.decode(): json.loads(value) for field, value in held.items()}
        found: dict[str, Record] = {}
        for group, values in ((names, answers[0]), (page_names, answers[1])):
            for name, value in zip(group, values if group else (), strict=True):
                if value is not None:
                    found[name] = json.loads(value)
        return found

    def read_versioned(self, session_id: str, prefix: str, *, lifetime: float | None = None) -> dict[str, Versioned]:
        records, versions = self._keys(session_id)[:2]
        pipe = self.client.pipeline(transaction=True)  # the records and their versions as of one moment
        pipe.hgetall(records)
        pipe.hgetall(versions)
        self._renewing(pipe, session_id, lifetime)
        with reaching():
            held, counted = pipe.execute()[:2]
        values = {f.decode(): v for f, v in t.cast(dict[bytes, bytes], held).items()}
        versions_of = {f.decode(): int(v) for f, v in t.cast(dict[bytes, bytes], counted).items()}
        found: dict[str, Versioned] = {}
        for name in {*values, *versions_of}:  # a record written before versions were kept counts as 0
            if name.startswith(prefix):
                value = values.get(name)
                found[name] = (json.loads(value) if value is not None else None, versions_of.get(name, 0))
        return found

    def write(
        self,
        session_id: str,
        records: Mapping[str, Record | None],
        lifetime: float,
        *,
        fence: tuple[str, int] | None = None,
        message: Message | None = None,
    ) -> bool:
        return self._run_write(session_id, records, {}, lifetime, fence, message) is not None

    def swap(
        self,
        session_id: str,
        records: Mapping[str, Record | None],
        expect: Mapping[str, int],
        lifetime: float,
        *,
        message: Message | None = None,
    ) -> dict[str, int] | None:
        return self._run_write(session_id, records, expect, lifetime, None, message)

    def _run_write(
        self,
        session_id: str,
        records: Mapping[str, Record | None],
        expect: Mapping[str, int],
        lifetime: float,
        fence: tuple[str, int] | None,
        message: Message | None,
    ) -> dict[str, int] | None:
        keys = [*self._keys(session_id), self.key(session_id, f"fence:{fence[0]}" if fence else "records")]
        args: list[str | int | float] = [
            _seconds(lifetime),
            str(fence[1]) if fence else "",
            self.channel if message is not None else "",
            dump(message) if message is not None else "",
            _now_ms(),
            self.max_pages,
            len(expect),
        ]
        for field, version in expect.items():
            args += [field, version]
        for field, value in records.items():
            args += [field, "" if value is None else dump(value)]
        with reaching():
            answer = t.cast(list[t.Any], self._write_script(keys=keys, args=args))
        if int(answer[0]) != 1:
            return None
        return {answer[i].decode(): int(answer[i + 1]) for i in range(1, len(answer), 2)}

    def touch(self, session_id: str, lifetime: float) -> None:
        pipe = self.client.pipeline(transaction=False)
        self._renewing(pipe, session_id, lifetime)
        with reaching():
            pipe.execute()

    def drop(self, session_id: str) -> None:
        with reaching():
            self.client.delete(*self._keys(session_id))

    def lock(self, session_id: str, name: str, ttl: float) -> int | None:
        keys = [self.key(session_id, f"lock:{name}"), self.key(session_id, f"fence:{name}")]
        with reaching():
            token = int(self._lock_script(keys=keys, args=[max(1, int(ttl * 1000)), FENCE_LIFETIME]))
        return token or None

    def unlock(self, session_id: str, name: str, token: int) -> None:
        try:
            self._unlock_script(keys=[self.key(session_id, f"lock:{name}")], args=[token])
        except UNAVAILABLE:
            pass  # the lock expires by itself

    def publish(self, message: Message) -> None:
        with reaching():
            self.client.publish(self.channel, dump(message))

    def messages(self) -> Iterator[Message]:
        pubsub = self.client.pubsub(ignore_subscribe_messages=True)  # type: ignore[no-untyped-call]
        try:
            yield from self._received(pubsub)
        finally:
            try:
                pubsub.close()
            except UNAVAILABLE:
                pass

    def _received(self, pubsub: t.Any) -> Iterator[Message]:
        with reaching():
            pubsub.subscribe(self.channel)
            pubsub.ping()  # answered once the subscription holds
            for item in pubsub.listen():
                if item.get("type") == "pong":
                    yield {}
                    continue
                if item.get("type") != "message":
                    continue
                try:
                    message = json.loads(item["data"])
                except ValueError:
                    continue
                if isinstance(message, dict):
                    yield message

    def ping(self) -> str:
        with reaching():
            self.client.ping()
        return "reachable"

    def close(self) -> None:
        self.client.close()


def _seconds(lifetime: float) -> int:
    return max(1, int(lifetime + 0.999))


def _now_ms() -> int:
    return int(time.time() * 1000)
