"""Serving hooks: draining an application, gunicorn's master and worker hooks (SIGTERM drains at
once and stops the worker after the drain delay), and stopping gevent's WSGI server."""

from __future__ import annotations

import signal
import typing as t
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import gevent
import pytest
from flask import Flask

from flask_krm import serving
from flask_krm.runtime import KrmRuntime, find_runtime


def runtime_of(app: Flask) -> KrmRuntime:
    krm = find_runtime(app)
    assert krm is not None
    return krm


class Stream:
    """An open stream the runtime must end at shutdown."""

    def __init__(self) -> None:
        self.ended = False

    def end_for_shutdown(self) -> None:
        self.ended = True


def test_drain_fails_readiness_and_ends_every_stream(app: Flask) -> None:
    krm = runtime_of(app)
    stream = Stream()
    krm.track_stream(stream)
    serving.drain(app, timeout=1.0)
    assert krm.draining and krm.shut_down and stream.ended


def test_hooks_leave_alone_what_is_not_a_flask_krm_application(tmp_path: Path) -> None:
    plain = Flask(__name__, instance_path=str(tmp_path))
    serving.drain(plain)
    for worker in (SimpleNamespace(wsgi=plain), SimpleNamespace(wsgi=lambda environ, start: []), SimpleNamespace()):
        serving.post_worker_init(worker)
        serving.worker_int(worker)
        serving.worker_exit(None, worker)
    assert find_runtime(plain) is None


def test_a_quick_stop_and_a_worker_exit_shut_the_runtime_down(app: Flask) -> None:
    runtime = runtime_of(app)
    stream = Stream()
    runtime.track_stream(stream)
    serving.worker_int(SimpleNamespace(wsgi=app))
    assert runtime.draining and runtime.shut_down and stream.ended
    serving.worker_exit(None, SimpleNamespace(wsgi=app))  # idempotent after the drain


def test_a_worker_exit_alone_shuts_down(app: Flask) -> None:
    serving.worker_exit(None, SimpleNamespace(wsgi=app))
    assert runtime_of(app).shut_down


@pytest.fixture
def sigterm() -> Iterator[list[tuple[int, t.Any]]]:
    """SIGTERM handled by a recorder (gunicorn's own stop), restored afterwards."""
    stopped: list[tuple[int, t.Any]] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: stopped.append((signum, frame)))
    yield stopped
    signal.signal(signal.SIGTERM, previous)


def test_sigterm_drains_at_once_and_stops_the_worker_after_the_drain_delay(
    app: Flask, sigterm: list[tuple[int, t.Any]]
) -> None:
    app.config["KRM_DRAIN_DELAY"] = 0.05
    runtime = runtime_of(app)
    stream = Stream()
    runtime.track_stream(stream)
    serving.post_worker_init(SimpleNamespace(wsgi=app))
    assert runtime.ticker.started
    handler = signal.getsignal(signal.SIGTERM)
    assert callable(handler)
    handler(signal.SIGTERM, None)
    assert runtime.draining and sigterm == []  # readiness fails before anything else runs
    deadline = gevent.Timeout(5)
    with deadline:
        while not sigterm:
            gevent.sleep(0.01)
    assert sigterm == [(signal.SIGTERM, None)]
    assert runtime.shut_down and stream.ended


def test_the_master_empties_the_multiprocess_folder_at_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "metrics"
    (folder / "nested").mkdir(parents=True)
    (folder / "nested" / "counter_1.db").write_text("x")
    (folder / "gauge_live_2.db").write_text("x")
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "file").write_text("x")
    (folder / "link").symlink_to(kept, target_is_directory=True)
    monkeypatch.setenv(serving.MULTIPROC_ENV, str(folder))
    serving.on_starting(None)
    assert list(folder.iterdir()) == []
    assert (kept / "file").exists()  # a link is removed, never followed
    monkeypatch.setenv(serving.MULTIPROC_ENV, str(tmp_path / "new"))
    serving.on_starting(None)
    assert (tmp_path / "new").is_dir()


def test_without_the_multiprocess_folder_the_master_hooks_do_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(serving.MULTIPROC_ENV, raising=False)
    (tmp_path / "file").write_text("x")
    monkeypatch.chdir(tmp_path)
    serving.on_starting(None)
    serving.child_exit(None, SimpleNamespace(pid=1))
    assert (tmp_path / "file").exists()


def test_a_dead_workers_gauges_stop_counting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from prometheus_client import multiprocess

    marked: list[int] = []
    monkeypatch.setattr(multiprocess, "mark_process_dead", marked.append)
    monkeypatch.setenv(serving.MULTIPROC_ENV, str(tmp_path))
    serving.child_exit(None, SimpleNamespace(pid=4242))
    assert marked == [4242]


def test_stopping_the_wsgi_server_drains_first(app: Flask) -> None:
    runtime = runtime_of(app)
    order: list[str] = []

    class Server:
        def stop(self, timeout: float) -> None:
            order.append(f"stop {timeout} after shutdown={runtime.shut_down}")

    serving.stop_server(app, Server(), timeout=0.5)  # type: ignore[arg-type]
    assert order == ["stop 0.5 after shutdown=True"]
