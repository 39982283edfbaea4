"""One `duplicates` run's view of the vault: each note's compared sections, their weights, the
candidate pairs (close sections by meaning, shared lines by text) and each candidate's *coverage*:
every section's best match in the other note, by cosine or by copied lines, whichever is higher.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from vaultlens.config.settings import DiscoverSettings
from vaultlens.index.store import StoreReads
from vaultlens.services.finding.duplicates import vector_pairs
from vaultlens.services.finding.note_profile import layout, profile

# Coverage of a note is the mean, over its sections weighted by their letters and digits (boilerplate
# discounted), of each section's best match in the other note; a section must reach this far below
# the threshold to count at all (below it, it counts as 0).
SECTION_SLACK = 0.05
# A line shared by 2..SHARED_LINE_MAX_NOTES notes (and not boilerplate) with at least
# LINE_MIN_LETTERS letters proposes its notes as a candidate pair once they share CANDIDATE_LETTERS.
LINE_MIN_LETTERS = 12
SHARED_LINE_MAX_NOTES = 50
CANDIDATE_LETTERS = 60
# Copied text (candidates, shared passages) counts every line but a template's: one in this many notes or
# more, or in the boilerplate share of the vault when that is more. Boilerplate's own floor (5 notes) is
# for coverage: the same install steps copied into 7 importer pages are a shared passage of each pair.
TEMPLATE_MIN_NOTES = 10
# the section shown for a pair: of those matched this close to the best, the one that adds most to coverage
EVIDENCE_SLACK = 0.1


@dataclass
class Rated:
    """One candidate pair's coverage, both ways."""

    na: int
    nb: int
    cover_a: float
    cover_b: float
    value_a: npt.NDArray[np.float64]  # per body row of a: its best match in b (cosine or copied lines)
    partner_a: npt.NDArray[np.int64]  # the row of b it matched (-1: none)
    value_b: npt.NDArray[np.float64]
    partner_b: npt.NDArray[np.int64]


class Compared:
    """One `duplicates` run: the layout, the profile and the settings it rates pairs with."""

    def __init__(self, store: StoreReads, threshold: float, min_chars: int, s: DiscoverSettings) -> None:
        self.store, self.threshold, self.s = store, threshold, s
        self.lay = lay = layout(store)
        self.prof = profile(store, lay, s)
        self.weight = self.prof.weights(s.boilerplate_weight)
        self.short = self.prof.note_letters < min_chars
        # the compared rows of every note (not front matter, not a short note), in line order
        usable = np.flatnonzero(~lay.frontmatter & ~self.short[lay.note_of])
        self._body = usable[np.lexsort((self.prof.first_line[usable], lay.note_of[usable]))]
        self._body_starts = np.searchsorted(lay.note_of[self._body], np.arange(len(lay.notes) + 1))
        self._keys: dict[int, npt.NDArray[np.int64]] = {}
        self.template_line = self.prof.line_notes >= max(TEMPLATE_MIN_NOTES, self.prof.boiler_min)

    def body(self, n: int) -> npt.NDArray[np.int64]:
        """Note ``n``'s compared rows in line order (none for a short note)."""
        return self._body[self._body_starts[n] : self._body_starts[n + 1]]

    def note_keys(self, n: int) -> npt.NDArray[np.int64]:
        """Sorted distinct line keys of a note's body."""
        keys = self._keys.get(n)
        if keys is None:
            idx, _ = self.prof.lines(self.body(n))
            keys = self._keys[n] = np.unique(self.prof.line_key[idx])
        return keys

    # ---- candidates ----------------------------------------------------------------------------
    def vector_best(self, floor: float) -> dict[tuple[int, int], dict[int, tuple[float, int]]]:
        """best[(note a, note b)][row of a] = (best cosine >= floor of that row against b, the row of b)."""
        lay = self.lay
        usable = ~lay.frontmatter & ~self.short[lay.note_of]
        # not Store.neighbours: at 100,000 notes its candidates cost 483 s against 44 s for the
        # partitions (docs/benchmarks.md, bench/dup_scale.py), so duplicates keep the partitions
        best: dict[tuple[int, int], dict[int, tuple[float, int]]] = defaultdict(dict)
        for r, c, sims in vector_pairs.close_pairs(lay.vecs, np.flatnonzero(usable), floor):
            for i, j, ni, nj, sc in zip(
                r.tolist(),
                c.tolist(),
                lay.note_of[r].tolist(),
                lay.note_of[c].tolist(),
                sims.tolist(),
                strict=True,
            ):
                if ni == nj:
                    continue
                for x, y, nx, ny in ((i, j, ni, nj), (j, i, nj, ni)):
                    cur = best[(nx, ny)].get(x)
                    if cur is None or sc > cur[0]:
                        best[(nx, ny)][x] = (sc, y)
        return best

    def text_candidates(self) -> set[tuple[int, int]]:
        """Note pairs that share lines (copied text, no template's) of CANDIDATE_LETTERS letters or more."""
        prof, lay = self.prof, self.lay
        line_row = np.repeat(np.arange(len(lay.rowids), dtype=np.int64), np.diff(prof.line_ptr))
        keep = (
            ~self.template_line & (prof.line_letters >= LINE_MIN_LETTERS) & ~self.short[lay.note_of[line_row]]
        )
        keep &= ~lay.frontmatter[line_row]
        notes, keys, lets = lay.note_of[line_row[keep]], prof.line_key[keep], prof.line_letters[keep]
        if not len(keys):
            return set()
        order = np.lexsort((notes, keys))
        notes, keys, lets = notes[order], keys[order], lets[order]
        first = np.ones(len(keys), dtype=bool)
        first[1:] = (keys[1:] != keys[:-1]) | (notes[1:] != notes[:-1])
        notes, keys, lets = notes[first], keys[first], lets[first]
        bounds = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1], True])
        sizes = np.diff(bounds)
        shared: dict[tuple[int, int], int] = defaultdict(int)
        for g in np.flatnonzero((sizes >= 2) & (sizes <= SHARED_LINE_MAX_NOTES)).tolist():
            members = notes[bounds[g] : bounds[g + 1]].tolist()
            n_letters = int(lets[bounds[g]])
            for i, a in enumerate(members):
                for b in members[i + 1 :]:
                    shared[(a, b)] += n_letters
        return {pair for pair, n in shared.items() if n >= CANDIDATE_LETTERS}

    # ---- rating ---------------------------------------------------------------------------------
    def _containment(self, rows: npt.NDArray[np.int64], other: int) -> npt.NDArray[np.float64]:
        """Per row: the share of its non-boilerplate letters on lines that ``other`` also has."""
        prof = self.prof
        idx, pos = prof.lines(rows)
        if not len(idx):
            return np.zeros(len(rows))
        own = ~prof.line_boiler[idx]
        found = np.isin(prof.line_key[idx], self.note_keys(other)) & own
        lets = prof.line_letters[idx]
        total = np.bincount(pos, weights=lets * own, minlength=len(rows))
        hit = np.bincount(pos, weights=lets * found, minlength=len(rows))
        return np.where(total > 0, hit / np.maximum(total, 1), 0.0)

    def _copy_partner(self, row: int, other: int) -> int:
        """The row of ``other`` holding most of ``row``'s copied letters."""
        prof = self.prof
        idx, _ = prof.lines(np.array([row], dtype=np.int64))
        keys = prof.line_key[idx][~prof.line_boiler[idx]]
        b_rows = self.body(other)
        b_idx, b_pos = prof.lines(b_rows)
        hit = np.isin(prof.line_key[b_idx], keys)
        if not hit.any():
            return int(b_rows[0])
        counts = np.bincount(b_pos[hit], weights=prof.line_letters[b_idx][hit], minlength=len(b_rows))
        return int(b_rows[int(np.argmax(counts))])

    def rate(self, na: int, nb: int, best: dict[tuple[int, int], dict[int, tuple[float, int]]]) -> Rated:
        sides = []
        for x, y in ((na, nb), (nb, na)):
            rows = self.body(x)
            matched = best.get((x, y), {})
            cos = np.array([matched.get(int(r), (0.0, -1))[0] for r in rows])
            partner = np.array([matched.get(int(r), (0.0, -1))[1] for r in rows], dtype=np.int64)
            copied = self._containment(rows, y)
            value = np.maximum(cos, copied)
            for i in np.flatnonzero((copied > cos) & (copied > 0)).tolist():
                partner[i] = self._copy_partner(int(rows[i]), y)
            sides.append((value, partner))
        (va, pa), (vb, pb) = sides
        return Rated(na, nb, self.cover(na, va), self.cover(nb, vb), va, pa, vb, pb)

    def sections_against(self, x: int, y: int) -> list[tuple[int, int, float]]:
        """Note ``x``'s compared sections as (first line, last line, 1-based) with each one's best
        match in ``y``, cosine or copied lines (what :meth:`rate` averages into the coverage), for
        this one pair (a merge asks which sections of OTHER its KEEP already covers)."""
        rx, ry = self.body(x), self.body(y)
        best: dict[tuple[int, int], dict[int, tuple[float, int]]] = {}
        if len(rx) and len(ry):
            sims = (
                np.asarray(self.lay.vecs[rx], dtype=np.float32)
                @ np.asarray(self.lay.vecs[ry], dtype=np.float32).T
            )
            at = sims.argmax(axis=1)
            best[(x, y)] = {
                int(r): (float(sims[i, at[i]]), int(ry[at[i]])) for i, r in enumerate(rx.tolist())
            }
        value = self.rate(x, y, best).value_a
        first, last = self.prof.first_line, self.prof.last_line
        return [
            (int(first[r]), int(last[r]), float(v)) for r, v in zip(rx.tolist(), value.tolist(), strict=True)
        ]

    def evidence(self, r: Rated) -> tuple[int, int, float]:
        """(row of a, row of b, value) of the section that stands for the pair (:func:`weightiest`),
        so a boilerplate tail that happens to match best does not."""
        picks: list[tuple[float, float, int, int]] = []  # (value, weight, row of a, row of b)
        for n, value, partner, flip in (
            (r.na, r.value_a, r.partner_a, False),
            (r.nb, r.value_b, r.partner_b, True),
        ):
            rows = self.body(n)
            for i in np.flatnonzero(partner >= 0).tolist():
                x, y = (int(partner[i]), int(rows[i])) if flip else (int(rows[i]), int(partner[i]))
                picks.append((float(value[i]), float(self.weight[rows[i]]), x, y))
        v, _, x, y = weightiest(picks)
        return x, y, v

    def cover(self, n: int, value: npt.NDArray[np.float64]) -> float:
        w = self.weight[self.body(n)]
        counted = np.where(value >= self.threshold - SECTION_SLACK, value, 0.0)
        return float((w * counted).sum() / w.sum()) if len(w) else 0.0

    def content_lines(self, n: int) -> npt.NDArray[np.int64]:
        """A note's lines that are not a template's, in line order, each line once."""
        prof = self.prof
        idx, _ = prof.lines(self.body(n))
        idx = idx[~self.template_line[idx]]
        idx = idx[np.argsort(prof.line_no[idx], kind="stable")]
        if len(idx):
            idx = idx[np.r_[True, prof.line_no[idx][1:] != prof.line_no[idx][:-1]]]
        return idx

    def row_at(self, n: int, line_no: int) -> int:
        """The body row of note ``n`` whose lines include line number ``line_no`` (1-based)."""
        rows = self.body(n)
        where = np.flatnonzero(
            (self.prof.first_line[rows] <= line_no) & (line_no <= self.prof.last_line[rows])
        )
        return int(rows[where[0]])

    def line_texts(self, n: int, ranges: list[tuple[int, int]]) -> dict[int, str]:
        """Note ``n``'s lines within ``ranges`` (first, last; 1-based) by line number, a template's left out."""
        rows = self.body(n)
        first, last = self.prof.first_line[rows], self.prof.last_line[rows]
        pick = np.zeros(len(rows), dtype=bool)
        for lo, hi in ranges:
            pick |= (first <= hi) & (last >= lo)
        rows = rows[pick]
        idx, _ = self.prof.lines(rows)
        template = set(self.prof.line_no[idx][self.template_line[idx]].tolist())
        chunks = self.store.chunks(int(k) for k in self.lay.rowids[rows])
        out: dict[int, str] = {}
        for r in rows.tolist():
            chunk = chunks.get(int(self.lay.rowids[r]))
            if chunk is None:
                continue
            for no, line in enumerate(chunk.text.split("\n"), start=chunk.start_line + 1):
                if no not in template and any(lo <= no <= hi for lo, hi in ranges):
                    out[no] = line
        return out

    def body_texts(self, notes: set[int]) -> dict[int, str]:
        rows = np.concatenate([self.body(n) for n in notes])
        chunks = self.store.chunks(int(k) for k in self.lay.rowids[rows])
        return {
            n: "\n".join(
                chunks[int(self.lay.rowids[r])].text
                for r in self.body(n)
                if int(self.lay.rowids[r]) in chunks
            )
            for n in notes
        }


def weightiest(picks: list[tuple[float, float, int, int]]) -> tuple[float, float, int, int]:
    """Of the (value, weight, row, row) picks within EVIDENCE_SLACK of the best value, the largest value x weight."""
    top = max(p[0] for p in picks)
    return max((p for p in picks if p[0] >= top - EVIDENCE_SLACK), key=lambda p: (p[0] * p[1], p[0]))
