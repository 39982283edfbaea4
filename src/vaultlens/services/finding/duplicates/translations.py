"""Translations: the same note in two scripts (Latin ``en``, Cyrillic ``ru``).

Each note is compared only with notes of the other language (candidates by weighted centroid,
:data:`TRANSLATION_CANDIDATES` per note, so memory stays linear), paired with its mutual best match by
the minimum of the two directions' coverage, and confirmed by the structure a translation keeps
(headings, code blocks, links, inline code, numbers).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from difflib import SequenceMatcher

import numpy as np
import numpy.typing as npt

from vaultlens.chunking.scripts import NOT_PROSE
from vaultlens.services.finding.duplicates import vector_pairs
from vaultlens.services.finding.duplicates.coverage import Compared, weightiest
from vaultlens.services.finding.note_profile import FENCE, HEADING

# A translation candidate: one of the TRANSLATION_CANDIDATES other-language notes nearest by centroid,
# while the centroids are no further than CENTROID_SLACK below translation_threshold (fastapi-docs:
# a page and its translation are always each other's nearest, centroid cosine >= 0.70; dup-vault >= 0.82).
TRANSLATION_CANDIDATES = 3
CENTROID_SLACK = 0.1
# Structure agreement a translation needs (fastapi-docs: translations >= 0.97, dup-vault >= 0.92, the
# best other pairs <= 0.69); with no structure to compare it needs BARE_MARGIN more coverage.
STRUCTURE_MIN = 0.8
BARE_MARGIN = 0.1
TIE = 1e-4  # identical copies tie as best match: both are reported
_INLINE_CODE = re.compile(r"`([^`\n]+)`")
_TARGETS = re.compile(r"\]\(([^)\s]+)|\[\[([^\]|#\n]+)|(https?://[^\s)>\]]+)|\{\*\s*([^*}\s]+)")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?(?![\w])")


def translation_candidates(
    centroids: npt.NDArray[np.float32], side: npt.NDArray[np.bool_]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Distinct pairs (Latin note, Cyrillic note) of near centroids, ordered; k-means partitions above
    vector_pairs.EXACT_MAX_ROWS notes."""
    left, right = np.flatnonzero(side), np.flatnonzero(~side)
    if len(centroids) <= vector_pairs.EXACT_MAX_ROWS:
        ls, rs = vector_pairs.top_across(centroids, left, right, TRANSLATION_CANDIDATES)
    else:
        parts = [
            vector_pairs.top_across(centroids, idx[side[idx]], idx[~side[idx]], TRANSLATION_CANDIDATES)
            for idx in vector_pairs.partitions(centroids)
        ]
        ls = np.concatenate([p[0] for p in parts])
        rs = np.concatenate([p[1] for p in parts])
    codes = np.unique(ls * len(centroids) + rs)
    return codes // len(centroids), codes % len(centroids)


def find_translations(
    c: Compared, dismissed: set[tuple[str, str]]
) -> list[tuple[float, int, int, int, int, float]]:
    """(score, Latin note, Cyrillic note, evidence row of each, evidence cosine) of every translation pair."""
    lay, prof, s = c.lay, c.prof, c.s
    notes = np.array(
        [n for n in range(len(lay.notes)) if prof.lang[n] in ("en", "ru") and len(c.body(n))],
        dtype=np.int64,
    )
    side = np.array([prof.lang[n] == "en" for n in notes.tolist()], dtype=bool)
    if not side.any() or side.all():
        return []
    bodies = [c.body(n) for n in notes.tolist()]
    starts = np.cumsum([0] + [len(b) for b in bodies[:-1]])
    centroids = np.empty((len(notes), lay.vecs.shape[1]), dtype=np.float32)
    reader = vector_pairs.RowReader(lay.vecs)
    for s0 in range(0, len(notes), 8192):  # weighted sums of each note's rows, a block of notes at a time
        part = bodies[s0 : s0 + 8192]
        rows = np.concatenate(part)
        weighted = reader.take(rows) * c.weight[rows][:, None].astype(np.float32)
        centroids[s0 : s0 + len(part)] = np.add.reduceat(weighted, starts[s0 : s0 + len(part)] - starts[s0])
    centroids /= np.maximum(np.linalg.norm(centroids, axis=1, keepdims=True), 1e-9)
    ii, jj = translation_candidates(centroids, side)
    close = np.zeros(len(ii), dtype=bool)
    for s0 in range(0, len(ii), 65536):
        a_, b_ = ii[s0 : s0 + 65536], jj[s0 : s0 + 65536]
        close[s0 : s0 + 65536] = np.einsum("ij,ij->i", centroids[a_], centroids[b_]) >= (
            s.translation_threshold - CENTROID_SLACK
        )
    ii, jj = notes[ii[close]], notes[jj[close]]  # note ids, sorted by the Latin note
    scores = np.zeros(len(ii))
    bounds = np.flatnonzero(np.r_[True, ii[1:] != ii[:-1], True]) if len(ii) else np.zeros(1, np.int64)
    for g in range(len(bounds) - 1):
        lo, hi = int(bounds[g]), int(bounds[g + 1])
        scores[lo:hi] = _min_cover(c, int(ii[lo]), jj[lo:hi].tolist())
    best = np.zeros(len(lay.notes))
    np.maximum.at(best, ii, scores)
    np.maximum.at(best, jj, scores)
    keep = (scores >= s.translation_threshold) & (scores >= best[ii] - TIE) & (scores >= best[jj] - TIE)
    kept = []
    for score, a, b in zip(scores[keep].tolist(), ii[keep].tolist(), jj[keep].tolist(), strict=True):
        pa, pb = sorted((lay.notes[a], lay.notes[b]))
        if frozenset((pa, pb)) not in prof.in_exact and (pa, pb) not in dismissed:
            kept.append((score, a, b))
    if not kept:
        return []
    texts = c.body_texts({n for _, a, b in kept for n in (a, b)})
    signatures = {n: structure(t) for n, t in texts.items()}
    out = []
    for score, a, b in kept:
        agree = agreement(signatures[a], signatures[b])
        need = s.translation_threshold + (BARE_MARGIN if agree is None else 0.0)
        if score >= need and (agree is None or agree >= STRUCTURE_MIN):
            out.append((score, a, b, *_translation_evidence(c, a, b)))
    return out


def _min_cover(c: Compared, a: int, others: list[int]) -> npt.NDArray[np.float64]:
    """For each note of ``others``, the lower of its coverage of ``a`` and a's of it (cosines only)."""
    ra = c.body(a)
    parts = [c.body(b) for b in others]
    stacked = np.concatenate(parts)
    starts = np.cumsum([0] + [len(p) for p in parts[:-1]])
    sims = c.lay.vecs[ra] @ c.lay.vecs[stacked].T
    wa, wb = c.weight[ra], c.weight[stacked]
    cover_a = wa @ np.maximum.reduceat(sims, starts, axis=1) / wa.sum()
    cover_b = np.add.reduceat(wb * sims.max(axis=0), starts) / np.add.reduceat(wb, starts)
    result: npt.NDArray[np.float64] = np.minimum(cover_a, cover_b)
    return result


def _translation_evidence(c: Compared, a: int, b: int) -> tuple[int, int, float]:
    ra, rb = c.body(a), c.body(b)
    sims = c.lay.vecs[ra] @ c.lay.vecs[rb].T
    picks = [
        (float(sims[i, j]), float(c.weight[ra[i]]), int(ra[i]), int(rb[j]))
        for i, j in enumerate(sims.argmax(axis=1).tolist())
    ]
    v, _, x, y = weightiest(picks)
    return x, y, v


@dataclass(frozen=True)
class Structure:
    """What a translation keeps: heading levels in order, code blocks, link targets, inline code, numbers."""

    headings: str
    fences: int
    targets: dict[str, int]
    code: dict[str, int]
    numbers: dict[str, int]


def structure(text: str) -> Structure:
    headings: list[str] = []
    fences = 0
    fence = ""
    targets: dict[str, int] = defaultdict(int)
    code: dict[str, int] = defaultdict(int)
    numbers: dict[str, int] = defaultdict(int)
    for line in text.split("\n"):
        m = FENCE.match(line)
        if m and (not fence or m.group(1)[0] == fence[0]):
            fences += not fence
            fence = "" if fence else m.group(1)
            continue
        if fence:
            continue
        h = HEADING.match(line)
        if h:
            headings.append(str(len(h.group(1))))
        for span in _INLINE_CODE.findall(line):
            code[span.strip()] += 1
        for groups in _TARGETS.findall(line):
            target = next(g for g in groups if g)
            targets[target] += 1
        for num in _NUMBER.findall(NOT_PROSE.sub(" ", line)):
            numbers[num] += 1
    return Structure("".join(headings), fences, dict(targets), dict(code), dict(numbers))


def _dice(a: dict[str, int], b: dict[str, int]) -> float | None:
    if not a and not b:
        return None
    common = sum(min(v, b.get(k, 0)) for k, v in a.items())
    return 2 * common / (sum(a.values()) + sum(b.values()))


def _ratio(x: int, y: int) -> float | None:
    return None if x == y == 0 else min(x, y) / max(x, y)


def agreement(a: Structure, b: Structure) -> float | None:
    """Mean agreement of the structure both notes show (None when neither shows any)."""
    parts = [
        _ratio(len(a.headings), len(b.headings)),
        SequenceMatcher(None, a.headings, b.headings, autojunk=False).ratio()
        if a.headings or b.headings
        else None,
        _ratio(a.fences, b.fences),
        _dice(a.targets, b.targets),
        _dice(a.code, b.code),
        _dice(a.numbers, b.numbers),
    ]
    known = [p for p in parts if p is not None]
    return sum(known) / len(known) if known else None
