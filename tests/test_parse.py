"""Parser: front matter, headings and blocks with exact lines and offsets, text decoding."""

from __future__ import annotations

import tracemalloc

import pytest
import yaml

from vaultlens.vault.model import ParsedNote
from vaultlens.vault.parse import NotText, decode_note, parse_note
from vl_support import line_of

NOTE = """---
title: Cache lifetime
tags: [caching, "web/http"]
aliases:
  - TTL
  - Время жизни кэша
---
# Cache lifetime

Intro paragraph with an #inline-tag and a [[Link|shown]].

## Headers **that matter**

```python
# this is a comment, not a heading #not-a-tag
x = 1
```

| header | value |
|--------|-------|
| max-age | 3600 |

### Deeper

- item one
- item two

## Second
Closing words.
"""


def test_front_matter_title_tags_aliases_from_yaml() -> None:
    note = parse_note(NOTE, "web/Cache lifetime.md")
    assert note.frontmatter_error is None
    assert note.title == "Cache lifetime"
    assert note.aliases == ("TTL", "Время жизни кэша")
    assert note.tags == ("caching", "web/http", "inline-tag")  # front matter first, inline after
    assert note.body_start == NOTE.index("# Cache lifetime")
    assert note.body_start_line == 7


def test_front_matter_written_as_json() -> None:
    text = '---\n{"title": "JSON note", "tags": ["a", "b"], "aliases": ["Джейсон"]}\n---\nBody text.\n'
    note = parse_note(text, "j.md")
    assert (note.title, note.tags, note.aliases) == ("JSON note", ("a", "b"), ("Джейсон",))
    assert note.frontmatter_error is None


def test_singular_keys_and_comma_strings() -> None:
    note = parse_note("---\ntags: one, two\ntag: three\nalias: Other name\n---\nx\n", "n.md")
    assert note.tags == ("one", "two", "three")
    assert note.aliases == ("Other name",)


def test_title_falls_back_to_file_stem() -> None:
    assert parse_note("no front matter\n", "folder/Заметка про кэш.md").title == "Заметка про кэш"
    assert parse_note("---\ntitle: 2024\n---\nx\n", "Year.md").title == "Year"  # not a string


@pytest.mark.parametrize(
    ("text", "error"),
    [
        # the unclosed flow sequence is detected on "foo: bar", line 4 of the note
        (
            "---\ntitle: ok\ntags: [a, b\nfoo: bar\n---\nBody survives.\n",
            "malformed YAML front matter at line 4",
        ),
        ("---\n- just\n- a list\n---\nBody survives.\n", "front matter is not a mapping of keys to values"),
    ],
)
def test_malformed_front_matter_is_reported_and_body_kept(text: str, error: str) -> None:
    note = parse_note(text, "Bad.md")
    assert note.frontmatter_error == error
    assert note.frontmatter == {}
    assert note.title == "Bad"
    body = [b for b in note.blocks if b.kind == "paragraph"]
    assert [text[b.start : b.end] for b in body] == ["Body survives.\n"]


def test_headings_have_levels_text_and_line_numbers() -> None:
    note = parse_note(NOTE, "n.md")
    lines = NOTE.split("\n")
    assert [(h.level, h.text) for h in note.headings] == [
        (1, "Cache lifetime"),
        (2, "Headers that matter"),
        (3, "Deeper"),
        (2, "Second"),
    ]
    for h in note.headings:
        assert lines[h.line].startswith("#" * h.level + " ")
    # a '#' line inside a code fence is not a heading
    assert all("comment" not in h.text for h in note.headings)


def test_blocks_keep_code_and_tables_whole_with_exact_spans() -> None:
    note = parse_note(NOTE, "n.md")
    kinds = [b.kind for b in note.blocks]
    assert kinds == [
        "heading",
        "paragraph",
        "heading",
        "code",
        "table",
        "heading",
        "list",
        "heading",
        "paragraph",
    ]
    code = next(b for b in note.blocks if b.kind == "code")
    assert NOTE[code.start : code.end] == (
        "```python\n# this is a comment, not a heading #not-a-tag\nx = 1\n```\n"
    )
    table = next(b for b in note.blocks if b.kind == "table")
    assert NOTE[table.start : table.end] == "| header | value |\n|--------|-------|\n| max-age | 3600 |\n"
    for b in note.blocks:
        assert line_of(NOTE, b.start) == b.start_line
        assert NOTE[b.start : b.end].count("\n") == b.end_line - b.start_line
    assert "not-a-tag" not in note.tags


def test_crlf_and_bom_are_normalised() -> None:
    raw = "\ufeff---\r\ntags: [x]\r\n---\r\n# Title\r\n\r\nLine one\rline two\r\n".encode()
    text = decode_note(raw)
    assert text == "---\ntags: [x]\n---\n# Title\n\nLine one\nline two\n"
    note = parse_note(text, "w.md")
    assert note.tags == ("x",)
    assert [h.text for h in note.headings] == ["Title"]
    assert decode_note(raw) == decode_note(raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n"))


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"PNG\x00\x01\x02 binary", "binary content (NUL bytes), not a text note"),
        (b"# Title\nok text \xff\xfe broken", "not valid UTF-8 (first bad byte at offset 16)"),
        (b"\xef\xbb\xbf# T\n\xc3(", "not valid UTF-8 (first bad byte at offset 7)"),  # counted in the file
        ("Привет".encode("cp1251"), "not valid UTF-8 (first bad byte at offset 0)"),
    ],
)
def test_decode_rejects_non_text_with_a_specific_reason(data: bytes, reason: str) -> None:
    with pytest.raises(NotText) as info:
        decode_note(data)
    assert str(info.value) == reason


def test_empty_and_whitespace_notes_parse_to_nothing() -> None:
    for text in ("", "\n\n   \n"):
        note = parse_note(text, "Empty.md")
        assert note.blocks == ()
        assert note.headings == ()
        assert note.title == "Empty"


@pytest.mark.parametrize(
    ("heading", "text"),
    [
        ("# See [the docs](https://x.y/z) and `code_x`", "See the docs and code_x"),
        ("# Link [[a|b]] and [[a]]", "Link b and a"),
        ("# [[folder/Note#Part|shown here]]", "shown here"),
        ("## Headers **that** _matter_ *here*", "Headers that matter here"),
        ("## my_variable and __dunder__", "my_variable and dunder"),
        ("## ==marked== and ~~struck~~ but a == b", "marked and struck but a == b"),
        ("## `[[not a link]]` and \\[[escaped]]", "[[not a link]] and [[escaped]]"),
        (
            "## Image ![alt *text*](i.png) <span>html</span> &amp; <https://a.b>",
            "Image alt text html & https://a.b",
        ),
        ("## Embed ![[pic.png]] #tag", "Embed pic.png #tag"),
        ("Setext heading\nover two lines\n===", "Setext heading over two lines"),
        ("# Заголовок [[Заметка|по-русски]] `код_1`", "Заголовок по-русски код_1"),
    ],
)
def test_heading_text_comes_from_inline_tokens(heading: str, text: str) -> None:
    note = parse_note(f"{heading}\n\nBody.\n", "h.md")
    assert [h.text for h in note.headings] == [text]
    assert note.blocks[0].text == text


# ---- front matter that is too much (issue 9 #3) ---------------------------------------------------------


def alias_bomb(levels: int) -> str:
    """``a: &a [x * 9]``, ``b: &b [*a * 9]``... ``tags: *<last>``: 9**levels values in ~35 bytes a level."""
    names = [f"l{i}" for i in range(levels)]
    lines = [f"{names[0]}: &{names[0]} [" + ",".join(['"x"'] * 9) + "]"]
    for prev, cur in zip(names, names[1:], strict=False):
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
    lines.append(f"tags: *{names[-1]}")
    return "---\n" + "\n".join(lines) + "\n---\n# Body\n\nThe body of a booby-trapped note survives.\n"


def body_paragraphs(note: ParsedNote) -> list[str]:
    return [note.text[b.start : b.end] for b in note.blocks if b.kind == "paragraph"]


@pytest.mark.parametrize("levels", [9, 10, 40])
def test_a_yaml_alias_bomb_is_refused_before_it_expands(levels: int, monkeypatch: pytest.MonkeyPatch) -> None:
    text = alias_bomb(levels)
    assert len(text) < 60 * levels

    def never(*args: object) -> None:  # not one Python value is built from it
        del args  # a failure report would show the node, and its repr expands the bomb
        raise AssertionError("the bomb reached construction")

    monkeypatch.setattr(yaml.constructor.BaseConstructor, "construct_document", never)
    tracemalloc.start()
    try:
        note = parse_note(text, "Bomb.md")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert note.frontmatter_error == "front matter too complex: aliases expand to more than 10,000 values"
    assert (note.frontmatter, note.tags, note.title) == ({}, (), "Bomb")
    assert body_paragraphs(note) == ["The body of a booby-trapped note survives.\n"]
    assert peak < 5_000_000  # bytes: what 9**levels values would need is gigabytes


def test_aliases_within_the_limit_are_read() -> None:
    note = parse_note(alias_bomb(3), "Small.md")  # 9**3 = 729 values: a lot, but allowed
    assert note.frontmatter_error is None
    assert len(note.frontmatter["tags"]) == 9
    assert note.tags == ()  # nested lists are not tags
    merged = parse_note(
        "---\nbase: &b {k: v}\nother:\n  <<: *b\n  z: 1\ntags: [a, [b], {c: d}]\n---\nx\n", "m.md"
    )
    assert merged.frontmatter["other"] == {"k": "v", "z": 1}
    assert merged.tags == ("a",)


@pytest.mark.parametrize(
    ("yaml_text", "error"),
    [
        ("a: &a [1, *a]", "front matter too complex: an alias refers to the value that contains it"),
        ("a: &a {k: *a}", "front matter too complex: an alias refers to the value that contains it"),
        ("a: " + "[" * 60 + "]" * 60, "front matter too complex: nested more than 50 levels deep"),
        ("a: " + "[" * 20_000 + "]" * 20_000, "front matter too complex: nested more than 50 levels deep"),
        # 30 levels, then 30 more through an alias: deep only once expanded
        (
            "a: &a " + "[" * 30 + "]" * 30 + "\nb: " + "[" * 30 + "*a" + "]" * 30,
            "front matter too complex: nested more than 50 levels deep",
        ),
        ("title: " + "x" * 70_000, "front matter too large (68 KB of YAML > 64 KB limit)"),
        (
            "created: 2024-02-30",
            "malformed YAML front matter (a value cannot be read: day is out of range for month)",
        ),
    ],
)
def test_front_matter_beyond_its_bounds_is_reported_and_the_body_kept(yaml_text: str, error: str) -> None:
    note = parse_note(f"---\n{yaml_text}\n---\nBody survives.\n", "Odd.md")
    assert note.frontmatter_error == error
    assert note.frontmatter == {}
    assert body_paragraphs(note) == ["Body survives.\n"]


# Notes where the block-only parse could differ from markdown-it's full parse if it were wrong: heading
# text needs inline tokens (code spans, links, reference links defined later, escapes, wikilinks, HTML),
# and blocks that hold heading-like or link-like text must stay blocks.
TRICKY = [
    NOTE,
    "# [ref] and [[Wiki|shown]] `code [[x]]`\n\ntext\n\n[ref]: https://example.com\n",
    "## \\[[escaped]] ==mark== ~~gone~~ <b>html</b> ![alt *em*](i.png)\n",
    "Setext *heading*\n===\n\npara [[a]] #tag\n\nSecond `x`\n---\n",
    "```md\n# not a heading [[no]]\n```\n\n~~~\n## nor this\n~~~\n\n    # indented code\n",
    "> [!note] Callout *title*\n> # heading in a quote [[q]]\n> body\n\n# After [link](http://x 'title')\n",
    "| a | `b|c` |\n|---|---|\n| [[x]] | **y** |\n\n# Table end &amp; entity &#35;\n",
    "---\ntitle: 'T'\ntags: a, b\n---\n# Front `matter` [[N#h|d]]\n- item # not heading\n  # nested\n",
    "# Heading hard  \nbreak?\n\n<div>\n# html block\n</div>\n\n#no-space #tag\n",
]


@pytest.mark.parametrize("text", TRICKY)
def test_block_parse_gives_the_full_parse_note(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only headings get an inline parse (speed); the ParsedNote is the one a full parse gives."""
    from markdown_it import MarkdownIt
    from mdit_py_plugins.front_matter import front_matter_plugin

    import vaultlens.vault.parse as parse

    fast = parse_note(text, "n.md")
    tokens = parse._md().parse(text)
    assert not any(t.children for t in tokens if t.type == "inline")  # no inline parse of its own
    full = MarkdownIt("commonmark").enable("table").use(front_matter_plugin).disable("text_join")
    monkeypatch.setattr(parse, "_md", lambda: full)
    assert fast == parse_note(text, "n.md")


# one heading per printable ASCII character between two letters, and text no inline rule reacts to
PLAIN_OR_NOT = [
    *(f"a{chr(c)}b" for c in range(32, 127)),
    "plain words 42",
    "Заголовок про ёжика",
    "tab\tinside",
    "no\u00a0break space",
    "noncharacter \ufdd0 and \ufdd5",
    "trailing hashes ##",
    "",
]


def test_a_heading_without_inline_markup_reads_as_its_inline_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    """A heading with no character that markdown-it's inline rules react to is not parsed inline; it
    reads exactly as when it is (ATX and setext headings, every printable ASCII character)."""
    import vaultlens.vault.parse as parse

    text = "".join(f"# {h}\n\n" for h in PLAIN_OR_NOT) + "".join(f"{h or 'x'}\n---\n\n" for h in PLAIN_OR_NOT)
    text += "[ref]: https://example.com\n"
    fast = parse_note(text, "n.md")
    plain = [h for h in PLAIN_OR_NOT if parse._plain(parse._md(), h)]
    assert "plain words 42" in plain and "Заголовок про ёжика" in plain and "a[b" not in plain
    assert len(plain) > 40  # the shortcut is taken for most of them
    monkeypatch.setattr(parse, "_plain", lambda md, content: False)
    assert fast == parse_note(text, "n.md")
    assert len(fast.headings) == 2 * len(PLAIN_OR_NOT)
