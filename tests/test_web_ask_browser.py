"""Ask as a conversation in a real browser (issue 46 item 3): headless Chromium (Debian's, driven by
Playwright) against a real `vaultlens serve` indexed with the bundled model, the scripted model server
named by 0.0.0.0 so it counts as remote and every send needs consent.

A follow-up is rewritten and answered under the first exchange; Stop ends the stream and the model
server sees its connection closed; Enter while an answer streams starts nothing; the consent step
lists the passages to be sent; nothing is asked when nothing would be sent; "allow for this tab"
skips the next consent and a reload forgets it; axe-core finds no serious violation.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from loopback_proxy import REMOTE_HOST, remote_url
from scripted_chat_server import ChatStep, ScriptedChatServer
from test_web_browser import (
    AXE,
    AXE_RUN,
    CHROMIUM,
    NOTES,
    QUESTION,
    RYE,
    STARTER,
    WAIT_MS,
    Browser,
    Page,
    expect,
    opened_with_key,
    query_of,
    serving,
)
from test_web_browser import browser as browser  # the fixture: one Chromium
from test_web_browser import page as page  # the fixture: a fresh tab
from vaultlens.services.asking.chat import REWRITE_PROMPT
from vl_support import cli_env, write_vault

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium (see test_web_browser)")

ANSWER = "Feed it rye flour twice a day [S1]."
FOLLOW_UP = "and where does it sleep?"
REWRITTEN = "Where does the rye sourdough starter sleep?"
NOTHING = "quantum chromodynamics gluon"
LONG = " ".join(f"word{n}" for n in range(300)) + " [S1]."


class AskModel(ScriptedChatServer):
    """A rewrite prompt gets {"question": REWRITTEN}; any other chat the scripted answer."""

    def __init__(self) -> None:
        super().__init__(ANSWER)

    def _respond(self, handler: BaseHTTPRequestHandler, body: Any, step: Any) -> None:
        if isinstance(body, dict) and body.get("messages", [{}])[0].get("content") == REWRITE_PROMPT:
            step = ChatStep(reply=json.dumps({"question": REWRITTEN}))
        super()._respond(handler, body, step)

    def rewrites(self) -> list[Any]:
        return [c for c in self.chats() if c["messages"][0]["content"] == REWRITE_PROMPT]


@dataclass
class AskSite:
    url: str
    model: AskModel
    page_url: str  # with the page's key


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AskSite]:
    root = tmp_path_factory.mktemp("ask")
    vault = write_vault(root / "vault", {p: NOTES[p] for p in (STARTER, RYE)})
    env = cli_env(root / "home")
    with AskModel() as model:
        endpoint = remote_url(model.url) + "/v1"  # a made-up host through the loopback proxy: remote
        sets = {"embedding.provider": "local", "llm.provider": "openai-compatible", "llm.model": "ask-test",
                "llm.endpoint": endpoint, "llm.max_retries": "0", "llm.read_timeout_s": "10"}  # fmt: skip
        args = [a for k, v in sets.items() for a in ("--set", f"{k}={v}")]
        vaultlens = [sys.executable, "-m", "vaultlens"]
        done = subprocess.run(
            [*vaultlens, "index", "--vault", str(vault), *args], env=env, capture_output=True
        )
        assert done.returncode == 0, done.stderr.decode()
        serve = [*vaultlens, "serve", "--vault", str(vault), "--no-watch", *args]
        with serving(serve, env, root / "serve.log") as (url, page_url):
            yield AskSite(url, model, page_url)


def ask(page: Page, text: str) -> None:
    page.locator("#question").fill(text)
    page.locator("#question").press("Enter")


def consent_then_send(page: Page, allow_tab: bool = False) -> None:
    expect(page.locator("#consent")).to_be_visible()
    if allow_tab:
        page.locator("#allow-tab").check()
    page.locator("#consent button#send").click()


def test_the_consent_step_lists_the_passages_to_be_sent(site: AskSite, page: Page) -> None:
    before = len(site.model.chats())
    page.goto(site.url + "/ask")
    ask(page, QUESTION)
    box = page.locator("#consent")
    expect(box).to_be_visible()
    assert len(site.model.chats()) == before, "nothing is sent before the yes"
    expect(box.locator(".destination")).to_contain_text(REMOTE_HOST)
    rows = box.locator("#passages tbody tr")
    expect(rows.first).to_have_attribute("data-path", STARTER)
    chars = [int(c.replace(",", "")) for c in rows.locator("td.chars").all_inner_texts()]
    expect(box.locator("#passages caption")).to_contain_text(f"{sum(chars):,} characters")
    link = query_of(rows.first.locator("a").get_attribute("href") or "")
    assert link["path"] == STARTER and link["lines"], link
    expect(box.locator("#consent-question")).to_have_text(QUESTION)
    listed = rows.evaluate_all("rs => rs.map(r => [r.dataset.source, r.dataset.path])")
    page.locator("#consent button#send").click()
    expect(page.locator("#answer a.citation").first).to_be_visible()
    [sent] = site.model.chats()[before:]
    prompt = sent["messages"][1]["content"]
    assert prompt.count("<source id=") == len(listed)
    assert all(f'id="{n}" path="{path}"' in prompt for n, path in listed), (listed, prompt)


def test_a_follow_up_is_rewritten_and_answered_below_the_first_exchange(site: AskSite, page: Page) -> None:
    rewrites = len(site.model.rewrites())
    page.goto(site.url + "/ask")
    ask(page, QUESTION)
    consent_then_send(page, allow_tab=True)
    expect(page.locator("#answer a.citation").first).to_be_visible()
    ask(page, FOLLOW_UP)
    expect(page.locator("#rewritten")).to_have_text(f"Searched as: {REWRITTEN}")
    expect(page.locator("#answer a.citation").first).to_be_visible()
    expect(page.locator("#asked")).to_have_text(FOLLOW_UP)
    earlier = page.locator("#past article.turn")
    expect(earlier).to_have_count(1)
    expect(earlier.locator(".asked")).to_have_text(QUESTION)
    expect(earlier.locator("a.citation").first).to_be_visible()
    [rewrite] = site.model.rewrites()[rewrites:]
    conversation = rewrite["messages"][1]["content"]
    assert f"Q: {QUESTION}\nA: {ANSWER}" in conversation and FOLLOW_UP in conversation
    assert site.model.chats()[-1]["messages"][1]["content"].endswith(REWRITTEN)


def test_stop_ends_the_stream_and_the_model_request_is_cut(site: AskSite, page: Page) -> None:
    site.model.closed_by_client.clear()
    site.model.reply = LONG
    try:
        page.goto(site.url + "/ask")
        ask(page, QUESTION)
        site.model.script.append(ChatStep(piece_delay=0.2))
        consent_then_send(page)
        expect(page.locator("#answer")).to_contain_text("word3")
        expect(page.locator("button#ask")).to_be_disabled()
        page.locator("button#stop").click()
        expect(page.locator("#answer .stopped")).to_be_visible()
        expect(page.locator("button#ask")).to_be_enabled()
        assert site.model.closed_by_client.wait(15), "the model server did not see the request cancelled"
        assert "word299" not in page.inner_text("#answer")
        expect(page.locator("#offline")).to_have_count(0)  # a Stop is no outage
    finally:
        site.model.reply = ANSWER


def test_enter_while_an_answer_streams_starts_no_second_request(site: AskSite, page: Page) -> None:
    asks: list[str] = []
    page.on("request", lambda r: asks.append(r.url) if r.url.endswith("/ui/api/ask") else None)
    site.model.reply = " ".join(f"piece{n}" for n in range(20)) + " [S1]."
    try:
        page.goto(site.url + "/ask")
        ask(page, QUESTION)
        site.model.script.append(ChatStep(piece_delay=0.15))
        consent_then_send(page)
        expect(page.locator("#answer")).to_contain_text("piece2")
        chats = len(site.model.chats())
        ask(page, "a second question typed while the first streams")
        expect(page.locator("#answer a.citation").first).to_be_visible()  # the first answer ends
        assert len(asks) == 2, asks  # the question, then the same after the yes; Enter sent nothing
        assert len(site.model.chats()) == chats
        expect(page.locator("#asked")).to_have_text(QUESTION)
    finally:
        site.model.reply = ANSWER


def test_no_consent_is_asked_when_nothing_would_be_sent(site: AskSite, page: Page) -> None:
    before = len(site.model.chats())
    page.goto(site.url + "/ask")
    ask(page, NOTHING)
    expect(page.locator("#not-in-vault")).to_be_visible()
    expect(page.locator("#consent")).to_be_hidden()
    assert len(site.model.chats()) == before


def test_allow_for_this_tab_skips_the_next_consent_and_a_reload_asks_again(site: AskSite, page: Page) -> None:
    page.goto(site.url + "/ask")
    ask(page, QUESTION)
    consent_then_send(page, allow_tab=True)
    expect(page.locator("#answer a.citation").first).to_be_visible()
    expect(page.locator("#tab-consent")).to_be_visible()
    ask(page, FOLLOW_UP)  # a rewrite and an answer: two model calls, neither asked
    expect(page.locator("#rewritten")).to_be_visible()
    expect(page.locator("#answer a.citation").first).to_be_visible()
    expect(page.locator("#consent")).to_be_hidden()
    assert page.evaluate("() => Object.keys(localStorage).length + Object.keys(sessionStorage).length") == 0
    assert "consent" not in page.context.cookies().__repr__().lower()
    page.reload()
    ask(page, QUESTION)
    expect(page.locator("#consent")).to_be_visible()


def test_the_ask_page_with_a_conversation_and_a_consent_step_has_no_serious_violation(
    site: AskSite, browser: Browser, tmp_path: Path
) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    context.set_default_timeout(WAIT_MS)
    try:
        page = context.new_page()
        opened_with_key(page, site.page_url)
        page.goto(site.url + "/ask")
        ask(page, QUESTION)
        consent_then_send(page)
        expect(page.locator("#answer a.citation").first).to_be_visible()
        ask(page, FOLLOW_UP)
        expect(page.locator("#consent")).to_be_visible()  # the rewrite's step: the conversation
        page.add_script_tag(path=str(AXE))
        violations = page.evaluate(AXE_RUN)
        serious = [v for v in violations if v["impact"] in ("serious", "critical")]
        assert not serious, json.dumps(serious, indent=1)
        page.screenshot(path=str(tmp_path / "ask-conversation.png"), full_page=True)
    finally:
        context.close()
