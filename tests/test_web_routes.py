"""The web page over HTTP on a real uvicorn server (loopback): every page answers with its DOM
hooks, the CSRF guard refuses writes without the page's token or from another origin, the reads
are the verbs' JSON, and review → diff → apply → undo changes the note exactly as shown and back.

The model is a ScriptedChatServer on loopback (named by a made-up host reached through the tests'
loopback proxy, so it counts as remote and every send needs consent): it answers a review prompt in refs.v2 and an Ask prompt with scripted text.
The browser tests (tests/test_web_*.py on the web-tests branch) drive the same pages in Chromium.
"""

from __future__ import annotations

import base64
import dataclasses
import html
import json
import os
import re
import shlex
import signal
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import httpx
import pytest
from fastapi.responses import HTMLResponse
from fastapi.routing import APIRoute

import vaultlens
from loopback_proxy import remote_url
from scripted_chat_server import ScriptedChatServer
from server_support import page_key_cookie, running_server
from test_ask import NOTES as ASK_NOTES
from test_ask import QUESTION
from test_review import CACHING, SYSTEMS, ReviewModel
from test_review import NOTES as REVIEW_NOTES
from test_server_ask import events
from vaultlens.config.consent import consent_file
from vaultlens.index.lock import process_alive
from vaultlens.safewrite import render_diff
from vaultlens.server.api import create_api
from vaultlens.server.serve import Companion
from vaultlens.services.changing import writes
from vaultlens.web.lists import history_body
from vl_support import check_shape, run_cli, snapshot, write_vault
from write_support import ToolModel, llm_settings

SCRIPT_NOTE = "Hostile.md"
ALIGNED_NOTE = "Prices.md"
NOTES = {
    **ASK_NOTES,
    **REVIEW_NOTES,
    SCRIPT_NOTE: "# Hostile\n\nText <script>alert(1)</script> and <img src=x onerror=alert(2)>.\n\n"
    "## Second\n\nMore text about sourdough.\n",
    "Meta.md": "---\ntags: [meta]\n---\n\n# Meta\n\nA note with front matter.\n",
    "Copy one.md": "# Copy\n\nThe exact same note body, kept twice by mistake, about garden tomatoes.\n",
    "Copy two.md": "# Copy\n\nThe exact same note body, kept twice by mistake, about garden tomatoes.\n",
    # aligned columns: markdown-it renders them as style= attributes, which the page's CSP refuses
    ALIGNED_NOTE: "# Prices\n\n| Item | Price | Shop |\n|:-----|------:|:----:|\n| Pencil | 2 | corner |\n",
}
GARDEN = "".join(
    f"## Part {i}\n\nParagraph {i} about gardens, tomatoes number {i} and watering schedule {i * 7}.\n\n"
    for i in range(6)
)
NOTES["Garden/Plan.md"] = "# Plan\n\n" + GARDEN
NOTES["Garden/Plan extended.md"] = "# Plan extended\n\n" + GARDEN + "## Extra\n\nOne more thing entirely.\n"
ASK_REPLY = "Feed it rye flour daily [S1] and see [S9]."


class PageModel(ReviewModel):
    """A review prompt gets a refs.v2 answer (ReviewModel); any other chat (Ask) the scripted reply."""

    def __init__(self) -> None:
        super().__init__()
        self.reply = ASK_REPLY

    def _respond(self, handler: BaseHTTPRequestHandler, body: Any, step: Any) -> None:
        if isinstance(body, dict) and "NONCE is" not in json.dumps(body.get("messages", "")):
            ScriptedChatServer._respond(self, handler, body, step)
        else:
            super()._respond(handler, body, step)


@dataclass
class Page:
    url: str
    vault: Path
    model: PageModel
    token: str
    cookie: dict[str, str]  # the page key's, as the browser opened at `serve`'s address sends it


def opened(server: Companion, vault: Path, model: PageModel) -> Page:
    """The page as the user's browser has it: opened at the keyed address, its token read."""
    cookie = page_key_cookie(server.page_url)
    return Page(server.url, vault, model, page_token(server.url, cookie), cookie)


@pytest.fixture
def page(tmp_path: Path) -> Iterator[Page]:
    vault = write_vault(tmp_path / "vault", NOTES)
    with PageModel() as model:
        overrides = {"embedding.provider": "fake", "llm.provider": "openai-compatible", "llm.model": "page-test",
                     "llm.endpoint": remote_url(model.url) + "/v1",
                     "llm.max_retries": "0", "llm.read_timeout_s": "5"}  # fmt: skip
        with running_server(vault, tmp_path / "home", watch=False, overrides=overrides) as server:
            yield opened(server, vault, model)


class Hooks(HTMLParser):
    """Every element's tag, id, classes and data-* attributes, to find a page's DOM hooks."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[dict[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append({"tag": tag, **{k: v or "" for k, v in attrs}})

    def find(self, tag: str | None = None, **want: str) -> list[dict[str, str]]:
        def matches(e: dict[str, str]) -> bool:
            for key, value in want.items():
                attr = key.rstrip("_").replace("_", "-")
                if attr == "class":
                    if value not in e.get("class", "").split():
                        return False
                elif value == "*":
                    if attr not in e:
                        return False
                elif e.get(attr) != value:
                    return False
            return tag is None or e["tag"] == tag

        return [e for e in self.elements if matches(e)]


def hooks(html: str) -> Hooks:
    parser = Hooks()
    parser.feed(html)
    return parser


def get(page: Page, url: str, /, **params: Any) -> httpx.Response:
    return httpx.get(page.url + url, params=params, headers=page.cookie, timeout=60)


def post(page: Page, url: str, body: dict[str, Any], /, **headers: str) -> httpx.Response:
    sent = {"X-Vaultlens-CSRF": page.token, **page.cookie, **headers}
    return httpx.post(page.url + url, json=body, headers=sent, timeout=60)


def error_code(reply: httpx.Response) -> str:
    code: str = reply.json()["error"]["code"]
    return code


# ---- the pages -------------------------------------------------------------------------------

SHELL_HOOKS: dict[str, list[tuple[str | None, dict[str, str]]]] = {
    "/": [("input", {"id": "q", "autofocus": "*"}), (None, {"id": "results"}), (None, {"id": "weak-notice"})],
    "/ask": [("textarea", {"id": "question"}), ("input", {"id": "extractive", "type": "checkbox"}),
             ("button", {"id": "ask"}), (None, {"id": "answer"})],
    "/history": [(None, {"id": "diff"})],
    "/audit": [("button", {"id": "run-audit"}), (None, {"id": "audit-progress"})],
    "/status": [(None, {"data_count": "indexed"}), (None, {"data_count": "skipped"}),
                (None, {"data_count": "failed"}), ("table", {"id": "problems"}), (None, {"id": "watcher"}),
                (None, {"id": "progress"}), (None, {"id": "providers"})],
    "/duplicates": [("section", {"class_": "kind", "data_kind": k}) for k in
                    ("exact", "near_duplicate", "contained", "translation", "shared_passage")],
}  # fmt: skip


def test_every_page_has_the_frame_and_its_hooks(page: Page) -> None:
    urls = [*SHELL_HOOKS, "/note", "/review", f"/review?a={CACHING}&b={SYSTEMS}", f"/note?path={CACHING}"]
    for url in urls:
        reply = get(page, url)
        assert reply.status_code == 200 and reply.headers["content-type"].startswith("text/html"), url
        found = hooks(reply.text)
        assert found.find("html", lang="en"), url
        assert found.find("meta", name="vaultlens-csrf", content=page.token), url
        nav = {e["href"] for e in found.find("a") if e.get("href", "").startswith("/")}
        assert {"/", "/note", "/duplicates", "/review", "/history", "/ask", "/audit", "/status"} <= nav, url
        for tag, attrs in SHELL_HOOKS.get(url, []):
            assert found.find(tag, **attrs), (url, tag, attrs)
        for control in found.find("input") + found.find("select") + found.find("textarea"):
            if control.get("type") != "hidden":
                assert found.find("label", for_=control["id"]), (url, control)
    review = hooks(get(page, "/review", a=CACHING, b=SYSTEMS).text)
    for hook in ("consent", "claims", "validation", "diff"):
        assert review.find(id=hook), hook
    assert review.find("form", id="plan") and review.find("select", name="direction")
    assert review.find("select", name="after") and review.find("input", name="link_text")
    assert review.find("button", id="replan")


def test_the_note_view_renders_markdown_marks_the_lines_and_never_runs_the_notes_html(page: Page) -> None:
    reply = get(page, "/note", path=SCRIPT_NOTE, lines="7-7")
    assert reply.status_code == 200
    found = hooks(reply.text)
    assert [e["data-lines"] for e in found.find(class_="target")] == ["7-7"]
    assert found.find("h2", data_lines="5-5") and found.find(id="note-body")
    assert "<script>alert" not in reply.text and "&lt;script&gt;alert(1)&lt;/script&gt;" in reply.text
    assert "<img" not in reply.text
    meta = hooks(get(page, "/note", path="Meta.md", lines="1-3").text)
    assert [e["data-lines"] for e in meta.find(class_="target")] == ["1-3"] and meta.find(
        "pre", class_="front-matter"
    )
    [link] = found.find("a", id="open-obsidian")
    assert link["href"] == "obsidian://open?vault=vault&file=Hostile"
    shell = hooks(get(page, "/note", path="Bread/Starter.md").text)
    [later] = shell.find("section", id="related")
    assert later["data-src"] == "/note/related?path=Bread%2FStarter.md", "related notes load after the note"
    related = hooks(httpx.get(page.url + later["data-src"], timeout=60).text)
    assert related.find(class_="related", data_path="Bread/Loaf.md")
    review = related.find("a", class_="review")[0]
    assert review["href"] == "/review?a=Bread%2FStarter.md&b=Bread%2FLoaf.md"


def test_a_path_outside_the_vault_is_refused_on_the_page_and_the_api(page: Page, tmp_path: Path) -> None:
    (page.vault.parent / "secret.md").write_text("# Secret\n\nTOPSECRET-page\n", encoding="utf-8")
    for url, params in [("/note", {"path": "../secret.md"}), ("/ui/api/similar", {"path": "../secret.md"})]:
        reply = get(page, url, **params)
        assert reply.status_code == 400 and "TOPSECRET" not in reply.text, url


def test_the_duplicates_page_lists_exact_copies_and_same_named_notes(page: Page) -> None:
    found = hooks(get(page, "/duplicates").text)
    # copies of one text: one set, not pairs
    assert found.find(class_="copy-set", data_paths="Copy one.md\nCopy two.md", data_size="2")
    review_links = {e["href"] for e in found.find("a", class_="review-pair")}
    assert any("Cache+lifetime" in href or "Cache%20lifetime" in href for href in review_links)
    assert found.find("button", class_="dismiss")


# ---- the security headers: no framing, only the page's own scripts and styles ------------------------


def app_routes(routes: Iterable[Any]) -> Iterator[Any]:
    """Every route of the app, the included routers' own routes in place of the routers."""
    for route in routes:
        original = getattr(route, "original_router", None)
        yield from app_routes(original.routes) if original is not None else [route]


def test_every_response_and_every_html_page_forbids_framing_and_inline_code(page: Page) -> None:
    """The routes come from the app itself (a page added later is covered without editing this list);
    each GET route is asked without parameters, the HTML pages also with the ones they show a note by."""
    api = create_api(vaultlens.App.open(page.vault, {"embedding.provider": "fake"}))
    routes = [r for r in app_routes(api.routes) if isinstance(r, APIRoute) and "GET" in (r.methods or ())]
    html = {r.path for r in routes if r.response_class is HTMLResponse}
    assert {"/", "/note", "/review", "/ask", "/duplicates", "/history", "/audit", "/status"} <= html, html
    # a path parameter gets a value no route knows: the route's own refusal, a page too
    urls = [re.sub(r"\{\w+\}", "no-such-id", r.path) for r in routes]
    urls += ["/openapi.json", "/ui/static/app.css", "/no-such-page"]
    urls += [f"/note?path={ALIGNED_NOTE}", f"/note?path={SCRIPT_NOTE}", f"/review?a={CACHING}&b={SYSTEMS}"]
    urls = [u + "?seconds=0" if u == "/ui/events" else u for u in urls]
    replies = {url: httpx.get(page.url + url, timeout=60) for url in urls}
    replies["POST /ui/api/apply"] = httpx.post(page.url + "/ui/api/apply", json={}, timeout=30)  # a refusal
    for url, reply in replies.items():
        policy = reply.headers.get("content-security-policy", "")
        assert "frame-ancestors 'none'" in policy and reply.headers.get("x-frame-options") == "DENY", url
        assert reply.headers.get("x-content-type-options") == "nosniff", url
        assert reply.headers.get("referrer-policy") == "no-referrer", url
        directives = {d.split()[0]: d.split()[1:] for d in policy.split(";") if d.strip()}
        for name in ("default-src", "script-src", "style-src", "connect-src"):
            assert directives[name] == ["'self'"], (url, name, policy)
        assert directives["img-src"] == ["'self'", "data:"] and directives["object-src"] == ["'none'"], url
        assert directives["base-uri"] == ["'none'"] and directives["form-action"] == ["'self'"], url
    pages = {re.sub(r"\{\w+\}", "no-such-id", path): "{" not in path for path in html}
    for url in [u for u in urls if u.split("?")[0] in pages]:
        reply = replies[url]
        assert reply.headers["content-type"].startswith("text/html"), url
        assert reply.status_code == 200 or not pages[url.split("?")[0]], url
        found = hooks(reply.text)
        inline = [e for e in found.elements if "style" in e or any(k.startswith("on") for k in e)]
        inline += [e for e in found.find("script") if not e.get("src")] + found.find("style")
        assert not inline, (url, inline)  # the policy would refuse them: a broken page
    assert hooks(replies[f"/note?path={ALIGNED_NOTE}"].text).find("th", class_="align-right")


# ---- the CSRF guard --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "why"),
    [
        ({}, "no token"),
        ({"X-Vaultlens-CSRF": "not-the-token"}, "a wrong token"),
        ({"ORIGIN": "http://evil.example"}, "another origin"),
        ({"ORIGIN": "http://localhost:1"}, "another port"),
    ],
)
def test_a_write_without_the_token_or_from_another_origin_is_refused(
    page: Page, headers: dict[str, str], why: str
) -> None:
    before = snapshot(page.vault)
    sent = {**page.cookie, "X-Vaultlens-CSRF": page.token} if "ORIGIN" in headers else dict(page.cookie)
    sent.update({("Origin" if k == "ORIGIN" else k): v for k, v in headers.items()})
    for path, body in [
        ("/ui/api/dismiss", {"a": "Copy one.md", "b": "Copy two.md"}),
        ("/ui/api/review", {"a": CACHING, "b": SYSTEMS}),
        ("/ui/api/apply", {"op_id": "x"}),
        ("/ui/api/undo", {"op_id": "x"}),
        ("/ui/api/ask", {"question": QUESTION, "consent": True}),
        ("/ui/api/audit", {}),
        ("/ui/api/audit/clusters", {}),
        ("/ui/api/replan", {"review_id": "x"}),
        (
            "/ui/api/write/transform",
            {"path": SCRIPT_NOTE, "first": 3, "last": 3, "preset": "summarize", "consent": True},
        ),
    ]:
        reply = httpx.post(page.url + path, json=body, headers=sent, timeout=30)
        assert reply.status_code == 403 and error_code(reply) == "csrf_refused", (why, path, reply.text)
    assert snapshot(page.vault) == before and page.model.chats() == []


def page_token(url: str, cookie: dict[str, str]) -> str:
    found = re.search(
        r'<meta name="vaultlens-csrf" content="([^"]+)">',
        httpx.get(url + "/", headers=cookie, timeout=30).text,
    )
    assert found is not None
    return found.group(1)


def test_a_page_loaded_before_a_restart_is_told_to_reload_and_a_forged_token_is_not(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "vault", NOTES)
    with running_server(vault, tmp_path / "home", watch=False) as first:
        old_cookie = page_key_cookie(first.page_url)
        old, port = page_token(first.url, old_cookie), first.bound_port
    with running_server(vault, tmp_path / "home", watch=False, port=port) as second:
        # the open page still holds the old key's cookie: told to reload, and the reload is read-only
        reply = httpx.post(
            second.url + "/ui/api/dismiss",
            json={"a": "Copy one.md", "b": "Copy two.md"},
            headers={"X-Vaultlens-CSRF": old, "Origin": second.url, **old_cookie},
            timeout=30,
        )
        assert reply.status_code == 403 and error_code(reply) == "page_expired", reply.text
        reloaded = httpx.get(second.url + "/", headers=old_cookie, timeout=30).text
        assert '<meta name="vaultlens-csrf" content="">' in reloaded and "vaultlens serve" in reloaded
        cookie = page_key_cookie(second.page_url)
        new = page_token(second.url, cookie)
        assert new != old
        later = f"{int(new.split('.')[0]) + 1}.{old.split('.')[1]}"  # the right shape, no earlier start
        for token, code in [(old, "page_expired"), ("x" * len(old), "csrf_refused"), (later, "csrf_refused")]:
            reply = httpx.post(
                second.url + "/ui/api/dismiss",
                json={"a": "Copy one.md", "b": "Copy two.md"},
                headers={"X-Vaultlens-CSRF": token, "Origin": second.url, **cookie},
                timeout=30,
            )
            assert reply.status_code == 403 and error_code(reply) == code, (token, reply.text)
            error = reply.json()["error"]
            restarted = "restarted" in error["message"] and "Reload the page" in error["hint"]
            assert restarted == (code == "page_expired"), error
        assert "Copy one.md" in httpx.get(second.url + "/ui/api/duplicates", timeout=30).text


def test_the_right_token_and_origin_pass_the_guard(page: Page) -> None:
    reply = post(page, "/ui/api/review", {"a": CACHING, "b": SYSTEMS}, Origin=page.url)
    assert reply.status_code == 403 and error_code(reply) == "consent_required", reply.text
    assert page.model.chats() == [], "a proposal sends nothing"


def test_the_v1_api_stays_read_only(page: Page) -> None:
    for path in ("/v1/apply", "/v1/dismiss", "/v1/undo", "/v1/review"):
        assert httpx.post(page.url + path, json={}, timeout=30).status_code in (404, 405), path
    spec = get(page, "/openapi.json").json()
    assert not [p for p in spec["paths"] if p.startswith("/ui") or p in ("/", "/note")]


def test_status_without_an_index_answers_with_the_command_that_builds_it(tmp_path: Path) -> None:
    """Before the first index run the page says there is none and names the exact command (its vault,
    data folder and --set values); that command, run as printed, builds the index the page then shows."""
    vault = write_vault(tmp_path / "vault", ASK_NOTES)
    home = tmp_path / "home"
    with running_server(vault, home, watch=False, index=False) as server:
        reply = httpx.get(server.url + "/status", timeout=30)
        assert reply.status_code == 200, reply.text
        found = hooks(reply.text)
        assert found.find(id="no-index") and found.find(id="watcher") and found.find(id="providers")
        assert f"There is no index for {vault} yet." in reply.text
        command = re.search(r'<code id="index-command">([^<]+)</code>', reply.text)
        assert command is not None
        words = shlex.split(html.unescape(command.group(1)))
        assert words == [f"VAULTLENS_HOME={home}", "vaultlens", "index", "--vault", str(vault)] + [
            "--set",
            "embedding.provider=fake",
        ]
        done = run_cli(words[2:])  # VAULTLENS_HOME is set here as the command sets it
        assert done.exit_code == 0, done.output
        counts = hooks(httpx.get(server.url + "/status", timeout=30).text).find(data_count="indexed")
        assert counts and not hooks(httpx.get(server.url + "/status", timeout=30).text).find(id="no-index")


# ---- reads -------------------------------------------------------------------------------------


def test_the_read_endpoints_answer_the_verbs_json(page: Page) -> None:
    hits = get(page, "/ui/api/search", q=QUESTION).json()
    check_shape("search", hits)
    assert hits[0]["path"] == "Bread/Starter.md"
    check_shape("similar", get(page, "/ui/api/similar", path="Bread/Starter.md").json())
    dups = get(page, "/ui/api/duplicates").json()
    assert dups["exact"][0]["paths"] == ["Copy one.md", "Copy two.md"]
    status = get(page, "/ui/api/status").json()
    assert status["files"]["indexed"] == len(NOTES) and status["watcher"] == {"state": "off", "reason": None}
    assert get(page, "/ui/api/history").json() == []
    assert {p["role"] for p in get(page, "/ui/api/providers").json()} == {"embedding", "llm"}
    assert get(page, "/ui/api/search", q=" ").status_code == 400


def test_the_event_stream_starts_with_the_progress_and_the_watcher(page: Page) -> None:
    reply = get(page, "/ui/events", seconds=0)
    assert reply.headers["content-type"].startswith("text/event-stream")
    got = events(httpx.Response(200, text=reply.text.removeprefix("retry: 2000\n\n")))
    assert got == [("progress", None), ("watcher", {"state": "off", "reason": None})]


# ---- review → diff → apply → history → undo ---------------------------------------------------


def test_review_diff_apply_undo_changes_the_note_exactly_as_shown_and_back(page: Page) -> None:
    before, original = snapshot(page.vault), (page.vault / SYSTEMS).read_bytes()
    asked = post(page, "/ui/api/review", {"a": CACHING, "b": SYSTEMS})
    assert asked.status_code == 403
    proposal = asked.json()["error"]["proposal"]
    assert "Every entry lives five minutes." in proposal["preview"] and page.model.chats() == []
    reviewed = post(page, "/ui/api/review", {"a": CACHING, "b": SYSTEMS, "token": proposal["token"]})
    assert reviewed.status_code == 200, reviewed.text
    [sent] = page.model.chats()
    assert "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in sent["messages"]) == proposal["preview"]
    first = reviewed.json()
    assert first["validation"]["ok"] and first["claims"][0]["evidenceA"]["path"] == CACHING
    assert not consent_file().exists(), "the page's consent is never stored"

    moved = post(page, "/ui/api/replan", {"review_id": first["review_id"], "direction": "B", "after": "B:0",
                                           "link_text": "Compare"})  # fmt: skip
    assert moved.status_code == 200 and len(page.model.chats()) == 1, moved.text
    op = moved.json()["plan"]["op_id"]
    assert moved.json()["plan"]["path"] == SYSTEMS

    shown = post(page, "/ui/api/apply", {"op_id": op})
    assert shown.status_code == 409 and error_code(shown) == "write_unconfirmed"
    diff = shown.json()["error"]["proposal"]
    assert diff["preview"] == moved.json()["plan"]["diff"] and snapshot(page.vault) == before
    wrong = post(page, "/ui/api/apply", {"op_id": op, "token": "0" * 64})
    assert wrong.status_code >= 400 and snapshot(page.vault) == before

    applied = post(page, "/ui/api/apply", {"op_id": op, "token": diff["token"]})
    assert applied.status_code == 200, applied.text
    after = (page.vault / SYSTEMS).read_bytes()
    assert render_diff(SYSTEMS, original, after) == diff["preview"], "the note changed exactly as shown"
    assert {k: v for k, v in snapshot(page.vault).items() if k != SYSTEMS} == {
        k: v for k, v in before.items() if k != SYSTEMS
    }
    history = hooks(get(page, "/history").text)
    [entry] = history.find(class_="entry", data_op=op)
    assert entry["data-state"] == "applied" and history.find("button", class_="undo")

    undo = post(page, "/ui/api/undo", {"op_id": op})
    assert undo.status_code == 200 and snapshot(page.vault) != before, "undo only plans"
    back = post(page, "/ui/api/apply", {"op_id": undo.json()["op_id"]}).json()["error"]["proposal"]
    done = post(page, "/ui/api/apply", {"op_id": undo.json()["op_id"], "token": back["token"]})
    assert done.status_code == 200 and snapshot(page.vault) == before
    assert (page.vault / SYSTEMS).read_bytes() == original, "every byte is back (CRLF)"


def test_history_links_every_change_to_the_text_before_it_escaped_and_read_only(page: Page) -> None:
    """No page showed the journal's copy of a note's earlier text (undo refused: it was out of reach)."""
    hostile = (page.vault / SCRIPT_NOTE).read_bytes()
    planned = writes.plan_write(page.vault, SCRIPT_NOTE, b"# Hostile\n\nReplaced.\n", "replace", hostile)
    op = writes.apply(page.vault, planned.entry.op_id, planned.proposal).op_id
    link = f"/history/{op}/before"
    [entry] = hooks(get(page, "/history").text).find(class_="entry", data_op=op)
    assert f'href="{link}"' in get(page, "/history").text
    before = snapshot(page.vault)
    shown = get(page, link)
    assert shown.status_code == 200 and shown.headers["content-type"].startswith("text/html")
    assert hooks(shown.text).find("section", class_="before", data_op=op, data_path=SCRIPT_NOTE)
    assert "Text &lt;script&gt;alert(1)&lt;/script&gt;" in shown.text and "<script>alert(1)" not in shown.text
    assert f"vaultlens history {op} --show-before" in shown.text
    api = get(page, f"/ui/api/history/{op}/before").json()
    assert base64.b64decode(api["befores"][0]["base64"]) == hostile, "the JSON carries the exact bytes"
    assert get(page, "/history/20261203T101500-abcdef/before").status_code == 404
    assert get(page, "/history/..%2F..%2Fetc/before").status_code in (400, 404)
    assert snapshot(page.vault) == before, "showing it writes nothing"


def test_history_lists_an_operation_group_with_a_link_to_each_note_and_its_text_before(page: Page) -> None:
    """A group (a split, a merge) has no single path: the History page answered 500 once one existed."""
    hostile = (page.vault / SCRIPT_NOTE).read_bytes()
    planned = writes.plan_group(
        page.vault,
        [
            writes.Change(SCRIPT_NOTE, b"# Hostile\n\n- [[Part <b>one]]\n", "index", based_on=hostile),
            writes.Change("Part <b>one.md", b"Moved here.\n", "new note", based_on=None),
        ],
        "split Hostile.md",
    )
    group = writes.apply(page.vault, planned.entry.op_id, planned.proposal).op_id
    listed = get(page, "/history")
    assert listed.status_code == 200, listed.text
    [row] = hooks(listed.text).find(class_="entry", data_op=group)
    assert row["data-state"] == "applied"
    assert 'href="/note?path=Hostile.md"' in listed.text and "2 notes: " in listed.text
    assert "Part &lt;b&gt;one.md" in listed.text and "<b>one" not in listed.text
    assert f'href="/history/{group}/before"' in listed.text
    assert get(page, f"/history/{group}/before").status_code == 200
    [entry] = [e for e in writes.history(page.vault) if e.op_id == group]
    assert isinstance(entry, writes.Group)  # a split is one operation group
    partial = dataclasses.replace(entry, state="partial")  # as a kill mid-split leaves it
    cut_short = hooks(history_body([partial], 0))
    assert cut_short.find("button", class_="undo"), "a partial group is offered its undo, as in the CLI"


def test_a_listed_pair_is_dismissed_and_an_exact_copy_cannot_be(page: Page) -> None:
    pair = {"a": "Garden/Plan extended.md", "b": "Garden/Plan.md"}
    listed = hooks(get(page, "/duplicates").text)
    assert listed.find(class_="pair", data_a=pair["a"], data_b=pair["b"])
    assert listed.find("section", data_kind="contained")
    reply = post(page, "/ui/api/dismiss", pair)
    assert reply.status_code == 200 and reply.json() == {"dismissed": [pair["a"], pair["b"]]}
    assert not hooks(get(page, "/duplicates").text).find(class_="pair", data_a=pair["a"], data_b=pair["b"])
    exact = post(page, "/ui/api/dismiss", {"a": "Copy one.md", "b": "Copy two.md"})
    assert exact.status_code == 400 and "cannot be dismissed" in exact.json()["error"]["hint"]


# ---- Ask -------------------------------------------------------------------------------------


def test_ask_streams_after_consent_for_that_request_only(page: Page) -> None:
    refused = post(page, "/ui/api/ask", {"question": QUESTION})
    assert refused.status_code == 403 and error_code(refused) == "consent_required"
    assert page.model.chats() == []
    reply = post(page, "/ui/api/ask", {"question": QUESTION, "consent": True})
    got = events(reply)
    assert [k for k, _ in got][-1] == "done" and len(page.model.chats()) == 1
    final = got[-1][1]
    assert final["answer"] == ASK_REPLY and final["invalid_citations"] == ["S9"]
    assert final["sources"][0]["path"] == "Bread/Starter.md"
    assert post(page, "/ui/api/ask", {"question": QUESTION}).status_code == 403, "not remembered"
    extractive = events(post(page, "/ui/api/ask", {"question": QUESTION, "extractive": True}))
    assert extractive[-1][0] == "done" and len(page.model.chats()) == 1
    assert final["answer_html"] == "<p>Feed it rye flour daily [S1] and see [S9].</p>\n"
    assert "<script" not in extractive[-1][1]["answer_html"]


def test_an_ask_answer_is_rendered_as_markdown_with_its_links_escaped(page: Page) -> None:
    page.model.reply = (
        "**Feed** it [[Starter|the starter]] daily [S1].\n\n> A quote <script>alert(5)</script>\n"
    )
    final = events(post(page, "/ui/api/ask", {"question": QUESTION, "consent": True}))[-1][1]
    html = final["answer_html"]
    assert "<strong>Feed</strong>" in html and "<blockquote>" in html and "[S1]" in html
    assert 'href="/note?path=Bread%2FStarter.md"' in html and ">the starter</a>" in html
    assert "<script>alert(5)" not in html and "&lt;script&gt;alert(5)&lt;/script&gt;" in html


# ---- Audit -----------------------------------------------------------------------------------


def test_the_audit_runs_then_the_dashboard_shows_its_charts_tables_and_map(page: Page) -> None:
    assert hooks(get(page, "/audit").text).find("button", id="run-audit")
    assert get(page, "/ui/api/audit/canvas").status_code == 400
    ran = post(page, "/ui/api/audit", {})
    assert ran.status_code == 200 and ran.json()["summary"]["notes"] == len(NOTES)
    found = hooks(get(page, "/audit").text)
    for hook in ("chart-folders", "chart-tags", "tag-tree", "components", "hubs", "broken-links",
                 "ambiguous-links", "canvas-download"):  # fmt: skip
        assert found.find(id=hook), hook
    assert not found.find(id="clusters")
    topics = post(page, "/ui/api/audit/clusters", {})
    assert topics.status_code == 200 and page.model.chats() == [], "clusters call no model"
    assert hooks(get(page, "/audit").text).find(id="clusters")
    canvas = get(page, "/ui/api/audit/canvas")
    assert canvas.status_code == 200 and {n["file"] for n in canvas.json()["nodes"] if "file" in n} >= {
        CACHING
    }


# ---- vaultlens ui ------------------------------------------------------------------------------


def test_ui_names_the_running_servers_page(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "vault", ASK_NOTES)
    with running_server(vault, tmp_path / "home", watch=False) as server:
        result = run_cli(["ui", "--no-open", "--vault", str(vault), "--set", "embedding.provider=fake"])
        assert result.exit_code == 0, result.output
        assert result.stdout.strip() == server.page_url
        assert "Starting" not in result.stderr, "a running server is reused"


def test_ui_starts_serve_in_the_background_when_none_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the bundled model, as a user runs it: the server outlives the command and serves the page."""
    vault = write_vault(tmp_path / "vault", ASK_NOTES)
    monkeypatch.setenv("VAULTLENS_HOME", str(tmp_path / "home"))
    result = run_cli(["ui", "--no-open", "--vault", str(vault)])
    assert result.exit_code == 0, result.output
    info = json.loads(next((tmp_path / "home").rglob("servers/*.json")).read_text(encoding="utf-8"))
    try:
        keyed = result.stdout.strip()
        url = f"http://127.0.0.1:{info['port']}/"
        assert keyed == f"{url}?key={info['page_key']}" and f"pid {info['pid']}" in result.stderr
        page = httpx.get(url, headers=page_key_cookie(keyed), timeout=30)
        assert page.status_code == 200 and 'id="q"' in page.text and 'content=""' not in page.text
        again = run_cli(["ui", "--no-open", "--json", "--vault", str(vault)])
        assert json.loads(again.stdout) == {
            "url": url,
            "page_url": keyed,
            "pid": info["pid"],
            "started": False,
        }
    finally:
        os.kill(info["pid"], signal.SIGTERM)  # the one process this test started
    assert exited(info["pid"], 30), "the server stops on SIGTERM"


def exited(pid: int, seconds: float) -> bool:
    """Whether our child ``pid`` ended within ``seconds`` (reaped here, so it is no zombie)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        except ChildProcessError:  # already reaped by subprocess's own clean-up
            return not process_alive(pid)
        time.sleep(0.1)
    return False


def test_beyond_loopback_the_page_needs_the_token_once_then_its_cookie(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "vault", ASK_NOTES)
    with running_server(vault, tmp_path / "home", watch=False, token="s3cret-token") as server:
        assert httpx.get(server.url + "/", timeout=30).status_code == 401
        assert httpx.get(server.url + "/?token=wrong", timeout=30).status_code == 401
        first = httpx.get(server.url + "/note?path=Bread%2FLoaf.md&token=s3cret-token", timeout=30)
        assert first.status_code == 303 and first.headers["location"] == "/note?path=Bread%2FLoaf.md"
        cookie = first.headers["set-cookie"]
        assert (
            cookie.startswith("vaultlens_token=s3cret-token;")
            and "HttpOnly" in cookie
            and "SameSite=Strict" in cookie
        )
        with httpx.Client(
            base_url=server.url, cookies={"vaultlens_token": "s3cret-token"}, timeout=30
        ) as browser:
            assert browser.get("/status").status_code == 200
            assert browser.get("/v1/search", params={"q": "rye"}).status_code == 200
        refused = httpx.post(server.url + "/ui/api/audit?token=s3cret-token", json={}, timeout=30)
        assert refused.status_code == 401, "the token in a URL opens a page (GET) only"


def test_the_event_stream_relays_the_watchers_progress_and_flushes(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "vault", ASK_NOTES)
    with running_server(vault, tmp_path / "home") as server:  # watching: its startup run reports progress
        seen: list[tuple[str, Any]] = []
        written = 0
        with httpx.stream("GET", server.url + "/ui/events", params={"seconds": 60}, timeout=90) as stream:
            kind = ""
            for line in stream.iter_lines():
                if line.startswith("event: "):
                    kind = line.removeprefix("event: ")
                elif line.startswith("data: "):
                    seen.append((kind, json.loads(line.removeprefix("data: "))))
                    if kind == "watcher" and len(seen) == 2:  # the state first; now a change to follow
                        (vault / "Travel" / "Boats.md").write_text("# Boats\n\nThe ferry leaves at ten.\n")
                        written = len(seen)
                    if kind == "flush" and seen[-1][1]["kind"] == "changes":
                        break
    assert seen[0][0] == "progress" and seen[1] == ("watcher", {"state": "watching", "reason": None})
    assert any(k == "progress" and d and d["phase"] for k, d in seen), "the startup run's phases"
    assert ("progress", {"phase": "Reading notes", "done": 1, "total": 1}) in seen[written:], "the flush's"
    assert seen[-1][1]["stats"]["files_changed"] == 1


def test_a_proposed_diff_names_control_characters_and_sends_none_raw(page: Page) -> None:
    """A note that holds an ESC sequence, a CR and a bidi override: the page's proposal shows each
    by name (``<ESC>``, ``<CR>``, ``<U+202E>``), and the diff table's script names any it is given."""
    from vaultlens.services.changing import writes

    before = (page.vault / "Meta.md").read_bytes()
    after = before + "Colours: \x1b[31mred\x1b[0m\r and \u202eright-to-left.\n".encode()
    planned = writes.plan_write(page.vault, "Meta.md", after, "a test edit", based_on=before)
    shown = post(page, "/ui/api/apply", {"op_id": planned.entry.op_id})
    assert shown.status_code == 409 and error_code(shown) == "write_unconfirmed"
    preview = shown.json()["error"]["proposal"]["preview"]
    assert "+Colours: <ESC>[31mred<ESC>[0m<CR><no LF>\n+ and <U+202E>right-to-left.\n" in preview
    assert not any(c in preview for c in "\x1b\r\u202e"), preview
    script = get(page, "/ui/static/common.js").text
    assert "function visible(text)" in script and "diffTable(raw, caption)" in script


# ---- Obsidian Markdown in the note view (issue 46 item 1) ------------------------------------

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "vault"
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
SYNTAX_NOTE = (
    "# Syntax\n\n"
    "A ==highlight== and #topic/sub tag, not `#code` and not page#anchor.\n\n"
    "- [ ] open task\n- [x] done task\n\n"
    "A claim[^1] worth a block id ^claim-1\n\n"
    "[[Кэширование|<script>alert(3)</script>]] and [md link](<tech/Кэширование.md#Лавина промахов>)\n\n"
    "> [!warning]- <img src=x onerror=alert(4)>\n> Folded body.\n\n"
    "![[Кэширование#Лавина промахов]]\n\n![[pic.png]]\n\n"
    "[^1]: The footnote text.\n"
)


@pytest.fixture
def example_page(tmp_path: Path) -> Iterator[str]:
    import shutil

    vault = tmp_path / "vault"
    shutil.copytree(EXAMPLES, vault)
    (vault / "Syntax.md").write_text(SYNTAX_NOTE, encoding="utf-8")
    (vault / "pic.png").write_bytes(PNG)
    (tmp_path / "secret.png").write_bytes(PNG)
    with running_server(vault, tmp_path / "home", watch=False) as server:
        yield server.url


def test_the_note_view_renders_obsidian_links_comments_and_callouts(example_page: str) -> None:
    home = httpx.get(example_page + "/note", params={"path": "Главная.md"}, timeout=60)
    assert home.status_code == 200
    assert "TODO" not in home.text and "разобрать inbox" not in home.text  # the %%comment%% is hidden
    found = hooks(home.text)
    [avalanche] = [
        e
        for e in found.find("a", class_="internal-link")
        if "#h-" in e["href"] and "Кэширование" in e["data-path"]
    ]
    assert (
        avalanche["href"].startswith("/note?path=tech%2F") and avalanche["data-path"] == "tech/Кэширование.md"
    )
    assert ">история про лавину промахов</a>" in home.text
    assert found.find("span", class_="unresolved")  # [[Заметки про Kubernetes]] leads nowhere
    assert "[[" not in home.text
    target = httpx.get(example_page + avalanche["href"].partition("#")[0], timeout=60)
    anchor_id = unquote(avalanche["href"].partition("#")[2])
    assert hooks(target.text).find("h2", id=anchor_id)  # the heading the link scrolls to
    caching = hooks(target.text)
    [callout] = caching.find("div", class_="callout", data_callout="note")
    assert callout["data-lines"] == "43-44" and caching.find("div", class_="callout-title")
    assert "[!note]" not in target.text and ">Правило</div>" in target.text


def test_obsidian_syntax_renders_escaped_and_images_follow_the_note_path_rules(example_page: str) -> None:
    reply = httpx.get(example_page + "/note", params={"path": "Syntax.md"}, timeout=60)
    text = reply.text
    found = hooks(text)
    assert "<mark>highlight</mark>" in text
    [topic] = found.find("a", class_="tag")
    assert topic["href"] == "/tag?name=topic%2Fsub" and "<code>#code</code>" in text
    assert len(found.find("input", type="checkbox", disabled="disabled")) == 2
    assert found.find("p", id="b-claim-1") and "^claim-1" not in text
    assert found.find("section", class_="footnotes") and "The footnote text." in text
    assert "<script>alert(3)" not in text and "&lt;script&gt;alert(3)&lt;/script&gt;</a>" in text
    assert "<img src=x" not in text and "&lt;img src=x onerror=alert(4)&gt;</summary>" in text
    assert found.find("details", class_="callout", data_callout="warning")
    [md_link] = [e for e in found.find("a", class_="internal-link") if e.get("href", "").count("#h-")]
    assert md_link["href"].startswith("/note?path=tech%2F")
    [embed] = found.find("div", class_="embed")
    assert embed["data-path"] == "tech/Кэширование.md" and "Лавина промахов" in text
    [image] = found.find("img", class_="embed-image")
    assert image["src"] == "/ui/file?path=pic.png"
    served = httpx.get(example_page + image["src"], timeout=60)
    assert (
        served.status_code == 200 and served.content == PNG and served.headers["content-type"] == "image/png"
    )
    for refused in ("Главная.md", "../secret.png", "/etc/passwd", ".obsidian/app.json"):
        reply = httpx.get(example_page + "/ui/file", params={"path": refused}, timeout=60)
        assert reply.status_code in (400, 404) and reply.content != PNG, refused


def test_the_note_picker_finds_notes_by_title_alias_and_path_in_any_case(example_page: str) -> None:
    def picked(text: str) -> list[str]:
        reply = httpx.get(example_page + "/ui/api/notes", params={"match": text}, timeout=60)
        assert reply.status_code == 200
        return [n["path"] for n in reply.json()["notes"]]

    assert picked("борщ")[0] == "кулинария/Борщ.md"
    assert picked("БОРЩ")[0] == "кулинария/Борщ.md"
    assert picked("Git cheatsheet")[0] == "tech/Git cheatsheet.md"  # the title, not the path
    assert picked("gtcht")[0] == "tech/Git cheatsheet.md"  # its letters in order
    assert picked("Caching")[0] == "tech/Кэширование.md"  # an alias
    assert picked("tech/databases")[0].startswith("tech/databases/")
    assert picked("qqqzzz") == []
    form = hooks(httpx.get(example_page + "/review", timeout=60).text)
    assert form.find("input", id="pick-a", data_picker="*") and form.find(
        "input", id="pick-b", data_picker="*"
    )
    assert hooks(httpx.get(example_page + "/note", timeout=60).text).find(
        "input", id="note-path", data_picker="*"
    )


# ---- the note tools in the page (issue 46 item 5) ---------------------------------------------

TOOL_NOTE = "Study/Caching.md"
TOOL_TEXT = (
    "# Caching\r\n\r\nA cache keep values for later, it expire after a TTL.\r\n\r\n## Next\r\n\r\nMore.\r\n"
)
FIXED = "A cache keeps values for later; they expire after a TTL."


def test_transform_proposes_a_diff_after_consent_and_apply_then_undo_change_exactly_that(
    tmp_path: Path,
) -> None:
    vault = write_vault(tmp_path / "vault", {TOOL_NOTE: TOOL_TEXT.encode(), "Other.md": "# Other\n"})
    original = (vault / TOOL_NOTE).read_bytes()
    with (
        ToolModel({"replacement": FIXED}) as model,
        running_server(
            vault, tmp_path / "home", watch=False, overrides=llm_settings(model, remote=True)
        ) as server,
    ):
        site = opened(server, vault, PageModel())
        body = {"path": TOOL_NOTE, "first": 3, "last": 3, "preset": "fix-grammar"}
        asked = post(site, "/ui/api/write/transform", body)
        assert asked.status_code == 403 and error_code(asked) == "consent_required", asked.text
        assert model.chats() == [] and asked.json()["error"]["proposal"]["destination"]
        proposed = post(site, "/ui/api/write/transform", {**body, "consent": True})
        assert proposed.status_code == 200, proposed.text
        plan = proposed.json()["plan"]
        assert "-A cache keep values" in plan["diff"] and f"+{FIXED}" in plan["diff"]
        assert (vault / TOOL_NOTE).read_bytes() == original and not consent_file().exists()

        shown = post(site, "/ui/api/apply", {"op_id": plan["op_id"]})
        diff = shown.json()["error"]["proposal"]
        assert shown.status_code == 409 and diff["preview"] == plan["diff"]
        applied = post(site, "/ui/api/apply", {"op_id": plan["op_id"], "token": diff["token"]})
        assert applied.status_code == 200, applied.text
        after = (vault / TOOL_NOTE).read_bytes()
        assert render_diff(TOOL_NOTE, original, after) == plan["diff"], "written exactly as shown"
        assert after == original.replace(
            b"A cache keep values for later, it expire after a TTL.", FIXED.encode()
        )
        [entry] = hooks(get(site, "/history").text).find(class_="entry", data_op=plan["op_id"])
        assert entry["data-state"] == "applied"

        undo = post(site, "/ui/api/undo", {"op_id": plan["op_id"]}).json()["op_id"]
        back = post(site, "/ui/api/apply", {"op_id": undo}).json()["error"]["proposal"]
        assert post(site, "/ui/api/apply", {"op_id": undo, "token": back["token"]}).status_code == 200
        assert (vault / TOOL_NOTE).read_bytes() == original, "undo restores every byte (CRLF)"
        outside = post(site, "/ui/api/write/transform", {**body, "path": "../x.md", "consent": True})
        assert outside.status_code == 400 and len(model.chats()) == 1


def confirm(site: Page, op_id: str) -> httpx.Response:
    """Apply a planned operation as the page does: its proposal first, then its token."""
    shown = post(site, "/ui/api/apply", {"op_id": op_id})
    assert shown.status_code == 409, shown.text
    return post(site, "/ui/api/apply", {"op_id": op_id, "token": shown.json()["error"]["proposal"]["token"]})


def test_split_applies_its_combined_diff_as_one_group_and_continue_appends_both_undone(
    tmp_path: Path,
) -> None:
    from test_write_split import NOTE as SPLIT_NOTE
    from test_write_split import PLAN as SPLIT_PLAN

    vault = write_vault(tmp_path / "vault", {"Study/Caching.md": SPLIT_NOTE, "Other.md": "# Other\n"})
    original = snapshot(vault)
    with (
        ToolModel(SPLIT_PLAN, {"text": "Warm caches answer faster."}) as model,
        running_server(vault, tmp_path / "home", watch=False, overrides=llm_settings(model)) as server,
    ):
        site = opened(server, vault, PageModel())
        split = post(site, "/ui/api/write/split", {"path": "Study/Caching.md", "mode": "index"})
        assert split.status_code == 200, split.text
        plan = split.json()["plan"]
        assert "Study/Cache TTL.md" in plan["diff"] and "Study/Cache invalidation.md" in plan["diff"]
        assert snapshot(vault) == original, "planning writes nothing"
        assert confirm(site, plan["op_id"]).status_code == 200
        assert (vault / "Study/Cache TTL.md").exists() and (vault / "Study/Cache invalidation.md").exists()
        undo = post(site, "/ui/api/undo", {"op_id": plan["op_id"]})
        assert undo.status_code == 200 and confirm(site, undo.json()["op_id"]).status_code == 200
        assert snapshot(vault) == original, "the group's undo puts every byte back"

        more = post(site, "/ui/api/write/continue", {"path": "Other.md"})
        assert more.status_code == 200, more.text
        assert confirm(site, more.json()["plan"]["op_id"]).status_code == 200
        assert (vault / "Other.md").read_text().endswith("Warm caches answer faster.\n")


def test_the_note_view_lists_backlinks_and_outgoing_links_beside_related_notes(example_page: str) -> None:
    reply = httpx.get(example_page + "/note/related", params={"path": "tech/Кэширование.md"}, timeout=60)
    assert reply.status_code == 200
    found = hooks(reply.text)
    backlinks = [e["data-path"] for e in found.find("li") if e.get("data-path")]
    assert "Главная.md" in backlinks and "Syntax.md" in backlinks
    assert "tech/databases/Транзакции и изоляция.md" in backlinks  # outgoing: the callout's link
    home = hooks(httpx.get(example_page + "/note/related", params={"path": "Главная.md"}, timeout=60).text)
    assert home.find("li", class_="unresolved")  # [[Заметки про Kubernetes]]
    outside = httpx.get(example_page + "/note/related", params={"path": "../x.md"}, timeout=60)
    assert outside.status_code == 400


def test_the_pages_own_routes_answer_errors_as_html_pages_and_the_api_as_json(page: Page) -> None:
    browser = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}
    for url, params, status in [("/history", {"page": "abc"}, 400), ("/no-such-page", {}, 404)]:
        reply = httpx.get(page.url + url, params=params, headers=browser, timeout=60)
        assert reply.status_code == status and reply.headers["content-type"].startswith("text/html"), url
        found = hooks(reply.text)
        assert found.find("p", class_="error") and found.find("html", lang="en"), url
        assert "Content-Security-Policy" in reply.headers
    for url in ("/ui/api/history", "/v1/notes"):
        reply = httpx.get(page.url + url, params={"page": "abc", "limit": "x"}, headers=browser, timeout=60)
        assert reply.status_code == 400 and reply.headers["content-type"].startswith("application/json"), url
    assert get(page, "/no-such-page").headers["content-type"].startswith("application/json"), "a program's"
