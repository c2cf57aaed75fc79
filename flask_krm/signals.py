"""Lifecycle signals (blinker).

The sender is always the Flask application, captured when the stream or watch began; receivers
may run on a stream or watch greenlet with no request context. Receivers run on the stream path
and must return promptly: never block, never raise. Keyword arguments never carry an object, a
patch, a credential or a Secret value.
"""

from __future__ import annotations

from blinker import Namespace

_signals = Namespace()

#: A stream passed authorization and is about to start. Keyword arguments: ``principal``,
#: ``scope``, ``projection``.
stream_opened = _signals.signal("krm-stream-opened")

#: A stream ended: sent when the server closes its response (WSGI servers always do; close a test
#: client's response, e.g. ``with client.get(...) as response``). Keyword arguments: ``principal``,
#: ``scope``, ``projection`` and ``reason``: ``"client-closed"`` (the consumer went away),
#: ``"ended"`` (a terminal error was the last event, or the source ended) or ``"shutdown"``.
stream_closed = _signals.signal("krm-stream-closed")

#: An upstream watch opened. Keyword arguments: ``target``, ``scope``.
watch_started = _signals.signal("krm-watch-started")

#: An upstream watch stopped (last subscriber gone and linger elapsed, or shutdown). Keyword
#: arguments: ``target``, ``scope``.
watch_stopped = _signals.signal("krm-watch-stopped")

#: An upstream watch reported a failure, terminal or retrying. Keyword arguments: ``target``,
#: ``scope``, ``failure`` (a :class:`flask_krm.ops.Failure`).
watch_failed = _signals.signal("krm-watch-failed")

#: A subscriber fell too far behind its bounded queue and is being resnapshotted. Keyword
#: argument: ``scope``.
subscriber_overflowed = _signals.signal("krm-subscriber-overflowed")

#: A write (save, create or delete) was accepted by the API server, for audit. Keyword arguments:
#: ``principal``, ``target``, ``scope``, ``uid``, ``resource_version`` (the new one, if known),
#: ``fields`` (the RFC 6901 paths written), ``identity``, ``operation``, ``outcome``, ``diff`` (RFC
#: 6902 operations in which redacted paths are named but never valued) and ``redacted_paths``.
#: Sent by :mod:`flask_krm.save`.
saved = _signals.signal("krm-saved")
