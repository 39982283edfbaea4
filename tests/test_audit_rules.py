"""The structure audit against Obsidian's rules for links, embeds, tags, aliases and properties, one trap each.

Rules as the Obsidian Help states them (Internal links, Embed files, Tags, Aliases, Properties): links resolve by
vault path, relative path, path suffix or bare name; same-named notes need a path; an alias is not a link
target; links in properties count only as quoted strings; nothing in code, math or comments is a link or tag;
``#123`` is not a tag. Every vault here is written to disk and read by the real audit.
"""

from __future__ import annotations

import unicodedata
from typing import Any

import pytest

from vaultlens.services.app import App
from vaultlens.services.auditing import audit_structure
from vaultlens.services.auditing.graph import AMBIGUOUS, UNRESOLVED
from vl_support import write_vault

NFD_NAME = unicodedata.normalize("NFD", "Café")
assert NFD_NAME != "Café"

TARGET = """---
aliases: [Tgt]
tags: [Idea, proj/a]
---
# Target

## Existing heading

A paragraph with an id. ^blk1

## Step 1: Install
"""

TRAPS = """---
up: "[[Target]]"
related: [[Unquoted]]
list:
  - "[[Listed]]"
tags: idea
---
# Traps

Plain [[Target#Existing heading]] and [[Target#^blk1]] and [[Target#Step 1 Install]].
Missing [[Target#No such heading]] and [[Target#^nope]]; here [[#Traps]] and [[#Not here]].
By alias [[Tgt]] (broken) and [[Target|Tgt]] (fine).
Same names: [[Note]] [[A/Note]] [[index]] [[x/index]] [[Café]].
Markdown: [deep](Sub%20Folder/Deep%20Note.md) and [anchor](Target.md#Existing%20heading) [web](https://a.b/c#frag).
Embeds: ![[image.png]] and ![alt](image.png).

`[[InlineCode]]` %%[[InComment]]%% <!-- [[InHtml]] --> $[[InMath]]$ and costs $5 #dollar

```
[[InFence]] #infence
```

$$
[[InBlockMath]]
$$

> [!note] A callout
> [[InCallout]] #incallout

| a | b |
|---|---|
| [[InTable\\|shown]] | x |

#123 is no tag, https://example.com/page#fragment neither, page#section neither; #Proj/B is one.
"""

VAULT: dict[str, str | bytes] = {
    "Target.md": TARGET,
    "Traps.md": TRAPS,
    "A/Note.md": "# A\n",
    "B/Note.md": "# B\n[up](../A/Note.md)\n",
    "index.md": "root index\n",
    "x/index.md": "x index\n",
    "x/other.md": "[[./index]] #Idea\n",
    "y/index.md": "y index\n",
    f"{NFD_NAME}.md": "an NFD file name\n",
    "Sub Folder/Deep Note.md": "deep\n",
    "InCallout.md": "",
    "InTable.md": "",
    "Listed.md": "",
    "Lonely.md": "no links at all #lonely\n",
    "Dead end.md": "only [[Nowhere]] and [[Nowhere too]]\n",
    "crlf.md": "\ufeff---\r\ntags: [crlf]\r\n---\r\n# Head\r\nsee [[Lonely ref]] and [[Target]] #bomtag\r\n".encode(),
    "image.png": b"\x89PNG\r\n\x1a\n",
    "report.md": "---\nvaultlens-report: structure-audit\n---\n[[Lonely]] [[Dead end]]\n",
}


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    vault = write_vault(tmp_path_factory.mktemp("traps") / "vault", VAULT)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VAULTLENS_HOME", str(tmp_path_factory.mktemp("home")))
        return audit_structure(App.open(vault).files()).report.as_dict()


def targets(report: dict[str, Any], note: str) -> dict[str, str]:
    return {item["raw"]: item["target"] for item in report["links"][note]}


def test_every_file_is_listed_by_its_path_on_disk_and_generated_reports_are_left_out(
    report: dict[str, Any],
) -> None:
    assert f"{NFD_NAME}.md" in report["notes"]
    assert "report.md" not in report["notes"]  # a saved dashboard would hide the orphans it lists
    assert report["file_types"] == {"note": 17, "attachment": 1}


def test_paths_resolve_as_in_obsidian(report: dict[str, Any]) -> None:
    t = targets(report, "Traps.md")
    assert t["Target#Existing heading"] == "Target.md"
    assert t["A/Note"] == "A/Note.md"
    assert t["x/index"] == "x/index.md"
    assert t["Café"] == f"{NFD_NAME}.md"  # NFC link, NFD file name
    assert t["Sub Folder/Deep Note.md"] == "Sub Folder/Deep Note.md"  # URL-encoded Markdown link
    assert targets(report, "B/Note.md") == {"../A/Note.md": "A/Note.md"}  # relative Markdown link
    assert targets(report, "x/other.md") == {"./index": "x/index.md"}  # relative wikilink


def test_same_named_notes_are_ambiguous_and_grouped(report: dict[str, Any]) -> None:
    t = targets(report, "Traps.md")
    assert t["Note"] == AMBIGUOUS and t["index"] == AMBIGUOUS
    ambiguous = {(a["raw"], tuple(a["candidates"])) for a in report["ambiguous_links"]}
    assert ambiguous == {
        ("Note", ("A/Note.md", "B/Note.md")),
        ("index", ("index.md", "x/index.md", "y/index.md")),
    }
    assert report["same_name_groups"] == {
        "Note": ["A/Note.md", "B/Note.md"],
        "index": ["index.md", "x/index.md", "y/index.md"],
    }


def test_nothing_in_code_math_or_comments_is_a_link_but_callouts_and_tables_are(
    report: dict[str, Any],
) -> None:
    raws = set(targets(report, "Traps.md"))
    for hidden in ("InlineCode", "InComment", "InHtml", "InMath", "InFence", "InBlockMath"):
        assert hidden not in raws
    assert targets(report, "Traps.md")["InCallout"] == "InCallout.md"
    assert targets(report, "Traps.md")["InTable"] == "InTable.md"


def test_property_links_count_only_when_quoted(report: dict[str, Any]) -> None:
    props = {i["raw"]: i["target"] for i in report["links"]["Traps.md"] if i["kind"] == "property"}
    assert props == {"Target": "Target.md", "Listed": "Listed.md"}
    assert "Unquoted" not in targets(report, "Traps.md")
    assert "Listed.md" not in report["orphans_no_incoming"]  # its only link is a property


def test_an_alias_is_not_a_link_target_but_is_named_as_the_likely_intent(report: dict[str, Any]) -> None:
    broken = {(b["source"], b["raw"]): b for b in report["broken_links"]}
    assert broken[("Traps.md", "Tgt")]["alias_of"] == "Target.md"
    assert (
        targets(report, "Traps.md")["Target"] == "Target.md"
    )  # [[Target|Tgt]]: display text is not the target


def test_broken_links_are_exactly_the_unresolved_ones(report: dict[str, Any]) -> None:
    broken = sorted((b["source"], b["raw"]) for b in report["broken_links"])
    assert broken == [
        ("Dead end.md", "Nowhere"),
        ("Dead end.md", "Nowhere too"),
        ("Traps.md", "Tgt"),
        ("crlf.md", "Lonely ref"),
    ]
    assert {i["target"] for i in report["links"]["Dead end.md"]} == {UNRESOLVED}


def test_heading_and_block_subpaths_are_checked(report: dict[str, Any]) -> None:
    missing = sorted((m["raw"], m["target"], m["anchor"]) for m in report["missing_anchors"])
    assert missing == [
        ("#Not here", "Traps.md", "Not here"),
        ("Target#No such heading", "Target.md", "No such heading"),
        ("Target#^nope", "Target.md", "^nope"),
    ]


def test_embeds_are_links_and_listed_apart(report: dict[str, Any]) -> None:
    embeds = [(e["raw"], e["target"]) for e in report["embeds"]["Traps.md"]]
    assert embeds == [("image.png", "image.png"), ("image.png", "image.png")]


def test_tags_follow_obsidian(report: dict[str, Any]) -> None:
    assert report["tags"]["crlf.md"] == ["crlf", "bomtag"]  # front matter after a BOM, CRLF lines
    traps = [t.casefold() for t in report["tags"]["Traps.md"]]
    assert traps == ["idea", "dollar", "incallout", "proj/b"]  # front matter first, then the body in order
    counts = {k.casefold(): v for k, v in report["tag_counts"].items()}
    assert counts["idea"] == 3  # Target (Idea), Traps (idea), x/other (#Idea): case-insensitive
    assert (
        "123" not in counts
        and "fragment" not in counts
        and "section" not in counts
        and "infence" not in counts
    )
    tree = {k.casefold(): v for k, v in report["tag_tree"].items()}
    assert tree["proj"] == 2 and tree["proj/a"] == 1 and tree["proj/b"] == 1


def test_orphans_and_graph(report: dict[str, Any]) -> None:
    # Lonely has no links; Dead end links only to missing notes; y/index, index.md and B/Note are reached only
    # through ambiguous links, which count for every candidate
    assert report["orphans"] == ["Dead end.md", "Lonely.md"]
    assert "Target.md" not in report["orphans_no_incoming"]
    assert "Traps.md" in report["orphans_no_incoming"]
    assert set(report["no_outgoing"]) >= {"Lonely.md", "Dead end.md", "Target.md"}
    assert report["hubs"][0]["path"] == "Traps.md"
    assert report["components"][0]["notes"][0] == "A/Note.md"
