"""Shared passages: text copied between two notes that otherwise differ, with its lines on both sides.

Copied lines (the same line keys, in the same order) are the seeds; the words around each run of them
are then aligned, so a copy with small edits (another path, a version, a reworded step) is found whole
and its lines are where the copy starts and ends on each side.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher

import numpy as np

from vaultlens.services.finding.duplicates.coverage import CANDIDATE_LETTERS, Compared, Rated

# A shared passage, while the notes are not duplicates as a whole: copied text with at least this many
# matched letters (a template's lines left out), or a run of sections matched at passage_threshold or
# better with this many letters that are not boilerplate.
PASSAGE_MIN_LETTERS = 200
# ... and a run of sections must be copied text: this share of the shorter side's words, in order, in
# the other side (fastapi-docs: copied passages >= 0.61, sections on the same topic <= 0.58)
PASSAGE_MIN_OVERLAP = 0.6
PASSAGE_MAX_WORDS = 3000
COPY_GAP = 2  # other lines a run of copied lines may skip, on either side
# Copied text with edits: the words of SEED_WINDOW lines around each run of copied lines are aligned;
# matched words EDIT_WORDS apart or closer on both sides belong to one passage, which must have
# PASSAGE_MIN_LETTERS matched letters making up PASSAGE_MIN_DENSITY of its letters on each side.
SEED_WINDOW = 10
EDIT_WORDS = 6
EDGE_WORDS = 3  # words a passage's first and last matched block have at least
PASSAGE_MIN_DENSITY = 0.7
_WORD = re.compile(r"[^\W_]+")
# a passage: (row of a, first line, last line, row of b, first line, last line, score); lines 1-based
Span = tuple[int, int, int, int, int, int, float]
Run = tuple[int, int, int, int, int]  # first and last line in a, in b (1-based), copied letters


def find_passages(c: Compared, r: Rated) -> list[Span]:
    """Passages shared by two notes that are not duplicates as a whole, each once, in a's order:
    copied text (:func:`copied_passages`), then runs of sections that match at passage_threshold
    (by meaning or copied lines) and whose words are mostly the same."""
    kept = copied_passages(c, r.na, r.nb)
    for span in section_runs(c, r):
        if not any(_overlaps(span, q) for q in kept):
            kept.append(span)
    return sorted(kept, key=lambda p: p[1])


def copied_passages(c: Compared, na: int, nb: int) -> list[Span]:
    """Copied text, edits allowed: the words around runs of copied lines (:func:`copied_runs`) aligned,
    in windows of nearby runs that copy CANDIDATE_LETTERS or more together."""
    windows: list[list[int]] = []  # first and last line in a, in b, copied letters
    for a0, a1, b0, b1, letters in copied_runs(c, na, nb):
        w = [a0 - SEED_WINDOW, a1 + SEED_WINDOW, b0 - SEED_WINDOW, b1 + SEED_WINDOW, letters]
        last = windows[-1] if windows else None
        if last is not None and w[0] <= last[1] and w[2] <= last[3] and last[2] <= w[3]:
            last[1], last[2], last[3] = max(last[1], w[1]), min(last[2], w[2]), max(last[3], w[3])
            last[4] += letters
        else:
            windows.append(w)
    windows = [w for w in windows if w[4] >= CANDIDATE_LETTERS]
    if not windows:
        return []
    texts_a = c.line_texts(na, [(w[0], w[1]) for w in windows])
    texts_b = c.line_texts(nb, [(w[2], w[3]) for w in windows])
    spans: list[Span] = []
    for a0, a1, b0, b1, _ in windows:
        for span in _aligned(c, na, nb, _words(texts_a, a0, a1), _words(texts_b, b0, b1)):
            if not any(_overlaps(span, q) for q in spans):
                spans.append(span)
    return spans


def _words(texts: dict[int, str], first: int, last: int) -> list[tuple[str, int]]:
    """(word, line) of the lines first..last that ``texts`` holds, in order."""
    words = [(w, n) for n in range(first, last + 1) if n in texts for w in _WORD.findall(texts[n].casefold())]
    return words[:PASSAGE_MAX_WORDS]


def _aligned(
    c: Compared, na: int, nb: int, wa: list[tuple[str, int]], wb: list[tuple[str, int]]
) -> list[Span]:
    """Passages of matched words: blocks at most EDIT_WORDS apart on both sides, enough of them."""
    if not wa or not wb:
        return []
    matcher = SequenceMatcher(None, [w for w, _ in wa], [w for w, _ in wb], autojunk=False)
    blocks = [m for m in matcher.get_matching_blocks() if m.size]
    chains: list[list[tuple[int, int, int]]] = []
    for m in blocks:
        prev = chains[-1][-1] if chains else None
        if (
            prev is not None
            and m.a - prev[0] - prev[2] <= EDIT_WORDS
            and m.b - prev[1] - prev[2] <= EDIT_WORDS
        ):
            chains[-1].append((m.a, m.b, m.size))
        else:
            chains.append([(m.a, m.b, m.size)])
    spans: list[Span] = []
    for chain in chains:
        while chain and chain[0][2] < EDGE_WORDS:  # a passage starts and ends with copied words, not "the"
            chain.pop(0)
        while chain and chain[-1][2] < EDGE_WORDS:
            chain.pop()
        if not chain:
            continue
        a0, b0 = chain[0][0], chain[0][1]
        a1, b1 = chain[-1][0] + chain[-1][2], chain[-1][1] + chain[-1][2]
        matched = sum(len(w) for x, _, size in chain for w, _ in wa[x : x + size])
        span_a = sum(len(w) for w, _ in wa[a0:a1])
        span_b = sum(len(w) for w, _ in wb[b0:b1])
        density = matched / max(span_a, span_b)
        if matched >= PASSAGE_MIN_LETTERS and density >= PASSAGE_MIN_DENSITY:
            la0, la1, lb0, lb1 = wa[a0][1], wa[a1 - 1][1], wb[b0][1], wb[b1 - 1][1]
            spans.append((c.row_at(na, la0), la0, la1, c.row_at(nb, lb0), lb0, lb1, density))
    return spans


def copied_runs(c: Compared, na: int, nb: int) -> list[Run]:
    """Runs of a's lines found in b in the same order (a gap of up to COPY_GAP other lines on
    either side allowed), with their copied letters."""
    prof = c.prof
    la, lb = c.content_lines(na), c.content_lines(nb)
    if not len(la) or not len(lb):
        return []
    kb = prof.line_key[lb]
    order = np.argsort(kb, kind="stable")
    sorted_keys = kb[order]
    ka = prof.line_key[la]
    lo = np.searchsorted(sorted_keys, ka, side="left").tolist()
    hi = np.searchsorted(sorted_keys, ka, side="right").tolist()
    letters = prof.line_letters[la].tolist()
    runs: list[Run] = []
    cur: list[int] | None = None  # [a first pos, a last pos, b first pos, b last pos, copied letters]

    def close() -> None:
        if cur is not None:
            a0, a1, b0, b1 = (int(prof.line_no[x]) for x in (la[cur[0]], la[cur[1]], lb[cur[2]], lb[cur[3]]))
            runs.append((a0, a1, b0, b1, cur[4]))

    for pa in range(len(la)):
        occurrences = order[lo[pa] : hi[pa]]
        if not len(occurrences):
            continue
        if cur is not None and pa - cur[1] <= COPY_GAP + 1:
            nxt = [int(o) for o in occurrences if cur[3] < o <= cur[3] + COPY_GAP + 1]
            if nxt:
                cur[1], cur[3] = pa, nxt[0]
                cur[4] += letters[pa]
                continue
        close()
        first = int(occurrences.min())
        cur = [pa, pa, first, first, letters[pa]]
    close()
    return runs


def section_runs(c: Compared, r: Rated) -> list[Span]:
    """Runs of consecutive substantial sections matched at passage_threshold whose matches are
    consecutive too, confirmed by their words (PASSAGE_MIN_OVERLAP of the shorter side in order)."""
    prof, s = c.prof, c.s
    found: list[tuple[int, int, int, int, float]] = []  # rows: a first, a last, b first, b last
    for x, y, value, partner, flip in (
        (r.na, r.nb, r.value_a, r.partner_a, False),
        (r.nb, r.na, r.value_b, r.partner_b, True),
    ):
        rows = c.body(x)
        where = {int(row): i for i, row in enumerate(c.body(y))}
        own = prof.letters[rows] - prof.boiler[rows]
        shared = (
            (value >= s.passage_threshold) & (partner >= 0) & (prof.boiler[rows] * 2 < prof.letters[rows])
        )
        i = 0
        while i < len(rows):
            if not shared[i]:
                i += 1
                continue
            j = i
            while (
                j + 1 < len(rows)
                and shared[j + 1]
                and abs(where[int(partner[j + 1])] - where[int(partner[j])]) <= 1
            ):
                j += 1
            run, partners = rows[i : j + 1], partner[i : j + 1]
            if own[i : j + 1].sum() < PASSAGE_MIN_LETTERS:
                i = j + 1
                continue
            lo = int(partners[np.argmin(prof.first_line[partners])])
            hi = int(partners[np.argmax(prof.last_line[partners])])
            w = c.weight[run]
            score = float((w * value[i : j + 1]).sum() / w.sum())
            rows4 = (lo, hi, int(run[0]), int(run[-1])) if flip else (int(run[0]), int(run[-1]), lo, hi)
            found.append((*rows4, score))
            i = j + 1
    spans: list[Span] = []
    for a0, a1, b0, b1, score in sorted(found, key=lambda p: (-p[4], p[0])):
        span = (
            a0,
            int(prof.first_line[a0]),
            int(prof.last_line[a1]),
            b0,
            int(prof.first_line[b0]),
            int(prof.last_line[b1]),
            score,
        )
        if not any(_overlaps(span, q) for q in spans):
            spans.append(span)
    if spans:
        words = _span_words(c, r.na, r.nb, spans)
        spans = [
            p for p, (wa, wb) in zip(spans, words, strict=True) if _overlap(wa, wb) >= PASSAGE_MIN_OVERLAP
        ]
    return spans


def _span_words(c: Compared, na: int, nb: int, spans: list[Span]) -> list[tuple[list[str], list[str]]]:
    """The words of each span's sections in a and in b."""
    prof, lay = c.prof, c.lay

    def between(n: int, first: int, last: int) -> list[int]:
        rows = c.body(n)
        return [int(x) for x in rows[(prof.first_line[rows] >= first) & (prof.last_line[rows] <= last)]]

    picks = [(between(na, p[1], p[2]), between(nb, p[4], p[5])) for p in spans]
    chunks = c.store.chunks(int(lay.rowids[x]) for pa, pb in picks for x in (*pa, *pb))

    def words(rows: list[int]) -> list[str]:
        text = "\n".join(chunks[int(lay.rowids[x])].text for x in rows if int(lay.rowids[x]) in chunks)
        return _WORD.findall(text.casefold())[:PASSAGE_MAX_WORDS]

    return [(words(pa), words(pb)) for pa, pb in picks]


def _overlap(a: list[str], b: list[str]) -> float:
    """Share of the shorter word list found, in order, in the other."""
    if not a or not b:
        return 0.0
    blocks = SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()
    return sum(m.size for m in blocks) / min(len(a), len(b))


def _overlaps(p: Span, q: Span) -> bool:
    """Whether two passages overlap on both sides."""
    return p[1] <= q[2] and q[1] <= p[2] and p[4] <= q[5] and q[4] <= p[5]
