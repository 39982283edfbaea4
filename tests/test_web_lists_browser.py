"""History, Duplicates and the Audit in a real browser (Debian's Chromium through Playwright) against
the real `vaultlens serve` of tests/test_web_browser.py (its fixtures): Discard and Undo refresh the
list in place, a dismissed pair is restored from its list, the audit's tag tree starts folded and its
counts open the notes behind them, and no table cell breaks inside a word.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from test_web_browser import (
    TOMATO_CARE_NOTE,
    TOMATOES,
    WAIT_MS,
    Browser,
    Page,
    Site,
    browser,
    expect,
    opened_with_key,
    page,
    site,
)
from vaultlens.services.changing import writes
from vl_support import snapshot

__all__ = ["browser", "page", "site"]  # the fixtures, used by name

LISBON = "Travel/Lisbon.md"


@pytest.fixture
def journal_of(site: Site, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """This process writes the served vault's journal as the server does (its VAULTLENS_HOME)."""
    home = site.vault.parent / "home"
    monkeypatch.setenv("VAULTLENS_HOME", str(home))
    yield home


def planned(site: Site, text: bytes) -> writes.Planned:
    before = (site.vault / LISBON).read_bytes()
    return writes.plan_write(site.vault, LISBON, text, "rewrite Lisbon for the browser test", before)


def test_discard_and_undo_refresh_the_history_in_place(site: Site, page: Page, journal_of: Path) -> None:
    original = snapshot(site.vault)
    dropped = planned(site, b"# Lisbon\n\nDropped.\n").entry.op_id
    kept = planned(site, b"# Lisbon\n\nKept.\n")
    applied = writes.apply(site.vault, kept.entry.op_id, kept.proposal).op_id
    written = snapshot(site.vault)
    page.goto(site.url + "/history")
    row = page.locator(f'tr.entry[data-op="{dropped}"]')
    expect(row.locator("td.state")).to_have_text("planned")
    row.locator("button.discard").click()
    expect(page.locator("#status")).to_contain_text("no note was touched")
    expect(row.locator("td.state")).to_have_text("discarded")  # the list reloaded itself
    expect(row.locator("button")).to_have_count(0)
    assert snapshot(site.vault) == written, "discard touched no note"
    done = page.locator(f'tr.entry[data-op="{applied}"]')
    done.locator("button.undo").click()
    page.locator("button#apply").click()
    expect(page.locator("#status")).to_contain_text("Undone")
    expect(done.locator("td.state")).to_have_text("undone")
    undo_row = page.locator(f'tr.undo-entry[data-undo-of="{applied}"]')
    expect(undo_row).to_have_count(1)
    expect(undo_row.locator("td.state")).to_have_text("applied")
    assert page.locator(f'tr.entry[data-op="{applied}"] + tr').get_attribute("data-undo-of") == applied
    assert snapshot(site.vault) == original, "every byte is back"
    title = done.locator("time").get_attribute("title") or ""
    assert title.endswith(" UTC") and "." not in done.locator("time").inner_text()


def test_a_dismissed_pair_is_restored_from_the_dismissed_list(site: Site, page: Page) -> None:
    a, b = sorted([TOMATOES, TOMATO_CARE_NOTE])
    page.goto(site.url + "/duplicates")
    pair = page.locator(f'section.kind .pair[data-a="{a}"][data-b="{b}"]')
    if pair.count() == 0:  # an earlier test of the browser suite dismissed it: restore it first
        page.locator(f'#dismissed .dismissed-pair[data-a="{a}"] button.restore').click()
        expect(pair).to_have_count(1)
    pair.locator("button.dismiss").click()
    listed = page.locator(f'#dismissed .dismissed-pair[data-a="{a}"][data-b="{b}"]')
    expect(listed).to_be_visible()  # the list reloaded itself
    expect(pair).to_have_count(0)
    listed.locator("button.restore").click()
    expect(page.locator("#status")).to_contain_text("listed again")
    expect(pair).to_have_count(1)
    expect(listed).to_have_count(0)
    expect(page.locator(".score").first).to_have_attribute("title", re.compile(r"^The score is "))


def test_the_audit_folds_its_tag_tree_and_names_the_notes_behind_its_counts(site: Site, page: Page) -> None:
    page.goto(site.url + "/audit")
    page.locator("button#run-audit").click()
    tree = page.locator("details#tag-tree-box")
    expect(tree).to_be_attached()
    assert tree.get_attribute("open") is None, "the tag tree starts folded"
    expect(page.locator("#tag-tree")).to_be_hidden()
    tree.locator("summary").first.click()
    expect(page.locator('#tag-tree li[data-tag="baking"] > details > summary')).to_be_visible()
    page.locator('dd[data-summary="no_outgoing"] a').click()
    named = page.locator("details#named-no_outgoing")
    expect(named).to_have_attribute("open", "")
    link = named.locator('a[href^="/note?path="]').first
    expect(link).to_be_visible()
    link.click()
    page.wait_for_url("**/note?**")


WORDS_SPLIT = """() => {
  // every word of a table header, a button and a plain cell: one line box each (a word broken
  // inside gives two). Paths and code may wrap anywhere; a word of text may not.
  const split = [];
  for (const cell of document.querySelectorAll("th, td, td button")) {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (node.parentElement.closest("a:not(.before), code, pre, .summary-text")) continue;
      for (const m of node.data.matchAll(/\\S+/g)) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const tops = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
        if (tops.size > 1) split.push(m[0]);
      }
    }
  }
  return split;
}"""


def test_no_table_cell_breaks_inside_a_word_in_a_narrow_window(site: Site, browser: Browser) -> None:
    """Where the columns are squeezed ("Lin / e" was the audit's header at 400 px)."""
    context = browser.new_context(viewport={"width": 400, "height": 900})
    context.set_default_timeout(WAIT_MS)
    try:
        page = context.new_page()
        opened_with_key(page, site.page_url)
        page.goto(site.url + "/audit")
        if page.locator("table#broken-links").count() == 0:
            page.locator("button#run-audit").click()
        expect(page.locator("table#broken-links")).to_contain_text("Missing note")
        split = {"audit": page.evaluate(WORDS_SPLIT)}
        for url in ("/history", "/status"):
            page.goto(site.url + url)
            split[url] = page.evaluate(WORDS_SPLIT)
        assert not any(split.values()), split
    finally:
        context.close()
