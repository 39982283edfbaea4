"""The page's review, merge, search-Enter and Status flows in a real browser (issue 46 items 4 and 7,
issue 48 item 3): Debian's Chromium driven by Playwright against a real `vaultlens serve` on
loopback, indexed with the bundled model, the scripted LLM server as the model (the fixtures of
tests/test_web_browser.py, one server of this module's own).

Review without dead ends: Send above a folded prompt summed up by note; the validator's verdict
before any recommendation; "Insert after" lists only the receiving note's blocks, by heading and
first words, and is refilled when the direction changes; a refused re-plan keeps the form usable
(no reload, no second model call); "Review again" starts over from the notes as they are. Merge
from a duplicates pair: the plan reviewed, one combined diff applied, undo puts every byte back.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

import test_web_browser as web
from server_support import running_server
from test_review import link_answer
from test_web_browser import (
    CACHING,
    LISBON,
    PLAN,
    QUERY,
    STARTER,
    SYSTEMS,
    TOMATO_CARE_NOTE,
    TOMATOES,
    WAIT_MS,
    Browser,
    Page,
    Site,
    check_accessibility,
    expect,
    query_of,
    reviews,
    shot,
    type_query,
)
from vl_support import snapshot, write_vault

pytestmark = pytest.mark.skipif(
    web.CHROMIUM is None, reason="no Chromium found (see tests/test_web_browser.py)"
)
# the browser suite's fixtures, one server of this module's own (module scope): its vault is changed here
site, browser, page = web.site, web.browser, web.page
NONCE_ID = re.compile(r"\b[0-9a-f]{8}:[AB]:\d+")


def review_url(site: Site, a: str = CACHING, b: str = SYSTEMS) -> str:
    return f"{site.url}/review?a={quote(a)}&b={quote(b)}"


def after_labels(page: Page) -> list[str]:
    """The labels of the "Insert after" options other than the planner's choice."""
    return list(
        page.locator("select#after option").evaluate_all(
            "os => os.filter(o => o.value).map(o => o.textContent)"
        )
    )


def files_only(snap: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in snap.items() if v != "dir"}


# ---- review ----------------------------------------------------------------------------------------------


def test_send_comes_above_the_folded_prompt_summed_up_by_note(site: Site, page: Page) -> None:
    page.goto(review_url(site))
    send = page.locator("button#send")
    expect(send).to_be_visible()
    summary = page.locator("#consent-summary li")
    expect(summary).to_have_count(2)
    assert [summary.nth(i).get_attribute("data-path") for i in range(2)] == [CACHING, SYSTEMS]
    assert re.search(r"\d+ characters", summary.first.inner_text())
    details = page.locator("#consent details")
    assert details.get_attribute("open") is None, "the prompt is folded"
    assert in_view(page, "button#send"), "Send is on the first screen"
    assert page.eval_on_selector("button#send", "b => b.getBoundingClientRect().top") < page.eval_on_selector(
        "#consent details", "d => d.getBoundingClientRect().top"
    )
    page.locator("#consent details summary").click()  # the exact text is one click away
    expect(page.locator("#consent pre.preview")).to_contain_text("Every entry lives five minutes.")


def in_view(page: Page, selector: str) -> bool:
    return bool(
        page.eval_on_selector(selector, "e => e.getBoundingClientRect().bottom <= window.innerHeight")
    )


def test_insert_after_lists_the_receiving_notes_blocks_and_refills_when_the_direction_changes(
    site: Site, page: Page
) -> None:
    page.goto(review_url(site))
    page.locator("button#send").click()
    expect(page.locator("form#plan")).to_be_visible()
    a_labels = after_labels(page)
    assert any("A cached value expires" in t for t in a_labels), a_labels
    assert not any("Every entry lives" in t for t in a_labels), "only the note that gets the link"
    assert all("Cache lifetime" in t and not NONCE_ID.search(t) for t in a_labels), a_labels
    assert any(t.startswith("Cache lifetime › Validation") for t in a_labels), a_labels  # its heading path

    page.select_option("select#direction", "B")
    expect(page.locator("#after-note")).to_contain_text(SYSTEMS)
    b_labels = after_labels(page)
    assert any("Every entry lives five minutes" in t for t in b_labels), b_labels
    assert not any("A cached value expires" in t for t in b_labels), b_labels
    wanted = page.locator("select#after option", has_text="Every entry lives").get_attribute("value") or ""
    page.select_option("select#after", wanted)
    page.locator("button#replan").click()
    expect(page.locator("#diff")).to_contain_text(SYSTEMS)
    expect(page.locator("#plan-problem [role=alert]")).to_have_count(0)


def test_a_refused_replan_keeps_the_form_usable_and_says_why_without_a_second_model_call(
    site: Site, page: Page
) -> None:
    original = (site.vault / CACHING).read_bytes()
    page.goto(review_url(site))
    page.locator("button#send").click()
    expect(page.locator("#diff table.diff")).to_be_visible()
    page.evaluate("window.__same_page = true")  # gone if anything reloads the page
    sent = len(reviews(site.model))
    try:
        (site.vault / CACHING).write_bytes(original + b"\nEdited after the review.\n")
        page.locator("button#replan").click()
        problem = page.locator("#plan-problem [role=alert]")
        expect(problem).to_contain_text("changed after the review")
        expect(problem).to_contain_text("Nothing was written")
        form = page.locator("form#plan")
        expect(form).to_be_visible()
        expect(page.locator("button#replan")).to_be_enabled()
        expect(page.locator("#claims .claim").first).to_be_visible()  # the review stays
        assert page.evaluate("window.__same_page") is True
        assert len(reviews(site.model)) == sent, "a re-plan sends nothing"
    finally:
        (site.vault / CACHING).write_bytes(original)
    # the same form plans again once the note is as reviewed
    page.locator("input#link_text").fill("Compare with")
    page.locator("button#replan").click()
    expect(page.locator("#diff table.diff")).to_contain_text("Compare with")
    expect(page.locator("#plan-problem [role=alert]")).to_have_count(0)
    # and "Review again" starts over from the current text: a new prompt to accept
    page.locator("button#review-again").click()
    expect(page.locator("button#send")).to_be_visible()
    assert len(reviews(site.model)) == sent
    page.locator("button#send").click()
    expect(page.locator("#verdict")).to_contain_text("Recommendation: add_link")
    assert len(reviews(site.model)) == sent + 1


def test_an_invalid_answer_shows_the_verdict_first_and_recommends_nothing(site: Site, page: Page) -> None:
    def invalid(nonce: str) -> dict[str, Any]:
        answer = link_answer(nonce)
        answer["claims"][0]["evidenceA"] = f"{nonce}:A:99"  # a fragment the catalog does not hold
        return answer

    site.model.answer = invalid
    try:
        page.goto(review_url(site))
        page.locator("button#send").click()
        verdict = page.locator("#verdict")
        expect(verdict).to_contain_text("did not pass validation")
        assert verdict.get_attribute("data-ok") == "false"
        main = page.locator("main").inner_text()
        assert "Recommendation: add_link" not in main and "add_link" not in verdict.inner_text(), main
        assert page.eval_on_selector(  # the verdict comes before the claims
            "#validation", "v => !!(v.compareDocumentPosition(document.getElementById('claims')) & 4)"
        )
        expect(page.locator("#plan-section")).to_be_hidden()
    finally:
        site.model.answer = link_answer


# ---- search: Enter acts on the query in the field --------------------------------------------------------


def test_enter_right_after_typing_opens_the_first_result_of_the_query_typed(site: Site, page: Page) -> None:
    page.goto(site.url + "/")
    assert type_query(page, QUERY)[0] == STARTER  # an earlier query's results are listed
    fast = "tram climbs through Alfama"
    expected = httpx.get(site.url + "/ui/api/search", params={"q": fast}, timeout=60).json()[0]["path"]
    assert expected == LISBON != STARTER
    field = page.locator("input#q")
    field.select_text()
    page.keyboard.type(fast)  # no delay: Enter comes before the debounce and the answer
    page.keyboard.press("Enter")
    page.wait_for_url("**/note?**")
    assert query_of(page.url)["path"] == expected


# ---- merge from a duplicates pair ------------------------------------------------------------------------


def test_merge_from_a_duplicates_pair_reviews_the_plan_applies_and_undo_restores_every_byte(
    site: Site, page: Page
) -> None:
    original = files_only(snapshot(site.vault))
    page.goto(site.url + "/duplicates")
    pair = page.locator(f'.pair[data-a="{TOMATO_CARE_NOTE}"][data-b="{TOMATOES}"]')
    expect(pair).to_be_visible()
    pair.locator("a.merge-pair").click()
    page.wait_for_url("**/merge?**")
    assert query_of(page.url) == {"keep": TOMATO_CARE_NOTE, "other": TOMATOES}

    # the plan, before anything is written: sections as checkboxes, the notes relinked, the trash
    expect(page.locator("#merge-form fieldset")).to_be_visible()
    expect(page.locator("#relinked li[data-path]")).to_have_count(1)
    assert page.locator("#relinked li").get_attribute("data-path") == PLAN
    trash = page.locator("#trash").get_attribute("data-path") or ""
    assert trash.startswith(".trash/"), trash
    box = page.get_by_label("Tomatoes", exact=True)
    if not box.is_checked():  # carry the section over even where KEEP covers it
        box.check()
        page.locator("button#replan-merge").click()
        expect(page.locator("#merge-form")).to_contain_text("Picked by you")
    diff = page.locator("#diff table.diff")
    expect(diff).to_contain_text("Tomato care")  # the link in Plan.md, repointed
    assert files_only(snapshot(site.vault)) == original, "planning writes nothing"

    page.locator("button#apply").click()
    expect(page.locator("#applied")).to_be_visible()
    # a group names the notes it wrote ("Written: undefined." before: a group has paths, not a path)
    expect(page.locator("#applied")).to_contain_text(TOMATO_CARE_NOTE)
    expect(page.locator("#applied")).not_to_contain_text("undefined")
    assert not (site.vault / TOMATOES).exists()
    assert (site.vault / trash).is_file(), "OTHER went to the trash, not away"
    plan_text = (site.vault / PLAN).read_text(encoding="utf-8")
    assert "[[Tomatoes]]" not in plan_text and "Tomato care" in plan_text, plan_text

    page.locator("button#undo").click()
    page.locator("button#apply").click()
    deadline = time.monotonic() + WAIT_MS / 1000
    while files_only(snapshot(site.vault)) != original and time.monotonic() < deadline:
        time.sleep(0.05)
    assert files_only(snapshot(site.vault)) == original, "every byte of every note is back"


# ---- Status across a restart -----------------------------------------------------------------------------


def test_status_says_when_the_server_stops_and_the_new_servers_state_after_a_restart(
    tmp_path: Path, page: Page
) -> None:
    vault = write_vault(tmp_path / "vault", {STARTER: "# Starter\n\nFeed it.\n"})
    with running_server(vault, tmp_path / "home", watch=True) as first:
        port = first.bound_port
        page.goto(first.url + "/status")
        expect(page.locator("#watcher")).to_have_attribute("data-state", "watching")
    watcher = page.locator("#watcher")
    expect(watcher).not_to_have_attribute("data-state", "watching")
    expect(watcher).not_to_contain_text("Watching")
    with running_server(vault, tmp_path / "home", watch=False, port=port):
        expect(watcher).to_have_attribute("data-state", "off", timeout=WAIT_MS)
        expect(watcher).to_contain_text("Not watching")


# ---- accessibility of the pages touched ------------------------------------------------------------------


@pytest.mark.parametrize("name", ["review-consent", "review-plan", "merge"])
def test_the_review_and_merge_pages_have_no_serious_accessibility_violation(
    site: Site, browser: Browser, name: str
) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    context.set_default_timeout(WAIT_MS)
    try:
        page = context.new_page()
        web.opened_with_key(page, site.page_url)
        if name == "merge":
            page.goto(f"{site.url}/merge?keep={quote(TOMATO_CARE_NOTE)}&other={quote(TOMATOES)}")
            expect(page.locator("#diff table.diff")).to_be_visible()
        else:
            page.goto(review_url(site))
            expect(page.locator("button#send")).to_be_visible()
            if name == "review-plan":
                page.locator("button#send").click()
                expect(page.locator("#diff table.diff")).to_be_visible()
                page.select_option("select#direction", "B")
        page.wait_for_load_state("networkidle")
        check_accessibility(page)
        shot(site, page, name)
    finally:
        context.close()
