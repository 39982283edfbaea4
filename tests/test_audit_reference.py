"""The structure audit on two real vaults agrees with a small reference written here from first principles.

The reference below shares no code with vaultlens: its own walk, front matter split, code and comment
stripping, link and tag regexes and resolver, written from the Obsidian Help's rules (Internal links,
Tags, Properties). It is deliberately simple; it only has to be right on these two vaults, where the
audit must give the same orphans, broken links, same-named notes and tag counts.
"""

from __future__ import annotations

import os
import posixpath
import re
import unicodedata
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
import yaml

from conftest import SHARED
from vaultlens.services.app import App
from vaultlens.services.auditing import audit_structure

VAULTS = ["ru-wiki", "kepano"]

# ---- the reference ---------------------------------------------------------------------------------------------

FENCE = re.compile(r"^[ \t>]*(```|~~~).*?^[ \t>]*\1[ \t]*$", re.M | re.S)
INLINE_CODE = re.compile(r"`[^`\n]+`")
COMMENT = re.compile(r"%%.*?%%|<!--.*?-->", re.S)
MATH = re.compile(r"\$\$.*?\$\$|\$(?=\S)[^$\n]*?(?<=\S)\$(?!\d)", re.S)
WIKI = re.compile(r"\[\[([^\[\]\n]+?)\]\]")
MARKDOWN = re.compile(r"\[[^\[\]]*\]\(\s*<?([^()<>\s]+)>?(?:\s+\"[^\"]*\")?\s*\)")
TAG = re.compile(r"(?:^|(?<=\s))#([\w/\-]+)")


def key(s: str) -> str:
    return unicodedata.normalize("NFC", s).casefold()


def walk(root: Path) -> list[str]:
    files = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in names:
            if not name.startswith("."):
                files.append((Path(folder) / name).relative_to(root).as_posix())
    return sorted(files)


def split(text: str) -> tuple[dict[str, Any], str]:
    if not text.startswith("---\n"):
        return {}, text
    end = re.search(r"^---[ \t]*$", text[4:], re.M)
    if not end:
        return {}, text
    try:
        fm = yaml.safe_load(text[4 : 4 + end.start()])
    except yaml.YAMLError:
        fm = None
    return (fm if isinstance(fm, dict) else {}), text[4 + end.end() :]


def strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    return []


def link_targets(fm: dict[str, Any], body: str) -> list[str]:
    """Every link's path part (no subpath, no display), properties first."""
    found = [m.group(1) for s in strings(fm) for m in WIKI.finditer(s)]
    clean = MATH.sub(" ", COMMENT.sub(" ", INLINE_CODE.sub(" ", FENCE.sub(" ", body))))
    for m in WIKI.finditer(clean):
        found.append(m.group(1).replace("\\|", "|"))
    for m in MARKDOWN.finditer(clean):
        dest = m.group(1)
        if re.match(r"[a-zA-Z][\w+.-]*:|#|//", dest):
            continue
        found.append(unquote(dest))
    out = []
    for raw in found:
        path = raw.split("|")[0].split("#")[0].strip()
        if path:
            out.append(path)
    return out


def tags_of(fm: dict[str, Any], body: str) -> set[str]:
    raw = fm.get("tags") or fm.get("tag") or []
    listed = raw.split(",") if isinstance(raw, str) else [str(t) for t in raw if isinstance(t, str | int)]
    tags = {key(t.strip().lstrip("#")) for t in listed if t.strip().lstrip("#")}
    clean = MATH.sub(" ", COMMENT.sub(" ", INLINE_CODE.sub(" ", FENCE.sub(" ", body))))
    tags |= {key(m.group(1)) for m in TAG.finditer(clean) if not m.group(1).isdigit()}
    return tags


class Reference:
    def __init__(self, root: Path) -> None:
        self.files = walk(root)
        self.notes = [f for f in self.files if f.endswith(".md")]
        self.by_name: dict[str, list[str]] = defaultdict(list)
        self.by_path: dict[str, str] = {}
        for f in self.files:
            self.by_path[key(f)] = f
            self.by_name[key(posixpath.basename(f))].append(f)
        self.links: dict[str, list[str]] = {}
        self.tags: dict[str, set[str]] = {}
        for note in self.notes:
            text = (root / note).read_bytes().decode("utf-8-sig").replace("\r\n", "\n")
            fm, body = split(text)
            self.links[note] = link_targets(fm, body)
            self.tags[note] = tags_of(fm, body)

    def resolve(self, target: str, source: str) -> list[str]:
        """Candidate files: vault path, then relative to the source, then path suffix, then bare name."""
        t = key(target)
        for want in (t + ".md", t):
            if "/" not in t:
                if self.by_name.get(want):
                    return self.by_name[want]
                continue
            rel = posixpath.normpath(posixpath.join(posixpath.dirname(key(source)), want))
            for p in (want.lstrip("/"), rel):
                if p in self.by_path:
                    return [self.by_path[p]]
            tails = [f for f in self.files if key(f).endswith("/" + want)]
            if tails:
                return tails
        return []

    def report(self) -> dict[str, Any]:
        edges: dict[str, set[str]] = {n: set() for n in self.notes}
        broken: Counter[tuple[str, str]] = Counter()
        for source, targets in self.links.items():
            for t in targets:
                found = self.resolve(t, source)
                if not found:
                    broken[(source, t)] += 1
                for f in found:
                    if f != source and f in edges:
                        edges[source].add(f)
                        edges[f].add(source)
        names: dict[str, list[str]] = defaultdict(list)
        for n in self.notes:
            names[key(posixpath.basename(n)[:-3])].append(n)
        tag_counts = Counter(t for tags in self.tags.values() for t in tags)
        return {
            "orphans": sorted(n for n in self.notes if not edges[n]),
            "broken": broken,
            "same_names": sorted(sorted(v) for v in names.values() if len(v) > 1),
            "tags": dict(tag_counts),
        }


# ---- the comparison --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=VAULTS)
def both(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[dict[str, Any], Any]:
    root = SHARED / "vaults" / request.param
    if not root.is_dir():
        pytest.skip(f"{root} is not here: the shared real vaults are needed for this comparison")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VAULTLENS_HOME", str(tmp_path_factory.mktemp("home")))
        audited = audit_structure(App.open(root).files()).report.as_dict()
    return Reference(root).report(), audited


def test_orphans_agree(both: tuple[dict[str, Any], dict[str, Any]]) -> None:
    reference, audited = both
    assert audited["orphans"] == reference["orphans"]
    assert reference["orphans"], "the comparison would be vacuous"


def test_broken_links_agree(both: tuple[dict[str, Any], dict[str, Any]]) -> None:
    reference, audited = both
    found = Counter((b["source"], b["raw"].split("#")[0].strip()) for b in audited["broken_links"])
    assert found == reference["broken"]
    assert reference["broken"]


def test_same_named_notes_agree(both: tuple[dict[str, Any], dict[str, Any]]) -> None:
    reference, audited = both
    assert sorted(audited["same_name_groups"].values()) == reference["same_names"]


def test_tag_counts_agree(both: tuple[dict[str, Any], dict[str, Any]]) -> None:
    reference, audited = both
    assert {key(k): v for k, v in audited["tag_counts"].items()} == reference["tags"]
    assert reference["tags"]
