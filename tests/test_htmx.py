"""htmx response markup: partials escape what is not markup, refusals land in the outcome region,
and a refusal that ends the session says why in a header."""

from __future__ import annotations

from urllib.parse import unquote

from markupsafe import Markup

from flask_krm.htmx import SESSION_ENDED_HEADER, edits_marker, outcome_markup, partial, refusal_response


def test_a_partial_escapes_text_and_keeps_markup() -> None:
    assert partial("c1-outcome", "<b>&") == '<hx-partial hx-target="#c1-outcome">&lt;b&gt;&amp;</hx-partial>'
    assert partial("c1", Markup("<b>ok</b>"), swap="outerHTML") == (
        '<hx-partial hx-target="#c1" hx-swap="outerHTML"><b>ok</b></hx-partial>'
    )


def test_an_outcome_escapes_its_kind_message_and_detail() -> None:
    shown = outcome_markup("refused", "<script>", detail='"x" & y')
    assert 'data-krm-outcome="refused"' in shown and "krm-outcome-refused" in shown
    assert '<p class="krm-outcome-message">&lt;script&gt;</p>' in shown
    assert '<p class="krm-outcome-detail">&#34;x&#34; &amp; y</p>' in shown
    assert "krm-outcome-detail" not in outcome_markup("saved", "Saved.")
    assert edits_marker(7) == '<span class="krm-edits" hidden data-krm-edits="7"></span>'


def test_a_refusal_is_an_uncached_partial_of_the_outcome_region() -> None:
    response = refusal_response("c1-outcome", 409, "Changed meanwhile", detail="name")
    body = response.get_data(as_text=True)
    assert response.status_code == 409 and response.mimetype == "text/html"
    assert response.headers["Cache-Control"] == "no-store"
    assert body.startswith('<hx-partial hx-target="#c1-outcome">') and 'data-krm-outcome="refused"' in body
    assert SESSION_ENDED_HEADER not in response.headers


def test_a_refusal_that_ends_the_session_says_so_in_its_header_and_its_kind() -> None:
    response = refusal_response("c1-outcome", 403, "Signed out: sign in again", session_ended=True)
    assert unquote(response.headers[SESSION_ENDED_HEADER]) == "Signed out: sign in again"
    assert response.headers[SESSION_ENDED_HEADER].isascii() and " " not in response.headers[SESSION_ENDED_HEADER]
    assert 'data-krm-outcome="session-ended"' in response.get_data(as_text=True)
    kept = refusal_response("c1-outcome", 403, "Expired", kind="expired", session_ended=True)
    assert 'data-krm-outcome="expired"' in kept.get_data(as_text=True)
