"""Related notes and duplicate candidates from the vectors already in the index (no embedding calls).

*Similar* compares every section of a note with every section of the vault and keeps, per
other note, its best section pair (chunk-level max-sim), so a note on two topics finds the
notes of each topic instead of a blurred average of both.

*Duplicates* are found without an all-pairs matrix: chunk vectors are projected onto their
top principal directions, and because an orthogonal projection never lengthens a distance,
``cos(a, b) >= t`` implies ``|Pa - Pb|^2 <= 2 (1 - t)``. Filtering blocks of projected
vectors with that bound is therefore lossless, needs memory for one block only, and the few
survivors are re-scored exactly in the full space.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import numpy as np
import numpy.typing as npt

from vaultlens.errors import VaultError
from vaultlens.index.sqlite_store import SQLiteStore
from vaultlens.vault.links import LinkResolver

MIN_CHARS = 32  # notes with fewer letters or digits are too short to compare by meaning
PROJECTION_DIMS = 32
BLOCK_ROWS = 512
EXACT_MAX_ROWS = 30_000  # sections; above this, duplicates use hashing (recall measured, not guaranteed)
HASH_BANDS = 40
HASH_BITS = 20
HASH_MAX_RUN = 32
BLOCK_COLS = 4096  # a 512 x 4096 tile of margins (8 MB) stays in cache
# Coverage of a note is the mean, over its sections weighted by their letters and digits, of each
# section's best match in the other note; a section must reach this far below the threshold to
# count at all (below it, it counts as 0).
SECTION_SLACK = 0.05
_ALNUM = re.compile(r"[^\W_]", re.UNICODE)


@dataclass(frozen=True, slots=True)
class SectionRef:
    heading_path: tuple[str, ...]
    start_line: int  # 1-based, inclusive
    end_line: int


@dataclass(frozen=True, slots=True)
class SectionMatch:
    source: SectionRef
    other: SectionRef
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


def _layout(store: SQLiteStore) -> _Layout:
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
    return _Layout(rowids, np.asarray(vecs, dtype=np.float32), note_of, list(index), frontmatter)


def resolve_note(store: SQLiteStore, vault_root: str, note: str) -> str:
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
    raise VaultError(f"No indexed note matches {note!r}.", hint="Check the path, or run `vaultlens index`.")


def _refs(store: SQLiteStore, rowids: list[int]) -> dict[int, SectionRef]:
    rows = store.chunks(rowids)
    return {r: SectionRef(c.heading_path, c.start_line + 1, c.end_line) for r, c in rows.items()}


def similar(store: SQLiteStore, path: str, limit: int = 10) -> SimilarResult:
    lay = _layout(store)
    if path not in lay.notes:
        raise VaultError(f"{path} has no indexed text.")
    note = lay.notes.index(path)
    mine = np.flatnonzero(lay.note_of == note)
    body = mine[~lay.frontmatter[mine]] if (~lay.frontmatter[mine]).any() else mine
    text = "".join(c.text for c in store.chunks(lay.rowids[body].tolist()).values())
    if len(_ALNUM.findall(text)) < MIN_CHARS:
        return SimilarResult(
            path, f"{path} has fewer than {MIN_CHARS} letters or digits: too little text to compare.", []
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
    note_best = np.full(len(lay.notes), -np.inf, dtype=np.float32)
    np.maximum.at(note_best, lay.note_of, best)
    order = [int(i) for i in np.argsort(-note_best, kind="stable") if np.isfinite(note_best[i])][:limit]
    picked: list[tuple[int, int, int, float]] = []  # (note, other row, my row, score)
    for n in order:
        rows = np.flatnonzero(lay.note_of == n)
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


def _exact_groups(store: SQLiteStore) -> tuple[list[ExactGroup], dict[str, int], dict[str, str]]:
    """Identical notes, then notes with the same body under different front matter; plus letter counts."""
    full: dict[str, list[str]] = defaultdict(list)
    body: dict[str, list[str]] = defaultdict(list)
    letters: dict[str, int] = {}
    body_text: dict[str, str] = {}
    for path, text in store.note_texts():
        norm = _normalized(text)
        full[hashlib.sha256(norm.encode()).hexdigest()].append(path)
        stripped = _normalized(_strip_frontmatter(text))
        body_text[path] = stripped
        letters[path] = len(_ALNUM.findall(stripped))
        if stripped:
            body[hashlib.sha256(stripped.encode()).hexdigest()].append(path)
    groups = [ExactGroup("identical", sorted(ps)) for ps in full.values() if len(ps) > 1]
    seen = {frozenset(g.paths) for g in groups}
    for ps in body.values():
        if len(ps) > 1 and frozenset(ps) not in seen:
            groups.append(ExactGroup("same_body", sorted(ps)))
    groups.sort(key=lambda g: g.paths)
    return groups, letters, body_text


def _strip_frontmatter(text: str) -> str:
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        if end != -1:
            return text[text.find("\n", end + 1) + 1 :] if text.find("\n", end + 1) != -1 else ""
    return text


def _candidate_pairs(
    vecs: npt.NDArray[np.float32], floor: float
) -> Iterator[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float32]]]:
    """All pairs i < j with cos >= floor, tile by tile (lossless projected filter, exact re-score).

    With P the projection onto the top principal directions, ``cos(a, b) >= floor`` implies
    ``|Pa - Pb|^2 <= 2 (1 - floor)``, i.e. ``Pa.Pb - |Pa|^2/2 - |Pb|^2/2 + (1 - floor) >= 0``: one
    matrix product of vectors augmented with their half squared norms gives that margin for a whole
    tile. Rows are sorted by their first projected coordinate, and since ``|Pa_1 - Pb_1| <= |Pa - Pb|``,
    a tile of rows only meets the columns whose first coordinate lies within ``sqrt(2 (1 - floor))``.
    """
    n, d = vecs.shape
    if n < 2:
        return
    k = min(PROJECTION_DIMS, d)
    sample = vecs[:: max(1, n // 20000)]
    _, _, vt = np.linalg.svd(sample - sample.mean(axis=0), full_matrices=False)
    proj = vecs @ vt[:k].T.astype(np.float32)
    order = np.argsort(proj[:, 0], kind="stable")
    proj = proj[order]
    first = proj[:, 0].copy()
    half_sq = 0.5 * np.einsum("ij,ij->i", proj, proj)
    slack = 1.0 - floor + 1e-4  # float32 rounding margin: the filter must never drop a true pair
    reach = float(np.sqrt(2.0 * slack))
    ones = np.ones((n, 1), dtype=np.float32)
    left = np.hstack([proj, -half_sq[:, None], ones]).astype(np.float32)
    right = np.hstack([proj, ones, (slack - half_sq)[:, None]]).astype(np.float32)
    for start in range(0, n - 1, BLOCK_ROWS):
        stop = min(n, start + BLOCK_ROWS)
        end = int(np.searchsorted(first, first[stop - 1] + reach, side="right"))
        for c0 in range(start, end, BLOCK_COLS):
            c1 = min(end, c0 + BLOCK_COLS)
            hit = left[start:stop] @ right[c0:c1].T >= 0
            if not hit.any():
                continue
            rows, cols = np.nonzero(hit)
            rows += start
            cols += c0
            keep = cols > rows
            if not keep.any():
                continue
            a, b = order[rows[keep]], order[cols[keep]]
            exact = np.einsum("ij,ij->i", vecs[a], vecs[b])
            ok = exact >= floor
            a, b = a[ok], b[ok]
            yield (
                np.minimum(a, b).astype(np.int64),
                np.maximum(a, b).astype(np.int64),
                exact[ok].astype(np.float32),
            )


def _hashed_pairs(
    vecs: npt.NDArray[np.float32], floor: float, seed: int = 0
) -> Iterator[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float32]]]:
    """Pairs i < j with cos >= floor, approximately: random-hyperplane hashing, exact re-score.

    Used above :data:`EXACT_MAX_ROWS` sections, where even the projected filter's all-pairs tiles cost
    too much. Each of :data:`HASH_BANDS` bands keys a (centred) vector by the signs of
    :data:`HASH_BITS` random projections; two vectors at angle θ share a band with probability
    ``(1 - θ/π)^bits``, so a pair at cosine 0.95 is missed with probability below 1% and one at 0.98
    practically never, while unrelated pairs rarely collide. Every candidate is re-scored exactly.
    """
    n, d = vecs.shape
    if n < 2:
        return
    rng = np.random.default_rng(seed)
    mean = vecs[:: max(1, n // 20000)].mean(axis=0)
    weights = (1 << np.arange(HASH_BITS, dtype=np.int64))[None, :]
    seen: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
    for _ in range(HASH_BANDS):
        planes = rng.standard_normal((d, HASH_BITS)).astype(np.float32)
        keys = np.zeros(n, dtype=np.int64)
        for s0 in range(0, n, 65536):
            bits = (vecs[s0 : s0 + 65536] - mean) @ planes > 0
            keys[s0 : s0 + 65536] = (bits * weights).sum(axis=1)
        order = np.argsort(keys, kind="stable")
        sk = keys[order]
        found: list[npt.NDArray[np.int64]] = []
        for offset in range(1, min(n, HASH_MAX_RUN)):  # a huge bucket is sampled, not exhausted
            same = np.flatnonzero(sk[offset:] == sk[:-offset])
            if same.size == 0:
                break
            a, b = order[same], order[same + offset]
            found.append(np.minimum(a, b) * n + np.maximum(a, b))
        if found:
            seen = np.concatenate([seen, *found])
    seen = np.unique(seen)
    for s0 in range(0, len(seen), 262144):
        codes = seen[s0 : s0 + 262144]
        a, b = codes // n, codes % n
        exact = np.einsum("ij,ij->i", vecs[a], vecs[b])
        ok = exact >= floor
        yield a[ok], b[ok], exact[ok].astype(np.float32)


def _pairs(
    vecs: npt.NDArray[np.float32], floor: float
) -> Iterator[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float32]]]:
    if vecs.shape[0] <= EXACT_MAX_ROWS:
        return _candidate_pairs(vecs, floor)
    return _hashed_pairs(vecs, floor)


def duplicates(
    store: SQLiteStore, threshold: float = 0.95, limit: int = 100, min_chars: int = MIN_CHARS
) -> DuplicateReport:
    report = DuplicateReport(threshold)
    report.exact, letters, _ = _exact_groups(store)
    in_exact = {frozenset((a, b)) for g in report.exact for a in g.paths for b in g.paths if a != b}
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
    store: SQLiteStore, rowids: npt.NDArray[np.int64], note_of: npt.NDArray[np.int64], notes: set[int]
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
