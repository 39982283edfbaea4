"""The README's screenshots (docs/screenshots/*.png): the page on examples/vault, driven in Debian's
Chromium through Playwright, with a scripted model on loopback (tests/ScriptedChatServer: a review
answer and an Ask reply; nothing leaves the machine).

A copy of the vault is indexed with the bundled model by `vaultlens index`, then `vaultlens serve`
runs on a free loopback port (both real processes, a throw-away VAULTLENS_HOME). Each page is shot
at 1200x900 in its viewport (not the whole scrolled page), which keeps each PNG around 100 KB.

Usage: .venv/bin/python bench/screenshots.py [--out docs/screenshots] [--only search,note,...]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

from _common import REPO, temp_home

sys.path.insert(0, str(REPO / "tests"))

from playwright.sync_api import Browser, Page, expect, sync_playwright

from test_review import settings
from test_web_browser import CHROMIUM, CHROMIUM_FLAGS, Served, opened_with_key, serving
from test_web_routes import PageModel
from vl_support import cli_env

VAULT = REPO / "examples" / "vault"
QUERY = "what happens when lots of cache entries expire at once"
QUESTION = "Why do many cache entries expiring at once hurt, and what helps?"
ANSWER = (
    "When many entries expire together, every request misses at once and goes to the database [S1]. "
    "Spread the lifetimes with a little random jitter, and let one request refill a key while the others "
    "wait [S1]."
)
PAIR = ("work/Retrospective.md", "life/Retrospective.md")
NOTE = "Главная.md"
SIZE = {"width": 1200, "height": 900}
WAIT_MS = 60_000


def shoot(page: Page, out: Path, name: str) -> None:
    page.wait_for_load_state("networkidle")
    page.screenshot(path=str(out / f"{name}.png"))
    print(f"{name}.png  {(out / f'{name}.png').stat().st_size // 1024} KB")


def pages(page: Page, url: str, out: Path, only: set[str] | None) -> None:
    def wanted(name: str) -> bool:
        return only is None or name in only

    if wanted("search"):
        page.goto(url + "/")
        page.locator("input#q").press_sequentially(QUERY)
        expect(page.locator("#results .result").first).to_be_visible()
        shoot(page, out, "search")
    if wanted("note"):
        page.goto(f"{url}/note?path={quote(NOTE)}")
        expect(page.locator("#related .related, #related .empty").first).to_be_visible()
        shoot(page, out, "note")
    if wanted("duplicates"):
        page.goto(url + "/duplicates")
        shoot(page, out, "duplicates")
    if wanted("review") or wanted("history"):
        page.goto(f"{url}/review?a={quote(PAIR[0])}&b={quote(PAIR[1])}")
        page.locator("button#send").click()
        expect(page.locator("#diff table.diff")).to_be_visible()
        shoot(page, out, "review")
        page.locator("button#apply").click()
        expect(page.locator("#applied")).to_be_visible()
        page.goto(url + "/history")
        page.locator("button.undo").first.click()
        page.locator("button#apply").click()
        expect(page.locator("tr.undo-entry").first).to_be_visible()
        page.evaluate("window.scrollTo(0, 0)")
        shoot(page, out, "history")
    if wanted("ask"):
        page.goto(url + "/ask")
        page.locator("#question").fill(QUESTION)
        page.locator("button#ask").click()
        expect(page.locator("#answer a.citation").first).to_be_visible()
        shoot(page, out, "ask")
    if wanted("audit"):
        page.goto(url + "/audit")
        page.locator("button#run-audit").click()
        expect(page.locator("table#broken-links")).to_be_visible()
        page.locator("details#named-orphans summary").click()
        shoot(page, out, "audit")
    if wanted("status"):
        page.goto(url + "/status")
        expect(page.locator("[data-count=indexed]")).to_be_visible()
        shoot(page, out, "status")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "screenshots")
    parser.add_argument("--only", help="comma-separated page names (default: every page)")
    args = parser.parse_args()
    if CHROMIUM is None:
        sys.exit("error: no Chromium (/usr/bin/chromium, or VAULTLENS_CHROMIUM); `apt-get install chromium`")
    only = set(args.only.split(",")) if args.only else None
    args.out.mkdir(parents=True, exist_ok=True)
    with temp_home("screenshots") as tmp, PageModel() as model:
        root = Path(tmp)
        vault = root / "vault"
        shutil.copytree(VAULT, vault)
        seed_duplicates(vault)
        model.reply = ANSWER
        env = cli_env(root / "home")
        sets = [
            a
            for k, v in {**settings(model), "embedding.provider": "local"}.items()
            for a in ("--set", f"{k}={v}")
        ]
        vaultlens = [sys.executable, "-m", "vaultlens"]
        subprocess.run(
            [*vaultlens, "index", "--vault", str(vault), *sets], env=env, check=True, capture_output=True
        )
        serve = [*vaultlens, "serve", "--vault", str(vault), *sets]
        with serving(serve, env, root / "serve.log") as served, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
            try:
                shoot_all(browser, served, args.out, only)
            finally:
                browser.close()


def seed_duplicates(vault: Path) -> None:
    """The sample vault has no duplicates, so its copy gets two for the Duplicates page to show:
    an exact copy and an older version of a note (the same text with its last section cut)."""
    note = vault / "books" / "Как я читаю.md"
    shutil.copyfile(note, vault / "inbox" / "Как я читаю (копия).md")
    packing = (vault / "travel" / "Packing list.md").read_text(encoding="utf-8")
    older = packing.rsplit("\n## ", 1)[0] + "\n"
    (vault / "travel" / "Packing list 2022.md").write_text(older, encoding="utf-8")


def shoot_all(browser: Browser, served: Served, out: Path, only: set[str] | None) -> None:
    """Every page in the light theme, then Search in the dark one, each tab opened at the address
    with the page's key first (as `serve` printed it), so the page may write."""
    url = served.url
    for scheme in ("light", "dark"):
        if scheme == "dark" and only is not None and "search-dark" not in only:
            continue
        context = browser.new_context(viewport=SIZE, color_scheme=scheme)  # type: ignore[arg-type]
        context.set_default_timeout(WAIT_MS)
        page = context.new_page()
        opened_with_key(page, served.page_url)
        if scheme == "light":
            pages(page, url, out, only)
        else:
            page.goto(url + "/")
            page.locator("input#q").press_sequentially(QUERY)
            expect(page.locator("#results .result").first).to_be_visible()
            shoot(page, out, "search-dark")
        context.close()


if __name__ == "__main__":
    main()
