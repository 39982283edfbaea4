"""vault/outline.py and what it added to the vault layer: math masking, property links, headings, block ids,
front matter without markdown-it, and the libyaml fast path that must give what the bounded loader gives."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from conftest import SHARED
from vaultlens.vault.links import extract_links, extract_tags, masked_spans
from vaultlens.vault.outline import outline_note
from vaultlens.vault.parse import (
    MAX_FRONT_MATTER_DEPTH,
    FrontMatterTooComplex,
    _BoundedLoader,
    decode_note,
    load_front_matter,
    parse_note,
    split_front_matter,
)


class TestMath:
    @pytest.mark.parametrize(
        "text",
        ["$[[x]]$", "$a #t [[x]]$", "$$\n[[x]] #t\n$$", "$$ [[x]] $$", "before $\\sum [[x]]_i$ after"],
    )
    def test_nothing_inside_math_is_a_link_or_tag(self, text: str) -> None:
        assert extract_links(text) == [] and extract_tags(text) == []

    @pytest.mark.parametrize(
        "text",
        [
            "costs $5 or $10 [[x]] #t",  # dollars with a digit after the closing one
            "$ [[x]] $ #t",  # space just inside the dollars
            "\\$[[x]]$ #t",  # escaped dollar
            "$$ unclosed [[x]] #t",
        ],
    )
    def test_dollars_that_open_no_math_are_text(self, text: str) -> None:
        assert [link.target for link in extract_links(text)] == ["x"]
        assert extract_tags(text) == ["t"]

    def test_code_wins_over_math_when_it_opens_first(self) -> None:
        text = "`$` [[x]] `$`"
        assert [text[s:e] for s, e in masked_spans(text)] == ["`$`", "`$`"]


class TestOutline:
    NOTE = """---
up: "[[Hub#Part|the hub]]"
down: [[Unquoted]]
nested:
  more: ["![[pic.png]]", "[md](Other.md)", "two [[A]] and [[B]]"]
---
# Title ##
Text ^para-1
    # indented code, no heading
#tag is no heading
## Second: part

```
# fenced, no heading ^in-code
```
- item
^list-id
%%
# comment, no heading
%%
a^notid
"""

    def test_properties_headings_and_block_ids(self) -> None:
        o = outline_note(self.NOTE, "n.md")
        props = [(p.key, p.link.kind, p.link.target, p.link.heading, p.link.line) for p in o.property_links]
        assert props == [
            ("up", "wiki", "Hub", "Part", 1),
            ("nested", "embed", "pic.png", None, 4),
            ("nested", "wiki", "A", None, 4),
            ("nested", "wiki", "B", None, 4),
        ]
        assert [(h.level, h.text, h.line) for h in o.headings] == [(1, "Title", 6), (2, "Second: part", 10)]
        assert o.block_ids == ("para-1", "list-id")
        assert o.tags == ("tag",)

    def test_agrees_with_parse_note(self) -> None:
        p, o = parse_note(self.NOTE, "n.md"), outline_note(self.NOTE, "n.md")
        assert o.links == p.links and o.tags == p.tags and o.aliases == p.aliases
        # markdown-it does not know %% comments; Obsidian lists no heading inside one, and neither does the outline
        assert [(h.level, h.line) for h in o.headings] + [(1, 18)] == [(h.level, h.line) for h in p.headings]

    @pytest.mark.parametrize(
        "text",
        [
            "no front matter\n",
            "---\na: 1\n---\nbody",
            "---\na: 1\n...\nbody",
            "---\na: [unclosed\n---\nbody",
            "---\nnot closed\n",
            "----\na: 1\n---\n",
            "---\n---\n",
            "---\n- a list\n---\nx",
        ],
    )
    def test_front_matter_split_matches_the_markdown_parse(self, text: str) -> None:
        p = parse_note(text, "n.md")
        assert split_front_matter(text) == (
            p.frontmatter,
            p.frontmatter_error,
            p.body_start,
            p.body_start_line,
        )

    @pytest.mark.slow
    def test_real_vaults_agree_with_parse_note(self) -> None:
        notes = sorted((SHARED / "vaults").rglob("*.md")) if (SHARED / "vaults").is_dir() else []
        if not notes:
            pytest.skip("the shared real vaults are not here")
        for path in notes:
            text = decode_note(path.read_bytes())
            p, o = parse_note(text, path.name), outline_note(text, path.name)
            assert (o.links, o.tags, o.aliases) == (p.links, p.tags, p.aliases), path
            assert [(h.level, h.line) for h in o.headings] == [(h.level, h.line) for h in p.headings], path


def _bounded(text: str) -> object:
    loader = _BoundedLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


class TestFastFrontMatter:
    @pytest.mark.parametrize(
        "text",
        [
            "a: 1\nb: [x, y]\nc: {d: 2024-01-02}\n",
            "tags: [a, b]\naliases:\n  - x\n",
            "title: 'quoted: yes'\nn: ~\nf: 1.5e3\nb: yes\n",
            "created: 2024-02-03T10:00:00+03:00\n",
            "v: !!str 12\n",
        ],
    )
    def test_same_values_as_the_bounded_loader(self, text: str) -> None:
        assert load_front_matter(text) == _bounded(text)

    def test_too_deep_is_refused_on_both_paths(self) -> None:
        deep = "a: " + "[" * (MAX_FRONT_MATTER_DEPTH + 1) + "]" * (MAX_FRONT_MATTER_DEPTH + 1)
        short_and_plain = deep  # under the fast path's size limit, no & or *
        with pytest.raises(FrontMatterTooComplex, match="nested more than"):
            load_front_matter(short_and_plain)
        just_fits = "a: " + "[" * (MAX_FRONT_MATTER_DEPTH - 1) + "]" * (MAX_FRONT_MATTER_DEPTH - 1)
        assert load_front_matter(just_fits) == _bounded(just_fits)

    def test_aliases_still_go_through_the_bounded_loader(self) -> None:
        bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
            f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
            f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
            for i in range(5)
        )
        with pytest.raises(FrontMatterTooComplex, match="aliases expand"):
            load_front_matter(bomb)

    def test_malformed_yaml_keeps_the_bounded_loaders_error(self) -> None:
        with pytest.raises(yaml.YAMLError) as fast:
            load_front_matter("a: [1\nb: 2\n")
        with pytest.raises(yaml.YAMLError) as slow:
            _bounded("a: [1\nb: 2\n")
        assert str(fast.value) == str(slow.value)


def test_outline_reads_crlf_and_bom_through_decode(tmp_path: Path) -> None:
    raw = '\ufeff---\r\ntags: [x]\r\nup: "[[Hub]]"\r\n---\r\n# H\r\ntext ^b1\r\n'.encode()
    o = outline_note(decode_note(raw), "n.md")
    assert o.tags == ("x",) and o.block_ids == ("b1",) and o.headings[0].text == "H"
    assert [p.link.target for p in o.property_links] == ["Hub"]


class TestObsidianCodeAndEmojiTags:
    """One rule for the audit (outline_note) and the index (parse_note): an indented code block holds no
    link or tag, and a tag may start with an emoji."""

    NOTE = (
        "Intro [[Real]] #🚀launch\n"
        "\n"
        "    [[InCode]] #codetag\n"
        "\n"
        "    still code [[AlsoCode]]\n"
        "\tand a tab: #tabbed\n"
        "after #after\n"
        "\n"
        "- item\n"
        "\n"
        "    [[ItemText]] #itemtag\n"
        "\n"
        "paragraph\n"
        "    [[Continued]]\n"
    )
    LINKS = ["Real", "ItemText", "Continued"]
    TAGS = ("🚀launch", "after", "itemtag")

    def test_the_audit_reads_them_as_obsidian_does(self) -> None:
        outline = outline_note(self.NOTE, "n.md")
        assert [link.target for link in outline.links] == self.LINKS
        assert outline.tags == self.TAGS

    def test_the_index_parse_reads_them_the_same_way(self) -> None:
        parsed = parse_note(self.NOTE, "n.md")
        assert [link.target for link in parsed.links] == self.LINKS
        assert parsed.tags == self.TAGS

    @pytest.mark.parametrize(
        "text",
        [
            "    [[x]] #t",  # the note's first line
            "para\n\n    ```\n\n[[y]]",  # an indented "```" is code, not a fence that runs to the end
        ],
    )
    def test_indented_code_masks_only_itself(self, text: str) -> None:
        assert [link.target for link in extract_links(text)] == (["y"] if "[[y]]" in text else [])
        assert extract_tags(text) == []

    @pytest.mark.parametrize(
        ("text", "tags"),
        [("#🚀launch", ["🚀launch"]), ("#⭐️fav and #a👨‍👩‍👧b", ["⭐️fav", "a👨‍👩‍👧b"]), ("x#🚀no", [])],
    )
    def test_a_tag_may_start_with_an_emoji(self, text: str, tags: list[str]) -> None:
        assert extract_tags(text) == tags
