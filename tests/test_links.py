"""Links, tags, masking and Obsidian-style link resolution (vaultlens.vault.links)."""

from __future__ import annotations

import random
import re
import unicodedata

import pytest

from vaultlens.chunking import chunker
from vaultlens.vault import links, outline, parse, scan
from vaultlens.vault.links import (
    LinkResolver,
    Resolution,
    extract_links,
    extract_tags,
    masked_spans,
    normalize_tag,
)
from vaultlens.vault.model import Link


def masked_texts(text: str) -> list[str]:
    return [text[s:e] for s, e in masked_spans(text)]


def targets(text: str) -> list[str]:
    return [link.target for link in extract_links(text)]


# --------------------------------------------------------------------------------------------------------------
# masked_spans
# --------------------------------------------------------------------------------------------------------------


class TestMaskedSpans:
    def test_backtick_fence_is_masked_from_opening_line_to_closing_line(self) -> None:
        text = "before\n```python\n[[x]]\n```\nafter"
        assert masked_texts(text) == ["```python\n[[x]]\n```"]

    def test_tilde_fence_is_masked(self) -> None:
        text = "a\n~~~\n[[x]]\n~~~\nb"
        assert masked_texts(text) == ["~~~\n[[x]]\n~~~"]

    def test_closing_fence_must_be_at_least_as_long_as_opening(self) -> None:
        text = "````\n```\n[[still code]]\n````\nafter"
        assert masked_texts(text) == ["````\n```\n[[still code]]\n````"]

    def test_closing_fence_must_use_the_same_character(self) -> None:
        text = "```\n~~~\n[[still code]]\n```\nafter"
        assert masked_texts(text) == ["```\n~~~\n[[still code]]\n```"]

    def test_unclosed_fence_runs_to_end_of_text(self) -> None:
        text = "a\n```\n[[x]]\nmore"
        assert masked_spans(text) == [(2, len(text))]

    def test_fence_inside_blockquote_and_list_is_masked(self) -> None:
        text = "> ```\n> [[q]]\n> ```\n- item\n  ```\n  [[l]]\n  ```\n"
        assert targets(text) == []
        assert len(masked_spans(text)) == 2

    def test_backtick_fence_info_with_backtick_is_not_a_fence(self) -> None:
        # CommonMark: "```a`" cannot open a fence, so the text after it is not code
        text = "```a` [[x]]\n[[y]]"
        assert targets(text) == ["x", "y"]

    def test_inline_code_single_and_double_backticks(self) -> None:
        text = "a `[[x]]` b ``c ` [[y]]`` d"
        assert masked_texts(text) == ["`[[x]]`", "``c ` [[y]]``"]

    def test_unmatched_backtick_is_literal_text(self) -> None:
        text = "it`s [[a]] and ``x [[b]]"
        assert masked_spans(text) == []
        assert targets(text) == ["a", "b"]

    def test_code_span_does_not_cross_a_blank_line(self) -> None:
        text = "a `open\n\n[[x]] `close"
        assert masked_spans(text) == []

    def test_code_span_may_cross_a_single_line_break(self) -> None:
        text = "a `open\n[[x]] close` b"
        assert masked_texts(text) == ["`open\n[[x]] close`"]

    def test_escaped_backtick_does_not_open_code(self) -> None:
        text = r"a \`[[x]]` b"
        assert targets(text) == ["x"]

    def test_obsidian_comment_inline_and_multiline(self) -> None:
        text = "a %%[[x]]%% b %%\n[[y]]\n%% c"
        assert masked_texts(text) == ["%%[[x]]%%", "%%\n[[y]]\n%%"]

    def test_unclosed_obsidian_comment_runs_to_end(self) -> None:
        text = "a %% [[x]]\n\n[[y]]"
        assert masked_spans(text) == [(2, len(text))]

    def test_html_comment_inline_and_multiline(self) -> None:
        text = "a <!-- [[x]] --> b\n<!--\n[[y]]\n-->\n"
        assert masked_texts(text) == ["<!-- [[x]] -->", "<!--\n[[y]]\n-->"]

    def test_unclosed_inline_html_comment_is_text_but_block_one_runs_to_end(self) -> None:
        assert masked_spans("a <!-- [[x]]") == []
        assert masked_spans("a\n<!-- [[x]]\nb") == [(2, 14)]

    def test_first_opener_wins_percent_inside_code(self) -> None:
        text = "`%%` [[x]] `%%`"
        assert masked_texts(text) == ["`%%`", "`%%`"]
        assert targets(text) == ["x"]

    def test_first_opener_wins_fence_inside_comment(self) -> None:
        text = "%%\n```\ncode\n```\n%%\n[[after]]"
        assert masked_texts(text) == ["%%\n```\ncode\n```\n%%"]
        assert targets(text) == ["after"]

    def test_comment_marker_inside_fence_is_code(self) -> None:
        text = "```\n%%\n```\n[[after]]"
        assert targets(text) == ["after"]

    def test_spans_are_sorted_and_non_overlapping(self) -> None:
        rng = random.Random(7)
        pieces = ["`", "``", "```\n", "~~~\n", "%%", "<!--", "-->", "\n", "\n\n", "a", " ", "\\"]
        for _ in range(300):
            text = "".join(rng.choice(pieces) for _ in range(60))
            spans = masked_spans(text)
            for start, end in spans:
                assert 0 <= start < end <= len(text)
            for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
                assert end <= start

    @pytest.mark.parametrize(
        "text",
        [
            "a <!-- " * 200_000,  # many unclosed inline HTML comments
            "```\n" * 200_000,  # many fences
            "a ` b `` c ``` " * 100_000,  # many backtick runs in one paragraph
            "\\" * 1_000_000,
        ],
        ids=["unclosed-html", "fences", "backticks", "backslashes"],
    )
    def test_pathological_input_gives_well_formed_spans(self, text: str) -> None:
        # a quadratic scan would not finish here; speed itself is measured in bench/, not asserted
        spans = masked_spans(text)
        assert all(0 <= start < end <= len(text) for start, end in spans)
        assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:], strict=False))


# --------------------------------------------------------------------------------------------------------------
# extract_links
# --------------------------------------------------------------------------------------------------------------


class TestWikilinks:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("[[a]]", Link("wiki", "a", 0)),
            ("[[a|b]]", Link("wiki", "a", 0, display="b")),
            ("[[a#h]]", Link("wiki", "a", 0, heading="h")),
            ("[[a#h|b]]", Link("wiki", "a", 0, display="b", heading="h")),
            ("[[a#^block]]", Link("wiki", "a", 0, block="block")),
            ("[[a#^block|b]]", Link("wiki", "a", 0, display="b", block="block")),
            ("[[#h]]", Link("wiki", "", 0, heading="h")),
            ("[[#^blk]]", Link("wiki", "", 0, block="blk")),
            ("[[a#h1#h2]]", Link("wiki", "a", 0, heading="h1#h2")),
            ("[[folder/My Note]]", Link("wiki", "folder/My Note", 0)),
            ("[[Note.md]]", Link("wiki", "Note.md", 0)),
            ("[[ a | b ]]", Link("wiki", "a", 0, display="b")),
            ("[[a|b|c]]", Link("wiki", "a", 0, display="b|c")),
            ("![[img.png]]", Link("embed", "img.png", 0)),
            ("![[img.png|100]]", Link("embed", "img.png", 0, display="100")),
            ("![[Note#Section]]", Link("embed", "Note", 0, heading="Section")),
            ("[[Заметка о кулинарии]]", Link("wiki", "Заметка о кулинарии", 0)),
        ],
    )
    def test_forms(self, text: str, expected: Link) -> None:
        assert extract_links(text) == [expected]

    def test_target_keeps_md_extension_as_written(self) -> None:
        assert targets("[[a/Note.md]] [[Note]]") == ["a/Note.md", "Note"]

    def test_empty_wikilink_is_not_a_link(self) -> None:
        assert extract_links("[[]] [[ ]] [[|x]]") == []

    def test_wikilink_does_not_span_lines(self) -> None:
        assert extract_links("[[a\nb]]") == []

    def test_escaped_bracket_is_not_a_link(self) -> None:
        assert extract_links(r"\[[a]] and [[b]]") == [Link("wiki", "b", 0)]

    def test_escaped_backslash_before_bracket_keeps_the_link(self) -> None:
        assert targets(r"\\[[a]]") == ["a"]

    def test_escaped_bang_makes_an_ordinary_wikilink(self) -> None:
        assert extract_links(r"\![[a]]") == [Link("wiki", "a", 0)]

    def test_table_escaped_pipe(self) -> None:
        text = "| col |\n| --- |\n| [[a\\|b]] |"
        assert extract_links(text) == [Link("wiki", "a", 2, display="b")]

    def test_table_escaped_pipe_with_heading(self) -> None:
        assert extract_links("| [[a#h\\|b]] |") == [Link("wiki", "a", 0, display="b", heading="h")]


class TestMarkdownLinks:
    def test_plain_markdown_link(self) -> None:
        assert extract_links("[text](Note.md)") == [Link("markdown", "Note.md", 0, display="text")]

    def test_image_is_an_embed(self) -> None:
        assert extract_links("![alt](img/a.png)") == [Link("embed", "img/a.png", 0, display="alt")]

    def test_percent_encoding_is_decoded(self) -> None:
        assert targets("[x](My%20Note.md) [y](%D0%97%D0%B0%D0%BC.md)") == ["My Note.md", "Зам.md"]

    def test_angle_brackets_are_stripped_and_allow_spaces(self) -> None:
        assert targets("[x](<My Note.md>)") == ["My Note.md"]

    def test_heading_and_block_are_split_and_decoded(self) -> None:
        assert extract_links("[x](Note.md#My%20Section) [y](Note.md#^abc)") == [
            Link("markdown", "Note.md", 0, display="x", heading="My Section"),
            Link("markdown", "Note.md", 0, display="y", block="abc"),
        ]

    def test_title_is_ignored(self) -> None:
        assert targets("[x](Note.md \"A title\") [y](b.md 't')") == ["Note.md", "b.md"]

    def test_relative_and_absolute_paths_are_kept_as_written(self) -> None:
        assert targets("[a](../up/Note.md) [b](./here.md) [c](/root/x.md)") == [
            "../up/Note.md",
            "./here.md",
            "/root/x.md",
        ]

    @pytest.mark.parametrize(
        "dest",
        [
            "http://example.com",
            "https://example.com/page#section",
            "mailto:me@example.com",
            "obsidian://open?vault=x&file=y",
            "file:///tmp/x.md",
            "ftp://host/x",
            "//example.com/x",
            "#anchor",
            "#",
        ],
    )
    def test_external_urls_and_anchors_are_skipped(self, dest: str) -> None:
        assert extract_links(f"[x]({dest}) ![y]({dest})") == []

    def test_spaces_without_angle_brackets_are_not_a_link(self) -> None:
        # CommonMark (and Obsidian) need %20 or <...> for a destination with spaces
        assert extract_links("[x](My Note.md)") == []

    def test_escaped_bracket_is_not_a_link(self) -> None:
        assert extract_links(r"\[x](a.md)") == []

    def test_escaped_bang_makes_an_ordinary_link(self) -> None:
        assert extract_links(r"\![x](a.png)") == [Link("markdown", "a.png", 0, display="x")]

    def test_image_inside_link_gives_both(self) -> None:
        assert extract_links("[![logo](logo.png)](Home.md)") == [
            Link("markdown", "Home.md", 0, display="![logo](logo.png)"),
            Link("embed", "logo.png", 0, display="logo"),
        ]

    def test_code_span_inside_link_text_does_not_break_the_link(self) -> None:
        assert extract_links("[`a]`](x.md)") == [Link("markdown", "x.md", 0, display="`a]`")]

    def test_link_with_masked_destination_is_ignored(self) -> None:
        assert extract_links("[x](`a.md`)") == []

    def test_empty_text_gives_no_display(self) -> None:
        assert extract_links("[](a.md)") == [Link("markdown", "a.md", 0)]

    def test_wikilink_followed_by_parentheses_is_only_a_wikilink(self) -> None:
        assert extract_links("[[a]](b.md)") == [Link("wiki", "a", 0)]


class TestLinkPositionsAndMasking:
    def test_line_numbers_are_zero_based(self) -> None:
        text = "[[a]]\n\nx [[b]] [c](c.md)\n![[d]]"
        assert [(link.target, link.line) for link in extract_links(text)] == [
            ("a", 0),
            ("b", 2),
            ("c.md", 2),
            ("d", 3),
        ]

    def test_line_offset_is_added(self) -> None:
        assert [link.line for link in extract_links("x\n[[a]]", line_offset=5)] == [6]

    def test_links_come_in_document_order_across_kinds(self) -> None:
        text = "[m](m.md) [[w]] ![e](e.png) ![[x]]"
        assert [(link.kind, link.target) for link in extract_links(text)] == [
            ("markdown", "m.md"),
            ("wiki", "w"),
            ("embed", "e.png"),
            ("embed", "x"),
        ]

    def test_nothing_is_extracted_from_masked_regions(self) -> None:
        text = (
            "```\n[[fence]] [f](f.md)\n```\n"
            "~~~\n[[tilde]]\n~~~\n"
            "`[[inline]]` ``[i](i.md)``\n"
            "%% [[comment]] %%\n"
            "<!-- [[html]] [h](h.md) -->\n"
            "[[kept]]"
        )
        assert targets(text) == ["kept"]

    def test_line_numbers_after_masked_block(self) -> None:
        text = "```\n[[x]]\n```\n%%\nmulti\n%%\n[[a]]"
        assert extract_links(text) == [Link("wiki", "a", 6)]

    def test_explicit_masked_spans_are_used(self) -> None:
        text = "[[a]] [[b]]"
        assert targets(text) == ["a", "b"]
        assert extract_links(text, masked=[(0, 5)]) == [Link("wiki", "b", 0)]
        assert extract_links(text, masked=[]) == extract_links(text)

    def test_link_overlapping_a_mask_is_ignored(self) -> None:
        assert extract_links("[[a `b` c]] [[d]]") == [Link("wiki", "d", 0)]

    def test_crlf_line_endings(self) -> None:
        text = "x\r\n```\r\n[[no]]\r\n```\r\n[[a]]\r\n"
        assert extract_links(text) == [Link("wiki", "a", 4)]


# --------------------------------------------------------------------------------------------------------------
# Tags
# --------------------------------------------------------------------------------------------------------------


class TestTags:
    def test_simple_tags_in_order(self) -> None:
        assert extract_tags("#b text #a\n#c") == ["b", "a", "c"]

    def test_cyrillic_tag(self) -> None:
        assert extract_tags("рецепт #кулинария") == ["кулинария"]

    def test_nested_tag(self) -> None:
        assert extract_tags("#area/health and #a-b_c/d1") == ["area/health", "a-b_c/d1"]

    def test_digits_only_is_not_a_tag(self) -> None:
        assert extract_tags("#123 #2024 #y2024") == ["y2024"]

    def test_heading_is_not_a_tag(self) -> None:
        assert extract_tags("# Heading\n## Sub\n###\n") == []

    def test_hash_without_space_at_line_start_is_a_tag(self) -> None:
        assert extract_tags("#tag first line") == ["tag"]

    def test_tag_in_heading_text_counts(self) -> None:
        assert extract_tags("## Title #topic") == ["topic"]

    def test_fragment_after_non_space_is_not_a_tag(self) -> None:
        assert extract_tags("a#b page.md#section [[n#h]] (#x) \\#y") == []

    def test_punctuation_ends_a_tag(self) -> None:
        assert extract_tags("see #tag. and #other, #end!") == ["tag", "other", "end"]

    def test_tags_inside_code_and_comments_are_not_counted(self) -> None:
        text = "```\n#fenced\n```\n`#inline` %% #comment %% <!-- #html -->\n#real"
        assert extract_tags(text) == ["real"]

    def test_tag_right_after_a_masked_span_is_not_a_tag(self) -> None:
        assert extract_tags("`x`#glued %%c%%#glued2") == []

    def test_dedup_is_case_insensitive_and_keeps_first_spelling(self) -> None:
        assert extract_tags("#Tag #tag #TAG #Кот #кот") == ["Tag", "Кот"]

    def test_explicit_masked_spans_are_used(self) -> None:
        assert extract_tags("#a #b", masked=[(0, 2)]) == ["b"]

    @pytest.mark.parametrize(
        ("raw", "expected"),
        [("#tag", "tag"), ("  #area/x ", "area/x"), ("plain", "plain"), ("# spaced", "spaced"), ("", "")],
    )
    def test_normalize_tag(self, raw: str, expected: str) -> None:
        assert normalize_tag(raw) == expected


# --------------------------------------------------------------------------------------------------------------
# Resolution
# --------------------------------------------------------------------------------------------------------------

VAULT = [
    "Home.md",
    "Unique.md",
    "a/Note.md",
    "b/Note.md",
    "a/b/Deep.md",
    "c/b/Deep.md",
    "x/y/Leaf.md",
    "img/a.png",
    "boards/board.canvas",
    "views/table.base",
    "Заметки/Кулинария.md",
    "Study/Caching/Cache lifetime.md",
    "Study/Systems/Cache lifetime.md",
]


@pytest.fixture
def resolver() -> LinkResolver:
    return LinkResolver(VAULT)


def resolved(path: str) -> Resolution:
    return Resolution("resolved", path, (path,))


class TestResolve:
    def test_bare_name_unique(self, resolver: LinkResolver) -> None:
        assert resolver.resolve("Unique", "Home.md") == resolved("Unique.md")

    def test_same_named_notes_in_different_folders_are_ambiguous(self, resolver: LinkResolver) -> None:
        assert resolver.resolve("Note", "Home.md") == Resolution(
            "ambiguous", None, ("a/Note.md", "b/Note.md")
        )

    def test_ambiguity_is_not_broken_by_the_source_folder(self, resolver: LinkResolver) -> None:
        # Obsidian would silently pick one; vaultlens wants a path-qualified link
        assert resolver.resolve("Note", "a/Other.md").status == "ambiguous"

    def test_path_qualified_resolves(self, resolver: LinkResolver) -> None:
        assert resolver.resolve("a/Note", "Home.md") == resolved("a/Note.md")
        assert resolver.resolve("Study/Systems/Cache lifetime", "Home.md") == resolved(
            "Study/Systems/Cache lifetime.md"
        )

    def test_leading_slash_is_vault_absolute(self, resolver: LinkResolver) -> None:
        assert resolver.resolve("/a/Note", "b/Note.md") == resolved("a/Note.md")
        assert resolver.resolve("/Home", "a/Note.md") == resolved("Home.md")
        assert resolver.resolve("/Note", "a/Note.md").status == "unresolved"

    def test_path_suffix_on_whole_components(self, resolver: LinkResolver) -> None:
        assert resolver.resolve("y/Leaf", "Home.md") == resolved("x/y/Leaf.md")
        assert resolver.resolve("b/Deep", "Home.md") == Resolution(
            "ambiguous", None, ("a/b/Deep.md", "c/b/Deep.md")
        )
        assert resolver.resolve("a/b/Deep", "Home.md") == resolved("a/b/Deep.md")
        # "/Leaf" is not a component boundary inside "xy/Leaf"
        assert LinkResolver(["xy/Leaf.md"]).resolve("y/Leaf", "Home.md").status == "unresolved"

    def test_relative_to_source_folder(self, resolver: LinkResolver) -> None:
        assert resolver.resolve("../b/Note", "a/Other.md") == resolved("b/Note.md")
        assert resolver.resolve("./Note", "a/Other.md") == resolved("a/Note.md")
        assert resolver.resolve("../../Home", "x/y/Leaf.md") == resolved("Home.md")

    def test_relative_path_outside_the_vault_is_unresolved(self, resolver: LinkResolver) -> None:
        assert resolver.resolve("../Home", "Home.md").status == "unresolved"

    def test_relative_without_dot_prefix_falls_back_to_source_folder(self) -> None:
        r = LinkResolver(["p/q/sub/N.md", "sub/Other.md"])
        assert r.resolve("sub/N", "p/q/Source.md") == resolved("p/q/sub/N.md")

    def test_vault_path_wins_over_suffix(self) -> None:
        r = LinkResolver(["b/Note.md", "a/b/Note.md"])
        assert r.resolve("b/Note", "x.md") == resolved("b/Note.md")

    def test_case_insensitive(self, resolver: LinkResolver) -> None:
        assert resolver.resolve("unique", "Home.md") == resolved("Unique.md")
        assert resolver.resolve("A/NOTE", "Home.md") == resolved("a/Note.md")
        assert resolver.resolve("заметки/КУЛИНАРИЯ", "Home.md") == resolved("Заметки/Кулинария.md")
        assert resolver.resolve("IMG/A.PNG", "Home.md") == resolved("img/a.png")

    def test_unicode_normalisation(self) -> None:
        nfd = unicodedata.normalize("NFD", "Café.md")
        r = LinkResolver([nfd])
        assert r.resolve("Café", "x.md") == resolved(nfd)
        assert r.resolve(unicodedata.normalize("NFD", "café"), "x.md") == resolved(nfd)

    def test_attachments_need_their_extension(self, resolver: LinkResolver) -> None:
        assert resolver.resolve("a.png", "Home.md") == resolved("img/a.png")
        assert resolver.resolve("img/a.png", "Home.md") == resolved("img/a.png")
        assert resolver.resolve("board.canvas", "Home.md") == resolved("boards/board.canvas")
        assert resolver.resolve("table.base", "Home.md") == resolved("views/table.base")
        assert resolver.resolve("a", "Home.md").status == "unresolved"
        assert resolver.resolve("board", "Home.md").status == "unresolved"

    def test_target_with_md_extension(self, resolver: LinkResolver) -> None:
        assert resolver.resolve("Unique.md", "Home.md") == resolved("Unique.md")
        assert resolver.resolve("a/Note.md", "Home.md") == resolved("a/Note.md")

    def test_note_with_dots_in_its_name(self) -> None:
        r = LinkResolver(["log/2024.01.05.md", "v1.2 notes.md"])
        assert r.resolve("2024.01.05", "x.md") == resolved("log/2024.01.05.md")
        assert r.resolve("v1.2 notes", "x.md") == resolved("v1.2 notes.md")

    def test_note_is_preferred_to_a_same_named_attachment(self) -> None:
        r = LinkResolver(["Plan.md", "Plan.png"])
        assert r.resolve("Plan", "x.md") == resolved("Plan.md")
        assert r.resolve("Plan.png", "x.md") == resolved("Plan.png")

    def test_unresolved(self, resolver: LinkResolver) -> None:
        assert resolver.resolve("Missing", "Home.md") == Resolution("unresolved", None, ())
        assert resolver.resolve("nowhere/Note", "Home.md") == Resolution("unresolved", None, ())

    def test_empty_target_is_self(self, resolver: LinkResolver) -> None:
        assert resolver.resolve("", "a/Note.md") == Resolution("self", "a/Note.md", ("a/Note.md",))
        assert resolver.resolve("  ", "a/Note.md").status == "self"

    def test_resolves_link_objects_from_extraction(self, resolver: LinkResolver) -> None:
        text = "[[Unique]] [[Note]] [[#top]] ![[a.png]] [x](../b/Note.md) [[Missing]]"
        statuses = [resolver.resolve(link.target, "a/Other.md").status for link in extract_links(text)]
        assert statuses == ["resolved", "ambiguous", "self", "resolved", "resolved", "unresolved"]

    def test_paths_by_name(self, resolver: LinkResolver) -> None:
        assert resolver.paths_by_name("note.MD") == ("a/Note.md", "b/Note.md")
        assert resolver.paths_by_name("a.png") == ("img/a.png",)
        assert resolver.paths_by_name("missing.md") == ()

    def test_duplicate_input_paths_are_counted_once(self) -> None:
        r = LinkResolver(["a/Note.md", "a/Note.md"])
        assert r.resolve("Note", "x.md") == resolved("a/Note.md")
        assert r.paths == ("a/Note.md",)

    def test_large_vault_with_repeated_names(self) -> None:
        paths = [f"f{i // 20_000}/Note {i % 20_000}.md" for i in range(50_000)]
        r = LinkResolver(paths)
        assert r.resolve("Note 19999", "x.md").candidates == ("f0/Note 19999.md", "f1/Note 19999.md")
        assert r.resolve("Note 7", "x.md").candidates == ("f0/Note 7.md", "f1/Note 7.md", "f2/Note 7.md")
        assert r.resolve("f2/Note 7", "x.md") == resolved("f2/Note 7.md")


class TestShortestLinktext:
    def test_unique_name_is_the_bare_name(self, resolver: LinkResolver) -> None:
        assert resolver.shortest_linktext("Unique.md") == "Unique"
        assert resolver.shortest_linktext("x/y/Leaf.md") == "Leaf"
        assert resolver.shortest_linktext("Заметки/Кулинария.md") == "Кулинария"

    def test_colliding_names_get_the_shortest_unique_suffix(self, resolver: LinkResolver) -> None:
        assert resolver.shortest_linktext("a/Note.md") == "a/Note"
        assert resolver.shortest_linktext("b/Note.md") == "b/Note"
        assert resolver.shortest_linktext("a/b/Deep.md") == "a/b/Deep"
        assert resolver.shortest_linktext("Study/Caching/Cache lifetime.md") == "Caching/Cache lifetime"

    def test_attachments_keep_their_extension(self, resolver: LinkResolver) -> None:
        assert resolver.shortest_linktext("img/a.png") == "a.png"
        assert resolver.shortest_linktext("boards/board.canvas") == "board.canvas"

    def test_root_note_sharing_its_name_uses_a_vault_path(self) -> None:
        r = LinkResolver(["Note.md", "a/Note.md"])
        assert r.shortest_linktext("Note.md") == "/Note"
        assert r.shortest_linktext("a/Note.md") == "a/Note"
        assert r.resolve("/Note", "a/Note.md") == resolved("Note.md")

    def test_suffix_shadowed_by_a_vault_path_is_not_used(self) -> None:
        # "b/Note" resolves to the root-level b/Note.md, so a/b/Note.md needs its full path
        r = LinkResolver(["b/Note.md", "a/b/Note.md", "c/Note.md"])
        assert r.shortest_linktext("a/b/Note.md") == "a/b/Note"
        assert r.shortest_linktext("b/Note.md") == "b/Note"

    def test_unknown_path_raises(self, resolver: LinkResolver) -> None:
        with pytest.raises(KeyError):
            resolver.shortest_linktext("nope.md")

    def test_output_resolves_back_in_a_vault_full_of_collisions(self) -> None:
        rng = random.Random(2024)
        names = ["Note", "note", "Index", "Ideas", "Кулинария", "README", "2024.01.05", "Plan"]
        exts = [".md"] * 6 + [".png", ".canvas"]
        components = ["a", "b", "A", "Б", "x y", "b"]
        paths: list[str] = []
        seen: set[str] = set()
        while len(paths) < 200:
            depth = rng.randrange(0, 4)
            folder = "/".join(rng.choice(components) for _ in range(depth))
            name = rng.choice(names) + rng.choice(exts)
            path = f"{folder}/{name}" if folder else name
            if path.casefold() in seen:  # files differing only in case cannot coexist on most systems
                continue
            seen.add(path.casefold())
            paths.append(path)
        r = LinkResolver(paths)
        collisions = sum(1 for p in paths if len(r.paths_by_name(p.rpartition("/")[2])) > 1)
        assert collisions > 150  # the vault really is full of same-named files
        sources = rng.sample(paths, 10)
        for path in paths:
            text = r.shortest_linktext(path)
            for source in [path, *sources]:
                assert r.resolve(text, source) == resolved(path), (path, text, source)
            # and it is the shortest: no suffix with fewer path components resolves to the file
            parts = path.split("/")
            for k in range(1, len(text.strip("/").split("/"))):
                suffix = "/".join(parts[-k:])
                for shorter in {suffix, suffix.removesuffix(".md")}:
                    assert r.resolve(shorter, path) != resolved(path), (path, text, shorter)


def test_no_pattern_repeats_a_group_possessively() -> None:
    """Possessive repeats of groups matched wrongly before CPython 3.11.5 (gh-106052, gh-100061): the
    parser's patterns use atomic groups instead, so they mean the same on every 3.11 patch release."""
    possessive_group = re.compile(r"(?<!\\)\)(?:[*+?]|\{\d*,?\d*\})\+")
    found = [
        f"{module.__name__}.{name}"
        for module in (links, parse, outline, scan, chunker)
        for name, value in vars(module).items()
        if isinstance(value, re.Pattern) and possessive_group.search(value.pattern)
    ]
    assert found == []
