"""Least privilege for editors: an editor given ``fields=`` writes exactly those fields.

Every editor page of the example application, and editors of a minimal host given ``fields=``,
are swept with forged edits (every operation of the edit route, list items named by position and
by key included) at every path of the object outside what the editor may edit, plus new keys and
items no page shows (a Deployment's ``serviceAccountName``, a volume). Each must be refused with a
4xx before it reaches the draft: afterwards Save has nothing to save and no write reaches the API
server.
"""

from __future__ import annotations

import json
import re
import typing as t
from collections.abc import Iterator, Mapping
from urllib.parse import quote

import pytest
from flask import Flask

from flask_krm import Scope
from flask_krm.testing.simulator import KubeSimulator
from flask_krm.testing.simulator.registry import WriteRequest as AdmissionRequest
from flask_krm.ui.widgets import default_roots

from .hosts import TARGET, Browser, Page, Recorder, admin_writer, make_host, make_namespace, shut_down

Path = tuple[t.Any, ...]
NAMESPACE: t.Final = "demo"
HOST_NAMESPACE: t.Final = "least-privilege"
FORGED: t.Final = "forged"
SERVICE_ACCOUNT: t.Final = ("spec", "template", "spec", "serviceAccountName")


@pytest.fixture(scope="module")
def admitted(kube: KubeSimulator) -> Iterator[list[str]]:
    """The names of the objects written in the swept namespaces, as the API server admits them (a
    dry run, the cluster's check of a draft, writes nothing)."""
    seen: list[str] = []

    def record(request: AdmissionRequest) -> None:
        if request.namespace in (NAMESPACE, HOST_NAMESPACE) and request.verb != "create" and not request.dry_run:
            seen.append(f"{request.verb} {request.resource.plural}/{request.name}")

    assert kube.faults is not None
    remove = kube.faults.mutate_writes(record)
    yield seen
    remove()


@pytest.fixture(scope="module")
def host(kube: KubeSimulator) -> Iterator[Flask]:
    make_namespace(kube, HOST_NAMESPACE)
    app = make_host(kube, Recorder())
    yield app
    shut_down(app)


def live(browser: Browser, url: str) -> Page:
    page = browser.open(url)
    channel = page.channel().until_text(": connected")
    if 'data-krm-stream="live"' not in page.html:
        channel.until_text('data-krm-stream="live"')
    return page


def edit(browser: Browser, page: Page, op: str, path: Path, **form: str) -> int:
    editor = page.component("editor")
    response = browser.post(
        f"/krm/ui/components/{editor}/edit", {"op": op, "path": json.dumps(list(path)), **form}, page.headers(editor)
    )
    return response.status_code


def save(browser: Browser, page: Page) -> str:
    editor = page.component("editor")
    body = browser.post(f"/krm/ui/components/{editor}/actions/save", {}, page.headers(editor)).get_data(as_text=True)
    found = re.search(r'data-krm-outcome="([^"]+)"', body)
    return found.group(1) if found else body[:300]


def paths_of(value: t.Any, at: Path = ()) -> Iterator[tuple[Path, t.Any]]:
    """Every path of ``value`` below the root, with the value there."""
    items: t.Iterable[tuple[t.Any, t.Any]] = ()
    if isinstance(value, Mapping):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    for key, item in items:
        path = (*at, key)
        yield path, item
        yield from paths_of(item, path)


def inside(path: Path, roots: t.Iterable[Path]) -> bool:
    text = tuple(str(segment) for segment in path)
    return any(text[: len(root)] == root for root in roots)


def forged_edits(obj: Mapping[str, t.Any], editable: t.Sequence[Path]) -> list[tuple[str, Path, dict[str, str]]]:
    """Every edit operation at every path of ``obj`` outside ``editable``, and new keys beside them."""
    edits: list[tuple[str, Path, dict[str, str]]] = []
    outside = [(path, value) for path, value in paths_of(obj) if not inside(path, editable)]
    maps = [()] + [path for path, value in outside if isinstance(value, Mapping)]
    if obj.get("kind") == "Deployment" and not inside(SERVICE_ACCOUNT, editable):
        maps.append(SERVICE_ACCOUNT[:-1])
        edits.append(("set", SERVICE_ACCOUNT, {"value": "cluster-admin"}))
    for path, value in outside:
        edits += [
            ("set", path, {"value": json.dumps(value) if not isinstance(value, str) else FORGED}),
            ("remove_key", path, {}),
            ("revert", path, {}),
            ("take_theirs", path, {}),
            ("keep_mine", path, {}),
        ]
        if isinstance(path[-1], str):
            edits.append(("rename_key", path[:-1], {"key": path[-1], "new_key": FORGED}))
        if isinstance(value, list):
            edits.append(("add_item", path, {"item.name": FORGED, "value": FORGED}))
        if isinstance(path[-1], int):
            edits += [("remove_item", path, {}), ("move_item", path, {"to": "up"}), ("move_item", path, {"to": "down"})]
            if isinstance(value, Mapping) and isinstance(value.get("name"), str):
                item = (*path[:-1], {"name": value["name"]})  # the item named by its key, as the page names items
                edits += [
                    ("set", (*item, "image"), {"value": FORGED, "from": ""}),
                    ("remove_item", item, {}),
                    ("move_item", item, {"to": "down"}),
                    ("add_item", (*item, "env"), {"item.name": FORGED}),
                    ("revert", item, {}),
                ]
    for path in maps:
        if not inside(path + (FORGED,), editable):
            edits.append(("add_key", path, {"key": FORGED, "value": FORGED}))
    if not inside(SERVICE_ACCOUNT, editable):
        edits.append(("add_key", SERVICE_ACCOUNT[:-1], {"key": SERVICE_ACCOUNT[-1], "value": "cluster-admin"}))
        edits.append(("add_item", (*SERVICE_ACCOUNT[:-1], "volumes"), {"item.name": FORGED}))
    return edits


def sweep(
    browser: Browser, page: Page, obj: Mapping[str, t.Any], editable: t.Sequence[Path], admitted: list[str]
) -> int:
    """Send every forged edit; each must be a 4xx and leave nothing to save or write. Returns how many."""
    written = len(admitted)
    edits = forged_edits(obj, editable)
    for op, path, form in edits:
        status = edit(browser, page, op, path, **form)
        assert 400 <= status <= 499, (obj["metadata"]["name"], op, path, status)
    assert save(browser, page) == "nothing-to-save", obj["metadata"]["name"]
    assert admitted[written:] == []
    return len(edits)


def pointer_roots(fields: t.Iterable[str | tuple[str, str]]) -> list[Path]:
    """The paths of ``fields=`` entries: pointers or (label, pointer) pairs."""
    pointers = (field if isinstance(field, str) else field[1] for field in fields)
    return [tuple(p.lstrip("/").split("/")) for p in pointers]


def read(kube: KubeSimulator, path: str) -> dict[str, t.Any]:
    answer = admin_writer(kube).request("GET", path)
    assert answer.ok and answer.body is not None, answer
    return dict(answer.body)


EXAMPLE_PAGES: t.Final = (
    ("configmaps", "/api/v1/namespaces/demo/configmaps"),
    ("secrets", "/api/v1/namespaces/demo/secrets"),
    ("deployments", "/apis/apps/v1/namespaces/demo/deployments"),
    ("flunders", "/apis/wardle.example.com/v1alpha1/namespaces/demo/flunders"),
)


@pytest.mark.parametrize(("resource", "collection"), EXAMPLE_PAGES, ids=[r for r, _ in EXAMPLE_PAGES])
def test_every_example_editor_refuses_writes_outside_what_it_shows(
    example: Flask, kube: KubeSimulator, admitted: list[str], resource: str, collection: str
) -> None:
    from example_app.pages import EDITOR_FIELDS, SECRET_POLICY

    fields = SECRET_POLICY if resource == "secrets" else EDITOR_FIELDS[resource]
    objects = read(kube, collection)["items"]
    assert objects, f"the demo has {resource}"
    browser = Browser(example, "editor")
    swept = 0
    for item in objects:
        name = item["metadata"]["name"]
        page = live(browser, f"/namespaces/{NAMESPACE}/{resource}/{name}")
        current = read(kube, f"{collection}/{name}")
        # no fields=: labels, annotations and every top-level member but the identity, as the schema shows them
        editable = pointer_roots(fields) if fields is not None else list(default_roots(current, current))
        swept += sweep(browser, page, current, editable, admitted)
        # what the page shows stays editable: a label, typed and reverted
        assert edit(browser, page, "add_key", ("metadata", "labels"), key="swept", value="yes") == 200
        assert edit(browser, page, "revert", ("metadata", "labels", "swept")) == 200
    assert swept > 20 * len(objects)
    browser.close()


def test_item_edits_inside_the_shown_containers_are_accepted_and_outside_refused(
    example: Flask, kube: KubeSimulator, admitted: list[str]
) -> None:
    browser = Browser(example, "editor")
    page = live(browser, f"/namespaces/{NAMESPACE}/deployments/web")
    current = read(kube, "/apis/apps/v1/namespaces/demo/deployments/web")
    container = current["spec"]["template"]["spec"]["containers"][0]
    item = ("spec", "template", "spec", "containers", {"name": container["name"]})
    assert edit(browser, page, "set", (*item, "image"), value="forged:1", **{"from": container["image"]}) == 200
    assert edit(browser, page, "revert", (*item, "image")) == 200
    assert (
        edit(browser, page, "add_item", (*item, "ports"), **{"item.containerPort": "9", "item.protocol": "TCP"}) == 200
    )
    assert edit(browser, page, "revert", item[:-1]) == 200
    pod = ("spec", "template", "spec")
    assert edit(browser, page, "add_item", (*pod, "volumes"), **{"item.name": FORGED}) == 403
    assert edit(browser, page, "add_item", (*pod, "initContainers"), **{"item.name": FORGED}) == 403
    assert edit(browser, page, "set", (*pod, "initContainers", {"name": "x"}, "image"), value="x") == 403
    assert save(browser, page) == "nothing-to-save"
    browser.close()


def test_the_forged_service_account_edit_on_the_example_deployment_page_is_refused(
    example: Flask, kube: KubeSimulator, admitted: list[str]
) -> None:
    browser = Browser(example, "editor")
    page = live(browser, f"/namespaces/{NAMESPACE}/deployments/web")
    written = len(admitted)
    assert edit(browser, page, "add_key", SERVICE_ACCOUNT[:-1], key="serviceAccountName", value="cluster-admin") == 403
    assert edit(browser, page, "set", SERVICE_ACCOUNT, value="cluster-admin") in (400, 403)
    assert edit(browser, page, "set", ("spec", "replicas"), value="2") == 200, "a shown field is editable"
    assert save(browser, page) in ("saved-pending", "saved", "nothing-to-save")
    current = read(kube, "/apis/apps/v1/namespaces/demo/deployments/web")
    assert "serviceAccountName" not in current["spec"]["template"]["spec"]
    assert all("deployments/web" in write for write in admitted[written:])
    browser.close()


HOST_EDITORS: t.Final = (
    (
        "configmaps",
        "",
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "data": {"shown": "1", "hidden": "2"},
            "metadata": {"labels": {"app": "x"}, "annotations": {"note": "n"}},
        },
        ["/data/shown"],
    ),
    (
        "secrets",
        "",
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "data": {"token": "dG9rZW4="},
            "metadata": {"labels": {"app": "x"}},
        },
        ["/metadata/labels", "/data"],
    ),
    (
        "deployments",
        "apps",
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"labels": {"app": "x"}},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "x"}},
                "template": {
                    "metadata": {"labels": {"app": "x"}},
                    "spec": {"containers": [{"name": "app", "image": "nginx", "env": [{"name": "A", "value": "1"}]}]},
                },
            },
        },
        ["/spec/replicas", "/spec/template/spec/containers"],
    ),
)


@pytest.mark.parametrize(("resource", "group", "body", "fields"), HOST_EDITORS, ids=[r for r, *_ in HOST_EDITORS])
def test_a_minimal_hosts_editor_given_fields_refuses_writes_outside_them(
    host: Flask,
    kube: KubeSimulator,
    admitted: list[str],
    resource: str,
    group: str,
    body: dict[str, t.Any],
    fields: list[str],
) -> None:
    name = f"lp-{resource}"
    base = f"/apis/{group}/v1" if group else "/api/v1"
    collection = f"{base}/namespaces/{HOST_NAMESPACE}/{resource}"
    answer = admin_writer(kube).request(
        "POST", collection, body={**body, "metadata": {**body["metadata"], "name": name}}
    )
    assert answer.ok, answer
    scope = Scope(target=TARGET, group=group, version="v1", resource=resource, namespace=HOST_NAMESPACE)
    shown = "".join(f"&field={quote(pointer, safe='')}" for pointer in fields)
    browser = Browser(host, "editor")
    page = live(browser, f"/edit?scope={quote(scope.canonical_query(), safe='')}&name={name}{shown}")
    sweep(browser, page, read(kube, f"{collection}/{name}"), pointer_roots(fields), admitted)
    browser.close()
