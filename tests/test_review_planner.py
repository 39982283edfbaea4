"""The planner: an exact insertion between top-level blocks, a link Obsidian resolves to the intended
note, a copied paragraph that leaves its source alone, and refusals instead of guesses."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vaultlens
from vaultlens.chunking.chunker import MarkdownChunker
from vaultlens.chunking.source import NoteSource, RawNote, note_from_bytes
from vaultlens.errors import PlanRefused
from vaultlens.fsutil import sha256_hex
from vaultlens.services.changing import writes
from vaultlens.services.changing.review.catalog import Fragment, build_catalog
from vaultlens.services.changing.review.planner import INSERTABLE_AFTER, insertion, plan_add_link, plan_merge
from vaultlens.testing import HashingEmbeddingProvider
from vaultlens.vault.links import LinkResolver
from vaultlens.vault.model import block_phrase
from vl_support import snapshot, write_vault

CACHING = "Study/Caching/Cache lifetime.md"
SYSTEMS = "Study/Systems/Cache lifetime.md"


def cache_vault(
    root: Path, caching: bytes | str = "# Cache lifetime\n\nValues expire after a TTL.\n"
) -> Path:
    return write_vault(
        root,
        {
            CACHING: caching,
            SYSTEMS: "# Cache lifetime\n\nEntries live five minutes.\n\n| k | v |\n|---|---|\n| ttl | 300 |\n",
            "Other.md": "# Other\n",
        },
    )


def test_a_link_between_same_named_notes_is_path_qualified_and_resolves_to_the_target(tmp_path: Path) -> None:
    vault = cache_vault(tmp_path / "v")
    catalog = build_catalog(vault, CACHING, SYSTEMS, MarkdownChunker())
    edit = plan_add_link(vault, catalog, "A")
    assert edit.path == CACHING
    assert (
        edit.after
        == b"# Cache lifetime\n\nValues expire after a TTL.\n\nSee also: [[Systems/Cache lifetime]]\n"
    )
    resolver = LinkResolver([CACHING, SYSTEMS, "Other.md"])
    assert resolver.resolve("Systems/Cache lifetime", CACHING).path == SYSTEMS
    assert (
        resolver.resolve("Cache lifetime", CACHING).status == "ambiguous"
    )  # why the bare name is never used


def test_planned_link_applied_then_undone_in_a_vault_of_twenty_notes(tmp_path: Path) -> None:
    vault = cache_vault(tmp_path / "v")
    write_vault(vault, {f"n/{i:02d}.md": f"# {i}\n\ntext {i}\n" for i in range(17)})
    original = snapshot(vault)
    assert sum(1 for k in original if k.endswith(".md")) == 20
    app = vaultlens.App.open(vault, provider=HashingEmbeddingProvider())
    catalog = build_catalog(vault, CACHING, SYSTEMS, MarkdownChunker())
    edit = plan_add_link(vault, catalog, "B", after=catalog.side("B")[1].id)
    planned = writes.plan_write(app.vault, edit.path, edit.after, edit.summary)
    done = writes.apply(app.vault, planned.entry.op_id, sha256_hex(planned.diff))
    changed = {k for k, v in snapshot(vault).items() if original.get(k) != v}
    assert changed == {SYSTEMS}
    assert b"See also: [[Caching/Cache lifetime]]\n\n| k | v |" in (vault / SYSTEMS).read_bytes()
    undo = writes.plan_undo(app.vault, done.op_id)
    writes.apply(app.vault, undo.entry.op_id, sha256_hex(undo.diff))
    assert snapshot(vault) == original


def test_merge_copies_one_block_and_leaves_its_source_unchanged(tmp_path: Path) -> None:
    vault = cache_vault(tmp_path / "v", b"\xef\xbb\xbf# Cache lifetime\r\n\r\nValues expire after a TTL.\r\n")
    catalog = build_catalog(vault, CACHING, SYSTEMS, MarkdownChunker())
    source_before = (vault / SYSTEMS).read_bytes()
    edit = plan_merge(vault, catalog, catalog.side("B")[1].id)
    assert edit.path == CACHING
    assert (
        edit.after
        == b"\xef\xbb\xbf# Cache lifetime\r\n\r\nValues expire after a TTL.\r\n\r\nEntries live five minutes.\r\n"
    )
    assert (vault / SYSTEMS).read_bytes() == source_before


def test_after_a_table_or_code_the_planner_refuses(tmp_path: Path) -> None:
    vault = cache_vault(tmp_path / "v")
    catalog = build_catalog(vault, CACHING, SYSTEMS, MarkdownChunker())
    table = catalog.side("B")[2]
    assert table.kind == "table"
    with pytest.raises(PlanRefused, match="after a table block"):
        plan_add_link(vault, catalog, "B", after=table.id)
    with pytest.raises(PlanRefused, match=f"is in {SYSTEMS}, but the text goes into {CACHING}") as wrong:
        plan_add_link(vault, catalog, "A", after=table.id)
    assert catalog.nonce not in str(wrong.value), "a readable reason, not the catalog's id"


def test_a_note_edited_after_the_review_is_not_planned(tmp_path: Path) -> None:
    vault = cache_vault(tmp_path / "v")
    catalog = build_catalog(vault, CACHING, SYSTEMS, MarkdownChunker())
    (vault / CACHING).write_text("# Cache lifetime\n\nRewritten.\n")
    with pytest.raises(PlanRefused, match="changed after the review"):
        plan_add_link(vault, catalog, "A")


def test_a_note_with_classic_mac_line_endings_is_refused_not_guessed(tmp_path: Path) -> None:
    """CR alone: the link used to be appended with LF, joined to the paragraph above."""
    vault = cache_vault(tmp_path / "v", b"# Cache lifetime\r\rValues expire after a TTL.\r")
    catalog = build_catalog(vault, CACHING, SYSTEMS, MarkdownChunker())
    with pytest.raises(PlanRefused, match="CR alone"):
        plan_add_link(vault, catalog, "A")


@pytest.mark.parametrize(
    "written",
    [
        "See also: [[Systems/Cache lifetime]]",
        "Compare [[Systems/Cache lifetime|the systems view]].",
        "See [[Systems/Cache lifetime#Cache lifetime]] and [[Study/Systems/Cache lifetime.md#^x|x]].",
        "Path from the root: [[/Study/Systems/Cache lifetime]], another case: [[systems/CACHE LIFETIME]].",
        "Embedded: ![[Systems/Cache lifetime]]",
        "Markdown: [the systems note](../Systems/Cache%20lifetime.md).",
        "Markdown with angle brackets: [it](<Study/Systems/Cache lifetime.md#Cache lifetime>).",
        '---\nup: "[[Systems/Cache lifetime]]"\n---\nNo link in the body.',
    ],
)
def test_a_note_that_already_links_the_target_gets_no_second_link(tmp_path: Path, written: str) -> None:
    """Review -> apply three times used to leave three identical See also lines: any form Obsidian
    resolves to the same file counts as the link already being there."""
    vault = cache_vault(tmp_path / "v", f"{written}\n\n# Cache lifetime\n\nValues expire after a TTL.\n")
    catalog = build_catalog(vault, CACHING, SYSTEMS, MarkdownChunker())
    with pytest.raises(
        PlanRefused, match=f"already links to {SYSTEMS} \\(line [1-3]\\); nothing was planned"
    ):
        plan_add_link(vault, catalog, "A")


@pytest.mark.parametrize(
    "written",
    [
        "Ambiguous, so not a link to it: [[Cache lifetime]].",  # two notes share the name
        "In code: `[[Systems/Cache lifetime]]`",
        "To another note: [[Other]], and to itself: [[#Cache lifetime]].",
        "An external page: [x](https://example.org/Systems/Cache%20lifetime.md).",
    ],
)
def test_a_link_that_does_not_resolve_to_the_target_does_not_count(tmp_path: Path, written: str) -> None:
    vault = cache_vault(tmp_path / "v", f"# Cache lifetime\n\n{written}\n")
    catalog = build_catalog(vault, CACHING, SYSTEMS, MarkdownChunker())
    assert b"See also: [[Systems/Cache lifetime]]" in plan_add_link(vault, catalog, "A").after


# ---- property: every planned insertion is exactly where it was planned, and only between blocks ---------

_BLOCKS = st.sampled_from(
    [
        "A paragraph of text.",
        "Two lines\nof one paragraph.",
        "## A heading",
        "- item one\n- item two",
        "> a quote\n> goes on",
        "```\ncode line\n\nmore code\n```",
        "~~~python\nx = 1\n~~~",
        "| a | b |\n|---|---|\n| 1 | 2 |",
        "<div>\nhtml\n</div>",
        "Unicode: ёжик, 猫, emoji 🐈.",
    ]
)


@st.composite
def notes(draw: st.DrawFn) -> bytes:
    blocks = draw(st.lists(_BLOCKS, min_size=1, max_size=7))
    text = "\n\n".join(blocks) + draw(st.sampled_from(["", "\n", "\n\n"]))
    if draw(st.booleans()):
        text = "---\ntags: [x]\ntitle: T\n---\n" + text
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    data = text.replace("\n", eol).encode("utf-8")
    return (codecs.BOM_UTF8 if draw(st.booleans()) else b"") + data


def _protected(source: NoteSource) -> list[tuple[int, int]]:
    """Text spans an insertion may never fall strictly inside: front matter and every block's content
    (a block's line map may take in the blank lines after it; those are between blocks)."""
    spans = [(0, source.note.body_start)] if source.note.body_start else []
    spans += [(b.start, b.start + len(source.text[b.start : b.end].rstrip())) for b in source.note.blocks]
    return spans


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=notes(), pick=st.integers(min_value=0, max_value=20))
def test_an_insertion_changes_only_the_planned_place_and_never_inside_code_tables_or_front_matter(
    raw: bytes, pick: int
) -> None:
    source = note_from_bytes(RawNote("n.md", raw, sha256_hex(raw)), MarkdownChunker())
    blocks = [b for b in source.note.blocks if source.text[b.start : b.end].strip() and b.kind != "hr"]
    block = blocks[pick % len(blocks)]
    anchor = Fragment(
        "x:A:0", "A", block.kind, block.start_line + 1, block.end_line, "", block.start, block.end
    )
    if block.kind not in INSERTABLE_AFTER:
        with pytest.raises(PlanRefused):
            insertion(source, anchor, ["See also: [[X]]"])
        return
    offset, inserted = insertion(source, anchor, ["See also: [[X]]"])
    after = raw[:offset] + inserted + raw[offset:]
    assert after[:offset] == raw[:offset] and after[offset + len(inserted) :] == raw[offset:]
    eol = b"\r\n" if b"\r\n" in raw else b"\n"
    assert b"See also: [[X]]" in inserted and (eol == b"\n") == (b"\r" not in inserted)
    for start, end in _protected(source):
        assert not source.byte_offset(start) < offset < source.byte_offset(end), (start, end, offset)
    reparsed = note_from_bytes(RawNote("n.md", after, sha256_hex(after)), MarkdownChunker())
    added = [b for b in reparsed.note.blocks if "See also: [[X]]" in reparsed.text[b.start : b.end]]
    assert len(added) == 1 and added[0].kind == "paragraph", "the link is a paragraph of its own"
    assert reparsed.text[added[0].start : added[0].end].strip() == "See also: [[X]]"


def test_refusals_name_a_block_with_its_article() -> None:
    assert [block_phrase(k) for k in ("code", "table", "html", "hr", "other")] == [
        "a code block",
        "a table block",
        "an HTML block",
        "a horizontal rule",
        "an unrecognised block",
    ]
