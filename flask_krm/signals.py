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

#: A stream ended. Keyword arguments: ``principal``, ``scope``, ``projection`` and ``reason``:
#: ``"client-closed"``, ``"source-ended"``, ``"terminal"`` (a terminal error was the last event) or
#: ``"shutdown"``.
stream_closed = _signals.signal("krm-stream-closed")

#: An upstream watch opened. Keyword arguments: ``target``, ``scope``.
watch_started = _signals.signal("krm-watch-started")

#: An upstream watch stopped (last subscriber gone and linger elapsed, or shutdown). Keyword
#: arguments: ``target``, ``scope``.
watch_stopped = _signals.signal("krm-watch-stopped")

#: An upstream watch failed. Keyword arguments: ``target``, ``scope``, ``exc``.
watch_failed = _signals.signal("krm-watch-failed")

#: A subscriber fell too far behind its bounded queue and is being resnapshotted. Keyword
#: argument: ``scope``.
subscriber_overflowed = _signals.signal("krm-subscriber-overflowed")

#: A save reached the API server and succeeded (for audit). Keyword arguments: ``principal``,
#: ``target``, ``scope``, ``uid``, ``resource_version`` (the new one) and ``fields`` (the RFC 6901
#: paths the patch touched; never their values).
saved = _signals.signal("krm-saved")
