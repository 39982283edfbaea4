"""Duplicate candidates from the vectors and texts already in the index (no embedding calls).

A candidate pair is rated by coverage (:mod:`vaultlens.services.finding.duplicates.coverage`) and reported as

- ``near_duplicate`` (both notes covered) or ``contained`` (the smaller inside the larger);
- ``translation``: the same note in two languages (:mod:`vaultlens.services.finding.duplicates.translations`);
- ``shared_passage``: notes that otherwise differ but share one or more copied sections, reported
  apart, with the line ranges on both sides (:mod:`vaultlens.services.finding.duplicates.passages`).

Exact copies (after line endings, BOM and trailing whitespace) are grouped before any of this.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from vaultlens.config.settings import DiscoverSettings
from vaultlens.index.store import StoreReads
from vaultlens.services.finding.discover import SectionMatch
from vaultlens.services.finding.duplicates.coverage import SECTION_SLACK, Compared
from vaultlens.services.finding.duplicates.passages import Span, find_passages
from vaultlens.services.finding.duplicates.translations import find_translations
from vaultlens.services.finding.note_profile import ExactGroup
from vaultlens.services.finding.section import Section
from vaultlens.services.serial import AsDict


@dataclass(frozen=True, slots=True)
class LineRange:
    """Lines of a note (1-based, inclusive) and the heading path where they start."""

    start_line: int
    end_line: int
    heading_path: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Passage:
    """One run of sections copied between two notes: where it is in ``a`` and in ``b``."""

    a: LineRange
    b: LineRange
    score: float


@dataclass(frozen=True, slots=True)
class DuplicatePair:
    a: str
    b: str
    score: float
    # near_duplicate (both ways) | contained (the smaller inside the larger) | translation (the same
    # note in two languages) | shared_passage (sections copied between notes that otherwise differ)
    kind: str
    same_name: bool
    evidence: SectionMatch
    languages: tuple[str | None, str | None] = (None, None)  # of a and b: "en" (Latin), "ru" (Cyrillic)
    passages: list[Passage] = field(default_factory=list)  # shared_passage only


@dataclass(frozen=True, slots=True)
class Dismissed:
    """A pair hidden from ``duplicates`` until either note changes, as the vault names them."""

    a: str
    b: str

    def as_dict(self) -> dict[str, list[str]]:
        return {"dismissed": [self.a, self.b]}


@dataclass(frozen=True, slots=True)
class Restored:
    """A dismissed pair ``duplicates`` lists again."""

    a: str
    b: str

    def as_dict(self) -> dict[str, list[str]]:
        return {"restored": [self.a, self.b]}


COUNTED = ("exact", "near_duplicate", "contained", "translation", "shared_passage", "same_name")


@dataclass
class DuplicateReport(AsDict):
    threshold: float
    translation_threshold: float = 0.0
    passage_threshold: float = 0.0
    exact: list[ExactGroup] = field(default_factory=list)
    # whole notes (near_duplicate, contained, translation), then notes that share a passage, best first
    pairs: list[DuplicatePair] = field(default_factory=list)
    shared_passages: list[DuplicatePair] = field(default_factory=list)
    same_name: list[list[str]] = field(default_factory=list)
    excluded_short: int = 0
    boilerplate_min_notes: int = 0  # a line or heading in this many notes or more is boilerplate
    total_pairs: int = 0  # before the limit
    total_shared_passages: int = 0
    truncated: bool = False  # True when either list was cut at the limit
    # before the limit: groups of exact copies, pairs of each kind, groups of same-named notes
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTED, 0))


# a reported pair before rendering: (score, kind, note a, note b, evidence (row a, row b, score), passages)
_Found = tuple[float, str, int, int, tuple[int, int, float], list[Span]]


def duplicates(
    store: StoreReads,
    threshold: float,
    limit: int,
    min_chars: int,
    *,
    settings: DiscoverSettings | None = None,
) -> DuplicateReport:
    s = settings or DiscoverSettings()
    run = Compared(store, threshold, min_chars, s)
    lay, prof = run.lay, run.prof
    report = DuplicateReport(
        threshold, s.translation_threshold, s.passage_threshold, boilerplate_min_notes=prof.boiler_min
    )
    report.exact = prof.exact
    report.excluded_short = int(run.short.sum())
    dismissed = store.dismissed_pairs()
    floor = min(threshold, s.passage_threshold) - SECTION_SLACK
    best = run.vector_best(floor)
    candidates = {(min(a, b), max(a, b)) for a, b in best} | run.text_candidates()
    found: list[_Found] = []
    for na, nb in sorted(candidates):
        la, lb = prof.lang[na], prof.lang[nb]
        if la and lb and la != lb:
            continue  # notes in two languages: only as a translation
        a, b = sorted((lay.notes[na], lay.notes[nb]))
        if frozenset((a, b)) in prof.in_exact or (a, b) in dismissed:
            continue
        r = run.rate(na, nb, best)
        score = max(r.cover_a, r.cover_b)
        if score >= threshold:
            kind = "near_duplicate" if min(r.cover_a, r.cover_b) >= threshold else "contained"
            ev = run.evidence(r)
            found.append((score, kind, na, nb, ev, []))
            continue
        spans = find_passages(run, r)
        if spans:
            lead = max(spans, key=lambda p: p[6])
            found.append((lead[6], "shared_passage", na, nb, (lead[0], lead[3], lead[6]), spans))
    for score, na, nb, x, y, cos in find_translations(run, dismissed):
        found.append((score, "translation", na, nb, (x, y, cos), []))

    def order(item: _Found) -> tuple[float, str, str]:
        a, b = sorted((lay.notes[item[2]], lay.notes[item[3]]))
        return (-item[0], a, b)

    whole = sorted((f for f in found if f[1] != "shared_passage"), key=order)
    shared = sorted((f for f in found if f[1] == "shared_passage"), key=order)
    report.total_pairs, report.total_shared_passages = len(whole), len(shared)
    for f in found:
        report.counts[f[1]] += 1
    report.truncated = len(whole) > limit or len(shared) > limit
    whole, shared = whole[:limit], shared[:limit]
    rows = {
        r for f in (*whole, *shared) for r in (f[4][0], f[4][1], *(x for p in f[5] for x in (p[0], p[3])))
    }
    chunks = store.chunks(int(lay.rowids[r]) for r in rows)
    refs = {r: Section.of(chunks[int(lay.rowids[r])]) for r in rows if int(lay.rowids[r]) in chunks}
    for target, items in ((report.pairs, whole), (report.shared_passages, shared)):
        for score, kind, na, nb, (x, y, top), spans in items:
            a, b = lay.notes[na], lay.notes[nb]
            match = SectionMatch(refs[x], refs[y], round(top, 4))
            langs = (prof.lang[na], prof.lang[nb])
            passages = [
                Passage(
                    LineRange(a0, a1, refs[ra].heading_path),
                    LineRange(b0, b1, refs[rb].heading_path),
                    round(sc, 4),
                )
                for ra, a0, a1, rb, b0, b1, sc in spans
            ]
            if a > b:
                a, b = b, a
                match = SectionMatch(match.other, match.source, match.score)
                langs = (langs[1], langs[0])
                passages = [Passage(p.b, p.a, p.score) for p in passages]
            target.append(
                DuplicatePair(a, b, round(score, 4), kind, _same_name(a, b), match, langs, passages)
            )
    reported = prof.in_exact | {frozenset((lay.notes[f[2]], lay.notes[f[3]])) for f in found}
    by_name: dict[str, list[str]] = defaultdict(list)
    for p in lay.notes:
        by_name[PurePosixPath(p).name.casefold()].append(p)
    report.same_name = sorted(
        sorted(ps)
        for ps in by_name.values()
        if len(ps) > 1 and any(frozenset((x, y)) not in reported for x in ps for y in ps if x < y)
    )
    report.counts["exact"], report.counts["same_name"] = len(report.exact), len(report.same_name)
    return report


def _same_name(a: str, b: str) -> bool:
    return PurePosixPath(a).name.casefold() == PurePosixPath(b).name.casefold()
