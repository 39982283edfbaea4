"""Related notes and duplicate candidates from the vectors already in the index (no embedding calls).

*Similar* compares every section of a note with every section of the vault and keeps, per
other note, its best section pair (chunk-level max-sim), so a note on two topics finds the
notes of each topic instead of a blurred average of both.

*Duplicates* never hold an all-pairs matrix: up to :data:`EXACT_MAX_ROWS` sections every pair
is scored exactly, one block of rows at a time; above it, sections are grouped into k-means
partitions (each joins its two nearest) and pairs are scored exactly inside each partition, so
the cost grows with the partition sizes instead of n squared.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import numpy as np
import numpy.typing as npt

from vaultlens.errors import NoteNotFound, VaultError
from vaultlens.fsutil import sha256_hex
from vaultlens.index.store import Store
from vaultlens.services.section import Section
from vaultlens.vault.links import LinkResolver

BLOCK_ROWS = 1024  # rows per exact block: a 1024 x n float32 product stays under ~120 MB at 30k sections
EXACT_MAX_ROWS = 30_000  # sections; above this, duplicates use k-means partitions (recall measured)
KMEANS_ITERATIONS = 8
PROBES = 3  # partitions each section joins (2 found 92.6% of planted pairs at 100k notes, 3: see benchmarks)
# Coverage of a note is the mean, over its sections weighted by their letters and digits, of each
# section's best match in the other note; a section must reach this far below the threshold to
# count at all (below it, it counts as 0).
SECTION_SLACK = 0.05
_ALNUM = re.compile(r"[^\W_]", re.UNICODE)


@dataclass(frozen=True, slots=True)
class SectionMatch:
    source: Section
    other: Section
    score: float


@dataclass(frozen=True, slots=True)
class SimilarNote:
    path: str
    title: str
    score: float
    matches: list[SectionMatch]


@dataclass(frozen=True, slots=True)
class SimilarResult:
    path: str
    notice: str | None
    results: list[SimilarNote]


@dataclass(frozen=True, slots=True)
class DuplicatePair:
    a: str
    b: str
    score: float
    kind: str  # near_duplicate (both ways) | contained (the smaller inside the larger)
    same_name: bool
    evidence: SectionMatch


@dataclass(frozen=True, slots=True)
class ExactGroup:
    kind: str  # identical (after line endings, BOM, trailing whitespace) | same_body (front matter differs)
    paths: list[str]


@dataclass
class DuplicateReport:
    threshold: float
    exact: list[ExactGroup] = field(default_factory=list)
    pairs: list[DuplicatePair] = field(default_factory=list)
    same_name: list[list[str]] = field(default_factory=list)
    excluded_short: int = 0


@dataclass
class _Layout:
    """Chunk vectors with, for each row, its note index and whether it is front matter."""

    rowids: npt.NDArray[np.int64]
    vecs: npt.NDArray[np.float32]
    note_of: npt.NDArray[np.int64]
    notes: list[str]
    frontmatter: npt.NDArray[np.bool_]
    note_index: dict[str, int] = field(default_factory=dict)
    by_note: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    starts: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(1, dtype=np.int64))

    def rows_of(self, note: int) -> npt.NDArray[np.int64]:
        return self.by_note[self.starts[note] : self.starts[note + 1]]


# the layout of the last store generation read: similar() must not re-read 200k rows per call
_LAYOUTS: dict[str, tuple[int, _Layout]] = {}


def _layout(store: Store) -> _Layout:
    generation = store.generation
    cached = _LAYOUTS.get(store.store_id)
    if cached is not None and cached[0] == generation:
        return cached[1]
    lay = _read_layout(store)
    _LAYOUTS.clear()  # one store per process is the rule; never keep a dead one's vectors alive
    _LAYOUTS[store.store_id] = (generation, lay)
    return lay


def _read_layout(store: Store) -> _Layout:
    rowids, vecs = store.matrix()
    lay_ids, paths, frontmatter = store.chunk_layout()
    if not np.array_equal(rowids, lay_ids):  # a writer committed in between: align on rowids
        keep = np.isin(lay_ids, rowids)
        lay_ids, frontmatter = lay_ids[keep], frontmatter[keep]
        paths = [p for p, k in zip(paths, keep.tolist(), strict=True) if k]
        pos = np.searchsorted(rowids, lay_ids)
        rowids, vecs = rowids[pos], np.asarray(vecs)[pos]
    index: dict[str, int] = {}
    note_of = np.fromiter((index.setdefault(p, len(index)) for p in paths), dtype=np.int64, count=len(paths))
    by_note = np.argsort(note_of, kind="stable")
    starts = np.searchsorted(note_of[by_note], np.arange(len(index) + 1))
    vecs32 = np.asarray(vecs, dtype=np.float32)
    return _Layout(rowids, vecs32, note_of, list(index), frontmatter, index, by_note, starts)


def resolve_note(store: Store, vault_root: str, note: str) -> str:
    """Accept a vault-relative path, an absolute path inside the vault, or a note name."""
    records = store.file_records()
    indexed = [p for p, r in records.items() if r.status == "indexed"]
    candidate = note
    if note.startswith(vault_root.rstrip("/") + "/"):
        candidate = note[len(vault_root.rstrip("/")) + 1 :]
    if candidate in records or candidate + ".md" in records:
        path = candidate if candidate in records else candidate + ".md"
        if records[path].status != "indexed":
            raise VaultError(f"{path} is not indexed: {records[path].reason}.")
        return path
    res = LinkResolver(indexed).resolve(candidate.removesuffix(".md"), "")
    if res.status == "resolved" and res.path:
        return res.path
    if res.status == "ambiguous":
        raise VaultError(
            f"{note!r} matches several notes: {', '.join(res.candidates)}.",
            hint="Pass the note's path instead.",
        )
    raise NoteNotFound(f"No indexed note matches {note!r}.", hint="Check the path, or run `vaultlens index`.")


def _refs(store: Store, rowids: list[int]) -> dict[int, Section]:
    return {r: Section.of(c) for r, c in store.chunks(rowids).items()}


def similar(store: Store, path: str, limit: int, min_chars: int) -> SimilarResult:
    lay = _layout(store)
    if path not in lay.note_index:
        raise VaultError(f"{path} has no indexed text.")
    note = lay.note_index[path]
    mine = lay.rows_of(note)
    body = mine[~lay.frontmatter[mine]] if (~lay.frontmatter[mine]).any() else mine
    text = "".join(c.text for c in store.chunks(lay.rowids[body].tolist()).values())
    if len(_ALNUM.findall(text)) < min_chars:
        return SimilarResult(
            path, f"{path} has fewer than {min_chars} letters or digits: too little text to compare.", []
        )
    notice = None
    centroid = lay.vecs[body].mean(axis=0)
    if len(body) > 1 and float(np.linalg.norm(centroid)) < 0.3:
        notice = "This note's sections point in unrelated directions; matches are per section, not for the whole note."
    sims = lay.vecs @ lay.vecs[body].T  # (chunks, my sections)
    best = sims.max(axis=1)
    which = sims.argmax(axis=1)
    best[mine] = -np.inf
    if (~lay.frontmatter[body]).any():
        best[lay.frontmatter] = -np.inf  # template boilerplate in front matter is not relatedness
    note_best = np.maximum.reduceat(best[lay.by_note], lay.starts[:-1])
    k = min(limit, len(note_best))
    top_notes = np.argpartition(-note_best, k - 1)[:k] if k else np.zeros(0, dtype=np.int64)
    top_notes = top_notes[np.lexsort((top_notes, -note_best[top_notes]))]
    order = [int(i) for i in top_notes if np.isfinite(note_best[i])]
    picked: list[tuple[int, int, int, float]] = []  # (note, other row, my row, score)
    for n in order:
        rows = lay.rows_of(n)
        top = rows[np.argsort(-best[rows], kind="stable")[:2]]
        picked.extend((n, int(r), int(body[which[r]]), float(best[r])) for r in top if np.isfinite(best[r]))
    refs = _refs(
        store, [int(lay.rowids[r]) for _, r, m, _ in picked] + [int(lay.rowids[m]) for _, _, m, _ in picked]
    )
    titles = store.titles(lay.notes[n] for n in order)
    grouped: dict[int, list[SectionMatch]] = defaultdict(list)
    for n, r, m, s in picked:
        grouped[n].append(SectionMatch(refs[int(lay.rowids[m])], refs[int(lay.rowids[r])], round(s, 4)))
    results = [
        SimilarNote(
            lay.notes[n], titles.get(lay.notes[n]) or lay.notes[n], round(float(note_best[n]), 4), grouped[n]
        )
        for n in order
    ]
    return SimilarResult(path, notice, results)


def _normalized(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.split("\n")).strip()


def _exact_groups(store: Store) -> tuple[list[ExactGroup], dict[str, int], set[frozenset[str]]]:
    """Identical notes, then notes with the same body under different front matter; plus letter counts
    and every pair the groups cover.

    A note is listed once: a same-body group names one note of each identical group (its first
    path), so a note never shows under both kinds."""
    full: dict[str, list[str]] = defaultdict(list)
    body: dict[str, list[str]] = defaultdict(list)
    letters: dict[str, int] = {}
    for note in store.note_texts():
        full[sha256_hex(_normalized(note.text))].append(note.path)
        stripped = _normalized(note.body)
        letters[note.path] = len(_ALNUM.findall(stripped))
        if stripped:
            body[sha256_hex(stripped)].append(note.path)
    groups = [ExactGroup("identical", sorted(ps)) for ps in full.values() if len(ps) > 1]
    first = {p: g.paths[0] for g in groups for p in g.paths}
    covered = {frozenset((a, b)) for ps in (*full.values(), *body.values()) for a in ps for b in ps if a != b}
    for ps in body.values():
        representatives = sorted({first.get(p, p) for p in ps})
        if len(representatives) > 1:
            groups.append(ExactGroup("same_body", representatives))
    groups.sort(key=lambda g: g.paths)
    return groups, letters, covered


PairBatch = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float32]]


def _exact_pairs(vecs: npt.NDArray[np.float32], floor: float) -> Iterator[PairBatch]:
    """Every pair i < j with cos >= floor: blocked full products, memory for one block only.

    BLAS makes this the fastest exact method measured here (bench/duplicates_scale.py: faster than
    a projected pre-filter at every size, since the filter's survivors cost more than the flops saved).
    """
    n = vecs.shape[0]
    for start in range(0, n - 1, BLOCK_ROWS):
        stop = min(n, start + BLOCK_ROWS)
        sims = vecs[start:stop] @ vecs[start:].T
        rows, cols = np.nonzero(sims >= floor)
        keep = cols > rows  # the upper triangle: column offset 0 is row ``start`` itself
        rows, cols = rows[keep], cols[keep]
        if rows.size:
            yield (rows + start).astype(np.int64), (cols + start).astype(np.int64), sims[rows, cols]


def _spherical_kmeans(
    sample: npt.NDArray[np.float32], k: int, rng: np.random.Generator
) -> npt.NDArray[np.float32]:
    centroids = sample[rng.choice(len(sample), k, replace=False)].copy()
    for _ in range(KMEANS_ITERATIONS):
        assign = np.argmax(sample @ centroids.T, axis=1)
        sums = np.zeros_like(centroids)
        np.add.at(sums, assign, sample)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        empty = norms[:, 0] == 0
        sums[empty] = sample[rng.choice(len(sample), int(empty.sum()))]
        norms[empty] = 1.0
        centroids = (sums / norms).astype(np.float32)
    return centroids


def _partitioned_pairs(vecs: npt.NDArray[np.float32], floor: float, seed: int = 0) -> Iterator[PairBatch]:
    """Pairs with cos >= floor, approximately: each vector joins the partitions of its
    :data:`PROBES` nearest k-means centroids, and pairs are scored exactly inside each partition.

    Two near-copies (cos >= 0.9) are almost always nearest to the same centroid, and probing two
    makes a miss rarer still; recall is measured on planted pairs in bench/duplicates_scale.py,
    not guaranteed. Cost is the sum of squared partition sizes instead of n squared.
    """
    n = vecs.shape[0]
    rng = np.random.default_rng(seed)
    k = max(2, int(np.sqrt(n)))
    sample = vecs[rng.choice(n, min(n, 40 * k), replace=False)]
    centroids = _spherical_kmeans(sample, k, rng)
    nearest = np.empty((n, PROBES), dtype=np.int64)
    for s0 in range(0, n, 8192):
        sims = vecs[s0 : s0 + 8192] @ centroids.T
        nearest[s0 : s0 + 8192] = np.argpartition(-sims, PROBES - 1, axis=1)[:, :PROBES]
    owner = nearest.ravel()
    member = np.repeat(np.arange(n, dtype=np.int64), PROBES)
    order = np.argsort(owner, kind="stable")
    bounds = np.searchsorted(owner[order], np.arange(k + 1))
    seen: set[int] = set()
    for c in range(k):
        idx = member[order[bounds[c] : bounds[c + 1]]]
        for ra, rb, sims in _exact_pairs(vecs[idx], floor):
            a, b = idx[ra], idx[rb]
            lo, hi = np.minimum(a, b), np.maximum(a, b)
            codes = lo * n + hi
            fresh = np.array([code not in seen for code in codes.tolist()], dtype=bool)
            seen.update(codes[fresh].tolist())
            if fresh.any():
                yield lo[fresh], hi[fresh], sims[fresh]


def _pairs(vecs: npt.NDArray[np.float32], floor: float) -> Iterator[PairBatch]:
    if vecs.shape[0] <= EXACT_MAX_ROWS:
        return _exact_pairs(vecs, floor)
    return _partitioned_pairs(vecs, floor)


def duplicates(store: Store, threshold: float, limit: int, min_chars: int) -> DuplicateReport:
    report = DuplicateReport(threshold)
    report.exact, letters, in_exact = _exact_groups(store)
    lay = _layout(store)
    short = {i for i, p in enumerate(lay.notes) if letters.get(p, 0) < min_chars}
    report.excluded_short = len(short)
    usable = ~lay.frontmatter & ~np.isin(lay.note_of, np.fromiter(short, dtype=np.int64, count=len(short)))
    rows_idx = np.flatnonzero(usable)
    vecs = lay.vecs[rows_idx]
    note_of = lay.note_of[rows_idx]
    floor = threshold - SECTION_SLACK
    # best[(note a, note b)][row of a] = best score of that section of a against any section of b
    best: dict[tuple[int, int], dict[int, tuple[float, int]]] = defaultdict(dict)
    for r, c, sims in _pairs(vecs, floor):
        notes_r, notes_c = note_of[r].tolist(), note_of[c].tolist()
        for i, j, ni, nj, sc in zip(r.tolist(), c.tolist(), notes_r, notes_c, sims.tolist(), strict=True):
            if ni == nj:
                continue
            for x, y, nx, ny in ((i, j, ni, nj), (j, i, nj, ni)):
                cur = best[(nx, ny)].get(x)
                if cur is None or sc > cur[0]:
                    best[(nx, ny)][x] = (sc, y)
    weight, note_weight = _section_weights(
        store, lay.rowids[rows_idx], note_of, {n for key in best for n in key}
    )
    dismissed = store.dismissed_pairs()
    pairs: list[tuple[float, str, int, int, tuple[int, int, float]]] = []
    for (na, nb), matched in best.items():
        if na > nb:
            continue
        cover_a = sum(weight[x] * v for x, (v, _) in matched.items()) / note_weight[na]
        back = best.get((nb, na), {})
        cover_b = sum(weight[x] * v for x, (v, _) in back.items()) / note_weight[nb]
        score = max(cover_a, cover_b)
        if score < threshold:
            continue
        a, b = sorted((lay.notes[na], lay.notes[nb]))
        if frozenset((a, b)) in in_exact or (a, b) in dismissed:
            continue
        kind = "near_duplicate" if min(cover_a, cover_b) >= threshold else "contained"
        x, (top, y) = max(matched.items(), key=lambda kv: kv[1][0])
        pairs.append((score, kind, na, nb, (int(rows_idx[x]), int(rows_idx[y]), top)))
    pairs.sort(key=lambda p: (-p[0], lay.notes[p[2]], lay.notes[p[3]]))
    pairs = pairs[:limit]
    refs = _refs(store, [int(lay.rowids[i]) for p in pairs for i in p[4][:2]])
    for score, kind, na, nb, (x, y, top) in pairs:
        a, b = lay.notes[na], lay.notes[nb]
        match = SectionMatch(refs[int(lay.rowids[x])], refs[int(lay.rowids[y])], round(top, 4))
        if a > b:
            a, b = b, a
            match = SectionMatch(match.other, match.source, match.score)
        report.pairs.append(DuplicatePair(a, b, round(score, 4), kind, _same_name(a, b), match))
    by_name: dict[str, list[str]] = defaultdict(list)
    for p in lay.notes:
        by_name[PurePosixPath(p).name.casefold()].append(p)
    report.same_name = sorted(sorted(ps) for ps in by_name.values() if len(ps) > 1)
    return report


def _section_weights(
    store: Store, rowids: npt.NDArray[np.int64], note_of: npt.NDArray[np.int64], notes: set[int]
) -> tuple[dict[int, int], dict[int, int]]:
    """Letters and digits of each compared section of ``notes``, and their total per note.

    Coverage is weighted by them, so a short boilerplate tail ("## Sources", an empty checklist)
    or a stray code line in its own section does not count as much as the note's prose.
    """
    if not notes:
        return {}, {}
    positions = np.flatnonzero(np.isin(note_of, np.fromiter(notes, dtype=np.int64, count=len(notes))))
    texts = store.chunks(int(r) for r in rowids[positions])
    weight: dict[int, int] = {}
    totals: dict[int, int] = defaultdict(int)
    for pos in positions.tolist():
        chunk = texts.get(int(rowids[pos]))
        w = max(1, len(_ALNUM.findall(chunk.text))) if chunk is not None else 1
        weight[pos] = w
        totals[int(note_of[pos])] += w
    return weight, dict(totals)


def _same_name(a: str, b: str) -> bool:
    return PurePosixPath(a).name.casefold() == PurePosixPath(b).name.casefold()
