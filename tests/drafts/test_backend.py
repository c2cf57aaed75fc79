"""The draft backend contract, held by every backend: each test runs against the memory backend and
a real Redis (records and versions, page records, expiry, locks with fencing tokens, messages,
session endings, the sync's edits on top). Each backend's own side is in test_memory_backend.py and
test_redis_backend.py. At the end, the check that the library never asks which backend it has."""

from __future__ import annotations

import ast
import time
import typing as t
from pathlib import Path

import gevent
import pytest

from flask_krm.drafts import backend_from_url
from flask_krm.drafts.backend import BackendUnavailable, DraftBackend, Message, session_tag
from flask_krm.drafts.memory_backend import MemoryBackend
from flask_krm.drafts.redis_backend import RedisBackend
from flask_krm.drafts.sync import EDIT, DraftSync, field_name
from flask_krm.sessions import DraftRegistry, SessionDrafts
from flask_krm.store import Edit, EditRecord
from tests.redis_server import RedisServer
from tests.store.objects import CM_UID, configmap, modified, store_with

PACKAGE: t.Final = Path(__file__).resolve().parents[2] / "flask_krm"


def redis_backend(server: RedisServer, **kwargs: t.Any) -> RedisBackend:
    if kwargs:
        return RedisBackend(server.client(), **kwargs)
    found = backend_from_url(server.url)
    assert isinstance(found, RedisBackend)
    return found


@pytest.fixture(params=["memory", "redis"])
def make(request: pytest.FixtureRequest) -> t.Callable[..., DraftBackend]:
    """Makes a backend of the kind the test runs with; every one made in a test shares its storage
    (two Redis clients of one server; one memory backend, as the workers of one process share it)."""
    if request.param == "memory":
        memory: dict[str, MemoryBackend] = {}

        def made_in_memory(**kwargs: t.Any) -> DraftBackend:
            return memory.setdefault("one", MemoryBackend(**kwargs))

        return made_in_memory
    server: RedisServer = request.getfixturevalue("clean_redis")
    return lambda **kwargs: redis_backend(server, **kwargs)


@pytest.fixture
def drafts(make: t.Callable[..., DraftBackend]) -> DraftBackend:
    return make()


# -- records ---------------------------------------------------------------------------------------


def test_records_are_written_removed_and_read_back_as_json(drafts: DraftBackend) -> None:
    assert drafts.read("s1") == {}
    assert drafts.write("s1", {"edit:a:u1": {"uid": "u1", "edits": []}, "page:p": {"id": "p"}}, 60)
    assert drafts.write("s1", {"page:p": None, "flow:a:u1": {"phase": "idle"}}, 60)
    assert drafts.read("s1") == {"edit:a:u1": {"uid": "u1", "edits": []}, "flow:a:u1": {"phase": "idle"}}
    assert drafts.read("s1", ["flow:a:u1", "nothing"]) == {"flow:a:u1": {"phase": "idle"}}
    assert drafts.read("s2") == {}
    drafts.drop("s1")
    assert drafts.read("s1") == {}


def test_a_record_read_back_is_a_copy(drafts: DraftBackend) -> None:
    written = {"data": {"level": "info"}}
    drafts.write("s1", {"flow:a": written}, 60)
    written["data"]["level"] = "changed after the write"
    read = drafts.read("s1")["flow:a"]
    read["data"]["level"] = "changed by a reader"
    assert drafts.read("s1")["flow:a"] == {"data": {"level": "info"}}


def test_a_value_json_cannot_hold_is_refused_and_nothing_is_written(drafts: DraftBackend) -> None:
    with pytest.raises(ValueError):
        drafts.write("s1", {"ok": 1, "bad": float("nan")}, 60)
    assert drafts.read("s1") == {}


def test_a_swap_writes_only_over_the_version_it_expects_and_of_two_at_once_exactly_one_lands(
    drafts: DraftBackend,
) -> None:
    assert drafts.swap("s1", {"edit:a:u1": {"n": 1}}, {"edit:a:u1": 0}, 60) == {"edit:a:u1": 1}
    assert drafts.swap("s1", {"edit:a:u1": {"n": 2}}, {"edit:a:u1": 0}, 60) is None  # stale
    assert drafts.read("s1") == {"edit:a:u1": {"n": 1}}
    assert drafts.write("s1", {"edit:a:u1": None}, 60)  # removing a record counts as a write
    assert drafts.read_versioned("s1", "edit:a:") == {"edit:a:u1": (None, 2)}
    landed = gevent.joinall(
        [gevent.spawn(drafts.swap, "s1", {"edit:a:u1": {"n": n}}, {"edit:a:u1": 2}, 60) for n in range(8)]
    )
    assert sorted(str(g.value) for g in landed) == ["None"] * 7 + ["{'edit:a:u1': 3}"]
    assert drafts.read("s1")["edit:a:u1"] in [{"n": n} for n in range(8)]
    assert drafts.swap("s2", {"edit:a:u1": {"n": 1}}, {"edit:a:u1": 0}, 60) == {"edit:a:u1": 1}  # per session


def test_read_versioned_gives_the_records_under_a_prefix_as_of_one_moment(drafts: DraftBackend) -> None:
    drafts.write("s1", {"edit:a:u1": {"n": 1}, "edit:b:u1": {"n": 2}, "flow:a:u1": {"p": 1}}, 60)
    drafts.write("s1", {"edit:a:u1": {"n": 3}, "page:p": {"id": "p"}}, 60)
    assert drafts.read_versioned("s1", "edit:a:") == {"edit:a:u1": ({"n": 3}, 2)}
    assert drafts.read_versioned("s1", "") == {
        "edit:a:u1": ({"n": 3}, 2),
        "edit:b:u1": ({"n": 2}, 1),
        "flow:a:u1": ({"p": 1}, 1),
    }  # page records have no versions


def test_page_records_are_kept_apart_and_capped_least_recently_used_first(
    make: t.Callable[..., DraftBackend],
) -> None:
    drafts = make(max_pages=5)
    drafts.write("s1", {"edit:a:u1": {"uid": "u1"}}, 60)
    for n in range(5):
        drafts.write("s1", {f"page:p{n}": {"id": n}}, 60)
    assert drafts.read("s1", ["page:p0"]) == {"page:p0": {"id": 0}}  # used: no longer the least recent
    for n in range(5, 8):
        drafts.write("s1", {f"page:p{n}": {"id": n}}, 60)
    held = drafts.read("s1", [f"page:p{n}" for n in range(8)])
    assert sorted(held) == ["page:p0", "page:p4", "page:p5", "page:p6", "page:p7"]
    assert drafts.read("s1") == {"edit:a:u1": {"uid": "u1"}}  # the person's records never hold pages


# -- expiry ----------------------------------------------------------------------------------------


def test_records_expire_with_the_session_lifetime_and_using_them_renews_it(drafts: DraftBackend) -> None:
    drafts.write("s1", {"edit:a:u1": {"n": 1}, "page:p": {"id": "p"}}, 1)
    drafts.write("s2", {"edit:a:u1": {"n": 2}}, 1)
    drafts.write("s3", {"edit:a:u1": {"n": 3}}, 1)
    drafts.touch("s1", 30)
    drafts.read("s2", ["page:p"], lifetime=30)
    drafts.read_versioned("s3", "edit:", lifetime=30)
    drafts.write("s4", {"edit:a:u1": {"n": 4}}, 1)
    time.sleep(2.2)
    assert drafts.read("s1") == {"edit:a:u1": {"n": 1}} and drafts.read("s1", ["page:p"]) == {"page:p": {"id": "p"}}
    assert drafts.read("s2") == {"edit:a:u1": {"n": 2}}
    assert drafts.read_versioned("s3", "edit:") == {"edit:a:u1": ({"n": 3}, 1)}
    assert drafts.read("s4") == {} and drafts.read_versioned("s4", "") == {}  # versions expire too
    assert drafts.swap("s4", {"edit:a:u1": {"n": 5}}, {"edit:a:u1": 0}, 60) == {"edit:a:u1": 1}


# -- locks -----------------------------------------------------------------------------------------


def test_a_lock_gives_growing_fencing_tokens_and_only_its_holder_releases_it(drafts: DraftBackend) -> None:
    first = drafts.lock("s1", "e", 30)
    assert first is not None
    assert drafts.lock("s1", "e", 30) is None
    assert drafts.lock("s2", "e", 30) is not None  # another session's lock
    assert drafts.lock("s1", "f", 30) is not None  # another lock of the session
    drafts.unlock("s1", "e", first + 1000)  # not the holder
    assert drafts.lock("s1", "e", 30) is None
    drafts.unlock("s1", "e", first)
    second = drafts.lock("s1", "e", 30)
    assert second is not None and second > first


def test_of_many_taking_one_lock_at_once_exactly_one_holds_it(drafts: DraftBackend) -> None:
    takers = gevent.joinall([gevent.spawn(drafts.lock, "s1", "e", 30) for _ in range(8)])
    assert sum(1 for g in takers if g.value is not None) == 1


def test_an_expired_lock_can_be_taken_and_the_old_token_can_no_longer_write(drafts: DraftBackend) -> None:
    old = drafts.lock("s1", "e", 0.2)
    assert old is not None
    assert drafts.write("s1", {"flow": "first"}, 60, fence=("e", old))
    time.sleep(0.4)
    new = drafts.lock("s1", "e", 30)
    assert new is not None and new > old
    assert not drafts.write("s1", {"flow": "stale"}, 60, fence=("e", old))
    assert drafts.write("s1", {"flow": "current"}, 60, fence=("e", new))
    assert drafts.read("s1") == {"flow": "current"}
    assert not drafts.write("s1", {"flow": "never"}, 60, fence=("never-taken", 1))


# -- messages and endings --------------------------------------------------------------------------


class Listening:
    """A subscription read in a greenlet, as a worker's sync reads it."""

    def __init__(self, drafts: DraftBackend) -> None:
        self.received: list[Message] = []
        self._greenlet = gevent.spawn(self._listen, drafts)
        self.wait_for(1)  # the first, empty, message says the subscription holds
        assert self.received == [{}]

    def _listen(self, drafts: DraftBackend) -> None:
        for message in drafts.messages():
            self.received.append(message)

    def wait_for(self, count: int) -> list[Message]:
        with gevent.Timeout(5):
            while len(self.received) < count:
                gevent.sleep(0.01)
        return self.received

    def stop(self) -> None:
        self._greenlet.kill()


def test_a_write_and_a_publish_reach_every_subscription_with_the_new_versions(
    make: t.Callable[..., DraftBackend],
) -> None:
    writer, first, second = make(), Listening(make()), Listening(make())
    try:
        writer.write("s1", {"edit:a:u1": 1, "page:p": {}}, 60, message={"worker": "a", "records": {"x": 1}})
        writer.swap("s1", {"edit:a:u1": 2}, {"edit:a:u1": 1}, 60, message={"worker": "a"})
        assert writer.swap("s1", {"edit:a:u1": 3}, {"edit:a:u1": 1}, 60, message={"worker": "a"}) is None
        writer.publish({"worker": "a", "ended": True})
        for listening in (first, second):
            assert listening.wait_for(4)[1:] == [
                {"versions": {"edit:a:u1": 1}, "worker": "a", "records": {"x": 1}},
                {"versions": {"edit:a:u1": 2}, "worker": "a"},
                {"worker": "a", "ended": True},
            ]  # a swap that wrote nothing told nobody
    finally:
        first.stop()
        second.stop()


def test_a_session_ended_on_one_worker_ends_on_every_other(make: t.Callable[..., DraftBackend]) -> None:
    here, there = DraftSync(make(), "worker-a"), DraftSync(make(), "worker-b")
    store = store_with(configmap())
    there.attach("session", "store-1", store, 60.0)
    ended: list[str] = []
    there.on_session_ended = ended.append
    listener = gevent.spawn(there.run, gevent.sleep)
    try:
        here.write("session", {"edit:x:y": {"n": 1}}, 60.0)
        gevent.sleep(0.2)  # subscribed
        here.end_session("session")
        with gevent.Timeout(5):
            while not ended:
                gevent.sleep(0.01)
        assert ended == [session_tag("session")]
        assert here.backend.read("session") == {}
        store.set_value(CM_UID, ("data", "level"), "after the end")  # no longer written anywhere
        assert here.backend.read("session") == {}
    finally:
        listener.kill()


def test_a_message_overtaken_by_a_newer_record_changes_nothing_and_is_never_written_back(
    drafts: DraftBackend,
) -> None:
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


class LostAnswer:
    """A backend whose first swap lands but whose answer is lost (a timeout after the write)."""

    def __init__(self, inner: DraftBackend) -> None:
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


def test_an_edit_whose_write_landed_without_an_answer_is_neither_lost_nor_made_twice(drafts: DraftBackend) -> None:
    lossy = LostAnswer(drafts)
    store = store_with(configmap())
    sync = DraftSync(t.cast(DraftBackend, lossy), "worker-a")
    sync.attach("session", "store-1", store, 60.0)
    made = []

    def apply() -> None:
        made.append(1)
        store.set_value(CM_UID, ("data", "level"), f"edit-{len(made)}")

    sync.edit("session", "store-1", apply)
    assert lossy.lost == 1 and made == [1] and not sync.unavailable
    name = field_name(EDIT, "store-1", CM_UID)
    held = drafts.read_versioned("session", "edit:")[name]
    assert held[1] == 1 and EditRecord.from_json(held[0]).edits[0].mine == "edit-1"
    sync.edit("session", "store-1", apply)  # the next edit builds on the version that landed
    assert drafts.read_versioned("session", "edit:")[name][1] == 2


def test_ping_says_where_drafts_are_kept(drafts: DraftBackend) -> None:
    assert drafts.ping() == ("reachable" if drafts.outlives_process else "in this process")


# -- the seam --------------------------------------------------------------------------------------

BACKEND_NAMES: t.Final = frozenset({"MemoryBackend", "RedisBackend", "memory_backend", "redis_backend", "shared"})
"""What names a backend, or asks whether drafts are shared, rather than using the contract."""


def _backend_mentions(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names: list[str] = []
        if isinstance(node, ast.Attribute) and node.attr in BACKEND_NAMES:
            chain = ast.unparse(node.value)
            if "drafts" in chain or "backend" in chain:
                names.append(f"{chain}.{node.attr}")
        elif isinstance(node, ast.ImportFrom):
            names += [alias.name for alias in node.names if alias.name in BACKEND_NAMES]
            if (node.module or "").rsplit(".", 1)[-1] in BACKEND_NAMES:
                names.append(node.module or "")
        elif isinstance(node, ast.Name) and node.id in BACKEND_NAMES - {"shared"}:
            names.append(node.id)
        found += [f"{getattr(node, 'lineno', 0)}: {name}" for name in names]
    return found


def test_no_module_outside_the_drafts_package_asks_which_backend_it_has() -> None:
    mentions = [
        mention
        for path in sorted(PACKAGE.rglob("*.py"))
        if "drafts" not in path.relative_to(PACKAGE).parts[:1]
        for mention in [f"{path.relative_to(PACKAGE)}:{line}" for line in _backend_mentions(path)]
    ]
    assert mentions == []
    assert "shared" not in DraftBackend.__annotations__ and not hasattr(SessionDrafts, "shared")
    assert not hasattr(DraftRegistry(), "shared")


def test_the_seam_check_finds_a_caller_that_asks(tmp_path: Path) -> None:
    asking = tmp_path / "asking.py"
    asking.write_text(
        "from flask_krm.drafts.redis_backend import RedisBackend\n"
        "def f(drafts, krm):\n"
        "    return drafts.shared or krm.drafts.backend.shared or isinstance(krm.backend, RedisBackend)\n"
    )
    assert sorted(_backend_mentions(asking)) == [
        "1: RedisBackend",
        "1: flask_krm.drafts.redis_backend",
        "3: RedisBackend",
        "3: drafts.shared",
        "3: krm.drafts.backend.shared",
    ]
