"""PDFs and canvases in the index (issue 48 items 1-2): real files on disk, a real SQLite index, the bundled
model; PDFs are made by tests/pdf_support.py and read by PDFium in its bounded child process."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import ClientSession

import vaultlens as services
from pdf_support import pdf_bytes
from server_support import payload, run_async, running_server, with_http_session
from vaultlens.chunking import attachments
from vaultlens.chunking.attachments import Unreadable, attachment_chunks, pdf_pages
from vaultlens.chunking.chunker import MarkdownChunker
from vaultlens.errors import ConfigError, VaultError
from vaultlens.index.watcher import Coalescer
from vaultlens.services.app import App
from vaultlens.services.finding.notes import resolve_untrusted
from vaultlens.vault.scan import VaultRules
from vaultlens.web.layout import note_href
from vl_support import run_cli, write_vault

RARE = "The quokka polyglot zephyr hibernates under basalt."
PAPER = pdf_bytes([["Introduction to caching.", "Static files live on a CDN."], [RARE]])
CANVAS = {
    "nodes": [
        {
            "id": "6f0ad84f44ce9c17",
            "type": "text",
            "text": "The marmoset migration plan",
            "x": 0,
            "y": 0,
            "width": 250,
            "height": 60,
        },  # fmt: skip
        {"id": "a1", "type": "file", "file": "note.md", "x": 300, "y": 0, "width": 250, "height": 60},
    ],
    "edges": [],
}


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return write_vault(
        tmp_path / "vault",
        {
            "note.md": "# Caching\n\nStatic files are cached by the CDN for a day.\n",
            "papers/paper.pdf": PAPER,
            "board.canvas": json.dumps(CANVAS),
        },
    )


def _index(vault: Path, **overrides: str) -> dict:
    app = App.open(vault, overrides or None)
    try:
        return services.index(app).as_dict()
    finally:
        app.close()


def _search(vault: Path, query: str) -> list[dict]:
    app = App.open(vault)
    try:
        return [h.as_dict() for h in services.search(app, query)]
    finally:
        app.close()


def _status(vault: Path) -> dict:
    app = App.open(vault)
    try:
        return services.status(app).as_dict()
    finally:
        app.close()


@pytest.fixture
def extractions(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of PDFs read by PDFium so far (the real extraction runs, counted)."""
    calls: list[int] = []
    real = attachments.pdf_pages

    def counted(data: bytes, *args: object, **kw: object) -> list[str]:
        calls.append(len(data))
        return real(data, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(attachments, "pdf_pages", counted)
    return calls


def test_search_finds_the_rare_phrase_on_page_two_of_the_pdf(vault: Path) -> None:
    """The bar: `vaultlens search --json` for a phrase on page 2 gives the PDF first, page 2 on its section."""
    assert run_cli(["index", "--vault", str(vault)]).exit_code == 0
    found = run_cli(["search", "--vault", str(vault), "--json", "quokka polyglot zephyr"])
    assert found.exit_code == 0, found.output
    hits = json.loads(found.stdout)
    assert hits[0]["path"] == "papers/paper.pdf"
    assert hits[0]["sections"][0]["page"] == 2
    assert "quokka" in hits[0]["sections"][0]["snippet"]
    note = next(h for h in hits if h["path"] == "note.md")
    assert all(s["page"] is None for s in note["sections"])
    shown = run_cli(["search", "--vault", str(vault), "quokka polyglot zephyr"]).stdout
    assert "page 2" in shown


def test_a_canvas_text_card_is_a_section_with_its_id(vault: Path) -> None:
    _index(vault)
    hit = _search(vault, "marmoset migration")[0]
    assert hit["path"] == "board.canvas"
    assert hit["sections"][0]["card"] == "6f0ad84f44ce9c17" and hit["sections"][0]["page"] is None


def test_unreadable_pdfs_and_canvases_are_listed_with_reasons_and_never_stop_the_run(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(attachments, "PDF_MEMORY_MB", 300)  # the bomb below needs 400 MB once read
    write_vault(
        vault,
        {
            "scan.pdf": pdf_bytes([[], []]),  # pages without a text layer
            "locked.pdf": pdf_bytes([["secret"]], encrypted=True),
            "cut.pdf": PAPER[: len(PAPER) // 3],
            "bomb.pdf": pdf_bytes([["boom"]], padding=400_000_000),
            "big.pdf": PAPER + b"%" + b"x" * 1_000_000 + b"\n",  # a PDF comment makes it 1 MB
            "broken.canvas": "{not json",
        },
    )
    app = App.open(vault, {"index.max_file_mb": "0.9"})
    try:
        run = services.index(app).as_dict()
        problems = {p["path"]: p["reason"] for p in services.status(app).as_dict()["problems"]}
    finally:
        app.close()
    assert run["files_failed"] == 0
    assert "no text layer" in problems["scan.pdf"]
    assert "encrypted" in problems["locked.pdf"]
    assert "malformed" in problems["cut.pdf"]
    assert "300 MB" in problems["bomb.pdf"]
    assert "too large" in problems["big.pdf"]
    assert "not valid JSON" in problems["broken.canvas"]
    assert _search(vault, "quokka polyglot zephyr")[0]["path"] == "papers/paper.pdf"  # the rest is indexed


def test_extraction_is_bounded_in_time() -> None:
    with pytest.raises(Unreadable, match="longer than"):
        pdf_pages(PAPER, timeout_s=0.001)


def test_an_unchanged_pdf_is_not_read_again_a_changed_one_is_and_a_deleted_one_leaves_search(
    vault: Path, extractions: list[int]
) -> None:
    _index(vault)
    assert len(extractions) == 1
    _index(vault)
    os.utime(vault / "papers/paper.pdf")  # a new stamp, the same bytes
    _index(vault)
    assert len(extractions) == 1
    (vault / "papers/paper.pdf").write_bytes(pdf_bytes([["Nothing rare here."], ["Still nothing."], [RARE]]))
    _index(vault)
    assert len(extractions) == 2
    hit = _search(vault, "quokka polyglot zephyr")[0]
    assert (hit["path"], hit["sections"][0]["page"]) == ("papers/paper.pdf", 3)
    (vault / "papers/paper.pdf").unlink()
    _index(vault)
    assert all(h["path"] != "papers/paper.pdf" for h in _search(vault, "quokka polyglot zephyr"))


def test_attachments_off_indexes_markdown_only(vault: Path, extractions: list[int]) -> None:
    write_vault(vault, {"bad.pdf": b"%PDF-1.4 junk"})
    _index(vault, **{"index.attachments": "[]"})
    paths = {h["path"] for h in _search(vault, "quokka polyglot zephyr marmoset caching")}
    assert paths == {"note.md"} and extractions == []
    assert _status(vault)["problems"] == []
    _index(vault)  # switched on: the PDF and the canvas come in
    assert {"papers/paper.pdf", "board.canvas"} <= {h["path"] for h in _search(vault, "quokka marmoset")}


def test_similar_notes_point_at_a_pdfs_page_and_a_canvas_card(vault: Path) -> None:
    write_vault(vault, {"quokka.md": "# Quokkas\n\nA quokka polyglot zephyr hibernates under the basalt.\n"})
    _index(vault)
    app = App.open(vault)
    try:
        found = services.similar(app, "quokka.md").as_dict()
    finally:
        app.close()
    paper = next(r for r in found["results"] if r["path"] == "papers/paper.pdf")
    assert paper["matches"][0]["other"]["page"] == 2 and paper["matches"][0]["source"]["page"] is None


def test_ask_sources_carry_the_page(vault: Path) -> None:
    _index(vault)
    app = App.open(vault)
    try:
        answer = services.ask(app, "Where does the quokka polyglot zephyr hibernate?", extractive=True)
    finally:
        app.close()
    source = next(s for s in answer.as_dict()["sources"] if s["path"] == "papers/paper.pdf")
    assert source["page"] == 2


def test_the_watcher_takes_pdf_and_canvas_events(vault: Path) -> None:
    from watchdog.events import FileCreatedEvent

    coalescer = Coalescer(vault)
    for name in ("papers/new.pdf", "new.canvas", "picture.png"):
        coalescer.add(FileCreatedEvent(str(vault / name)))
    assert coalescer.drain().upserts == {"papers/new.pdf", "new.canvas"}


def test_a_pdf_is_never_a_note_a_tool_may_read_or_write(vault: Path) -> None:
    with pytest.raises(VaultError, match="it is a PDF, not a Markdown note"):
        resolve_untrusted(VaultRules(vault, 10_000_000), "papers/paper.pdf")
    for path in ("papers/paper.pdf", "board.canvas"):  # both are ASCII: they would parse as Markdown
        done = run_cli(
            ["write", "transform", "--vault", str(vault), path, "--lines", "1-2", "--preset", "fix-grammar"]
        )
        assert done.exit_code != 0 and "not a Markdown note" in done.output, done.output
    assert (vault / "papers/paper.pdf").read_bytes() == PAPER


def test_the_http_api_carries_the_page_and_the_page_opens_the_pdf_in_obsidian_there(
    vault: Path, tmp_path: Path
) -> None:
    """Over a real server: /v1/search's JSON has page 2 on the PDF's section, and the web page's link for
    it (the note view's URL with page=2, as search.js and ask.js build it) sends the browser to
    Obsidian at that page; a canvas's link opens the canvas."""
    with running_server(vault, tmp_path / "home", watch=False, overrides={}) as server:
        hits = httpx.get(server.url + "/v1/search", params={"q": "quokka polyglot zephyr"}, timeout=60).json()
        assert (hits[0]["path"], hits[0]["sections"][0]["page"]) == ("papers/paper.pdf", 2)

        async def mcp_search(session: ClientSession) -> dict[str, Any]:
            return payload(await session.call_tool("search_notes", {"query": "quokka polyglot zephyr"}))

        found = run_async(lambda: with_http_session(server.url, mcp_search))["data"]["results"][0]
        assert (found["path"], found["sections"][0]["page"]) == ("papers/paper.pdf", 2)
        opened = httpx.get(server.url + note_href("papers/paper.pdf", 1, 1, 2), timeout=30)
        canvas = httpx.get(server.url + note_href("board.canvas", 1, 1), timeout=30)
    assert opened.status_code == 303
    assert opened.headers["location"] == "obsidian://open?vault=vault&file=papers%2Fpaper.pdf%23page%3D2"
    assert canvas.headers["location"] == "obsidian://open?vault=vault&file=board.canvas"


def test_index_attachments_takes_a_list_of_the_kinds_it_knows(vault: Path) -> None:
    def kinds(overrides: dict[str, str] | None = None) -> tuple[str, ...]:
        app = App.open(vault, overrides)
        try:
            return app.settings.index.attachments
        finally:
            app.close()

    assert kinds() == ("pdf", "canvas")
    assert kinds({"index.attachments": "[]"}) == () and kinds({"index.attachments": "pdf"}) == ("pdf",)
    (vault / ".vaultlens.toml").write_text('[index]\nattachments = ["canvas"]\n', encoding="utf-8")
    assert kinds() == ("canvas",)
    with pytest.raises(
        ConfigError, match=r"index.attachments must be a list of pdf, canvas.*got \['pdf', 'docx'\]"
    ):
        kinds({"index.attachments": "pdf,docx"})


def test_the_search_page_shows_a_pdf_section_with_its_page_and_links_it_to_obsidian_there(
    vault: Path, tmp_path: Path
) -> None:
    """In headless Chromium: the search page lists the PDF first, its section names page 2, and the
    section's link is the one the server sends on to Obsidian at page 2."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    from test_web_browser import CHROMIUM, CHROMIUM_FLAGS, WAIT_MS

    if CHROMIUM is None:
        pytest.skip("no Chromium found (/usr/bin/chromium or on PATH)")
    with (
        running_server(vault, tmp_path / "home", watch=False, overrides={}) as server,
        sync_api.sync_playwright() as pw,
    ):
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page()
            page.set_default_timeout(WAIT_MS)
            page.goto(server.url + "/?q=" + "quokka polyglot zephyr".replace(" ", "+"))
            first = page.locator("#results .result").first
            sync_api.expect(first).to_have_attribute("data-path", "papers/paper.pdf")
            section = first.locator(".section").first
            sync_api.expect(section.locator(".lines")).to_contain_text("page 2")
            href = section.locator("a.heading-path").get_attribute("href") or ""
        finally:
            browser.close()
        opened = httpx.get(server.url + href, timeout=30)
    assert opened.status_code == 303 and opened.headers["location"].endswith(
        "file=papers%2Fpaper.pdf%23page%3D2"
    )


def test_a_page_is_chunked_along_its_paragraphs_and_an_edit_on_one_page_keeps_the_others_ids() -> None:
    """Paragraphs (lines, where PDFium gives no blank line) packed up to chunk_target, none over
    chunk_max, each chunk with its page; a chunk's id depends on its page, not on the pages before."""
    chunker = MarkdownChunker(200, 300, 40)
    lines = [f"Line {i} of the second page says something about topic {i}." for i in range(30)]
    before = attachment_chunks("pdf", "a.pdf", pdf_bytes([["Page one."], lines]), chunker)
    after = attachment_chunks("pdf", "a.pdf", pdf_bytes([["Page one, edited."], lines]), chunker)
    second = [c for c in before if c.page == 2]
    assert len(second) > 2 and all(len(c.text) <= 300 for c in second)
    assert "\n".join(c.text for c in second) == "\n".join(lines)  # every line once, in order
    assert [c.start_line for c in second] == sorted(c.start_line for c in second)
    assert [(c.id, c.content_hash) for c in after if c.page == 2] == [(c.id, c.content_hash) for c in second]
    assert [c.content_hash for c in after if c.page == 1] != [c.content_hash for c in before if c.page == 1]


def test_related_notes_of_a_pdf_over_http_and_mcp_as_the_cli_gives_them(vault: Path, tmp_path: Path) -> None:
    """`vaultlens similar papers/paper.pdf` works; /v1/similar and MCP find_related_notes refused the same
    path ("it is a PDF, not a Markdown note"), so an agent or the plugin got nothing for an open PDF.
    Reading the PDF as a note stays refused."""
    write_vault(vault, {"quokka.md": "# Quokkas\n\nA quokka polyglot zephyr hibernates under the basalt.\n"})
    with running_server(vault, tmp_path / "home", watch=False, overrides={}) as server:
        got = httpx.get(server.url + "/v1/similar", params={"path": "papers/paper.pdf"}, timeout=60)
        assert got.status_code == 200, got.text
        assert "quokka.md" in [r["path"] for r in got.json()["results"]]

        async def related(session: ClientSession) -> dict[str, Any]:
            return payload(await session.call_tool("find_related_notes", {"path": "papers/paper.pdf"}))

        found = run_async(lambda: with_http_session(server.url, related))["data"]
        assert "quokka.md" in [r["path"] for r in found["results"]]
        read = httpx.get(server.url + "/v1/notes", params={"path": "papers/paper.pdf"}, timeout=30)
        assert read.status_code == 400 and "not a Markdown note" in read.json()["error"]["message"]


def test_status_and_the_index_run_count_what_the_index_holds_by_kind(vault: Path) -> None:
    """Totals say notes, PDFs and canvases apart (a user with PDFs does not see them counted as notes,
    nor left out), in the index run's line, `status` and their JSON; the kept counts agree with the rows."""
    write_vault(vault, {"other.md": "# Other\n\nA second note.\n", "papers/second.pdf": PAPER})
    ran = run_cli(["index", "--vault", str(vault)])
    assert ran.exit_code == 0, ran.output
    assert "Scanned 2 notes, 2 PDFs, 1 canvas: 5 changed" in " ".join(ran.stdout.split())
    shown = run_cli(["status", "--vault", str(vault)])
    assert shown.exit_code == 0, shown.output
    assert "Totals 2 notes, 2 PDFs, 1 canvas," in " ".join(shown.stdout.split())
    got = json.loads(run_cli(["status", "--vault", str(vault), "--json"]).stdout)
    assert (got["notes"], got["pdfs"], got["canvases"], got["files"]["indexed"]) == (2, 2, 1, 5)
    run = got["last_run"]
    assert (run["files_scanned"], run["notes_scanned"], run["pdfs_scanned"], run["canvases_scanned"]) == (
        5,
        2,
        2,
        1,
    )
    assert json.loads(run_cli(["doctor", "--vault", str(vault), "--json"]).stdout)["healthy"]
