"""The library's door to gevent: its names are gevent's own objects, and what it adds (the patch
check, the event loop, socket waits) behaves as the library relies on."""

from __future__ import annotations

import socket
import subprocess
import sys

import gevent
import gevent.event
import gevent.hub
import gevent.pool
import gevent.queue
import pytest

from flask_krm import concurrency


@pytest.mark.parametrize(
    ("name", "original"),
    [
        ("Greenlet", gevent.Greenlet),
        ("GreenletExit", gevent.GreenletExit),
        ("Timeout", gevent.Timeout),
        ("Group", gevent.pool.Group),
        ("Event", gevent.event.Event),
        ("AsyncResult", gevent.event.AsyncResult),
        ("Queue", gevent.queue.Queue),
        ("Empty", gevent.queue.Empty),
        ("Waiter", gevent.hub.Waiter),
        ("sleep", gevent.sleep),
        ("spawn", gevent.spawn),
        ("spawn_later", gevent.spawn_later),
        ("joinall", gevent.joinall),
        ("getcurrent", gevent.getcurrent),
    ],
)
def test_each_primitive_is_gevents_own(name: str, original: object) -> None:
    assert getattr(concurrency, name) is original  # no wrapper: nothing is added per call


def test_every_exported_name_exists() -> None:
    assert [name for name in concurrency.__all__ if not hasattr(concurrency, name)] == []


def test_the_test_process_is_not_patched_and_a_patched_one_is() -> None:
    assert concurrency.patched() is False
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            "from gevent import monkey; monkey.patch_all()\n"
            "from flask_krm.concurrency import patched; print(patched())",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert child.stdout.strip() == "True", child.stderr


def test_a_loop_callback_runs_at_the_next_turn_of_the_loop() -> None:
    called: list[int] = []
    concurrency.current_loop().run_callback(called.append, 1)
    assert called == []
    concurrency.sleep(0)
    assert called == [1]


def test_the_loop_clock_moves_on() -> None:
    loop = concurrency.current_loop()
    before = loop.now()
    concurrency.sleep(0.02)
    assert loop.now() >= before + 0.015


def test_an_io_watcher_calls_back_when_its_socket_turns_readable() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        readable = gevent.event.Event()
        watcher = concurrency.current_loop().io(ours.fileno(), concurrency.READ)
        watcher.start(readable.set)
        try:
            assert not readable.wait(0.05)
            theirs.send(b"x")
            assert readable.wait(2)
        finally:
            watcher.stop()
            watcher.close()


def test_waiting_for_a_readable_socket_ends_when_data_arrives_or_times_out() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        ours.setblocking(False)
        with pytest.raises(TimeoutError):
            concurrency.wait_readable(ours.fileno(), 0.05)
        concurrency.spawn_later(0.02, theirs.send, b"x")
        concurrency.wait_readable(ours.fileno(), 2)
        assert ours.recv(1) == b"x"
        concurrency.wait_writable(ours.fileno(), 2)  # an empty send buffer is writable at once
