"""One person sending YAML bombs to the served example cannot stop another: the bombs are refused
small, the other person's page loads and edits are all answered meanwhile, and the memory a large
draft took is released when it is discarded.

The example runs as a person starts it (``python -m example_app``, gevent, one process); two
people sign in with their own sessions and talk HTTP to it, as browsers would. The run is short by
default; ``FLASK_KRM_BOMB_ROUNDS`` sets how many rounds the second person makes (20 by default).

That a bomb is refused before it is expanded, and that other requests run at every pause of its
composing, is counted where it can be: ``tests/test_yaml_text.py`` and ``tests/ui/test_yaml_edits.py``.
"""

from __future__ import annotations

import html
import http.cookiejar
import json
import os
import re
import threading
import typing as t
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field

from tests.example.conftest import Example
from tests.test_yaml_text import ALIAS_FAN_OUT, MERGE_BOMB, NESTED_ANCHORS

ROUNDS: t.Final = int(os.environ.get("FLASK_KRM_BOMB_ROUNDS") or 20)
PAGE: t.Final = "/namespaces/demo/configmaps/app-config"
BOMBS: t.Final = {"nested-anchors": NESTED_ANCHORS, "alias-fan-out": ALIAS_FAN_OUT, "merge-keys": MERGE_BOMB}


@dataclass
class Person:
    """One browser session of the example: its cookies and the editor it opened."""

    url: str
    opener: urllib.request.OpenerDirector = field(init=False)
    component: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    source: str = ""

    def __post_init__(self) -> None:
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))

    def request(self, path: str, form: dict[str, str] | None = None) -> tuple[int, str]:
        data = urllib.parse.urlencode(form).encode() if form is not None else None
        request = urllib.request.Request(self.url + path, data=data, headers=self.headers if form is not None else {})
        try:
            with self.opener.open(request, timeout=30) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def sign_in(self, user: str) -> None:
        status, page = self.request("/sign-in")
        assert status == 200
        token = re.search(r'name="krm_csrf_token" value="([^"]+)"', page)
        assert token
        form = {"krm_csrf_token": token.group(1), "username": user, "password": user}
        status, _ = self.request("/sign-in", form)
        assert status == 200

    def open_editor(self) -> str:
        status, page = self.request(PAGE)
        assert status == 200
        section = re.search(r'<section id="(krm-[0-9a-f]{12})"[^>]*data-krm-kind="editor"[^>]*>', page)
        assert section, "no editor on the page"
        self.component = section.group(1)
        headers = re.search(r"hx-headers:inherited='([^']+)'", section.group(0))
        assert headers
        self.headers = json.loads(html.unescape(headers.group(1)))
        source = re.search(rf'id="{self.component}-yaml-source" hidden>(.*?)</pre>', page, re.S)
        assert source
        self.source = html.unescape(source.group(1))
        return page

    def yaml(self, typed: str, before: str | None = None) -> tuple[int, str]:
        form = {"before": self.source if before is None else before, "yaml": typed}
        return self.request(f"/krm/ui/components/{self.component}/yaml", form)

    def edit(self, path: list[str], value: str, started: str) -> int:
        form = {"op": "set", "path": json.dumps(path), "value": value, "from": started}
        return self.request(f"/krm/ui/components/{self.component}/edit", form)[0]

    def discard(self) -> int:
        return self.request(f"/krm/ui/components/{self.component}/actions/discard", {})[0]


def rss(example: Example) -> int:
    """The server's resident memory in bytes."""
    with open(f"/proc/{example.process.pid}/status") as status:
        found = re.search(r"VmRSS:\s+(\d+) kB", status.read())
    assert found
    return int(found.group(1)) * 1024


def test_yaml_bombs_are_refused_small_stop_no_one_else_and_a_discard_frees_memory(
    example_server: Example,
) -> None:
    attacker, other = Person(example_server.url), Person(example_server.url)
    attacker.sign_in("editor")
    other.sign_in("editor")
    attacker.open_editor()
    other.open_editor()
    for typed in BOMBS.values():  # warm up: every code path loaded once
        assert attacker.yaml(attacker.source + typed)[0] == 422

    before = rss(example_server)
    for name, typed in BOMBS.items():
        status, answer = attacker.yaml(attacker.source + typed)
        assert status == 422 and "Nothing was applied" in answer, name
        assert "stand for more than 10000 values" in html.unescape(answer), (name, answer[:500])
    assert rss(example_server) - before < 5 * 1024 * 1024

    def round_trips(rounds: int, first: str) -> tuple[list[int], str]:
        """The other person's page loads and edits, each answered; returns how many bombs were refused
        while each was under way, and the value left."""
        during: list[int] = []
        value = first
        for round_ in range(rounds):
            bombs = len(refused)
            assert other.request(PAGE)[0] == 200
            typed = f"{first} {round_}"
            assert other.edit(["data", "greeting"], typed, value) == 200
            during.append(len(refused) - bombs)
            value = typed
        status, page = other.request(PAGE)
        assert status == 200 and html.escape(value) in page, "every edit was applied, in order"
        return during, value

    stop = threading.Event()
    refused: list[int] = []
    _, value = round_trips(ROUNDS, "hello")

    def keep_bombing() -> None:
        while not stop.is_set():
            for typed in BOMBS.values():
                refused.append(attacker.yaml(attacker.source + typed)[0])

    bomber = threading.Thread(target=keep_bombing, daemon=True)
    bomber.start()
    try:
        while not refused and bomber.is_alive():  # the bombing is under way
            stop.wait(0.01)
        during, _ = round_trips(ROUNDS, value)
    finally:
        stop.set()
        bomber.join(timeout=30)
    assert refused and set(refused) == {422}, set(refused)
    print(f"{len(refused)} bombs refused, {sum(during)} of them during the other person's {ROUNDS} rounds")
    assert sum(during) >= ROUNDS // 2, f"the other person's rounds ran while bombs were refused: {during}"
    assert rss(example_server) - before < 5 * 1024 * 1024 + before // 20
    memory_of_a_discarded_draft_is_released(example_server, other)


def memory_of_a_discarded_draft_is_released(example_server: Example, person: Person) -> None:
    person.open_editor()
    assert person.discard() == 200  # nothing to discard: the action's code is loaded
    before = rss(example_server)
    big = "x" * 900_000
    status, answer = person.yaml(person.source.replace("\ndata:\n", f"\ndata:\n  big: {big}\n", 1))
    assert status == 200, answer[:500]
    assert f"{person.component}-yaml-fresh" in answer
    assert person.request(PAGE)[0] == 200  # the draft rendered too
    grown = rss(example_server)
    assert person.discard() == 200
    after = rss(example_server)
    print(f"RSS {before // 1024} kB before, {grown // 1024} kB with the draft, {after // 1024} kB after the discard")
    assert grown > before + 1024 * 1024, "the draft took no memory: the test measures nothing"
    assert after <= before * 1.10, f"RSS {before // 1024} kB before, {after // 1024} kB after the discard"
