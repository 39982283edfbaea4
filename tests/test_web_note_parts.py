"""A huge note's view in parts (issue 46 item 7), over HTTP against the real app: the first response
holds the asked-for lines and not the whole note, the other parts come from ``/ui/api/note/part`` at
the read's content hash (refused once the note changed), and the parts together are the whole
note's rendering: every block, with the same lines and ids, exactly once.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from server_support import running_server
from test_web_routes import hooks
from vaultlens.web.note_parts import SPLIT_OVER
from vl_support import write_vault

HUGE = "Huge.md"
SMALL = "Small.md"  # links to a heading of HUGE's last part


def huge_note() -> str:
    """Past the split size, with what a cut must not break: front matter with a blank line, fenced
    code holding blank lines and column-0 text and headings, a comment over blank lines, lists,
    quotes, tables, block ids and headings, a footnote and a link reference used at the top and defined at the end, a lone CR."""
    out = [
        "---\ntags: [big]\n\nnote: a blank line above\n---\n# Huge\n\nSee the far footnote.[^far] Read [the docs][Far Docs].\n\n"
    ]
    i = 0
    while sum(map(len, out)) < SPLIT_OVER * 3:
        out.append(
            f"## Section {i}\n\nParagraph {i} about sourdough and rye. ^block{i}\n\n"
            f"```python\ndef f{i}():\n\n    return {i}\n\nNot a paragraph {i}\n\n# not a heading {i}\n```\n\n"
            f"%%a comment {i}\n\nover blank lines%%\n\n"
            f"- item {i}\n\n  continued {i}\n- next {i}\n\n> quote {i}\n>\n> more {i}\n\n"
            f"| a | b |\n|---|---|\n| {i} | {i * 2} |\n\n"
            + ("Some filler text for the note. " * 40 + "\n\n")
            * 3
        )
        i += 1
    out[1] += "A lone CR\rends a line here, as markdown-it counts lines.\n\n"
    return (
        "".join(out)
        + "[far  docs]: https://example.org/docs\n\n[^far]: Defined at the very end,\nwith a lazy line.\n\n    And an indented one.\n"
    )


@dataclass
class Site:
    url: str
    vault: Path
    text: str
    page_url: str  # with the page's key

    def get(self, url: str, /, **params: Any) -> httpx.Response:
        return httpx.get(self.url + url, params=params, timeout=60)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    root = tmp_path_factory.mktemp("parts")
    text = huge_note()
    late = text.count("## Section ") - 2
    small = f"# Small\n\nSee [[Huge#Section {late}|the late section]].\n"
    vault = write_vault(root / "vault", {HUGE: text, SMALL: small})
    with running_server(vault, root / "home", watch=False) as server:
        yield Site(server.url, vault, text, server.page_url)


def line_of(text: str, needle: str) -> int:
    before = text[: text.index(needle)]
    return before.count("\n") + before.count("\r") + 1  # a lone CR ends a line too


def blocks(html: str) -> list[tuple[str, str]]:
    """Every numbered block's lines and id, in page order."""
    return [(e["data-lines"], e.get("id", "")) for e in hooks(html).find(data_lines="*")]


def test_the_first_response_holds_the_asked_for_lines_and_not_the_whole_note(site: Site) -> None:
    at = line_of(site.text, "Paragraph 150 about")
    reply = site.get("/note", path=HUGE, lines=f"{at}-{at}")
    assert reply.status_code == 200
    found = hooks(reply.text)
    assert [e["data-lines"] for e in found.find(class_="target")] == [f"{at}-{at}"]
    assert "Paragraph 150 about" in reply.text and "Paragraph 0 about" in reply.text
    assert len(reply.content) < len(site.text.encode()) / 3, "the first response is not the whole note"
    [article] = found.find("article", id="note-body")
    pending = found.find("section", class_="pending")
    assert pending and len(found.find("section", class_="note-part")) == int(article["data-parts"])
    # without script every part is a link away, and so is the whole note
    last = pending[-1]["data-part"]
    shown = hooks(site.get("/note", path=HUGE, part=last).text).find("section", data_part=last)
    assert [s["class"] for s in shown] == ["note-part"]
    assert found.find("form", id="load-rest") and found.find("input", name="whole", value="1")


def test_the_parts_together_are_the_whole_note_every_block_once(site: Site) -> None:
    first = hooks(site.get("/note", path=HUGE).text)
    [article] = first.find("article", id="note-body")
    parts = [
        site.get("/ui/api/note/part", path=HUGE, hash=article["data-hash"], n=n).text
        for n in range(int(article["data-parts"]))
    ]
    ranges = [
        (int(s["data-first"]), int(s["data-last"]))
        for p in parts
        for s in hooks(p).find("section", class_="note-part")
    ]
    assert ranges[0][0] == 1 and ranges[-1][1] == site.text.count("\n") + site.text.count("\r")
    assert all(a[1] + 1 == b[0] for a, b in itertools.pairwise(ranges)), "parts meet, no line twice or lost"
    whole = site.get("/note", path=HUGE, whole=1).text
    assert "note-part" not in whole
    assert [b for p in parts for b in blocks(p)] == blocks(whole)
    assert "a comment" not in "".join(parts) and "over blank lines" not in "".join(parts)
    # the footnote is shown once, with the part that refers to it (the first), as in the whole view
    assert "".join(parts).count("Defined at the very end") == whole.count("Defined at the very end") == 1
    assert "Defined at the very end" in parts[0] and "And an indented one." in parts[0]
    assert hooks(parts[0]).find("a", href="#fn-p0-1") and "[^far]" not in "".join(parts)
    assert hooks(parts[0]).find("a", href="https://example.org/docs") and "[Far Docs]" not in parts[0]


def test_a_part_at_a_stale_hash_is_refused_and_an_anchor_finds_its_part(site: Site) -> None:
    found = hooks(site.get("/note", path=HUGE).text)
    [article] = found.find("article", id="note-body")
    old = article["data-hash"]
    late = site.text.count("## Section ") - 2  # in the last part
    holding = site.get("/ui/api/note/part", path=HUGE, hash=old, anchor=f"h-Section-{late}")
    assert holding.status_code == 200 and f'id="h-Section-{late}"' in holding.text
    assert hooks(holding.text).find("section", class_="note-part")[0]["data-part"] == str(
        int(article["data-parts"]) - 1
    )
    block = site.get("/ui/api/note/part", path=HUGE, hash=old, anchor=f"b-block{late}")
    assert block.text.count(f'id="b-block{late}"') == 1
    assert site.get("/ui/api/note/part", path=HUGE, hash=old, anchor="h-Nowhere").status_code == 204
    (site.vault / HUGE).write_text(site.text + "\nOne more line.\n", encoding="utf-8")
    try:
        stale = site.get("/ui/api/note/part", path=HUGE, hash=old, n=1)
        assert stale.status_code == 409
        error = stale.json()["error"]
        assert error["code"] == "note_changed" and "changed" in error["message"] and "Reload" in error["hint"]
    finally:
        (site.vault / HUGE).write_text(site.text, encoding="utf-8")
