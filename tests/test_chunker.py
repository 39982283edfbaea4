"""MarkdownChunker: stable IDs, content hashes that follow edits, exact spans; code, tables and front
matter whole up to max_chars and split along their structure above it, with a context for each part."""

from __future__ import annotations

import hashlib
import random

import pytest

from chunk_contract import chunk_invariant_errors
from vaultlens.chunking.chunker import Chunk, MarkdownChunker
from vaultlens.vault.parse import parse_note
from vl_support import line_of

WORDS_EN = [
    "cache",
    "header",
    "browser",
    "request",
    "server",
    "latency",
    "policy",
    "expiry",
    "stale",
    "fresh",
    "token",
]
WORDS_RU = [
    "кэш",
    "заголовок",
    "браузер",
    "запрос",
    "сервер",
    "задержка",
    "политика",
    "срок",
    "свежий",
    "данные",
    "ключ",
]


def paragraph(rng: random.Random, n_words: int, words: list[str] | None = None) -> str:
    pool = words or WORDS_EN
    out = [rng.choice(pool) for _ in range(n_words)]
    return " ".join(out).capitalize() + "."


def multi_section_note(seed: int = 7) -> str:
    # every section has some substance (>= target / 3), so each heading starts a chunk
    rng = random.Random(seed)
    parts = ["---", "tags: [test]", "---", "# Guide", "", paragraph(rng, 70), ""]
    for s, title in enumerate(["Setup", "Настройка кэша", "Usage", "Troubleshooting"]):
        parts += [f"## {title}", ""]
        n_paras = 5 if s == 2 else 2  # "Usage" is long enough for two chunks
        for _ in range(n_paras):
            parts += [paragraph(rng, 60, WORDS_RU if s == 1 else WORDS_EN), ""]
    return "\n".join(parts)


def chunks_of(text: str, path: str = "Guide.md", chunker: MarkdownChunker | None = None) -> list[Chunk]:
    return (chunker or MarkdownChunker()).chunk(parse_note(text, path), path)


def assert_spans_exact(text: str, chunks: list[Chunk]) -> None:
    lines = text.split("\n")
    for c in chunks:
        assert text[c.start : c.end] == c.text
        assert c.start_line == line_of(text, c.start)
        assert c.end_line == line_of(text, c.end - 1) + 1
        assert c.text in "\n".join(lines[c.start_line : c.end_line])
        assert c.content_hash == hashlib.sha256(c.text.encode("utf-8")).hexdigest()
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    assert all(a.end <= b.end for a, b in zip(chunks, chunks[1:], strict=False))


def test_same_input_always_yields_the_same_chunks() -> None:
    text = multi_section_note()
    first = chunks_of(text)
    assert len(first) >= 6
    assert chunks_of(text) == first
    assert chunks_of(text, chunker=MarkdownChunker(1200, 1800, 200)) == first
    assert len({c.id for c in first}) == len(first)


def test_editing_one_paragraph_changes_only_that_chunk() -> None:
    text = multi_section_note()
    before = chunks_of(text)
    target = next(c for c in before if c.heading_path == ("Guide", "Настройка кэша"))
    old_para = target.text.split("\n\n")[2]
    edited = text.replace(old_para, old_para[:-1] + " и ещё одно уточнение про инвалидацию.")
    assert edited != text
    after = chunks_of(edited)

    assert [c.id for c in after] == [c.id for c in before]
    changed = [(b, a) for b, a in zip(before, after, strict=True) if b.content_hash != a.content_hash]
    assert [(b.id, b.heading_path) for b, _ in changed] == [(target.id, target.heading_path)]
    assert "уточнение про инвалидацию" in changed[0][1].text
    for b, a in zip(before, after, strict=True):
        if b.id != target.id:
            assert (a.id, a.content_hash, a.text, a.heading_path) == (
                b.id,
                b.content_hash,
                b.text,
                b.heading_path,
            )


def test_adding_a_section_keeps_every_other_chunk() -> None:
    text = multi_section_note()
    before = {(c.id, c.content_hash) for c in chunks_of(text)}
    rng = random.Random(99)
    new_section = "## Brand new section\n\n" + paragraph(rng, 60) + "\n\n"
    edited = text.replace("## Usage", new_section + "## Usage")
    after = {(c.id, c.content_hash) for c in chunks_of(edited)}
    assert before <= after
    assert len(after - before) == 1


def test_chunk_ids_depend_on_path_hashes_on_text_only() -> None:
    text = multi_section_note()
    a, b = chunks_of(text, "a/Guide.md"), chunks_of(text, "b/Guide.md")
    assert [c.content_hash for c in a] == [c.content_hash for c in b]
    assert not {c.id for c in a} & {c.id for c in b}


def test_spans_map_back_to_the_source_exactly() -> None:
    text = multi_section_note()
    chunks = chunks_of(text)
    assert_spans_exact(text, chunks)
    assert chunk_invariant_errors(parse_note(text, "Guide.md"), chunks, 1800) == []
    # nothing of the body is lost between chunks (only blank lines separate them)
    covered: set[int] = set()
    for c in chunks:
        covered.update(range(c.start, c.end))
    missing = "".join(ch for i, ch in enumerate(text) if i not in covered)
    assert missing.strip("\n") == ""


def test_front_matter_is_its_own_chunk() -> None:
    chunks = chunks_of(multi_section_note())
    assert chunks[0].heading_path == ("front matter",)  # for display; logic reads the flag
    assert chunks[0].frontmatter is True
    assert chunks[0].text == "---\ntags: [test]\n---"
    assert chunks[1].text.startswith("# Guide")
    assert not any(c.frontmatter for c in chunks[1:])


def test_a_real_heading_named_front_matter_is_an_ordinary_heading() -> None:
    rng = random.Random(21)
    paras = "\n\n".join(paragraph(rng, 25) for _ in range(6))  # ~6 x 170 chars: packs into 1-2 chunks
    text = f"# front matter\n\n{paras}\n"
    chunks = chunks_of(text)
    assert all(c.frontmatter is False for c in chunks)
    assert all(c.heading_path == ("front matter",) for c in chunks)
    assert len(chunks) < 6  # packed like any other section, not one chunk per paragraph
    twin = chunks_of(text.replace("# front matter", "# other header"))  # same offsets, other name
    assert [(c.start, c.end) for c in chunks] == [(c.start, c.end) for c in twin]
    # with real front matter too: the flag marks only the YAML block, and ids stay distinct
    both = chunks_of(f"---\ntags: [x]\n---\n{text}")
    assert [c.frontmatter for c in both] == [True] + [False] * (len(both) - 1)
    assert len({c.id for c in both}) == len(both)
    assert both[0].heading_path == both[1].heading_path == ("front matter",)


def test_embed_text_leaves_out_only_the_front_matter_label() -> None:
    from vaultlens.index.indexing.texts import embed_text

    rng = random.Random(22)
    fm, real = chunks_of(f"---\ntags: [x]\n---\n# front matter\n\n{paragraph(rng, 30)}\n")
    assert embed_text("Guide", fm) == f"Guide\n{fm.text}"
    assert embed_text("Guide", real) == f"Guide / front matter\n{real.text}"


def test_chunk_ids_and_hashes_are_stable_across_versions() -> None:
    # pinned from the chunker before the front matter flag and fsutil.sha256_hex: an existing
    # index must not re-embed a note because the code that chunks it was refactored
    text = "---\ntags: [a]\n---\n# Кэш\n\nПервый абзац про кэш.\n\n## Setup\n\nRun it.\n"
    chunks = chunks_of(text, "dir/Note.md")
    assert [(c.id, c.content_hash, c.heading_path) for c in chunks] == [
        (
            "99932cee05d2384e4bf4",
            "b2aa8a28ae487f4e1c7277ca5b6b0376e8fb7f6f7bb1c289cceb2d4b7a84bc2c",
            ("front matter",),
        ),
        (
            "7c6bbd3f608e2c00e1d8",
            "40335d52ff675250d4bb5246e2417d4a70871b8b66278e31e3badc653761a3ad",
            ("Кэш",),
        ),
    ]


def test_heading_path_follows_the_outline() -> None:
    rng = random.Random(3)
    body = lambda: paragraph(rng, 80)  # noqa: E731 - ~550 chars, enough for a chunk of its own
    text = (
        f"Preamble before any heading. {body()}\n\n"
        f"# A\n\n{body()}\n\n## A.1\n\n{body()}\n\n### A.1.a\n\n{body()}\n\n"
        f"## A.2\n\n{body()}\n\n# B\n\n{body()}\n\n#### B deep\n\n{body()}\n"
    )
    chunks = chunks_of(text)
    assert [c.heading_path for c in chunks] == [
        (),
        ("A",),
        ("A", "A.1"),
        ("A", "A.1", "A.1.a"),
        ("A", "A.2"),
        ("B",),
        ("B", "B deep"),
    ]
    for c in chunks[1:]:
        heading_line = c.text.split("\n", 1)[0]
        assert heading_line.lstrip("#").strip() == c.heading_path[-1]
    assert_spans_exact(text, chunks)


def _fence(lines: int) -> str:
    body = "\n".join(
        f"    value_{i} = compute_something({i}, 'padding text for width')" for i in range(lines)
    )
    return f"```python\ndef big():\n{body}\n```"


def _table(rows: int) -> str:
    head = "| key | description | value |\n|-----|-------------|-------|\n"
    return head + "\n".join(f"| k{i} | row number {i} with some words | {i * 7} |" for i in range(rows))


@pytest.mark.parametrize("block", [_fence(24), _table(34)], ids=["code", "table"])
def test_code_or_table_of_at_most_max_stays_one_chunk(block: str) -> None:
    rng = random.Random(5)
    assert 1200 < len(block) <= 1800
    text = f"# Note\n\n{paragraph(rng, 70)}\n\n## Block\n\n{block}\n\n## After\n\n{paragraph(rng, 70)}\n"
    chunks = chunks_of(text)
    start = text.index(block)
    holding = [c for c in chunks if c.start < start + len(block) and c.end > start]
    assert [c.text for c in holding] == [f"## Block\n\n{block}"]  # whole, with its heading
    assert holding[0].heading_path == ("Note", "Block")
    assert holding[0].context == ""
    assert_spans_exact(text, chunks)
    assert chunk_invariant_errors(parse_note(text, "Guide.md"), chunks, 1800) == []


def _parts(text: str, block: str, chunks: list[Chunk]) -> list[Chunk]:
    start = text.index(block)
    return [c for c in chunks if c.start < start + len(block) and c.end > start]


def test_a_200_row_table_splits_between_rows_with_the_header_as_context() -> None:
    from vaultlens.embedding.local import MAX_CHARS
    from vaultlens.index.indexing.texts import embed_text, lexical_text

    rng = random.Random(8)
    table = _table(200)
    header, delimiter, *rows = table.split("\n")
    text = f"# Note\n\n{paragraph(rng, 40)}\n\n## Inventory\n\n{table}\n\n## After\n\n{paragraph(rng, 40)}\n"
    note = parse_note(text, "Guide.md")
    chunks = chunks_of(text)
    parts = _parts(text, table, chunks)
    assert len(parts) >= 4
    assert parts[0].text.startswith(f"## Inventory\n\n{header}\n{delimiter}\n")  # the heading stays
    assert parts[0].context == ""  # the first part holds the header itself
    seen: list[str] = []
    for i, part in enumerate(parts):
        assert part.heading_path == ("Note", "Inventory")
        assert len(part.text) <= 1800
        assert len(part.text) >= 600  # about target size: no scraps
        lines = part.text.split("\n")
        if i == 0:
            lines = lines[lines.index(delimiter) + 1 :]
        else:
            assert part.context == f"{header}\n{delimiter}"
        assert all(line in rows for line in lines)  # whole rows only
        seen += lines
        assert {"key", "descript", "valu"} <= set(lexical_text("Guide.md", note, part).split())
        assert f"{header}\n{delimiter}\n" in embed_text("Guide", part)
        assert len(embed_text("Guide", part)) <= MAX_CHARS  # all of it reaches the local model
    assert seen == rows  # every row in exactly one part, in order
    assert [c.text for c in chunks if c.heading_path == ("Note", "After")] == [
        text[text.index("## After") :].rstrip("\n")
    ]
    assert_spans_exact(text, chunks)
    assert chunk_invariant_errors(note, chunks, 1800) == []
    assert chunks_of(text) == chunks


def _code_with_blank_lines(lines: int) -> str:
    body = []
    for i in range(lines):
        if i % 9 == 8:
            body.append("")
        elif i % 9 == 0:
            body.append(f"def step_{i}(items, limit):")
        else:
            body.append(f"    total_{i} = combine(items[{i}], limit)  # accumulate")
    return "```python\n" + "\n".join(body) + "\n```"


def test_a_300_line_code_block_splits_at_blank_lines_with_the_fence_as_context() -> None:
    from vaultlens.index.indexing.texts import embed_text

    code = _code_with_blank_lines(300)
    text = f"# Listing\n\nThe whole program:\n\n{code}\n\nDone.\n"
    chunks = chunks_of(text)
    parts = _parts(text, code, chunks)
    assert len(parts) >= 5
    assert parts[0].text.startswith("# Listing\n\nThe whole program:\n\n```python") is False  # prose apart
    assert parts[0].text.startswith("```python\n") and parts[0].context == ""
    assert parts[-1].text.endswith("\n```")
    for part in parts[1:]:
        assert part.context == "```python"
        assert embed_text("Guide", part).startswith("Guide / Listing\n```python\n")
        assert text[: part.start].endswith("\n\n")  # each cut is at a blank line of the block
        assert len(part.text) <= 1800
    # no overlap at structural cuts: every line of the block is in exactly one part
    block_lines = [line for line in code.split("\n") if line]
    part_lines = [line for p in parts for line in p.text.split("\n") if line]
    assert part_lines == block_lines
    assert_spans_exact(text, chunks)
    assert chunk_invariant_errors(parse_note(text, "Guide.md"), chunks, 1800) == []


def test_a_big_code_block_without_blank_lines_splits_between_lines_and_keeps_its_heading() -> None:
    block = _fence(60)  # no blank line inside
    assert len(block) > 1800
    text = f"## Listing\n\n{block}\n"
    chunks = chunks_of(text)
    assert len(chunks) >= 2
    assert chunks[0].text.startswith("## Listing\n\n```python\n")
    assert all(c.heading_path == ("Listing",) for c in chunks)
    lines = block.split("\n")
    for c in chunks:
        own = c.text.split("\n")[2:] if c.ordinal == 0 else c.text.split("\n")
        assert all(line in lines for line in own)  # whole lines only
    assert "\n".join(c.text for c in chunks) == f"## Listing\n\n{block}"
    assert chunk_invariant_errors(parse_note(text, "Guide.md"), chunks, 1800) == []


def test_a_code_line_longer_than_max_is_cut_like_prose() -> None:
    rng = random.Random(13)
    long_line = "    data = '" + " ".join(rng.choice(WORDS_EN) for _ in range(1200)) + "'"
    code = f"```text\nshort line\n{long_line}\nlast line\n```"
    text = f"# Data\n\n{code}\n"
    note = parse_note(text, "Guide.md")
    chunks = chunks_of(text)
    assert len(chunks) >= 5
    assert all(len(c.text) <= 1800 for c in chunks)
    assert all(c.context == "```text" for c in chunks[1:])
    assert chunks[0].text.startswith("# Data\n\n```text\nshort line\n    data = '")  # no scrap part
    reach = 0  # the pieces cover the line, overlapping a little like prose
    for c in chunks:
        assert c.start <= reach
        reach = max(reach, c.end)
    assert reach == len(text.rstrip("\n"))
    assert any(a.end > b.start for a, b in zip(chunks, chunks[1:], strict=False))
    assert chunk_invariant_errors(note, chunks, 1800) == []


def test_a_table_row_longer_than_max_is_never_cut() -> None:
    rng = random.Random(14)
    wide = "| wide | " + " ".join(rng.choice(WORDS_EN) for _ in range(400)) + " |"
    table = _table(30).replace("| k10 |", f"{wide}\n| k10 |")
    text = f"# Table\n\n{table}\n"
    note = parse_note(text, "Guide.md")
    chunks = chunks_of(text)
    assert len(wide) > 1800
    holding = [c for c in chunks if wide in c.text]
    assert [c.text for c in holding] == [wide]  # the one exception to max_chars: a row alone
    assert holding[0].context.startswith("| key | description | value |")
    assert chunk_invariant_errors(note, chunks, 1800) == []


def _front_matter(keys: int) -> str:
    lines = ["---"]
    for i in range(keys):
        lines.append(f"field_{i}: value {i} with a few words to carry")
        lines.append(f"list_{i}:")
        lines += [f"  - entry {i}.{j}" for j in range(4)]
    return "\n".join([*lines, "---"])


def test_big_front_matter_splits_between_top_level_keys() -> None:
    from vaultlens.index.indexing.texts import embed_text

    fm = _front_matter(60)
    assert len(fm) > 1800
    text = f"{fm}\n# Body\n\nThe note itself.\n"
    note = parse_note(text, "Guide.md")
    assert note.frontmatter["list_59"] == ["entry 59.0", "entry 59.1", "entry 59.2", "entry 59.3"]
    chunks = chunks_of(text)
    parts = [c for c in chunks if c.frontmatter]
    assert len(parts) >= 3
    assert chunks[: len(parts)] == parts
    assert [c.heading_path for c in parts] == [("front matter",)] * len(parts)
    assert parts[0].text.startswith("---\nfield_0:")
    assert parts[-1].text.endswith("\n---")
    for part in parts:
        assert len(part.text) <= 1800
        assert part.context == ""  # every part starts at a key
        assert part.text.startswith(("---\nfield_", "field_", "list_"))
        assert embed_text("Guide", part) == f"Guide\n{part.text}"
    assert "\n".join(p.text for p in parts) == fm  # cut between lines, no overlap
    assert [c.text for c in chunks if not c.frontmatter] == ["# Body\n\nThe note itself."]
    assert len({c.id for c in chunks}) == len(chunks)
    assert chunk_invariant_errors(note, chunks, 1800) == []


def test_a_front_matter_key_longer_than_max_is_cut_between_its_lines() -> None:
    entries = "\n".join(f"  - reference number {j} to another note" for j in range(120))
    fm = f"---\ntitle: Sources\nsources:\n{entries}\nstatus: done\n---"
    text = f"{fm}\nBody.\n"
    chunks = chunks_of(text)
    parts = [c for c in chunks if c.frontmatter]
    assert len(parts) >= 3
    assert parts[0].context == ""
    inside = [p for p in parts[1:] if p.text.startswith("  - ")]
    assert inside and all(p.context == "sources:" for p in inside)
    assert "\n".join(p.text for p in parts) == fm
    assert chunk_invariant_errors(parse_note(text, "Guide.md"), chunks, 1800) == []


def test_small_front_matter_code_and_tables_keep_their_ids_and_hashes() -> None:
    # pinned from chunker v3: notes without a block larger than max_chars chunk exactly as before
    text = (
        "---\ntags: [a]\naliases: [b]\n---\n# Title\n\nIntro.\n\n"
        + _table(10)
        + "\n\n## Code\n\n"
        + _fence(10)
        + "\n"
    )
    chunks = chunks_of(text, "dir/Note.md")
    assert [(c.id, c.content_hash[:16], c.context) for c in chunks] == [
        ("99932cee05d2384e4bf4", "861b9170046dcebb", ""),
        ("8f8b30f734fc2805defd", "7bb54d0c320e5d77", ""),
        ("d778d66a0d09a562bf27", "b640578bbeea47a8", ""),
    ]


def test_oversized_paragraph_is_split_into_pieces_within_max() -> None:
    rng = random.Random(11)
    chunker = MarkdownChunker(target_chars=400, max_chars=600, overlap_chars=80)
    no_sentences = " ".join(rng.choice(WORDS_EN) for _ in range(900))  # one ~6 KB line
    text = f"# Long\n\n{no_sentences}\n\n## Next\n\nShort tail.\n"
    chunks = chunks_of(text, chunker=chunker)
    long_part = [c for c in chunks if c.heading_path == ("Long",)]
    assert len(long_part) >= 8
    assert all(len(c.text) <= 600 for c in chunks)
    assert all(not c.text.startswith(" ") and c.text.strip() for c in chunks)
    assert long_part[0].text.startswith("# Long\n\n")  # the heading stays with its text
    # the pieces cover the whole paragraph, overlapping a little, never leaving a gap
    p_start = text.index(no_sentences)
    p_end = p_start + len(no_sentences)
    reach = p_start
    for c in long_part:
        assert c.start <= reach
        reach = max(reach, c.end)
    assert reach == p_end
    assert any(a.end > b.start for a, b in zip(long_part, long_part[1:], strict=False))  # overlap
    assert_spans_exact(text, chunks)
    assert chunk_invariant_errors(parse_note(text, "Guide.md"), chunks, 600) == []
    assert chunks_of(text, chunker=chunker) == chunks


def test_sentence_boundaries_are_preferred_when_splitting() -> None:
    rng = random.Random(12)
    sentences = " ".join(paragraph(rng, 12) for _ in range(60))
    text = f"{sentences}\n"
    chunks = chunks_of(text, chunker=MarkdownChunker(400, 600, 80))
    assert len(chunks) > 3
    for c in chunks[:-1]:
        assert c.text.rstrip().endswith(".")


def test_crlf_note_chunks_like_its_lf_twin() -> None:
    from vaultlens.vault.parse import decode_note

    text = multi_section_note()
    crlf = decode_note(("\ufeff" + text.replace("\n", "\r\n")).encode("utf-8"))
    assert chunks_of(crlf) == chunks_of(text)


def test_empty_note_has_no_chunks() -> None:
    assert chunks_of("") == []
    assert chunks_of("\n\n  \n") == []
