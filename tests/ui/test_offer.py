"""What an :class:`~flask_krm.ui.offer.Offer` shows: the controls of the verbs it holds."""

from __future__ import annotations

from flask_krm.ui.offer import EVERYTHING, NOTHING, WRITE_VERBS, Offer


def test_an_offer_shows_the_controls_of_its_verbs_only() -> None:
    patching = Offer(frozenset({"patch"}))
    assert patching.edit and not patching.create and not patching.delete
    assert patching.allows("patch") and not patching.allows("delete")
    assert EVERYTHING.verbs == WRITE_VERBS and EVERYTHING.edit and EVERYTHING.create and EVERYTHING.delete
    assert not (NOTHING.edit or NOTHING.create or NOTHING.delete)


def test_a_control_needing_no_verb_is_offered_to_everyone() -> None:
    assert NOTHING.allows(None) and EVERYTHING.allows(None)


def test_offers_of_the_same_verbs_are_one_key() -> None:
    kept = {Offer(frozenset({"patch"})): "rendered"}
    assert kept[Offer(frozenset(["patch"]))] == "rendered"
    assert Offer(frozenset()) == NOTHING and NOTHING != Offer(frozenset({"patch"}))
