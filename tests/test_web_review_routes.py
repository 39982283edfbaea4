"""The page's review and resilience routes over HTTP on a real uvicorn server (loopback), where no
browser is needed (the browser flows: tests/test_web_review_browser.py).

A review's consent proposal sums up how much of which note the prompt carries; "Insert after" points
carry readable labels (heading path and first words, never the catalog's nonce); a block of the other
note is refused with a reason naming both notes; a browser's visit without the token beyond loopback
gets an HTML page; the event stream says "closing" and ends when the server shuts down.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path

import httpx

import test_web_routes
import vaultlens
from server_support import running_server
from test_review import CACHING, SYSTEMS
from test_web_routes import ASK_NOTES, Page, hooks, post
from vaultlens.services.verbs import finding
from vaultlens.web.events import EventHub, event_stream
from vaultlens.web.render import note_html
from vl_support import write_vault

page = test_web_routes.page  # the fixture: a real server over the routes' vault, the scripted model
NONCE_ID = re.compile(r"\b[0-9a-f]{8}:[AB]:\d+")
BROWSER = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}


def reviewed(page: Page) -> dict[str, object]:
    asked = post(page, "/ui/api/review", {"a": CACHING, "b": SYSTEMS})
    assert asked.status_code == 403, asked.text
    proposal = asked.json()["error"]["proposal"]
    done = post(page, "/ui/api/review", {"a": CACHING, "b": SYSTEMS, "token": proposal["token"]})
    assert done.status_code == 200, done.text
    return {"proposal": proposal, **done.json()}


def test_the_review_proposal_sums_up_the_prompt_by_note_and_blocks_carry_readable_labels(page: Page) -> None:
    data = reviewed(page)
    proposal = data["proposal"]
    assert isinstance(proposal, dict)
    sources = proposal["sources"]
    assert [s["path"] for s in sources] == [CACHING, SYSTEMS]
    text_a = (page.vault / CACHING).read_text(encoding="utf-8")
    assert sources[0]["chars"] == sources[0]["of"] == len(text_a)
    points = data["insert_after"]
    assert isinstance(points, list) and points
    for point in points:
        assert "Cache lifetime" in point["label"] and not NONCE_ID.search(point["label"]), point
        assert f"lines {point['start_line']}-{point['end_line']}" in point["label"]
    labels = {p["side"]: p["label"] for p in points if p["kind"] == "paragraph"}
    assert labels["A"] == "Cache lifetime: “A cached value expires after its TTL.” (paragraph, lines 3-3)"


def test_a_block_of_the_other_note_is_refused_with_a_reason_naming_both_notes(page: Page) -> None:
    data = reviewed(page)
    wrong = post(page, "/ui/api/replan", {"review_id": data["review_id"], "direction": "A", "after": "B:1"})
    assert wrong.status_code == 200, wrong.text
    refused = wrong.json()
    assert refused["plan"] is None
    reason = refused["plan_refused"]
    assert SYSTEMS in reason and CACHING in reason and "lines 3-3" in reason, reason
    assert not NONCE_ID.search(reason) and "nothing was planned" in reason, reason


def test_a_browser_visit_without_the_token_gets_an_html_page_and_a_program_json(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "vault", ASK_NOTES)
    with running_server(vault, tmp_path / "home", watch=False, token="s3cret-token") as server:
        for path in ("/", "/status", "/note?path=x.md"):
            visit = httpx.get(server.url + path, headers=BROWSER, timeout=30)
            assert visit.status_code == 401 and visit.headers["content-type"].startswith("text/html"), path
            found = hooks(visit.text)
            [error] = found.find("p", class_="error", data_code="unauthorized")
            assert found.find("html", lang="en") and "?token=" in visit.text, visit.text
            assert "s3cret-token" not in visit.text
            assert "Content-Security-Policy" in visit.headers
        for path in ("/v1/search?q=rye", "/ui/api/history", "/"):
            program = httpx.get(server.url + path, timeout=30)
            assert program.status_code == 401 and program.json()["error"]["code"] == "unauthorized", path


def test_the_event_stream_says_closing_and_ends_when_the_server_shuts_down() -> None:
    states: Iterator[dict[str, object]] = iter([{"state": "watching", "reason": None}])

    def watcher() -> dict[str, object]:
        return next(states, {"state": "closing", "reason": None})

    async def read() -> list[bytes]:
        return [chunk async for chunk in event_stream(EventHub(), watcher, seconds=600, poll_s=0.01)]

    chunks = asyncio.run(asyncio.wait_for(read(), 60))  # ends by itself, long before its 600 s
    text = b"".join(chunks).decode()
    assert '"state": "watching"' in text.split("event: watcher")[1]
    assert text.rstrip().endswith('"state": "closing", "reason": null}'), text


def test_a_stopping_server_reports_its_watcher_as_closing(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "vault", ASK_NOTES)
    with running_server(vault, tmp_path / "home", watch=False) as server:
        assert httpx.get(server.url + "/v1/status", timeout=30).json()["watcher"]["state"] == "off"
        server._stop_watch.set()  # what a signal does first
        assert httpx.get(server.url + "/v1/status", timeout=30).json()["watcher"]["state"] == "closing"


def test_code_blocks_are_highlighted_on_the_server_as_classes_only() -> None:
    html = note_html(
        "# Code\n\n```python\ndef feed(starter):\n    return '<b>'  # twice a day\n```\n\n"
        "```no-such-language\n<i>plain</i>\n```\n",
        None,
    )
    found = hooks(html)
    assert found.find("span", class_="hl-k") and found.find("span", class_="hl-nf"), html  # def, feed
    assert found.find("span", class_="hl-c1"), html  # the comment
    assert "&lt;b&gt;" in html and "<b>" not in html, "code stays escaped"
    assert "&lt;i&gt;plain&lt;/i&gt;" in html, "a language Pygments does not know stays plain text"
    assert "style=" not in html, "the page's CSP refuses style attributes"


def test_the_link_resolver_is_built_once_per_index_generation(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "vault", ASK_NOTES)
    with running_server(vault, tmp_path / "home", watch=False) as server:
        app = server.app
        first = finding.link_resolver(app)
        assert finding.link_resolver(app) is first, "the same index generation: the same resolver"
        (vault / "New note.md").write_text("# New\n\nJust added.\n", encoding="utf-8")
        vaultlens.index(app)
        fresh = finding.link_resolver(app)
        assert fresh is not first
        assert fresh.resolve("New note", "").path == "New note.md"


def test_a_front_matter_section_is_shown_only_when_the_query_matched_a_property(page: Page) -> None:
    """Meta.md's front matter holds `tags: [meta]`: listed for a query naming the tag, not for one the
    body answers (its link would open the note view marked at the YAML instead)."""

    def sections(query: str) -> list[list[str]]:
        hits = httpx.get(page.url + "/ui/api/search", params={"q": query}, timeout=60).json()
        meta = next(h for h in hits if h["path"] == "Meta.md")
        return [s["heading_path"] for s in meta["sections"]]

    assert ["front matter"] not in sections("a note with"), "no property matched"
    assert ["front matter"] in sections("meta tags"), "the query names the tag"
