"""Properties of the store over random objects, random edits and random server changes.

- An edited value is never lost: every change pending before a server event is still in the
  draft after it (a map the person wrote may gain the server's keys); only an explicit revert or
  take-theirs removes it, and each edit op does exactly what it says.
- Applying the produced patch (RFC 7386) to the server object yields the draft on every editable
  path and leaves every other path untouched.
- Nothing is dirty exactly when draft and server agree on every editable path.
- Re-applying any event changes nothing.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from flask_krm.events import Reset, Synced, Upsert
from flask_krm.store import DEFAULT_POLICY, MISSING, LiveResourceStore, PathTypeError, apply_merge_patch
from flask_krm.store.keyed_lists import KeyedLists
from flask_krm.store.merge import three_way_merge
from flask_krm.store.paths import Path, get_at
from flask_krm.store.regions import Regions
from flask_krm.store.values import delete_in, json_copy, json_equal, set_in

UID = "uid-1"
KEYS = st.sampled_from(["a", "b", "c", "app.kubernetes.io/name", "x/y", "t~0"])
SCALARS = st.one_of(st.integers(-3, 3), st.booleans(), st.text(alphabet="xyz", max_size=2))
LISTS = st.lists(st.one_of(SCALARS, st.none(), st.dictionaries(KEYS, SCALARS, max_size=2)), max_size=3)
VALUES = st.recursive(SCALARS | LISTS, lambda inner: st.dictionaries(KEYS, inner, max_size=3), max_leaves=6)
MAPS = st.dictionaries(KEYS, VALUES, max_size=3)
TEXT_MAPS = st.dictionaries(KEYS, st.text(alphabet="pq", max_size=2), max_size=3)
EDITABLE_ROOTS: list[Path] = [("spec",), ("data",), ("metadata", "labels"), ("metadata", "annotations")]


@st.composite
def objects(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Thing",
        "metadata": {
            "uid": UID,
            "name": "thing",
            "resourceVersion": "1",
            "labels": draw(TEXT_MAPS),
            "annotations": draw(TEXT_MAPS),
        },
        "spec": draw(MAPS),
        "data": draw(TEXT_MAPS),
        "status": draw(MAPS),
    }


def node_paths(tree: Any, prefix: Path = ()) -> list[Path]:
    """Every path addressing a value in ``tree`` (the root excluded)."""
    out: list[Path] = []
    if isinstance(tree, dict):
        items: list[tuple[Any, Any]] = list(tree.items())
    elif isinstance(tree, list):
        items = list(enumerate(tree))
    else:
        return out
    for key, child in items:
        out.append(prefix + (key,))
        out.extend(node_paths(child, prefix + (key,)))
    return out


def server_change(draw: st.DrawFn, obj: dict[str, Any], version: int, hot: list[Path] = ()) -> dict[str, Any]:
    """A random new server object: some values set, removed or added anywhere but the identity.

    Half of the changes hit a ``hot`` path (one the person edited), so conflicts are common.
    """
    changed = json_copy(obj)
    for _ in range(draw(st.integers(1, 3))):
        candidates = [p for p in node_paths(changed) if p[:2] != ("metadata", "uid") and p[:1] != ("apiVersion",)]
        if hot and draw(st.booleans()):
            changed = _hit(draw, changed, draw(st.sampled_from(hot)))
            continue
        path = draw(st.sampled_from(candidates))
        kind = draw(st.sampled_from(["set", "remove", "add"]))
        parent = get_at(changed, path[:-1])
        if kind == "remove" and isinstance(parent, dict) and len(path) > 2:
            changed = delete_in(changed, path)
        elif kind == "add" and isinstance(get_at(changed, path), dict):
            # labels and annotations hold only text, on any server
            text = path[0] == "metadata" and len(path) == 2
            changed = set_in(
                changed, path + (draw(KEYS),), draw(st.text(alphabet="pq", max_size=2) if text else VALUES)
            )
        elif len(path) > 1 or path[0] in ("spec", "status"):
            value = draw(TEXT_MAPS if path[0] == "metadata" and len(path) == 2 else VALUES)
            if path[0] == "metadata" and len(path) == 3:
                value = draw(st.text(alphabet="pq", max_size=2))
            if path in (("spec",), ("status",)) or (path[0] == "metadata" and len(path) == 2):
                value = value if isinstance(value, dict) else {}
            changed = set_in(changed, path, value)
    changed["metadata"]["resourceVersion"] = str(version)
    return changed


def _hit(draw: st.DrawFn, obj: dict[str, Any], path: Path) -> dict[str, Any]:
    """``obj`` with ``path`` removed, or set to a random value (or to the draft's, to converge)."""
    choice = draw(st.sampled_from(["remove", "set", "set"]))
    try:
        if choice == "remove" and isinstance(path[-1], str):
            return delete_in(obj, path)
        value = draw(st.text(alphabet="mn", max_size=2) if path[0] in ("data", "metadata") else VALUES)
        return set_in(obj, path, value)
    except PathTypeError:
        return obj


def editable_candidates(draft: dict[str, Any]) -> list[Path]:
    paths = [p for p in node_paths(draft) if any(p[: len(r)] == r and len(p) > len(r) for r in EDITABLE_ROOTS)]
    paths += [r + (k,) for r in EDITABLE_ROOTS for k in ("a", "new.key/1")]
    return paths


def kept(actual: Any, mine: Any) -> bool:
    """``mine`` survives in ``actual``: exactly, except that a map may have gained keys."""
    if isinstance(mine, dict):
        return isinstance(actual, dict) and all(kept(actual.get(k, MISSING), v) for k, v in mine.items())
    return json_equal(actual, mine)


class Model:
    """The store under test, and what each edit must have done."""

    def __init__(self, obj: dict[str, Any]) -> None:
        self.store = LiveResourceStore()
        self.store.apply(Reset({}, "krm-full/v1"))
        self.store.apply(Upsert("added", obj))
        self.store.apply(Synced())

    def edit(self, draw: st.DrawFn) -> None:
        store = self.store
        draft = store.draft(UID)
        assert draft is not None
        op = draw(st.sampled_from(["set", "remove", "add", "rename", "revert", "take", "keep"]))
        path = draw(st.sampled_from(editable_candidates(draft)))
        current = get_at(draft, path)
        text_value = path[0] in ("data", "metadata")
        value = draw(st.text(alphabet="mn", max_size=2) if text_value else VALUES)
        parent = get_at(draft, path[:-1])
        if op == "set" and self._settable(parent, path):
            store.set_value(UID, path, value)
            assert json_equal(get_at(store.draft(UID), path), value)
        elif op == "remove" and isinstance(path[-1], str) and isinstance(parent, dict):
            store.remove_key(UID, path)
            assert get_at(store.draft(UID), path) is MISSING
        elif op == "add" and current is MISSING and isinstance(parent, dict):
            store.add_key(UID, path, value)
            assert json_equal(get_at(store.draft(UID), path), value)
        elif op == "rename" and current is not MISSING and isinstance(path[-1], str) and isinstance(parent, dict):
            new_key = draw(KEYS)
            if new_key not in parent:
                store.rename_key(UID, path, new_key)
                renamed = get_at(store.draft(UID), path[:-1])
                assert list(renamed) == [new_key if k == path[-1] else k for k in parent]
                assert json_equal(renamed[new_key], current)
        elif op == "revert":
            store.revert(UID, path)
            theirs = get_at(store.server(UID), path)
            if theirs is MISSING and isinstance(path[-1], int) and isinstance(parent, list):
                # an item the server does not have leaves its list: the items after it move up
                assert json_equal(get_at(store.draft(UID), path[:-1]), parent[: path[-1]] + parent[path[-1] + 1 :])
            else:
                assert json_equal(get_at(store.draft(UID), path), theirs)
        elif op in ("take", "keep") and store.conflicts(UID):
            chosen = draw(st.sampled_from(store.conflicts(UID))).path
            mine = get_at(draft, chosen)
            if op == "take":
                store.take_theirs(UID, chosen)
                assert json_equal(get_at(store.draft(UID), chosen), get_at(store.server(UID), chosen))
            else:
                store.keep_mine(UID, chosen)
                assert json_equal(get_at(store.draft(UID), chosen), mine)
            assert chosen not in [c.path for c in store.conflicts(UID)]

    @staticmethod
    def _settable(parent: Any, path: Path) -> bool:
        if isinstance(parent, list):
            return isinstance(path[-1], int) and path[-1] <= len(parent)
        return parent is MISSING or isinstance(parent, dict)

    def server_event(self, event: Upsert) -> None:
        """Apply ``event``: every edit pending before it must survive it; re-applying is a no-op."""
        store = self.store
        pending = store.changes(UID)
        assert store.apply(event) == {UID}
        draft = store.draft(UID)
        for change in pending:
            mine = MISSING if change.kind == "delete" else change.new
            assert kept(get_at(draft, change.path), mine), f"the edit at {change.path} was lost"
        before = self.snapshot()
        assert store.apply(event) == set(), "re-applying an event changed something"
        assert self.snapshot() == before

    def check(self) -> None:
        store = self.store
        server, draft = store.server(UID), store.draft(UID)
        assert server is not None and draft is not None
        patch = store.patch(UID)
        patched = apply_merge_patch(server, patch) if patch is not None else server
        assert json_equal(patched, draft), "the patch applied to the server does not give the draft"
        for key in ("status", "apiVersion", "kind"):
            assert json_equal(patched.get(key, MISSING), server.get(key, MISSING))
        for key in set(server["metadata"]) - {"labels", "annotations"}:
            assert json_equal(patched["metadata"][key], server["metadata"][key])
        for path in node_paths(patch or {}):
            if not isinstance(get_at(patch, path), dict):
                assert not store.is_read_only(UID, path), f"the patch writes read-only {path}"

        editable_equal = all(json_equal(get_at(draft, r), get_at(server, r)) for r in EDITABLE_ROOTS)
        assert (store.dirty(UID) == []) == editable_equal
        assert (patch is None) == editable_equal
        if editable_equal:
            assert store.conflicts(UID) == []
        for conflict in store.conflicts(UID):
            assert not json_equal(get_at(draft, conflict.path), get_at(server, conflict.path))

    def snapshot(self) -> tuple[Any, ...]:
        s = self.store
        return (s.server(UID), s.draft(UID), s.conflicts(UID), s.dirty(UID), s.patch(UID), s.redactions(UID))


@given(st.data(), objects())
def test_edits_survive_and_patches_round_trip(data: st.DataObject, obj: dict[str, Any]) -> None:
    model = Model(obj)
    version = 1
    for _ in range(data.draw(st.integers(1, 8))):
        if data.draw(st.booleans()):
            model.edit(data.draw)
        else:
            version += 1
            server = model.store.server(UID)
            assert server is not None
            hot = [c.path for c in model.store.changes(UID)]
            model.server_event(Upsert("modified", server_change(data.draw, server, version, hot)))
        model.check()


@given(st.data(), objects())
def test_reapplying_any_event_is_a_no_op(data: st.DataObject, obj: dict[str, Any]) -> None:
    model = Model(obj)
    model.edit(data.draw)
    changed = Upsert("modified", server_change(data.draw, obj, 2))
    events = [Reset({}, "krm-full/v1"), Upsert("added", obj), Synced(), changed]
    for event in data.draw(st.permutations(events)):
        model.store.apply(event)
        before = model.snapshot() if model.store.uids() else None
        complete = model.store.snapshot_complete
        assert model.store.apply(event) == set()
        assert (model.snapshot() if model.store.uids() else None) == before
        assert model.store.snapshot_complete == complete


@given(st.data())
def test_keyed_lists_keep_item_edits_across_reorders(data: st.DataObject) -> None:
    names = data.draw(st.lists(st.sampled_from("pqrstu"), min_size=1, max_size=5, unique=True))
    base = [{"name": n, "image": f"{n}:1"} for n in names]
    edited = data.draw(st.sampled_from(names))
    ours = [dict(item, image="mine") if item["name"] == edited else item for item in base]
    theirs = data.draw(st.permutations(base))
    theirs = [dict(item, ready=True) if data.draw(st.booleans()) else item for item in theirs]
    if data.draw(st.booleans()):
        theirs = theirs + [{"name": "added", "image": "added:1"}]
    schema = {
        "properties": {
            "spec": {"properties": {"items": {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]}}}
        }
    }
    obj = lambda items: {"metadata": {"uid": UID}, "spec": {"items": items}}  # noqa: E731
    regions = Regions(DEFAULT_POLICY, obj(theirs))
    result = three_way_merge(obj(base), obj(ours), obj(theirs), regions, KeyedLists(schema))
    merged = result.draft["spec"]["items"]
    assert [i["name"] for i in merged] == [i["name"] for i in theirs]
    for item in merged:
        server_item = next(t for t in theirs if t["name"] == item["name"])
        expected = dict(server_item, image="mine") if item["name"] == edited else server_item
        assert item == expected
    assert result.conflicts == {}
