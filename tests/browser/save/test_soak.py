"""A long editor session: typing while a controller changes the object, through outages and reloads.

A person types into scalar fields (numbers), a map (label values) and an array item's field (the
first container's image, in its own fieldset), saving now and then and choosing "Keep mine" or
"Take theirs" at random when a field conflicts; a controller thread changes random fields of the
same Deployment meanwhile, some the person edits (replicas, a label) and some only it writes
(among them another field of the same container item, by a strategic merge patch). The browser reaches the app
through a real TCP proxy that is cut three times while the person types, and the page is reloaded
twice (once inside the debounce window of an edit). At the end:

- every value typed is in a saved object (the last value typed at each field, unless the person
  took theirs there afterwards, or the controller changed it after the save);
- every change of the controller that the person did not override is still on the server (no save
  of the person changes a path they did not type into, nor one where they took theirs);
- each audit record of the person's saves names only paths the person edited.

It runs for :data:`SECONDS` (30 s; ``FLASK_KRM_SOAK_SECONDS`` for longer, 90 for the full run):
every outage and reload happens however short the run. The random choices are seeded, and the seed
is printed (``FLASK_KRM_SOAK_SEED`` replays one).
"""

from __future__ import annotations

import json
import os
import random
import string
import threading
import time
import typing as t
from dataclasses import dataclass, field

import kubernetes.client
import kubernetes.watch
import pytest
from playwright.sync_api import Locator, Page, expect

from flask_krm.testing import KubeSimulator
from tests.browser.conftest import MERGE_PATCH, type_over, unique, wait_live
from tests.browser.host_app import NAMESPACE
from tests.browser.proxy import TcpProxy
from tests.browser.save.conftest import SaveServer
from tests.browser.save.test_churn import FINAL_AFTER, RECORD_EACH_OUTCOME
from tests.browser.save.test_outcomes import deployment_body

STRATEGIC_MERGE_PATCH: t.Final = "application/strategic-merge-patch+json"

pytestmark = pytest.mark.browser

SECONDS: t.Final = float(os.environ.get("FLASK_KRM_SOAK_SECONDS") or 30.0)
OUTAGES: t.Final = (0.2, 0.45, 0.7)
"""When the proxy is cut, as fractions of :data:`SECONDS`; each cut lasts :data:`OUTAGE_SECONDS`."""
OUTAGE_SECONDS: t.Final = 2.5
RELOADS: t.Final = (0.35, 0.85)
"""When the page is reloaded (the second one inside the debounce window of an edit)."""
CONTROLLER_EVERY: t.Final = 0.6
KEY_DELAY: t.Final = 40
"""Milliseconds between two keys."""
PERSON_MANAGER: t.Final = "flask-krm"
"""The field manager of flask-krm's writes."""
MARK: t.Final = "soak-controller"
"""The annotation every controller write changes (and the person never edits)."""

REPLICAS: t.Final = "/spec/replicas"
MIN_READY: t.Final = "/spec/minReadySeconds"
LABEL_A: t.Final = "/metadata/labels/p-a"
LABEL_B: t.Final = "/metadata/labels/p-b"
IMAGE: t.Final = "/spec/template/spec/containers/0/image"
PULL_POLICY: t.Final = "/spec/template/spec/containers/0/imagePullPolicy"
ON_PAGE: t.Final = {IMAGE: "/spec/template/spec/containers/[name=app]/image"}
"""The page names a keyed list's items by their keys."""
"""A field of the same container item that only the controller changes (a strategic merge patch
naming the container by its key)."""
PERSON_FIELDS: t.Final = (REPLICAS, MIN_READY, LABEL_A, LABEL_B, IMAGE)
CONTROLLER_ONLY: t.Final = (
    PULL_POLICY,
    "/metadata/labels/c-x",
    "/spec/revisionHistoryLimit",
    "/spec/progressDeadlineSeconds",
)
SHARED: t.Final = (REPLICAS, LABEL_A)
"""Fields both the person and the controller change."""


def get(obj: t.Any, pointer: str) -> t.Any:
    for part in pointer.split("/")[1:]:
        if isinstance(obj, list) and part.isdigit() and int(part) < len(obj):
            obj = obj[int(part)]
        elif isinstance(obj, dict) and part in obj:
            obj = obj[part]
        else:
            return None
    return obj


def managed_by(obj: dict[str, t.Any], manager: str) -> list[t.Any]:
    return [entry for entry in get(obj, "/metadata/managedFields") or [] if entry.get("manager") == manager]


def raw_deployment(apps: kubernetes.client.AppsV1Api, name: str) -> dict[str, t.Any]:
    response = apps.read_namespaced_deployment(name, NAMESPACE, _preload_content=False)
    return t.cast(dict[str, t.Any], json.loads(response.data))


@dataclass
class Write:
    """One write of the Deployment, as the simulator stored it: by the controller (it changes
    :data:`MARK`), by the person (through flask-krm: it changes flask-krm's managed-fields entry or a
    field only the person and the controller write), or by the simulator's own Deployment
    controller (neither)."""

    old: dict[str, t.Any]
    new: dict[str, t.Any]

    @property
    def by_controller(self) -> bool:
        mark = "/metadata/annotations/" + MARK
        return get(self.old, mark) != get(self.new, mark)

    @property
    def by_person(self) -> bool:
        if self.by_controller:
            return False
        manages = managed_by(self.old, PERSON_MANAGER) != managed_by(self.new, PERSON_MANAGER)
        return manages or any(self.changed(pointer) for pointer in PERSON_FIELDS)

    def changed(self, pointer: str) -> bool:
        return get(self.old, pointer) != get(self.new, pointer)


@dataclass
class Writes:
    """Every stored version of the Deployment ``name`` after ``initial``, in order (a watch of it):
    each as a :class:`Write` from the version before it."""

    apps: kubernetes.client.AppsV1Api
    name: str
    initial: dict[str, t.Any]
    log: list[Write] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> Writes:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        last = self.initial
        while not self._stop.is_set():
            watch = kubernetes.watch.Watch()
            for event in watch.stream(
                self.apps.list_namespaced_deployment,
                NAMESPACE,
                field_selector=f"metadata.name={self.name}",
                resource_version=last["metadata"]["resourceVersion"],
                timeout_seconds=2,
            ):
                new = event["raw_object"]
                if (
                    event["type"] != "MODIFIED"
                    or new["metadata"]["resourceVersion"] == last["metadata"]["resourceVersion"]
                ):
                    continue
                self.log.append(Write(last, new))
                last = new

    def stop(self, final: dict[str, t.Any]) -> None:
        """Stops once the version ``final`` has been seen."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            seen = self.log[-1].new if self.log else self.initial
            if seen["metadata"]["resourceVersion"] == final["metadata"]["resourceVersion"]:
                break
            time.sleep(0.1)
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)


@dataclass
class Controller:
    """Patches random fields of the Deployment every :data:`CONTROLLER_EVERY` seconds."""

    apps: kubernetes.client.AppsV1Api
    name: str
    rng: random.Random
    writes: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> Controller:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _patch(self) -> tuple[dict[str, t.Any], str]:
        """The next write and its content type."""
        self.writes += 1
        patch: dict[str, t.Any] = {"metadata": {"annotations": {MARK: str(self.writes)}}}
        choice = self.rng.choice(("replicas", "label-a", "label-c", "history", "deadline", "history", "pull"))
        if choice == "pull":  # one field of the container item the person types into, by its key
            policy = self.rng.choice(("Always", "IfNotPresent", "Never"))
            patch["spec"] = {"template": {"spec": {"containers": [{"name": "app", "imagePullPolicy": policy}]}}}
            return patch, STRATEGIC_MERGE_PATCH
        if choice == "replicas":
            patch["spec"] = {"replicas": self.rng.randint(1, 9)}
        elif choice == "label-a":
            patch["metadata"]["labels"] = {"p-a": "ctl" + str(self.writes)}
        elif choice == "label-c":
            patch["metadata"]["labels"] = {"c-x": "ctl" + str(self.writes)}
        elif choice == "history":
            patch["spec"] = {"revisionHistoryLimit": self.rng.randint(1, 20)}
        else:
            patch["spec"] = {"progressDeadlineSeconds": self.rng.randint(100, 900)}
        return patch, MERGE_PATCH

    def _run(self) -> None:
        while not self._stop.wait(CONTROLLER_EVERY):
            patch, content_type = self._patch()
            response = self.apps.patch_namespaced_deployment(
                self.name, NAMESPACE, patch, _content_type=content_type, _preload_content=False
            )
            response.read()
            response.release_conn()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)


@dataclass
class Person:
    """Types into the editor and saves, keeping what it typed and chose."""

    page: Page
    rng: random.Random
    writes: Writes
    typed: dict[str, tuple[t.Any, int]] = field(default_factory=dict)
    """Field -> the value the person last typed there, and how many writes had been seen then."""
    took_theirs: set[str] = field(default_factory=set)
    """Fields where the person took theirs after typing there last."""
    keys: int = 0
    outcomes: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    """What the person did, in order (shown when a check fails)."""

    def control(self, pointer: str) -> Locator:
        return self.page.locator(f'[data-krm-path="{ON_PAGE.get(pointer, pointer)}"]').locator(
            ":scope > input.krm-input:not(.krm-key), :scope > textarea.krm-input"
        )

    def type_into(self, pointer: str) -> None:
        """Types a new value into one field, key by key."""
        field_ = self.control(pointer)
        if pointer in (REPLICAS, MIN_READY):
            value: t.Any = self.rng.randint(1, 9) if pointer == REPLICAS else self.rng.randint(0, 60)
            text = str(value)
            type_over(field_, text)
        else:
            current = field_.input_value()
            addition = "".join(self.rng.choices(string.ascii_lowercase, k=self.rng.randint(2, 5)))
            if len(current) + len(addition) > 40 or not current:
                text = "p" + addition
                type_over(field_, text)
            else:
                text = addition
                field_.click()
                field_.press("End")
                field_.press_sequentially(addition, delay=KEY_DELAY)
            value = field_.input_value()
        self.keys += len(text)
        self.typed[pointer] = (value, len(self.writes.log))
        self.events.append(f"typed {pointer}={value!r} at write {len(self.writes.log)}")
        self.took_theirs.discard(pointer)

    def live(self) -> bool:
        return self.page.locator(".krm-editor").get_attribute("data-krm-connection") == "live"

    def save(self) -> str:
        """Saves until the outcome needs nothing more (conflicts resolved at random on the way)."""
        for _ in range(8):
            expect(self.page.get_by_role("button", name="Save", exact=True)).to_be_enabled(timeout=30_000)
            shown = len(t.cast(list[str], self.page.evaluate("window.krmShown")))
            self.page.get_by_role("button", name="Save", exact=True).click()
            self.page.wait_for_function(FINAL_AFTER, arg=shown, timeout=30_000)
            kind = t.cast(str, self.page.evaluate("window.krmShown[window.krmShown.length - 1]"))
            self.outcomes.append(kind)
            self.events.append(f"save: {kind} at write {len(self.writes.log)}")
            if kind == "draft-conflict":
                self.resolve_conflicts()
            elif kind not in ("version-stale", "recovering", "not-applied"):
                return kind
        return kind

    def resolve_conflicts(self) -> None:
        panels = self.page.locator(".krm-editor .krm-conflict")
        while panels.count():
            panel = self.page.locator("#" + (panels.first.get_attribute("id") or ""))
            pointer = panel.locator("xpath=ancestor::*[@data-krm-path][1]").get_attribute("data-krm-path") or ""
            pointer = next((mine for mine, shown in ON_PAGE.items() if shown == pointer), pointer)
            if self.rng.random() < 0.5:
                panel.get_by_role("button", name="Take theirs").click()
                self.took_theirs.add(pointer)
                self.events.append(f"took theirs at {pointer}")
            else:
                panel.get_by_role("button", name="Keep mine").click()
                self.events.append(f"kept mine at {pointer}")
            expect(panel).to_have_count(0)

    def settle(self) -> None:
        """Waits until every edit is in the draft and shown."""
        expect(self.page.locator(".krm-editor [data-krm-unsent]")).to_have_count(0, timeout=30_000)

    def start(self) -> None:
        wait_live(self.page)
        self.page.evaluate(RECORD_EACH_OUTCOME)


def new_deployment(apps: kubernetes.client.AppsV1Api) -> str:
    name = unique("soak")
    body = deployment_body(name, replicas=2)
    body["metadata"]["labels"] = {"p-a": "pa", "p-b": "pb", "c-x": "cx"}
    body["metadata"]["annotations"] = {MARK: "0"}
    body["spec"].update(minReadySeconds=0, revisionHistoryLimit=5, progressDeadlineSeconds=600)
    apps.create_namespaced_deployment(NAMESPACE, t.cast(t.Any, body))
    return name


def test_a_long_editing_session_loses_nothing_and_overwrites_nothing(
    through_proxy: Page,
    proxy: TcpProxy,
    kube: KubeSimulator,
    apps: kubernetes.client.AppsV1Api,
    save_server: SaveServer,
) -> None:
    seed = int(os.environ.get("FLASK_KRM_SOAK_SEED") or time.time())
    print(f"soak seed {seed}, {SECONDS:.0f} s")
    rng = random.Random(seed)
    name = new_deployment(apps)
    initial = raw_deployment(apps, name)
    writes = Writes(apps, name, initial).start()
    page = through_proxy
    page.goto(f"/deployments/{name}")
    person = Person(page, rng, writes)
    person.start()
    controller = Controller(kubernetes.client.AppsV1Api(kube.api_client("admin")), name, random.Random(seed + 1))
    controller.start()
    outages, reloads = list(OUTAGES), list(RELOADS)
    cuts = 0
    start = time.monotonic()
    try:
        # every outage and reload happens, even when a slow machine stretches the session
        while (elapsed := (time.monotonic() - start) / SECONDS) < 1 or outages or reloads:
            if outages and elapsed >= outages[0]:
                outages.pop(0)
                proxy.cut()
                cuts += 1
                person.events.append(f"outage {cuts} at write {len(writes.log)}")
                until = time.monotonic() + OUTAGE_SECONDS
                while time.monotonic() < until:  # typing goes on through the outage
                    person.type_into(rng.choice(PERSON_FIELDS))
                proxy.restore()
                person.start()
                continue
            if reloads and elapsed >= reloads[0]:
                inside_debounce = len(reloads) == 1
                reloads.pop(0)
                if inside_debounce:
                    person.type_into(LABEL_B)
                else:
                    person.settle()
                person.events.append(f"reload at write {len(writes.log)}")
                page.reload()
                person.start()
                continue
            person.type_into(rng.choice(PERSON_FIELDS))
            if rng.random() < 0.3 and person.live():
                person.save()
    finally:
        controller.stop()
    person.start()
    person.settle()
    final_kind = person.save()
    assert final_kind in ("saved", "nothing-to-save"), person.outcomes
    final = raw_deployment(apps, name)
    writes.stop(final)
    print(
        f"soak: {person.keys} keys, {len(person.outcomes)} save outcomes, {controller.writes} controller writes, "
        f"{cuts} outages, {len(RELOADS)} reloads, took theirs at {sorted(person.took_theirs)}"
    )
    assert cuts == len(OUTAGES)

    def value_after(index: int, pointer: str) -> t.Any:
        """The field's value once the first ``index`` writes were stored."""
        return get(writes.log[index - 1].new if index else initial, pointer)

    def history(pointer: str) -> str:
        changes = [
            f"write {i} by {'controller' if w.by_controller else 'person' if w.by_person else 'other'}: "
            f"{get(w.new, pointer)!r}"
            for i, w in enumerate(writes.log)
            if w.changed(pointer)
        ]
        return "\n".join([f"{pointer}: final {get(final, pointer)!r}", *changes, *person.events])

    person_writes = [(i, w) for i, w in enumerate(writes.log) if w.by_person]
    assert person_writes, "the person never saved"
    # Every value typed last is in a saved object, and stays unless the controller changed it later.
    for pointer, (value, typed_at) in person.typed.items():
        if pointer in person.took_theirs:
            continue
        carried = [i for i in range(typed_at, len(writes.log)) if get(writes.log[i].new, pointer) == value]
        if not carried:
            assert value_after(typed_at, pointer) == value, f"{pointer}: typed {value!r}, never saved"
            carried = [typed_at - 1]
        later = [w for w in writes.log[carried[-1] + 1 :] if w.changed(pointer)]
        assert get(final, pointer) == value or any(not w.by_person for w in later), history(pointer)
    # A save of the person changes only fields the person typed into, so every other change of the
    # controller stays.
    typed = set(person.typed)
    for index, write in person_writes:
        for pointer in (*PERSON_FIELDS, *CONTROLLER_ONLY, "/metadata/annotations/" + MARK):
            if write.changed(pointer):
                assert pointer in typed, f"save #{index} changed {pointer}, which the person never edited"
    for pointer in CONTROLLER_ONLY:
        last = [w for w in writes.log if w.changed(pointer)]
        expected = get(last[-1].new, pointer) if last else get(initial, pointer)
        assert get(final, pointer) == expected, pointer
        assert not any(w.by_person for w in last), pointer
    assert get(final, "/metadata/annotations/" + MARK) == str(controller.writes)
    # Each audit record of the person's saves names only paths the person edited.
    records = [r for r in save_server.saves(name) if r["principal"] == "editor"]
    assert len(records) >= len(person_writes)  # a write changing nothing makes no new version
    for record in records:
        for path in record["fields"]:
            assert any(path == p or path.startswith(p + "/") for p in typed), (path, record)
