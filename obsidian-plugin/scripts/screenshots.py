"""Screenshots of the Obsidian plugin for the README: docs/screenshots/plugin-*.png.

Obsidian cannot be installed here, so this renders the plugin's own code (src/) in headless Chromium
over the stand-in of Obsidian's classes the plugin's tests use (tests/obsidian.ts, bundled for the
browser by scripts/screenshots/build.mjs), styled by the plugin's styles.css over a small frame of
Obsidian's public CSS variables (scripts/screenshots/theme.css). Every result comes from a real
`vaultlens serve` on a copy of examples/vault with the scripted model server (tests/harness.py).
A docs tool, not a test; run it from the repository root after `npm ci` in obsidian-plugin/:

    .venv/bin/python obsidian-plugin/scripts/screenshots.py [--out docs/screenshots]

Needs Playwright (the `web-test` extra) and Debian's Chromium (/usr/bin/chromium or
$VAULTLENS_CHROMIUM); squeezes the PNGs with optipng when it is on PATH.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import Page, Route, sync_playwright

PLUGIN = Path(__file__).resolve().parents[1]
REPO = PLUGIN.parent
HERE = PLUGIN / "scripts" / "screenshots"
PAGE_PATH = "/__plugin-screenshots__/"  # served by the browser's route, never by the server
WIDTH = 800
HTML = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>vaultlens plugin</title>'
    '<link rel="stylesheet" href="theme.css"><link rel="stylesheet" href="styles.css">'
    '<script type="module" src="page.js"></script></head><body class="theme-dark"></body></html>'
)
# the scripted model's answer to the Ask question: two citations of sources it was sent, one of none
ANSWER = "Start it with rye flour and water and feed it daily [S1]; once it is kept in the fridge, weekly [S2]. The bread itself: [S14]."
# (file, scene, arguments): what each picture shows
SHOTS = [
    ("plugin-search-ru.png", "search", ["хочу весной в горы и на дегустацию вина — куда съездить?"]),
    ("plugin-search-en.png", "search", ["what happens when lots of cache entries expire at once"]),
    ("plugin-related.png", "related", ["tech/Кэширование.md"]),
    ("plugin-ask-consent.png", "askConsent", ["how do I feed my sourdough starter?"]),
    ("plugin-ask.png", "askAnswer", []),
    ("plugin-duplicates.png", "duplicates", []),
    ("plugin-review.png", "review", ["life/Retrospective.md", "work/Retrospective.md"]),
]
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]


def chromium() -> str:
    for candidate in (os.environ.get("VAULTLENS_CHROMIUM"), "/usr/bin/chromium"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("chromium")
    if not found:
        sys.exit("no Chromium: apt-get install chromium, or set VAULTLENS_CHROMIUM")
    return found


def build(out: Path) -> None:
    if not (PLUGIN / "node_modules").is_dir():
        sys.exit("run `npm ci` in obsidian-plugin/ first")
    subprocess.run(["node", str(HERE / "build.mjs"), str(out)], cwd=PLUGIN, check=True)


def pair(ready: dict[str, str]) -> str:
    """`vaultlens obsidian pair` for the copied vault: the review modal's write token."""
    env = {**os.environ, "VAULTLENS_HOME": ready["home"], "PYTHONPATH": str(REPO / "src")}
    cmd = [ready["python"], "-m", "vaultlens", "obsidian", "pair", "--vault", ready["vault"]]
    return subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout.strip()


def serve_page(page: Page, files: dict[str, bytes]) -> None:
    types = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}

    def handle(route: Route) -> None:
        name = route.request.url.split(PAGE_PATH, 1)[1].split("?")[0] or "index.html"
        body = files.get(name)
        if body is None:
            route.fulfill(status=404, body=b"")
        else:
            route.fulfill(body=body, content_type=types[Path(name).suffix] + "; charset=utf-8")

    page.route(f"**{PAGE_PATH}**", handle)


def optimise(path: Path) -> None:
    if shutil.which("optipng"):
        subprocess.run(["optipng", "-quiet", "-o2", "-strip", "all", str(path)], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "screenshots")
    out = parser.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="vaultlens-shots-") as tmp:
        script = Path(tmp) / "page.js"
        build(script)
        files = {
            "index.html": HTML.encode(),
            "page.js": script.read_bytes(),
            "theme.css": (HERE / "theme.css").read_bytes(),
            "styles.css": (PLUGIN / "styles.css").read_bytes(),
        }
        harness = subprocess.Popen(
            [
                sys.executable,
                str(PLUGIN / "tests" / "harness.py"),
                "--vault",
                str(REPO / "examples" / "vault"),
                "--answer",
                ANSWER,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert harness.stdin is not None and harness.stdout is not None
        try:
            line = harness.stdout.readline()
            if not line:
                sys.exit("tests/harness.py exited before the server was up")
            ready = json.loads(line)
            setup = {"vault": ready["vault"], "writeToken": pair(ready)}
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=chromium(), args=CHROMIUM_FLAGS)
                page = browser.new_page(viewport={"width": WIDTH + 40, "height": 900}, device_scale_factor=1)
                page.set_default_timeout(60_000)
                serve_page(page, files)
                page.on("pageerror", lambda e: print(f"page error: {e}", file=sys.stderr))
                page.goto(ready["url"] + PAGE_PATH)
                page.wait_for_function("window.scenes !== undefined")
                page.evaluate("setup => window.scenes.load(setup)", setup)
                for name, scene, args in SHOTS:
                    selector = page.evaluate(f"args => window.scenes.{scene}(...args)", args)
                    target = out / name
                    page.locator(selector).screenshot(path=str(target), animations="disabled")
                    optimise(target)
                    print(f"{target} ({target.stat().st_size // 1024} KiB)")
                browser.close()
        finally:
            harness.stdin.close()
            harness.wait(60)


if __name__ == "__main__":
    main()
