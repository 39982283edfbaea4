"""What a candidate section's match is worth as evidence that it answers the query.

Search fuses a dense score and a lexical one per section (:mod:`vaultlens.services.finding.search`); this
module says, from the section's own text, where either kind of evidence does not apply:

Two languages or one decides most of it. Where the candidates are written in one language (a
documentation folder, an encyclopedia, an English vault; a Russian page's English identifiers do not
make it bilingual), every candidate can match the query's words alike, so BM25 weighs them as it
does; where they are in both (:func:`bilingual`), a note in the other language than the query's
matches none of its words, and word matches pull notes of the query's language over the answer:

- **Script.** Among candidates in both languages, a lexical match between a query whose words are all
  in one script and a section written in the other is a word in passing (a Russian alias in an English
  note, an English term in a Russian one), never the section's subject: it counts nothing. Among
  candidates in one language it counts (an English identifier on a Russian documentation page).
- **The tier by language pair.** Among candidates in both languages the quality tier is weighed
  ``search.tier_weight`` within a language and ``search.tier_weight_across`` across (:func:`crosses`;
  front matter is in its note's language); among candidates in one language every section gets
  ``search.tier_weight`` (a stray section in the other language is no language pair of the query's).
- **Coverage.** Among candidates written in one language, a note's lexical part is its share of the
  best note's score. Among candidates in both, the best partial match in the query's language is no
  yardstick: a note's part is how much of the query it covers.
- **Everyday words** (:func:`vaultlens.index.lexical.query_evidence`) are left out of the words matched
  only in a vault written in both languages (:func:`two_languages`, from the script mix the index
  records): the words are looked up before the candidates are known.
- **Front matter.** Properties are not an answer: a front matter section ranks only where the query's
  words matched a property (its own lexical score), or where it is all the note holds.
- **Hubs.** A section that is mostly links (a home page, a map of content) carries its targets'
  evidence, not its own: it ranks just below the best of the notes it links to among the candidates.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vaultlens.chunking.scripts import CYRILLIC, LANG_MIN_LETTERS, LATIN, ScriptMix, script_mix

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from vaultlens.chunking.chunker import Chunk

# A wiki link or embed ([[target#heading|label]]) or a Markdown link to a local note ([label](target.md)).
_WIKI = re.compile(r"!?\[\[([^\]|#\n]*)(?:#[^\]|\n]*)?(?:\|([^\]\n]*))?\]\]")
_MD = re.compile(r"\[([^\]\n]*)\]\((?!https?:)([^)\n]+?\.md)\)")
# A section is a hub where it holds at least HUB_MIN_LINKS links and at least HUB_LINE_SHARE of its lines
# (headings and blank lines aside) hold one: a home page's or a map of content's lists of [[links]], each
# with a few words. A prose paragraph citing two notes is one line with links among several without.
HUB_LINE_SHARE = 0.6
HUB_MIN_LINKS = 3
HUB_MARGIN = 1e-3
# A section whose letters in the query's script are under this share holds the query's words only in
# passing (the complement of the 85% a section needs to be Latin prose: chunking/scripts.py)
PASSING_SHARE = 0.15  # how far below its best target a hub ranks


def query_script(terms: Sequence[str]) -> str | None:
    """``ru`` or ``en`` when every one of the query's (stemmed, stop words left out) terms with a
    letter is in that script; None for a query mixing both (a Russian question naming ``git``), whose
    Latin words are evidence in a Russian section and the other way round."""
    cyr = any(CYRILLIC.search(t) for t in terms)
    lat = any(LATIN.search(t) for t in terms)
    return "ru" if cyr and not lat else "en" if lat and not cyr else None


@dataclass(frozen=True, slots=True)
class SectionTraits:
    """What the fusion reads of one candidate section."""

    language: str | None  # ru / en / None (mixed or too short to say)
    mix: ScriptMix  # its prose letters per script
    frontmatter: bool
    links_to: tuple[str, ...]  # a hub's link targets as written (empty for a section that is no hub)


def traits(chunk: Chunk) -> SectionTraits:
    text = chunk.text
    hub: tuple[str, ...] = ()
    if not chunk.frontmatter:
        lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
        targets = [
            [m.group(1) for m in _WIKI.finditer(ln)] + [m.group(2) for m in _MD.finditer(ln)] for ln in lines
        ]
        links = [t.strip() for found in targets for t in found if t.strip()]
        if len(links) >= HUB_MIN_LINKS and sum(map(bool, targets)) >= HUB_LINE_SHARE * len(lines):
            hub = tuple(links)
    if chunk.frontmatter:  # metadata: Latin keys over any language, so no script of its own
        return SectionTraits(None, ScriptMix(), True, ())
    mix = script_mix(text)
    return SectionTraits(mix.language(), mix, False, hub)


# Candidates are in both languages where each language holds at least this share of those whose
# language can be told. Measured on the candidates of the personal, examples, docs and shared sets:
# 0.1 still counted the ru-wiki vault's English sections as a second language (ru→ru hit@1 0.74),
# 0.2 and 0.3 gave the same rankings on every set (docs/benchmarks.md).
BILINGUAL_SHARE = 0.2


def bilingual(sections: Sequence[SectionTraits]) -> bool:
    """Whether ``sections`` (a query's candidates) are written in both languages, each holding at
    least :data:`BILINGUAL_SHARE` of those whose language can be told."""
    langs = [t.language for t in sections if t.language]
    return bool(langs) and min(langs.count("ru"), langs.count("en")) >= BILINGUAL_SHARE * len(langs)


def two_languages(vault: ScriptMix | None) -> bool:
    """Whether a vault's notes are written in both languages: each script holds at least
    :data:`BILINGUAL_SHARE` of its prose letters (as the last index run counted them; None before
    one did). The vaults measured fall far on either side: personal notes 43-53% Latin, ru-wiki 34%;
    fastapi-docs' Russian pages 12% (English identifiers), the English vaults 0%."""
    if vault is None or not vault.letters:
        return False
    return min(vault.cyrillic, vault.latin) >= BILINGUAL_SHARE * vault.letters


def crosses(query: str | None, section: SectionTraits, note: str | None = None) -> bool:
    """Whether a query in script ``query`` and ``section`` are two languages (for the quality tier's
    weight): the section's language, or for front matter its note's, ``note`` (the language of the
    note's other candidate sections: :func:`note_languages`). Front matter's aliases and tags are its
    note's names, often in the other language: README's example finds the Russian caching note by its
    alias "Caching", a match e5 does not see across languages (it ranked the note second, below an
    English cheat sheet)."""
    if query is None:
        return False
    language = note if section.frontmatter else section.language
    return language is not None and language != query


def note_languages(sections: Sequence[SectionTraits], paths: Sequence[str]) -> dict[str, str]:
    """Each note's language as its candidate sections tell it: the language most of them are in."""
    counts: dict[str, dict[str, int]] = {}
    for t, p in zip(sections, paths, strict=True):
        if t.language:
            by = counts.setdefault(p, {})
            by[t.language] = by.get(t.language, 0) + 1
    return {p: max(by, key=lambda lang: (by[lang], lang)) for p, by in counts.items()}


def foreign(query: str | None, section: ScriptMix) -> bool:
    """Whether a query whose words are all in script ``query`` can only have matched a section in
    passing: the section has enough letters to tell, and under :data:`PASSING_SHARE` of them are in
    the query's script. A Russian page of technical documentation, whose identifiers and code are
    English (20-40% of its letters), keeps an English query's matches: they are its subject."""
    if query is None or section.letters < LANG_MIN_LETTERS:
        return False
    same = section.latin if query == "en" else section.cyrillic
    return same < PASSING_SHARE * section.letters


def resolve_targets(targets: Iterable[str], paths: Iterable[str]) -> set[str]:
    """The note paths among ``paths`` that link targets name, as Obsidian resolves a link: the path
    without ``.md``, or its last part alone (``[[Кэширование]]`` → ``tech/Кэширование.md``)."""
    by_name: dict[str, set[str]] = {}
    for p in paths:
        stem = p.removesuffix(".md")
        by_name.setdefault(stem.casefold(), set()).add(p)
        by_name.setdefault(stem.rsplit("/", 1)[-1].casefold(), set()).add(p)
    found: set[str] = set()
    for t in targets:
        found |= by_name.get(t.removesuffix(".md").replace("%20", " ").casefold(), set())
    return found


NO_TRAITS = SectionTraits(None, ScriptMix(), False, ())  # a section that vanished between the reads
