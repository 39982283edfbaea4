"""A huge note's view in parts in a real browser (issue 46 item 7): headless Chromium (Debian's,
driven by Playwright) against the real app on loopback. Jumping down the note loads the parts
there, "Load the rest" loads every part, a wikilink to a heading in a part not loaded yet opens the
note scrolled to it, and axe-core finds no serious violation on the page.
"""

from __future__ import annotations

import pytest

from test_web_browser import (
    AXE,
    AXE_RUN,
    CHROMIUM,
    WAIT_MS,
    Browser,
    Page,
    expect,
    in_viewport,
    opened_with_key,
)
from test_web_browser import browser as browser  # (the fixture: one Chromium)
from test_web_browser import page as page  # (the fixture: a fresh tab)
from test_web_note_parts import HUGE, SMALL, Site, line_of
from test_web_note_parts import site as site  # (the fixture: the served vault)

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium (see test_web_browser)")

PENDING = "#note-body .note-part.pending"


def test_jumping_down_loads_the_parts_there_and_load_the_rest_loads_all(site: Site, page: Page) -> None:
    page.goto(f"{site.url}/note?path={HUGE}")
    parts = int(page.locator("#note-body").get_attribute("data-parts") or 0)
    assert page.locator(PENDING).count() == parts - 1
    middle = parts // 2
    page.locator(f'{PENDING}[data-part="{middle}"]').scroll_into_view_if_needed()
    loaded = page.locator(f'#note-body .note-part[data-part="{middle}"]:not(.pending)')
    expect(loaded).to_contain_text("Some filler text")
    assert loaded.locator("[data-lines]").count() > 0
    assert page.locator(PENDING).count() > 0, "parts far from the viewport wait"
    page.get_by_role("button", name="Load the rest").click()
    expect(page.locator(PENDING)).to_have_count(0)
    assert page.locator("#note-body .note-part").count() == parts


def test_a_wikilink_to_a_heading_in_a_later_part_opens_the_note_there(site: Site, page: Page) -> None:
    page.set_viewport_size({"width": 1280, "height": 600})
    page.goto(f"{site.url}/note?path={SMALL}")
    late = site.text.count("## Section ") - 2
    page.get_by_role("link", name="the late section").click()
    page.wait_for_url(f"**/note?path=Huge.md#h-Section-{late}")
    heading = page.locator(f"#h-Section-{late}")
    expect(heading).to_be_visible()
    page.wait_for_function(f"() => window.scrollY > 0 && document.getElementById('h-Section-{late}')")
    page.wait_for_timeout(200)  # smooth or not, the scroll has settled
    assert in_viewport(page, f"#h-Section-{late}")


def test_the_parted_note_page_has_no_serious_accessibility_violation(site: Site, browser: Browser) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    context.set_default_timeout(WAIT_MS)
    try:
        tab = context.new_page()
        opened_with_key(tab, site.page_url)
        at = line_of(site.text, "Paragraph 100 about")
        tab.goto(f"{site.url}/note?path={HUGE}&lines={at}-{at}")
        expect(tab.locator("#note-body .target").first).to_be_visible()
        tab.add_script_tag(path=str(AXE))
        serious = [v for v in tab.evaluate(AXE_RUN) if v["impact"] in ("serious", "critical")]
        assert not serious, serious
    finally:
        context.close()


def test_a_note_changed_after_the_page_showed_it_loads_no_part_of_the_new_version(
    site: Site, page: Page
) -> None:
    page.goto(f"{site.url}/note?path={HUGE}")
    (site.vault / HUGE).write_text(site.text + "\nOne more line.\n", encoding="utf-8")
    try:
        page.locator(f'{PENDING}[data-part="2"]').scroll_into_view_if_needed()
        expect(page.locator('#note-body .note-part[data-part="2"] [role=alert]')).to_contain_text("changed")
        assert page.locator('#note-body .note-part[data-part="2"] [data-lines]').count() == 0
    finally:
        (site.vault / HUGE).write_text(site.text, encoding="utf-8")
