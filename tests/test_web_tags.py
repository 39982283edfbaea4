"""A tag links to the notes carrying it (issue 46 item 1): the note view's ``#tag`` opens the tag view, which lists
exactly the notes tagged with it or a tag nested under it (front matter, list or string, with or without "#", and
inline outside code), case-insensitively, as Obsidian's tag search does; never a meaning search's neighbours.
A real server over a copy of examples/vault with notes added; one test drives the page in Chromium."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from server_support import running_server
from test_web_browser import CHROMIUM, WAIT_MS, Browser, check_accessibility, opened_with_key
from test_web_browser import browser as browser  # (the fixture: one Chromium)
from vl_support import run_cli

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "vault"
BORSCH = "кулинария/Борщ.md"  # front matter "- рецепт" (line 4), inline "#рецепт/суп" (line 14)
ADDED = {
    "Щи.md": "---\ntags: рецепт/суп, зима\n---\n# Щи\n\nКапуста и бульон.\n",  # the string form
    "Уха.md": "---\ntags:\n  - '#Рецепт/Суп/рыбный'\n---\n# Уха\n\nРыба.\n",  # "#", other case, nested deeper
    "Окрошка.md": "# Окрошка\n\nЛетний суп на квасе. #РЕЦЕПТ/суп\n",  # inline, upper case
    "Код.md": "# Код\n\nПро суп и рецепт.\n\n```\n#рецепт/суп в блоке кода\n```\n\n`#рецепт/суп` и %%#рецепт/суп%%\n",
    "Солянка.md": "---\ntags:\n  - супы\n  - Суп\n---\n# Солянка\n",  # a tag's line, not one of a longer tag
    "Рецептура.md": "# Рецептура\n\nСуп не по тегу. #рецептура #рецепт-суп\n",  # prefixes, not nested tags
}
SOUPS = {BORSCH, "Щи.md", "Уха.md", "Окрошка.md"}


@dataclass
class Site:
    url: str
    vault: Path
    page_url: str  # with the page's key


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    root = tmp_path_factory.mktemp("tags")
    vault = root / "vault"
    shutil.copytree(EXAMPLES, vault)
    for name, text in ADDED.items():
        (vault / name).write_text(text, encoding="utf-8")
    with running_server(vault, root / "home", watch=False) as server:
        yield Site(server.url, vault, server.page_url)


def listed(html: str) -> set[str]:
    return {m for m in re.findall(r'<li class="tagged-note" data-path="([^"]+)"', html)}


def get(site: Site, path: str) -> httpx.Response:
    return httpx.get(site.url + path, timeout=60)


def test_the_tag_view_lists_exactly_the_notes_carrying_the_tag_or_one_nested_under_it(site: Site) -> None:
    r = get(site, "/tag?name=" + quote("рецепт/суп"))
    assert r.status_code == 200
    assert "Notes tagged" in r.text
    # the string and list forms, "#" and case in front matter, an inline tag in capitals, a deeper nested tag;
    # not the tag in code, inline code or a comment, nor tags that only start with the same letters
    assert listed(r.text) == SOUPS
    assert (
        'href="/note?path=%D0%BA%D1%83%D0%BB%D0%B8%D0%BD%D0%B0%D1%80%D0%B8%D1%8F%2F%D0%91%D0%BE%D1%80%D1%89.md&amp;lines=14-14"'
        in r.text
    )


def test_a_parent_tag_lists_its_nested_tags_notes_and_case_does_not_matter(site: Site) -> None:
    parent = listed(get(site, "/tag?name=" + quote("#РЕЦЕПТ")).text)
    assert parent == SOUPS  # "Рецептура" (#рецептура, #рецепт-суп) is no note of #рецепт
    assert listed(get(site, "/tag?name=" + quote("Рецепт/СУП/рыбный")).text) == {"Уха.md"}


def test_a_front_matter_tag_points_at_its_own_line(site: Site) -> None:
    html = get(site, "/tag?name=" + quote("суп")).text
    assert listed(html) == {BORSCH, "Солянка.md"}
    assert re.search(r'data-path="Солянка.md">.*?<span class="lines">lines 4</span>', html), html


def test_the_note_views_tag_links_to_the_tag_view_not_a_meaning_search(site: Site) -> None:
    html = get(site, "/note?path=" + quote(BORSCH)).text
    hrefs = re.findall(r'<a href="([^"]+)" class="tag">#рецепт/суп</a>', html)
    assert hrefs == ["/tag?name=%D1%80%D0%B5%D1%86%D0%B5%D0%BF%D1%82%2F%D1%81%D1%83%D0%BF"], hrefs
    assert listed(get(site, hrefs[0].replace("&amp;", "&")).text) == SOUPS


def test_the_search_boxs_tag_fragment_and_a_bad_tag(site: Site) -> None:
    fragment = get(site, "/tag/notes?name=" + quote("#рецепт/суп"))
    assert fragment.status_code == 200 and not fragment.text.startswith("<!doctype")
    assert listed(fragment.text) == SOUPS
    bad = get(site, "/tag?name=" + quote("два слова"))
    assert bad.status_code == 400
    assert "is not a tag" in bad.text and 'role="alert"' in bad.text


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium found (see tests/test_web_browser.py)")
def test_clicking_a_tag_in_the_note_view_lists_exactly_the_tagged_notes(
    site: Site,
    browser: Browser,  # (the imported fixture)
) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    context.set_default_timeout(WAIT_MS)
    try:
        page = context.new_page()
        opened_with_key(page, site.page_url)
        page.goto(site.url + "/note?path=" + quote(BORSCH))
        page.locator("#note-body a.tag", has_text="#рецепт/суп").first.click()
        page.wait_for_url("**/tag?name=*")
        items = page.locator("li.tagged-note")
        assert set(items.evaluate_all("li => li.map(e => e.dataset.path)")) == SOUPS
        check_accessibility(page)
        # the search box: exactly a tag lists its notes first, under "Notes tagged #рецепт/суп"
        page.goto(site.url + "/?q=" + quote("#рецепт/суп"))
        page.locator("#tagged li.tagged-note").first.wait_for()
        assert "Notes tagged #рецепт/суп" in page.locator("#tagged h2").inner_text()
        tagged = page.locator("#tagged li.tagged-note").evaluate_all("li => li.map(e => e.dataset.path)")
        assert set(tagged) == SOUPS
        page.locator("#results .result").first.wait_for()  # the meaning search still runs below
        check_accessibility(page)
        page.locator("#tagged a").first.click()
        page.wait_for_url("**/note?path=*")
    finally:
        context.close()


def test_the_cli_search_for_exactly_a_tag_lists_its_notes_first(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(EXAMPLES, vault)
    for name, text in ADDED.items():
        (vault / name).write_text(text, encoding="utf-8")
    fake = ["--vault", str(vault), "--set", "embedding.provider=fake"]
    assert run_cli(["index", *fake]).exit_code == 0
    result = run_cli(["search", "#Рецепт/суп", *fake])
    assert result.exit_code == 0, result.output
    tagged, _, meaning = result.stdout.partition("By meaning and words")
    assert "Notes tagged #Рецепт/суп (4)" in tagged and meaning.strip()
    assert {p for p in (*ADDED, BORSCH) if p in tagged} == SOUPS
    assert "кулинария/Борщ.md L14" in " ".join(tagged.split())
    plain = run_cli(["search", "рецепт суп", *fake])  # not a tag: a meaning search only
    assert plain.exit_code == 0 and "Notes tagged" not in plain.stdout
