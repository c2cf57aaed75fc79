"""A draft checked by the cluster while it is typed, counted at the simulator, in headless Chromium.

Typing a refused replica count keystroke by keystroke costs one check once the draft is still, not
one per keystroke; Kubernetes' message shows at the field before Save; Save refuses without a
write until the value is fixed; then the one Save writes once. The simulator counts every PATCH of
the object, dry runs apart, so no dry run became a write and no write was sent twice.
"""

from __future__ import annotations

from pathlib import Path

import kubernetes.client
import pytest
from playwright.sync_api import Locator, Page, expect

from flask_krm.testing import KubeSimulator
from tests.browser.conftest import MERGE_PATCH
from tests.browser.host_app import NAMESPACE
from tests.browser.save.conftest import SignedIn
from tests.browser.save.test_inputs import control, open_new_deployment
from tests.browser.save.test_outcomes import outcome, save
from tests.save.counting import counting_patches

pytestmark = pytest.mark.browser


def replicas_and_error(page: Page) -> tuple[Locator, Locator]:
    """The replica count's input and the error shown at that field."""
    return control(page, "/spec/replicas"), page.locator('[data-krm-path="/spec/replicas"] > .krm-error')


def test_a_refused_value_is_checked_once_when_still_and_save_writes_once_when_fixed(
    signed_in: SignedIn, apps: kubernetes.client.AppsV1Api, kube: KubeSimulator
) -> None:
    name, page = open_new_deployment(signed_in, apps)
    replicas, error = replicas_and_error(page)
    check = page.locator(".krm-check")
    with counting_patches(kube, name) as patches:
        replicas.fill("")
        replicas.press_sequentially("-12345", delay=60)
        expect(error).to_contain_text("must be greater than or equal to 0")
        expect(error).to_contain_text("(checked by the cluster)")
        expect(check.locator('[data-krm-check="refused"]')).to_be_visible()
        dry_runs, writes = patches.counts
        assert 1 <= dry_runs <= 2 and writes == 0, patches.counts  # not one per keystroke
        save(page)
        expect(outcome(page)).to_have_attribute("data-krm-outcome", "invalid")
        expect(outcome(page)).to_contain_text("nothing was written")
        assert patches.counts == (dry_runs, 0)  # the kept check answered the Save
        replicas.fill("4")
        expect(check.locator('[data-krm-check="passed"]')).to_be_visible()
        expect(error).to_be_empty()
        save(page)
        expect(outcome(page)).to_have_attribute("data-krm-outcome", "saved")
        final_dry_runs, final_writes = patches.counts
        assert final_writes == 1 and final_dry_runs <= dry_runs + 2, patches.counts
    deployment = apps.read_namespaced_deployment(name, NAMESPACE)
    assert deployment.spec is not None and deployment.spec.replicas == 4


def test_a_refusal_at_a_field_stays_through_a_colleagues_change_of_that_field(
    signed_in: SignedIn, apps: kubernetes.client.AppsV1Api, tmp_path: Path
) -> None:
    name, page = open_new_deployment(signed_in, apps)
    replicas, error = replicas_and_error(page)
    replicas.fill("-5")
    expect(error).to_contain_text("must be greater than or equal to 0")
    apps.patch_namespaced_deployment(name, NAMESPACE, {"spec": {"replicas": 3}}, _content_type=MERGE_PATCH)
    conflict = page.locator('[data-krm-path="/spec/replicas"] .krm-conflict')
    expect(conflict).to_contain_text("Changed by someone else")
    expect(replicas).to_have_value("-5")
    page.wait_for_timeout(1000)  # a withdrawn check or a re-render would have emptied it by now
    page.screenshot(path=str(tmp_path / "cause-kept.png"), full_page=True)
    expect(error).to_contain_text("must be greater than or equal to 0")
    conflict.get_by_role("button", name="Take theirs").click()  # the draft changes: the cause goes
    expect(replicas).to_have_value("3")
    expect(error).to_be_empty()


def test_a_passed_check_says_an_open_conflict_stands_between_it_and_a_save(
    signed_in: SignedIn, apps: kubernetes.client.AppsV1Api, tmp_path: Path
) -> None:
    name, page = open_new_deployment(signed_in, apps)
    replicas, _ = replicas_and_error(page)
    passed = page.locator('.krm-check [data-krm-check="passed"]')
    replicas.fill("5")
    expect(passed).to_have_text("Checked by the cluster: Kubernetes accepts these changes.")
    apps.patch_namespaced_deployment(name, NAMESPACE, {"spec": {"replicas": 3}}, _content_type=MERGE_PATCH)
    conflict = page.locator('[data-krm-path="/spec/replicas"] .krm-conflict')
    expect(conflict).to_contain_text("Changed by someone else")
    expect(passed).to_contain_text("Choose “Keep mine” or “Take theirs” at each conflict before saving.")
    page.screenshot(path=str(tmp_path / "passed-with-conflict.png"), full_page=True)
    conflict.get_by_role("button", name="Keep mine").click()
    expect(conflict).to_have_count(0)
    expect(passed).to_have_text("Checked by the cluster: Kubernetes accepts these changes.")
    expect(replicas).to_have_value("5")
