"""Drafts in Redis: they survive restarts and every worker of a deployment shares them.

Key layout (every key of one browser session shares one hash tag, so a Redis Cluster keeps them
in one slot and a multi-key script stays legal; the tag is a digest of the session id, never the
id itself)::

    <prefix>:{<session digest>}:records       hash: field -> JSON record; expires with the session
    <prefix>:{<session digest>}:lock:<name>   the holder's fencing token; expires with the lock
    <prefix>:{<session digest>}:fence:<name>  the last fencing token given for <name>
    <prefix>:changes                          the one pub/sub channel every worker subscribes to

The ``redis`` client is used as is (with ``hiredis`` parsing replies where it is installed); under
gevent its sockets cooperate with other greenlets.
"""

from __future__ import annotations

import json
import typing as t
from collections.abc import Iterator, Mapping

import redis
import redis.exceptions

from .backend import BackendUnavailable, Message, Record, session_tag

UNAVAILABLE: t.Final = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)
"""The client's errors that mean "Redis cannot be reached now" (a loading server included)."""

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
if ARGV[2] ~= '' and redis.call('get', KEYS[2]) ~= ARGV[2] then return 0 end
for i = 5, #ARGV, 2 do
  if ARGV[i + 1] == '' then
    redis.call('hdel', KEYS[1], ARGV[i])
  else
    redis.call('hset', KEYS[1], ARGV[i], ARGV[i + 1])
  end
end
redis.call('expire', KEYS[1], ARGV[1])
if ARGV[3] ~= '' then redis.call('publish', ARGV[3], ARGV[4]) end
return 1
"""
"""Set and remove fields of a session's records, renew their expiry and publish a change, in one
round trip; refused (0) when a fencing token is given and a newer one was handed out since."""

_UNLOCK = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""


class RedisBackend:
    """A :class:`~flask_krm.drafts.backend.DraftBackend` on one Redis server (or a proxy to many).

    :param client: a ``redis.Redis`` client (``decode_responses`` off).
    :param prefix: the first part of every key and of the channel.
    """

    shared = True

    def __init__(self, client: redis.Redis, prefix: str = "krm") -> None:
        self.client = client
        self.prefix = prefix
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

    def read(self, session_id: str) -> dict[str, Record]:
        try:
            raw = self.client.hgetall(self.key(session_id, "records"))
        except UNAVAILABLE as exc:
            raise BackendUnavailable(str(exc)) from None
        return {field.decode(): json.loads(value) for field, value in t.cast(dict[bytes, bytes], raw).items()}

    def write(
        self,
        session_id: str,
        records: Mapping[str, Record | None],
        lifetime: float,
        *,
        fence: tuple[str, int] | None = None,
        message: Message | None = None,
    ) -> bool:
        keys = [self.key(session_id, "records"), self.key(session_id, f"fence:{fence[0]}" if fence else "records")]
        args: list[str | int] = [
            max(1, int(lifetime + 0.999)),
            str(fence[1]) if fence else "",
            self.channel if message is not None else "",
            _dump(message) if message is not None else "",
        ]
        for field, value in records.items():
            args += [field, "" if value is None else _dump(value)]
        try:
            return bool(self._write_script(keys=keys, args=args))
        except UNAVAILABLE as exc:
            raise BackendUnavailable(str(exc)) from None

    def drop(self, session_id: str) -> None:
        try:
            self.client.delete(self.key(session_id, "records"))
        except UNAVAILABLE as exc:
            raise BackendUnavailable(str(exc)) from None

    def lock(self, session_id: str, name: str, ttl: float) -> int | None:
        keys = [self.key(session_id, f"lock:{name}"), self.key(session_id, f"fence:{name}")]
        try:
            token = int(self._lock_script(keys=keys, args=[max(1, int(ttl * 1000)), FENCE_LIFETIME]))
        except UNAVAILABLE as exc:
            raise BackendUnavailable(str(exc)) from None
        return token or None

    def unlock(self, session_id: str, name: str, token: int) -> None:
        try:
            self._unlock_script(keys=[self.key(session_id, f"lock:{name}")], args=[token])
        except UNAVAILABLE:
            pass  # the lock expires by itself

    def publish(self, message: Message) -> None:
        try:
            self.client.publish(self.channel, _dump(message))
        except UNAVAILABLE as exc:
            raise BackendUnavailable(str(exc)) from None

    def messages(self) -> Iterator[Message]:
        pubsub = self.client.pubsub(ignore_subscribe_messages=True)  # type: ignore[no-untyped-call]
        try:
            pubsub.subscribe(self.channel)
            for item in pubsub.listen():
                if item.get("type") != "message":
                    continue
                try:
                    message = json.loads(item["data"])
                except ValueError:
                    continue
                if isinstance(message, dict):
                    yield message
        except UNAVAILABLE as exc:
            raise BackendUnavailable(str(exc)) from None
        finally:
            try:
                pubsub.close()
            except UNAVAILABLE:
                pass

    def close(self) -> None:
        self.client.close()


def _dump(value: t.Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
