"""The web page in a real browser: headless Chromium (Debian's, driven by Playwright) against a real
`vaultlens serve` on loopback, indexed with the bundled model, the scripted LLM server as the model.

The DOM hooks and URLs are the page's contract (docs of issue 23): search as you type, the note view,
related notes, duplicates → review → consent → claims → re-plan → diff → apply → undo from History
(checked byte for byte on disk), Ask with citations, the structure audit, Status, the keyboard, the
CSRF guard (in the browser and over HTTP), axe-core on every page (no serious or critical violation)
and a screenshot of every page (this run's; docs/screenshots/ are bench/screenshots.py's).
"""

from __future__ import annotations

import difflib
import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, Protocol
from urllib.parse import parse_qs, quote, urlsplit

import httpx
import pytest

from scripted_chat_server import ChatStep
from server_support import CHILD, page_key_cookie, running_server
from test_review import settings
from test_web_routes import ASK_REPLY, PageModel
from vl_support import cli_env, snapshot, write_vault

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (pip install -e '.[web-test]')"
)
Browser, Page, expect = sync_api.Browser, sync_api.Page, sync_api.expect


def find_chromium() -> str | None:
    """Debian's Chromium (what `make test` installs), or one on PATH; never a downloaded browser."""
    for candidate in (os.environ.get("VAULTLENS_CHROMIUM"), "/usr/bin/chromium"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("chromium") or shutil.which("chromium-browser")


CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no Chromium found (/usr/bin/chromium or on PATH): `make test` installs it with "
    "`apt-get install chromium` when run as root; or set VAULTLENS_CHROMIUM",
)
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
AXE = Path(__file__).parent / "web_assets" / "axe.min.js"
WAIT_MS = 30_000  # a search, a review or an audit on a loaded 2-core machine

STARTER = "Baking/Sourdough starter.md"
RYE = "Baking/Rye bread.md"
CACHING = "Study/Caching/Cache lifetime.md"
SYSTEMS = "Study/Systems/Cache lifetime.md"
PLAN = "Projects/Plan.md"
LISBON = "Travel/Lisbon.md"
VALIDATION = (
    "When the TTL is over, the client sends the ETag back in If-None-Match.\n"
    "The server compares it with the current version of the resource.\n"
    "If nothing changed it answers 304 Not Modified and sends no body again.\n"
    "Otherwise it answers 200 with the new body and a new ETag to keep.\n"
)
TOMATOES = "Garden/Tomatoes.md"
OBSIDIAN = "Study/Reading list.md"
BORSCHT = "Кулинария/Борщ.md"
TOMATO_CARE_NOTE = "Garden/Tomato care.md"
TOMATO_CARE = (
    "Water tomato plants at the roots in the morning; pinch the side shoots weekly. Tie the stems to canes "
    "as they grow, feed them with comfrey tea once the first fruits set, and stop watering so much when "
    "the fruit ripens so it does not split.\n"
)
BASIL = "# Basil\n\nBasil wants sun, warmth and water at its feet, never on its leaves.\n"
NOTES: dict[str, str] = {
    STARTER: "---\ntags: [baking/bread, kitchen]\n---\n# Sourdough starter\n\nA rye sourdough starter needs feeding twice a day: equal weights of rye "
    "flour and water.\n\n## Keeping it alive\n\nIn the fridge it sleeps for a week; feed it the day before "
    "baking.\n",
    RYE: "---\ntags: [baking/bread]\n---\n# Rye bread\n\nDense rye loaves rise with the [[Sourdough starter]] overnight.\n\n## Baking\n\n"
    "Bake at 230 degrees with steam for the first fifteen minutes.\n",
    # a near-duplicate pair (to dismiss) and an exact copy
    TOMATOES: "# Tomatoes\n\n" + TOMATO_CARE,
    TOMATO_CARE_NOTE: "# Tomato care\n\n" + TOMATO_CARE.replace("weekly", "every week"),
    "Garden/Basil.md": BASIL,
    "Archive/Basil.md": BASIL,
    # raw HTML in a note is shown as text, never run
    LISBON: '# Lisbon\n\nTram 28 climbs through Alfama.\n\n<img src="x" onerror="window.__pwned = 1">\n',
    # the same-named pair: a shared passage, the rest differs (the second with CRLF line ends)
    CACHING: "# Cache lifetime\n\nA cached value expires after its TTL.\n\n## Validation\n\n"
    + VALIDATION
    + "\n## Notes\n\nShort lifetimes keep data fresh; long ones save requests.\n",
    SYSTEMS: (
        "# Cache lifetime\n\nEvery entry lives five minutes.\n\n## Validation\n\n"
        + VALIDATION
        + "\n## Eviction\n\nThe least recently used entry leaves first when memory runs out.\n"
    ).replace("\n", "\r\n"),
    PLAN: "# Plan\n\nRead [[Missing note]] and [[Cache lifetime]] before the review; see [[Tomatoes]].\n",
    # Obsidian's syntax: a wikilink to a heading, a callout, a comment the page must not show
    OBSIDIAN: "# Reading list\n\nStart with [[Study/Caching/Cache lifetime#Validation|how validation works]]. "
    "%%SECRET-COMMENT: not for the page%%\n\n> [!note] Remember\n> Validation saves bandwidth.\n",
    BORSCHT: "# Борщ\n\nСвёкла, капуста и немного уксуса.\n",
}
QUERY = "how often to feed the rye starter"
QUESTION = "How often does a rye starter need feeding?"


def reviews(model: PageModel) -> list[Any]:
    """The review requests the model received (an Ask's carry no nonce)."""
    return [c for c in model.chats() if "NONCE is" in json.dumps(c)]


@dataclass
class Site:
    url: str
    vault: Path
    model: PageModel
    shots: Path  # this run's screenshots
    page_url: str  # the page's address with its key, as `serve` printed it

    def cookie(self) -> dict[str, str]:
        """The page key's cookie a browser opened at ``page_url`` sends."""
        return page_key_cookie(self.page_url)

    def token(self) -> str:
        """The page token of this server start, read from a page's meta tag as the page's scripts do."""
        shell = httpx.get(self.url + "/", headers=self.cookie()).text
        found = re.search(r'<meta name="vaultlens-csrf" content="([^"]+)"', shell)
        assert found, "no <meta name=vaultlens-csrf> on /"
        return found.group(1)


class Served(NamedTuple):
    url: str  # where it answers, on loopback
    page_url: str  # the page's address with its key, as `serve` printed it: opening it lets a tab write


@contextmanager
def serving(args: list[str], env: dict[str, str], log: Path) -> Iterator[Served]:
    """`vaultlens serve ARGS` as a process; yields its addresses, stops it with SIGTERM."""
    with log.open("wb") as out:
        proc = subprocess.Popen([*args, "--port", "0"], env=env, stdout=out, stderr=out)
    try:
        yield _serving_url(log, proc)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert "Traceback" not in log.read_text(encoding="utf-8", errors="replace"), log.read_text()


def _serving_url(log: Path, proc: subprocess.Popen[bytes], seconds: float = 120) -> Served:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        text = log.read_text(encoding="utf-8", errors="replace")
        found = re.search(r"Serving .* on (http://[0-9.]+:[0-9]+): the page at (http://\S+) ", text)
        if found:
            url, page_url = (u.replace("//0.0.0.0:", "//127.0.0.1:") for u in found.groups())
            return Served(url, page_url)
        assert proc.poll() is None, f"`vaultlens serve` exited:\n{text}"
        time.sleep(0.1)
    raise AssertionError(f"`vaultlens serve` did not start in {seconds}s:\n{log.read_text()}")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """The vault indexed with the bundled model by `vaultlens index`, then `vaultlens serve` (with its
    watcher) on a free loopback port, both real processes with their own VAULTLENS_HOME."""
    root = tmp_path_factory.mktemp("web")
    vault = write_vault(root / "vault", NOTES)
    env = cli_env(root / "home")
    with PageModel() as model:
        overrides = {**settings(model), "embedding.provider": "local"}
        sets = [a for k, v in overrides.items() for a in ("--set", f"{k}={v}")]
        vaultlens = [sys.executable, "-m", "vaultlens"]
        done = subprocess.run(
            [*vaultlens, "index", "--vault", str(vault), *sets], env=env, capture_output=True
        )
        assert done.returncode == 0, done.stderr.decode()
        serve = [*vaultlens, "serve", "--vault", str(vault), *sets]
        with serving(serve, env, root / "serve.log") as served:
            yield Site(served.url, vault, model, tmp_path_factory.mktemp("screenshots"), served.page_url)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            yield chromium
        finally:
            chromium.close()


class Keyed(Protocol):
    @property
    def page_url(self) -> str: ...


def opened_with_key(page: Page, page_url: str) -> None:
    """The tab opened at the address `serve` printed, as the user does: it holds the page key's
    cookie from then on (the page can write), and the key is gone from the address bar."""
    page.goto(page_url)
    assert "key=" not in page.url, page.url


@pytest.fixture
def page(browser: Browser, site: Keyed) -> Iterator[Page]:
    """A fresh tab of the module's ``site``, opened at its keyed address first."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme="light")
    context.set_default_timeout(WAIT_MS)
    try:
        tab = context.new_page()
        opened_with_key(tab, site.page_url)
        yield tab
    finally:
        context.close()


def note_url(site: Site, path: str, lines: str | None = None) -> str:
    return f"{site.url}/note?path={quote(path)}" + (f"&lines={lines}" if lines else "")


def query_of(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


def lines_of(path: str, text: str) -> tuple[int, int]:
    """1-based first and last line of ``text`` in note ``path`` of NOTES."""
    body = NOTES[path].replace("\r\n", "\n")
    first = body[: body.index(text)].count("\n") + 1
    return first, first + text.rstrip("\n").count("\n")


def targets(page: Page) -> str:
    """The text of the note view's elements marked as the lines asked for."""
    return " ".join(page.locator("#note-body .target").all_inner_texts())


def in_viewport(page: Page, selector: str) -> bool:
    return bool(
        page.eval_on_selector(
            selector,
            "e => { const r = e.getBoundingClientRect(); return r.bottom > 0 && r.top < window.innerHeight; }",
        )
    )


def shot(site: Site, page: Page, name: str) -> None:
    """A full-page screenshot of this run (the README's come from bench/screenshots.py, on examples/vault)."""
    page.screenshot(path=str(site.shots / f"{name}.png"), full_page=True)


def type_query(page: Page, query: str, focused: bool = False) -> list[str]:
    """Type ``query`` as a person does (into the focused element, or into ``input#q``); once the
    page has asked for the whole query and shown its answer: the note paths of the results."""

    def for_query(reply: Any) -> bool:
        return urlsplit(reply.url).path.startswith("/ui/api/") and query_of(reply.url).get("q") == query

    with page.expect_response(for_query) as answer:
        if focused:
            page.keyboard.type(query, delay=40)
        else:
            page.locator("input#q").press_sequentially(query, delay=40)
    hits = answer.value.json()
    results = page.locator("#results .result")
    expect(results).to_have_count(len(hits))
    expect(results.first).to_have_attribute("data-path", hits[0]["path"])
    return list(results.evaluate_all("els => els.map(e => e.dataset.path)"))


def search(page: Page, site: Site, query: str) -> list[str]:
    page.goto(site.url + "/")
    return type_query(page, query)


# ---- search, the note view, related notes --------------------------------------------------------------


def test_typing_a_query_shows_the_expected_note_first_with_sections_and_highlights(
    site: Site, page: Page
) -> None:
    found = search(page, site, QUERY)
    assert found[0] == STARTER, found
    first = page.locator(f'#results .result[data-path="{STARTER}"]')
    similarity = first.locator(".similarity").first
    expect(similarity).to_be_visible()
    assert re.search(r"\d", similarity.inner_text())
    section = first.locator(".section[data-lines]").first
    expect(section.locator(".heading-path")).to_contain_text("Sourdough starter")
    assert re.fullmatch(r"\d+-\d+", section.get_attribute("data-lines") or "")
    marks = [m.lower() for m in first.locator("mark").all_inner_texts()]
    assert {"rye", "starter"} & set(marks), marks
    expect(page.locator("#weak-notice")).to_be_hidden()


def test_highlights_mark_whole_words_not_letters_inside_other_words(site: Site, page: Page) -> None:
    """ "to" of the query is no match inside "Tomatoes": a mark starts and ends at a word's edges."""
    search(page, site, QUERY)
    edges = page.locator("#results mark").evaluate_all(
        """ms => ms.map(m => [m.textContent,
                              (m.previousSibling ? m.previousSibling.textContent : "").slice(-1),
                              (m.nextSibling ? m.nextSibling.textContent : "").slice(0, 1)])"""
    )
    assert edges
    inside = [e for e in edges if re.match(r"\w", e[1]) or re.match(r"\w", e[2])]
    assert not inside, inside


def test_a_query_nothing_matches_shows_the_weak_match_notice(site: Site, page: Page) -> None:
    search(page, site, "quantum chromodynamics gluon")
    expect(page.locator("#weak-notice")).to_be_visible()


def test_a_search_that_leaves_the_quality_tier_out_says_so(site: Site, page: Page, tmp_path: Path) -> None:
    """The vault indexed in another home with a remote tier (the scripted embedding server on
    loopback), then served after that server went away: the page still answers, and shows the
    notice the CLI prints."""
    from scripted_server import ScriptedEmbeddingServer

    env = cli_env(tmp_path / "home")
    vaultlens = [sys.executable, "-m", "vaultlens"]
    with ScriptedEmbeddingServer(dims=8) as tier_server:
        tier = [
            "--set",
            "embedding.tier=ollama:bge-m3",
            "--set",
            f"embedding.tier_endpoint={tier_server.url}",
        ]
        done = subprocess.run(
            [*vaultlens, "index", "--vault", str(site.vault), *tier], env=env, capture_output=True
        )
        assert done.returncode == 0 and tier_server.requests, done.stderr.decode()
    serve = [*vaultlens, "serve", "--vault", str(site.vault), "--no-watch", *tier]
    with serving(serve, env, tmp_path / "serve.log") as served:
        page.goto(served.url + "/")
        assert type_query(page, QUERY)[0] == STARTER
        expect(page.locator("#search-notices")).to_be_visible()
        expect(page.locator("#search-notices")).to_contain_text("left out")
    page.goto(site.url + "/")  # the site's server has no tier: no notice
    type_query(page, QUERY)
    expect(page.locator("#search-notices")).to_be_hidden()


def test_keyboard_search_is_focused_on_load_and_arrows_and_enter_open_a_result(
    site: Site, page: Page
) -> None:
    page.goto(site.url + "/")
    assert page.evaluate("document.activeElement && document.activeElement.id") == "q"
    order = type_query(page, QUERY, focused=True)  # the focused field receives it
    assert len(order) >= 3, order
    page.keyboard.press("ArrowDown")
    first = page.locator("#results .result.active").get_attribute("data-path")
    page.keyboard.press("ArrowDown")
    expect(page.locator("#results .result.active")).to_have_count(1)
    second = page.locator("#results .result.active").get_attribute("data-path")
    assert order.index(second) == order.index(first) + 1, (order, first, second)
    page.keyboard.press("ArrowUp")
    expect(page.locator("#results .result.active")).to_have_attribute("data-path", first or "")
    page.keyboard.press("Enter")
    page.wait_for_url("**/note?**")
    assert query_of(page.url)["path"] == first
    expect(page.locator("#note-body")).to_be_visible()


def test_a_result_opens_the_note_view_with_its_section_and_the_obsidian_link(site: Site, page: Page) -> None:
    search(page, site, QUERY)
    page.locator(f'#results .result[data-path="{STARTER}"] .section[data-lines] a').first.click()
    page.wait_for_url("**/note?**")
    assert query_of(page.url)["path"] == STARTER
    expect(page.locator("#note-body h1")).to_have_text("Sourdough starter")
    href = page.locator("a#open-obsidian").get_attribute("href") or ""
    assert href.startswith("obsidian://open?vault=")
    link = query_of(href.replace("obsidian://open", "x://y/"))
    assert link["vault"] == site.vault.name and link["file"] in (STARTER, STARTER.removesuffix(".md")), link


def test_the_note_view_scrolls_to_the_lines_asked_for_and_marks_them(site: Site, page: Page) -> None:
    page.set_viewport_size({"width": 1280, "height": 300})  # short: the section is below the fold
    first, last = lines_of(CACHING, "## Notes\n\nShort lifetimes keep data fresh; long ones save requests.\n")
    page.goto(note_url(site, CACHING, f"{first}-{last}"))
    expect(page.locator("#note-body .target").last).to_be_visible()
    assert "Short lifetimes" in targets(page)
    page.wait_for_function("() => window.scrollY > 0")
    assert in_viewport(page, "#note-body .target")


def test_a_wikilink_opens_its_target_at_the_heading_a_callout_renders_and_a_comment_is_absent(
    site: Site, page: Page
) -> None:
    page.set_viewport_size({"width": 1280, "height": 300})  # short: the heading is below the fold
    page.goto(note_url(site, OBSIDIAN))
    expect(page.locator("#note-body .callout[data-callout=note] .callout-title")).to_have_text("Remember")
    expect(page.locator("#note-body .callout")).to_contain_text("Validation saves bandwidth.")
    assert "SECRET-COMMENT" not in page.content() and "[[" not in page.inner_text("#note-body")
    page.get_by_role("link", name="how validation works").click()
    page.wait_for_url("**/note?path=Study%2FCaching%2FCache+lifetime.md#h-Validation")
    expect(page.locator("h1", has_text="Study/Caching/Cache lifetime.md")).to_be_visible()
    page.wait_for_function("() => window.scrollY > 0")
    assert in_viewport(page, "#h-Validation")


def test_the_note_picker_finds_a_note_from_its_lowercase_title_and_opens_it(site: Site, page: Page) -> None:
    page.goto(site.url + "/note")
    page.locator("#note-path").press_sequentially("борщ")
    first = page.locator("#note-path-options [role=option]").first
    expect(first).to_have_attribute("data-path", BORSCHT)
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    assert page.input_value("#note-path") == BORSCHT
    page.keyboard.press("Enter")  # the form opens the note picked
    page.wait_for_url("**/note?path=**")
    expect(page.locator("#note-body h1")).to_have_text("Борщ")


def test_raw_html_in_a_note_is_shown_as_text_and_never_runs(site: Site, page: Page) -> None:
    page.goto(note_url(site, LISBON))
    expect(page.locator("#note-body")).to_contain_text('<img src="x"')
    assert page.locator("#note-body img").count() == 0
    assert page.evaluate("window.__pwned") is None


def test_related_notes_are_listed_by_section_and_open(site: Site, page: Page) -> None:
    page.goto(note_url(site, STARTER))
    related = page.locator("#related .related[data-path]")
    expect(related.first).to_be_visible()
    assert related.first.get_attribute("data-path") == RYE
    expect(related.first).to_contain_text("Rye bread")  # the other side's heading path
    assert re.search(r"\d+-\d+", related.first.inner_text())  # with its lines
    related.first.locator('a[href^="/note?path="]').first.click()
    page.wait_for_url("**/note?**")
    assert query_of(page.url)["path"] == RYE


# ---- duplicates → review → apply → history → undo ------------------------------------------------------


def _diff_text(page: Page) -> str:
    table = page.locator("#diff table.diff")
    expect(table).to_be_visible()
    return table.inner_text()


def check_sides(page: Page, before: list[str], after: list[str]) -> None:
    """Each numbered line of the side-by-side diff (line, before | line, after) is that line of the
    file before and after the write: what was shown is what is (or was) on disk."""
    rows = page.locator("#diff table.diff tr").evaluate_all(
        "trs => trs.map(tr => [...tr.cells].map(c => c.innerText))"
    )
    shown = {0: 0, 1: 0}
    for cells in (r for r in rows if len(r) == 4):
        for side, (number, text), lines in ((0, cells[:2], before), (1, cells[2:], after)):
            if number.strip().isdigit():
                assert lines[int(number) - 1].strip() == text.strip(), (side, number, text, lines)
                shown[side] += 1
    assert shown[0] and shown[1], rows


def test_review_a_same_named_pair_move_the_link_apply_then_undo_every_byte(site: Site, page: Page) -> None:
    original = snapshot(site.vault)
    before = (site.vault / CACHING).read_bytes()
    page.goto(site.url + "/duplicates")
    pair = page.locator(
        f'section.kind[data-kind="shared_passage"] .pair[data-a="{CACHING}"][data-b="{SYSTEMS}"]'
    )
    expect(pair).to_be_visible()
    assert re.search(r"\d+-\d+.*\d+-\d+", pair.inner_text(), re.S), pair.inner_text()  # both sides' lines
    expect(pair.locator("button.dismiss")).to_be_visible()
    pair.locator("a.review-pair").click()
    page.wait_for_url("**/review?**")
    assert query_of(page.url) == {"a": CACHING, "b": SYSTEMS}

    # consent first: the provider, its endpoint and the exact text; nothing is sent before the click
    consent = page.locator("#consent")
    expect(consent).to_contain_text(site.model.url)
    expect(consent).to_contain_text("openai-compatible")
    expect(consent).to_contain_text("Every entry lives five minutes.")
    sent_before = len(reviews(site.model))
    page.wait_for_timeout(300)
    assert len(reviews(site.model)) == sent_before, "sent before consent"
    page.locator("button#send").click()

    expect(page.locator("#claims")).to_contain_text(
        "Every entry lives five minutes."
    )  # quoted from the catalog
    expect(page.locator("#validation")).to_be_visible()
    assert len(reviews(site.model)) == sent_before + 1
    form = page.locator("form#plan")
    expect(form).to_be_visible()
    default_diff = _diff_text(page)
    assert "[[" in default_diff
    assert (site.vault / CACHING).read_bytes() == before, "a review writes nothing"

    # move the link: after the first paragraph instead of the planner's choice; another link text
    after = form.locator("select[name=after]")
    options = after.locator("option").evaluate_all(
        "os => os.map(o => ({value: o.value, label: o.textContent, selected: o.selected}))"
    )
    wanted = next(
        (o for o in options if "A cached value expires" in o["label"]),
        next(o for o in options if not o["selected"] and o["value"]),
    )
    assert not wanted["selected"], options
    after.select_option(wanted["value"])
    form.locator("input[name=link_text]").fill("Compare with")
    form.locator("button#replan").click()
    expect(page.locator("#diff table.diff")).to_contain_text("Compare with")
    diff = _diff_text(page)
    assert diff != default_diff
    assert (site.vault / CACHING).read_bytes() == before, "a re-plan writes nothing"

    page.locator("button#apply").click()
    applied = page.locator("#applied[data-op]")
    expect(applied).to_be_visible()
    op = applied.get_attribute("data-op") or ""
    after_bytes = (site.vault / CACHING).read_bytes()

    # on disk: exactly the diff shown — every line it added or removed, nothing else, in its place
    old, new = before.decode().splitlines(), after_bytes.decode().splitlines()
    changes = [ln for ln in difflib.ndiff(old, new) if ln[:2] in ("+ ", "- ")]
    assert changes and all(ln.startswith("+ ") for ln in changes), changes
    for line in changes:
        assert line[2:].strip() in diff, (line, diff)
    added = [ln[2:] for ln in changes if ln.strip()[2:]]
    assert len(added) == 1 and "Compare with" in added[0] and "[[" in added[0], added
    check_sides(page, old, new)
    at = new.index(added[0])
    assert new.index("A cached value expires after its TTL.") < at < new.index("## Validation"), new
    assert snapshot(site.vault) == {**original, CACHING: snapshot(site.vault)[CACHING]}, "only that note"

    # History lists it; Undo shows its exact diff, then puts every byte back
    page.goto(site.url + "/history")
    entry = page.locator(f'.entry[data-op="{op}"]')
    expect(entry).to_contain_text(CACHING)
    entry.locator("button.undo").click()
    undo_diff = _diff_text(page)
    assert added[0].strip() in undo_diff
    check_sides(page, new, old)
    assert (site.vault / CACHING).read_bytes() == after_bytes, "undo writes only after its diff is confirmed"
    page.locator("button#apply").click()
    deadline = time.monotonic() + WAIT_MS / 1000
    while (site.vault / CACHING).read_bytes() != before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (site.vault / CACHING).read_bytes() == before
    assert snapshot(site.vault) == original, "every byte of the vault is back"


def test_the_diff_view_and_the_prompt_preview_name_control_characters(site: Site, page: Page) -> None:
    """Whatever diff or prompt the page is given, an ESC, a CR or a bidi override shows by name:
    the browser would reorder a line at U+202E, and a terminal copy of it would run the ESC."""
    page.goto(site.url + "/history")
    shown = page.evaluate(
        """() => {
          const diff = vl.diffTable("--- a/x.md\\n+++ b/x.md\\n@@ -1 +1 @@\\n-Safe.\\n"
            + "+Evil\\u001b[2K\\r\\u202eSafe.\\n", "a diff");
          const box = document.createElement("div");
          document.body.append(diff, box);
          vl.showConsent(box, {destination: "x", what: "y", preview: "note\\u001b[1Gtext\\u2066"}, "send", () => {});
          return [diff.innerText, box.querySelector("pre").innerText];
        }"""
    )
    assert "Evil<ESC>[2K<CR><U+202E>Safe." in shown[0] and "note<ESC>[1Gtext<U+2066>" in shown[1]
    assert not any(c in "".join(shown) for c in "\x1b\r\u202e\u2066"), shown


def test_the_diff_view_says_which_side_ends_the_note_without_a_newline(site: Site, page: Page) -> None:
    """``x`` → ``x`` without its final newline: the unified diff's marker line says which side lacks
    it; the table dropped it, so the change showed as two identical lines."""
    page.goto(site.url + "/history")
    cells = page.evaluate(
        """() => {
          const diff = vl.diffTable("--- a/x.md\\n+++ b/x.md\\n@@ -1,2 +1,2 @@\\n a\\n-x\\n+x\\n"
            + "\\\\ No newline at end of file\\n", "a diff");
          return [...diff.querySelectorAll("td.del, td.add")].map((td) => [td.className, td.innerText]);
        }"""
    )
    assert cells == [["del", "x"], ["add", "x \\ No newline at end of file"]], cells


def test_a_dismissed_pair_leaves_the_list_and_exact_copies_cannot_be_dismissed(
    site: Site, page: Page
) -> None:
    page.goto(site.url + "/duplicates")
    exact = page.locator('section.kind[data-kind="exact"]')
    expect(exact).to_contain_text("Basil.md")
    expect(exact.locator("button.dismiss").first).to_be_disabled()
    near = 'section.kind[data-kind="near_duplicate"] .pair[data-a="{}"][data-b="{}"]'.format(
        *sorted([TOMATOES, TOMATO_CARE_NOTE])
    )
    expect(page.locator(near)).to_be_visible()
    page.locator(near).locator("button.dismiss").click()
    expect(page.locator(near)).to_be_hidden()
    page.reload()
    expect(page.locator('section.kind[data-kind="shared_passage"] .pair').first).to_be_visible()
    assert page.locator(near).count() == 0, "still listed after a reload"
    listed = httpx.get(site.url + "/ui/api/duplicates").json()
    assert {TOMATOES, TOMATO_CARE_NOTE} not in [{p["a"], p["b"]} for p in listed["pairs"]]


# ---- Ask, the audit, Status ----------------------------------------------------------------------------


def test_ask_streams_an_answer_whose_citations_open_their_lines(site: Site, page: Page) -> None:
    page.goto(site.url + "/ask")
    page.locator("#question").fill(QUESTION)
    expect(page.locator("input#extractive")).not_to_be_checked()
    site.model.script.append(ChatStep(piece_delay=0.4))  # slow pieces: the page shows them as they come
    page.locator("button#ask").click()
    answer = page.locator("#answer")
    assert ASK_REPLY.startswith("Feed it rye flour daily [S1]") and ASK_REPLY.endswith("see [S9].")
    expect(answer).to_contain_text("Feed it")
    assert "and see" not in answer.inner_text(), "shown only when the whole answer had come"
    expect(answer).to_contain_text("and see")  # the whole answer streamed in
    invalid = answer.locator(".citation.invalid")
    expect(invalid).to_have_count(1)
    expect(invalid).to_contain_text("S9")
    cite = answer.locator('a.citation[data-source="S1"]:not(.invalid)').first
    href = cite.get_attribute("href") or ""
    target = query_of(href)
    assert target["path"] == STARTER and re.fullmatch(r"\d+-\d+", target["lines"]), href
    cite.click()
    page.wait_for_url("**/note?**")
    assert query_of(page.url) == target
    expect(page.locator("#note-body .target").last).to_be_visible()
    assert "twice a day" in targets(page)
    assert in_viewport(page, "#note-body .target")


def test_extractive_ask_calls_no_model_and_says_not_in_your_vault(site: Site, page: Page) -> None:
    asked = len(site.model.chats())
    page.goto(site.url + "/ask")
    page.locator("#question").fill("quantum chromodynamics gluon")
    page.locator("input#extractive").check()
    page.locator("button#ask").click()
    expect(page.locator("#not-in-vault")).to_be_visible()
    assert len(site.model.chats()) == asked


def test_the_structure_audit_runs_and_shows_the_broken_and_ambiguous_links(site: Site, page: Page) -> None:
    page.goto(site.url + "/audit")
    page.locator("button#run-audit").click()
    expect(page.locator("#audit-progress")).to_be_attached()
    broken = page.locator("table#broken-links")
    expect(broken).to_contain_text("Missing note")
    row = broken.locator("tr", has_text="Missing note")
    expect(row.locator('a[href^="/note?path="]').first).to_be_visible()
    expect(page.locator("table#ambiguous-links")).to_contain_text("Cache lifetime")
    for chart in ("chart-folders", "chart-tags"):  # inline SVG: the element itself or inside it
        expect(page.locator(f"svg#{chart}, #{chart} svg").first).to_be_attached()
    for part in ("#tag-tree", "#components", "#hubs"):
        expect(page.locator(part)).to_be_attached()
    canvas = page.locator("a#canvas-download").get_attribute("href") or ""
    reply = httpx.get(site.url + canvas)
    assert reply.status_code == 200 and "nodes" in reply.json()
    row.locator('a[href^="/note?path="]').first.click()
    page.wait_for_url("**/note?**")
    assert query_of(page.url)["path"] == PLAN


def test_status_shows_counts_watcher_and_providers(site: Site, page: Page) -> None:
    page.goto(site.url + "/status")
    expect(page.locator("[data-count=indexed]")).to_have_text(re.compile(rf"\b{len(NOTES)}\b"))
    expect(page.locator("[data-count=skipped]")).to_have_text(re.compile(r"\b0\b"))
    expect(page.locator("[data-count=failed]")).to_have_text(re.compile(r"\b0\b"))
    expect(page.locator("table#problems")).to_be_attached()
    expect(page.locator("#watcher")).to_contain_text(re.compile("watching", re.I))
    expect(page.locator("#progress")).to_be_attached()
    expect(page.locator("#providers")).to_contain_text(site.model.url)
    with httpx.stream("GET", site.url + "/ui/events", timeout=10) as events:
        assert events.status_code == 200
        assert events.headers["content-type"].startswith("text/event-stream")


@pytest.mark.slow  # two watcher flushes (1.5 s debounce each)
def test_status_follows_the_watcher_live_without_a_reload(site: Site, page: Page) -> None:
    page.goto(site.url + "/status")
    indexed = page.locator("[data-count=indexed]")
    expect(indexed).to_have_text(str(len(NOTES)))
    new = site.vault / "Garden" / "Otters.md"
    new.write_text("# Otters\n\nOtters juggle pebbles in kelp forests.\n", encoding="utf-8")
    try:
        expect(indexed).to_have_text(str(len(NOTES) + 1))  # server-sent events, no reload
    finally:
        new.unlink()
    expect(indexed).to_have_text(str(len(NOTES)))


# ---- the write guard -----------------------------------------------------------------------------------

# a harmless write: applying an operation that does not exist (refused by the verb, not by the guard)
NO_OP = {"op_id": "no-such-operation"}


def test_a_write_without_the_page_token_or_from_another_origin_is_refused_over_http(site: Site) -> None:
    token, cookie = site.token(), site.cookie()
    apply_url = site.url + "/ui/api/apply"
    cases: list[tuple[str, dict[str, str]]] = [
        ("no token", {}),
        ("wrong token", {"X-Vaultlens-CSRF": "x" * len(token)}),
        ("another origin", {"X-Vaultlens-CSRF": token, "Origin": "http://evil.example"}),
        ("another port", {"X-Vaultlens-CSRF": token, "Origin": "http://127.0.0.1:1"}),
    ]
    for name, headers in cases:
        reply = httpx.post(apply_url, json=NO_OP, headers={**cookie, **headers})
        assert reply.status_code == 403, (name, reply.text)
        assert reply.json()["error"]["code"] == "csrf_refused", (name, reply.text)
    # the page's own request passes the guard (the verb then refuses the unknown operation)
    own = httpx.post(apply_url, json=NO_OP, headers={"X-Vaultlens-CSRF": token, "Origin": site.url, **cookie})
    assert own.status_code != 403 and "csrf_refused" not in own.text, own.text
    # a dismiss without the page key changes nothing either
    refused = httpx.post(site.url + "/ui/api/dismiss", json={"a": CACHING, "b": SYSTEMS})
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "page_key_required"
    listed = httpx.get(site.url + "/ui/api/duplicates").json()
    assert [CACHING, SYSTEMS] in [[p["a"], p["b"]] for p in listed["shared_passages"]]


def test_the_read_only_api_stays_read_only(site: Site) -> None:
    for path in ("/v1/search", "/v1/apply", "/v1/undo", "/v1/dismiss"):
        reply = httpx.post(site.url + path, json={}, headers={"X-Vaultlens-CSRF": site.token()})
        assert reply.status_code in (404, 405), (path, reply.status_code)


@pytest.mark.slow  # a second server
def test_beyond_loopback_the_page_takes_the_token_once_then_its_cookie(
    tmp_path: Path, browser: Browser
) -> None:
    vault = write_vault(tmp_path / "vault", {STARTER: NOTES[STARTER], RYE: NOTES[RYE]})
    secret = "s3cret-" + "x" * 40
    env = cli_env(tmp_path / "home", WEB_TEST_TOKEN=secret)
    serve = [sys.executable, "-c", CHILD, "serve", "--vault", str(vault), "--host", "0.0.0.0"]
    serve += ["--token-env", "WEB_TEST_TOKEN", "--set", "embedding.provider=fake"]
    with serving(serve, env, tmp_path / "serve.log") as (url, page_url):
        assert httpx.get(url + "/").status_code == 401
        context = browser.new_context()
        context.set_default_timeout(WAIT_MS)
        try:
            page = context.new_page()
            # the address serve printed, opened from another machine: the refusal says to add the token
            # to it (the key in it is what lets the page write; ?token= alone opens it read-only)
            page.goto(page_url)
            expect(page.locator(".error .hint")).to_contain_text("&token=TOKEN")
            page.goto(f"{page_url}&token={secret}")
            assert "token" not in page.url and "key" not in page.url, page.url
            expect(page.locator("input#q")).to_be_visible()
            expect(page.locator("#read-only")).to_have_count(0)  # it can write
            context.clear_cookies()
            page.goto(f"{url}/?token={secret}")
            assert "token" not in page.url, "the token stays out of the address bar and history"
            assert secret not in page.evaluate("document.cookie"), "HttpOnly: no script reads it"
            expect(page.locator("input#q")).to_be_focused()
            page.goto(url + "/status")  # later pages need no token in the URL
            expect(page.locator("[data-count=indexed]")).to_be_visible()
            cookie = next(c for c in context.cookies() if secret == c["value"])
            assert cookie["httpOnly"] and cookie["sameSite"] == "Strict", cookie
        finally:
            context.close()


class _OtherOrigin(http.server.BaseHTTPRequestHandler):
    """Another origin on loopback serving one page (``html``) that acts on the vaultlens server."""

    target = ""

    def html(self) -> str:
        raise NotImplementedError

    def do_GET(self) -> None:  # the stdlib's name
        body = self.html().encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: Any) -> None:
        return


@contextmanager
def other_origin(handler: type[_OtherOrigin], target: str) -> Iterator[str]:
    """``handler``'s page served on another loopback port (another origin); yields its URL."""
    other = http.server.ThreadingHTTPServer(("127.0.0.1", 0), type("Other", (handler,), {"target": target}))
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{other.server_address[1]}/"
    finally:
        other.shutdown()
        other.server_close()


class _PostingSite(_OtherOrigin):
    """A page whose script POSTs to the vaultlens server."""

    def html(self) -> str:
        return f"""<!doctype html><html lang="en"><title>other</title><script>
        window.results = [];
        for (const headers of [{{"Content-Type": "text/plain"}}, {{"Content-Type": "application/json"}}]) {{
          fetch("{self.target}/ui/api/dismiss", {{method: "POST", headers, credentials: "include",
                body: JSON.stringify({{a: "{CACHING}", b: "{SYSTEMS}"}})}})
            .then(r => window.results.push(r.status), e => window.results.push("blocked"));
        }}
        </script></html>"""


def test_a_page_of_another_origin_cannot_write(site: Site, page: Page) -> None:
    with other_origin(_PostingSite, site.url) as url:
        page.goto(url)
        page.wait_for_function("() => window.results.length === 2")
        assert all(r in ("blocked", 403) for r in page.evaluate("window.results"))
    listed = httpx.get(site.url + "/ui/api/duplicates").json()
    assert [CACHING, SYSTEMS] in [[p["a"], p["b"]] for p in listed["shared_passages"]], "nothing dismissed"


class _FramingSite(_OtherOrigin):
    """A page that frames the vaultlens page (clickjacking's first step)."""

    def html(self) -> str:
        return f"""<!doctype html><html lang="en"><title>other</title>
        <iframe id="victim" title="victim" src="{self.target}/history" width="900" height="600"></iframe>
        </html>"""


def test_a_page_of_another_origin_cannot_frame_the_page(site: Site, page: Page) -> None:
    messages: list[str] = []
    page.on("console", lambda m: messages.append(m.text))
    with other_origin(_FramingSite, site.url) as url:
        with page.expect_response(lambda r: r.url == site.url + "/history") as framed:
            page.goto(url)
        assert framed.value.status == 200, "the server answered; the browser must refuse to show it"
        page.wait_for_load_state("load")
        frame = page.frame_locator("iframe#victim")
        expect(frame.locator("nav")).to_have_count(0)  # nothing of the page was shown in the frame
        [child] = page.main_frame.child_frames
        assert child.url != site.url + "/history", child.url
        assert any("frame-ancestors" in m for m in messages), messages


def test_after_a_restart_a_page_action_says_to_reload_and_the_reload_works(
    tmp_path: Path, page: Page
) -> None:
    """The page's token is per server start: a page still open from the previous start is told the
    server restarted, with a link that reloads it; after the reload the same action goes through."""
    vault = write_vault(tmp_path / "vault", {STARTER: NOTES[STARTER], RYE: NOTES[RYE]})

    def ask() -> Any:
        page.locator("#question").fill(QUESTION)
        page.locator("input#extractive").check()
        with page.expect_response(lambda r: r.url.endswith("/ui/api/ask")) as reply:
            page.locator("button#ask").click()
        return reply.value

    with running_server(vault, tmp_path / "home", watch=False) as first:
        port = first.bound_port
        opened_with_key(page, first.page_url)
        page.goto(first.url + "/ask")
    with running_server(vault, tmp_path / "home", watch=False, port=port) as second:
        assert ask().status == 403
        refused = page.locator('#answer [data-code="page_expired"]')
        expect(refused).to_contain_text("restarted")
        # a reload alone leaves the page read-only (the key changed too): the hint says what to open,
        # not "reload, then do it again"
        expect(refused).to_contain_text("new page key")
        expect(refused).to_contain_text("vaultlens ui")
        expect(refused).not_to_contain_text("do it again")
        page.locator("#answer a#reload").click()
        page.wait_for_load_state("load")
        assert page.url == second.url + "/ask"
        # the tab holds the first start's key: read-only, and it says how to get the new one
        expect(page.locator("#read-only")).to_contain_text("vaultlens serve")
        # the commands to type read as commands, not between literal backticks (banner and error box)
        expect(page.locator("#read-only code")).to_have_text(["vaultlens serve", "vaultlens ui"])
        assert "`" not in page.locator("#read-only").inner_text()
        assert ask().status == 403
        expect(page.locator('#answer [data-code="page_key_required"]')).to_contain_text("vaultlens ui")
        refused_key = page.locator('#answer [data-code="page_key_required"] code')
        expect(refused_key.filter(has_text="vaultlens ui")).to_have_count(1)
        assert "`" not in page.locator("#answer").inner_text()
        opened_with_key(page, second.page_url)
        page.goto(second.url + "/ask")
        assert ask().status == 200
        expect(page.locator("#answer [data-code]")).to_have_count(0)


def test_the_page_sends_its_token_with_every_write(site: Site, page: Page) -> None:
    posts: list[dict[str, str]] = []
    page.on("request", lambda r: posts.append(r.headers) if r.method == "POST" else None)
    page.goto(site.url + "/ask")
    page.locator("#question").fill("quantum chromodynamics gluon")
    page.locator("input#extractive").check()
    page.locator("button#ask").click()
    expect(page.locator("#not-in-vault")).to_be_visible()
    assert posts and all(h.get("x-vaultlens-csrf") == site.token() for h in posts), posts


# ---- every page: axe-core, a narrow window, screenshots --------------------------------------------------


def _prepare(page: Page, site: Site, name: str) -> None:
    """Open page ``name`` in a state worth checking and showing (results, an answer, an audit)."""
    if name == "search":
        search(page, site, QUERY)
    elif name == "note":
        page.goto(note_url(site, STARTER, "{}-{}".format(*lines_of(STARTER, "## Keeping it alive"))))
        expect(page.locator("#related .related").first).to_be_visible()
    elif name == "duplicates":
        page.goto(site.url + "/duplicates")
        expect(page.locator(".pair").first).to_be_visible()
    elif name == "review":
        page.goto(f"{site.url}/review?a={quote(CACHING)}&b={quote(SYSTEMS)}")
        page.locator("button#send").click()
        expect(page.locator("#diff table.diff")).to_be_visible()
    elif name == "history":
        page.goto(site.url + "/history")
    elif name == "ask":
        page.goto(site.url + "/ask")
        page.locator("#question").fill(QUESTION)
        page.locator("button#ask").click()
        expect(page.locator("#answer a.citation").first).to_be_visible()
    elif name == "audit":
        page.goto(site.url + "/audit")
        page.locator("button#run-audit").click()
        expect(page.locator("table#broken-links")).to_contain_text("Missing note")
    elif name == "status":
        page.goto(site.url + "/status")
        expect(page.locator("[data-count=indexed]")).to_be_visible()
    elif name in PICKERS:
        page.goto(site.url + PICKERS[name])
        expect(page.locator("input[data-picker]").first).to_be_visible()
    elif name == "history-before":  # a change's text before (the review plans one when none is listed)
        page.goto(site.url + "/history")
        if page.locator("a.before").count() == 0:
            _prepare(page, site, "review")
            page.goto(site.url + "/history")
        page.locator("a.before").first.click()
        expect(page.locator("section.before").first).to_be_visible()
    elif name in ERRORS:
        page.goto(site.url + ERRORS[name])
        expect(page.locator("main .error")).to_be_visible()
    page.wait_for_load_state("networkidle")


PICKERS = {"note-picker": "/note", "review-picker": "/review"}  # a note named without its path
ERRORS = {
    "not-found": "/no-such-page",
    "bad-page-number": "/history?page=abc",
    "refused-path": "/note?path=../x.md",
}
PAGES = ["search", "note", "duplicates", "review", "history", "ask", "audit", "status"]
PAGES += [*PICKERS, "history-before", *ERRORS]
AXE_RUN = """async () => {
  const r = await axe.run(document, {resultTypes: ["violations"]});
  return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                                 nodes: v.nodes.slice(0, 5).map(n => n.target.join(" "))}));
}"""


@pytest.mark.parametrize("name", PAGES)
def test_every_page_has_no_serious_accessibility_violation_and_is_shown(
    site: Site, browser: Browser, name: str
) -> None:
    context = browser.new_context(
        viewport={"width": 1280, "height": 900}, color_scheme="light", bypass_csp=True
    )
    context.set_default_timeout(WAIT_MS)
    try:
        page = context.new_page()
        opened_with_key(page, site.page_url)
        _prepare(page, site, name)
        assert page.locator("html").get_attribute("lang")
        if name not in ERRORS:  # an error page sends and writes nothing: no token
            assert page.locator('meta[name="vaultlens-csrf"]').get_attribute("content")
        links = page.locator("nav a").evaluate_all("as => as.map(a => new URL(a.href).pathname)")
        assert {"/", "/duplicates", "/history", "/ask", "/audit", "/status"} <= set(links), links
        page.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true; })")  # folds too
        check_accessibility(page)
        shot(site, page, name)
    finally:
        context.close()


def check_accessibility(page: Page) -> None:
    """axe-core finds no serious or critical violation on the page as it is now (its context opened
    with ``bypass_csp``: axe is test-only and the page's policy would refuse it)."""
    page.add_script_tag(path=str(AXE))
    violations = page.evaluate(AXE_RUN)
    serious = [v for v in violations if v["impact"] in ("serious", "critical")]
    assert not serious, json.dumps(serious, indent=1)


def test_the_search_page_follows_a_dark_system_theme(site: Site, browser: Browser) -> None:
    light = browser.new_context(color_scheme="light")
    dark = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme="dark")
    try:
        backgrounds = []
        for context in (light, dark):
            context.set_default_timeout(WAIT_MS)
            page = context.new_page()
            opened_with_key(page, site.page_url)
            search(page, site, QUERY)
            backgrounds.append(page.evaluate("getComputedStyle(document.body).backgroundColor"))
        assert backgrounds[0] != backgrounds[1], backgrounds
        shot(site, page, "search-dark")
    finally:
        light.close()
        dark.close()


@pytest.mark.parametrize("name", PAGES)
def test_every_page_is_readable_in_a_narrow_window(site: Site, browser: Browser, name: str) -> None:
    context = browser.new_context(viewport={"width": 400, "height": 800})
    context.set_default_timeout(WAIT_MS)
    try:
        page = context.new_page()
        opened_with_key(page, site.page_url)
        _prepare(page, site, name)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 400, f"{name}: the page is {width}px wide in a 400px window"
    finally:
        context.close()


@pytest.mark.parametrize("name", PAGES)
def test_no_page_breaks_its_content_security_policy(site: Site, browser: Browser, name: str) -> None:
    """The page under its real policy (no bypass): used as a person uses it, no script, style or
    request is refused and nothing is logged as an error (an inline handler or ``style=`` would be)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(WAIT_MS)
    context.add_init_script(
        "window.__violations = [];"
        "document.addEventListener('securitypolicyviolation',"
        " e => window.__violations.push(e.violatedDirective + ' ' + e.blockedURI));"
    )
    try:
        page = context.new_page()
        opened_with_key(page, site.page_url)
        errors: list[str] = []
        answered = "Failed to load resource: the server responded with a status of"  # a 403 consent_required…
        page.on(
            "console",
            lambda m: errors.append(m.text) if m.type == "error" and answered not in m.text else None,
        )
        page.on("pageerror", lambda e: errors.append(str(e)))
        _prepare(page, site, name)
        assert page.evaluate("window.__violations") == [], name
        assert not errors, (name, errors)
    finally:
        context.close()


def test_transform_of_selected_lines_shows_its_diff_applies_and_undo_restores_the_bytes(
    browser: Browser, tmp_path: Path
) -> None:
    from write_support import ToolModel, llm_settings

    note, fixed = "Study/Caching.md", "A cache keeps values for later; they expire after a TTL."
    vault = write_vault(
        tmp_path / "vault", {note: "# Caching\r\n\r\nA cache keep values, it expire after a TTL.\r\n"}
    )
    original = (vault / note).read_bytes()
    with ToolModel({"replacement": fixed}) as model:
        sets = [a for k, v in {**llm_settings(model, remote=True), "embedding.provider": "local"}.items()
                for a in ("--set", f"{k}={v}")]  # fmt: skip
        serve = [sys.executable, "-m", "vaultlens", "serve", "--vault", str(vault), "--no-watch", *sets]
        with serving(serve, cli_env(tmp_path / "home"), tmp_path / "serve.log") as (url, page_url):
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            context.set_default_timeout(WAIT_MS)
            page = context.new_page()
            opened_with_key(page, page_url)
            page.goto(f"{url}/note?path={quote(note)}")
            page.evaluate(
                """() => { const r = document.createRange();
                r.selectNodeContents(document.querySelector('#note-body > p[data-lines="3-3"]'));
                const s = getSelection(); s.removeAllRanges(); s.addRange(r); }"""
            )
            expect(page.locator("#first")).to_have_value("3")
            expect(page.locator("#last")).to_have_value("3")
            page.select_option("#preset", "fix-grammar")
            page.click("#transform-send")
            page.click("#transform-consent-send")  # a remote model: the consent step first
            expect(page.locator("#transform-diff table.diff")).to_contain_text(fixed)
            assert (vault / note).read_bytes() == original, "nothing is written before Apply"
            page.click("#apply")
            expect(page.locator("#applied")).to_be_visible()
            assert (vault / note).read_bytes() == original.replace(b"A cache keep values, it expire after a TTL.",
                                                                   fixed.encode())  # fmt: skip
            page.goto(url + "/history")
            page.locator("button.undo").first.click()
            page.click("#apply")
            expect(page.locator("#applied")).to_be_visible()
            assert (vault / note).read_bytes() == original, "undo restores every byte (CRLF)"
            context.close()


def test_server_stopped_shows_a_banner_and_apply_says_nothing_was_written(
    browser: Browser, tmp_path: Path
) -> None:
    from write_support import ToolModel, llm_settings

    note = "Study/Caching.md"
    vault = write_vault(tmp_path / "vault", {note: "# Caching\n\nA cache keep values.\n"})
    original = (vault / note).read_bytes()
    with ToolModel({"replacement": "A cache keeps values."}) as model:
        sets = [a for k, v in {**llm_settings(model), "embedding.provider": "local"}.items()
                for a in ("--set", f"{k}={v}")]  # fmt: skip
        serve = [
            sys.executable,
            "-m",
            "vaultlens",
            "serve",
            "--vault",
            str(vault),
            "--no-watch",
            *sets,
            "--port",
            "0",
        ]
        log = tmp_path / "serve.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(serve, env=cli_env(tmp_path / "home"), stdout=out, stderr=out)
        try:
            url, page_url = _serving_url(log, proc)
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            context.set_default_timeout(WAIT_MS)
            page = context.new_page()
            opened_with_key(page, page_url)
            page.goto(f"{url}/note?path={quote(note)}")
            page.fill("#first", "3")
            page.fill("#last", "3")
            page.select_option("#preset", "fix-grammar")
            page.click("#transform-send")  # a local model: no consent step
            expect(page.locator("#apply")).to_be_visible()
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
            page.click("#apply")
            expect(page.locator("#offline")).to_be_visible()
            expect(page.locator("#offline")).to_contain_text("not answering")
            expect(page.locator("#transform-diff [role=alert]")).to_contain_text("nothing was written")
            expect(page.locator("#apply")).to_be_enabled()
            assert (vault / note).read_bytes() == original
            context.close()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
