"""Related notes and duplicate candidates from the vectors already in the index (no embedding calls).

*Similar* compares every section of a note with every section of the vault and keeps, per
other note, its best section pair (chunk-level max-sim), so a note on two topics finds the
notes of each topic instead of a blurred average of both.

*Duplicates* never hold an all-pairs matrix: up to :data:`EXACT_MAX_ROWS` sections every pair
is scored exactly, one block of rows at a time; above it, sections are grouped into k-means
partitions (each joins its nearest few) and pairs are scored exactly inside each partition, so
the cost grows with the partition sizes instead of n squared. Lines a few notes share (copied
text) propose candidates too. A candidate pair is then rated by *coverage*: each section's best
match in the other note, by meaning (cosine) or by copied lines, whichever is higher. It is

- ``near_duplicate`` (both notes covered) or ``contained`` (the smaller inside the larger);
- ``shared_passage`` when the notes otherwise differ but one or more substantial sections are
  copied between them (reported apart, with the line ranges on both sides);
- ``translation`` when the notes are written in different scripts (Latin ``en``, Cyrillic ``ru``):
  each note is compared only with notes of the other language (candidates by weighted centroid,
  :data:`TRANSLATION_CANDIDATES` per note, so memory stays linear), paired with its mutual best
  match by the minimum of the two directions' coverage, and confirmed by the structure a
  translation keeps (headings, code blocks, links, inline code, numbers).

*Boilerplate*: a line that :func:`boilerplate_min_notes` notes or more contain, and every line
under a heading that many notes use ("Sources", "What next" of a template), weighs
``boilerplate_weight`` of its letters in coverage, and a section mostly made of it counts that
much less in ``similar``.
"""

from __future__ import annotations

import math
import re
from array import array
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from pathlib import PurePosixPath

import numpy as np
import numpy.typing as npt

from vaultlens.chunking.chunker import Chunk
from vaultlens.config.settings import DiscoverSettings
from vaultlens.errors import VaultError
from vaultlens.fsutil import sha256_hex
from vaultlens.index.store import Store
from vaultlens.services.section import Section
from vaultlens.vault.links import LinkResolver

BLOCK_ROWS = 1024  # rows per exact block: a 1024 x n float32 product stays under ~120 MB at 30k sections
# sections (notes, for translation candidates); above this, k-means partitions (recall measured)
EXACT_MAX_ROWS = 30_000
KMEANS_ITERATIONS = 8
PROBES = 3  # partitions each section joins (2 found 92.6% of planted pairs at 100k notes, 3: see benchmarks)
# Coverage of a note is the mean, over its sections weighted by their letters and digits (boilerplate
# discounted), of each section's best match in the other note; a section must reach this far below
# the threshold to count at all (below it, it counts as 0).
SECTION_SLACK = 0.05
FETCH_ROWS = 2000  # chunks read per store call while profiling the vault
# A line shared by 2..SHARED_LINE_MAX_NOTES notes (and not boilerplate) with at least
# LINE_MIN_LETTERS letters proposes its notes as a candidate pair once they share CANDIDATE_LETTERS.
LINE_MIN_LETTERS = 12
SHARED_LINE_MAX_NOTES = 50
CANDIDATE_LETTERS = 60
# A shared passage: a run of copied lines, or of sections matched at passage_threshold or better, with
# at least this many letters that are not boilerplate, while the notes are not duplicates as a whole.
PASSAGE_MIN_LETTERS = 200
# ... and a run of sections must be copied text: this share of the shorter side's words, in order, in
# the other side (fastapi-docs: copied passages >= 0.61, sections on the same topic <= 0.58)
PASSAGE_MIN_OVERLAP = 0.6
PASSAGE_MAX_WORDS = 3000
COPY_GAP = 2  # other lines a run of copied lines may skip, on either side
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
# the section shown for a pair: of those matched this close to the best, the one that adds most to coverage
EVIDENCE_SLACK = 0.1
LANG_MIN_LETTERS = 20  # a note's language is its script: Cyrillic >= 50% of its prose letters, Latin >= 85%
_ALNUM = re.compile(r"[^\W_]", re.UNICODE)
_CYRILLIC = re.compile(r"[\u0400-\u04ff]+")
_LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]+")
_NON_ALNUM = re.compile(r"[\W_]+")
# not prose: inline code, link targets, HTML tags, URLs, heading ids / include markers, wiki-link targets
_NOT_PROSE = re.compile(r"`[^`\n]*`|\]\([^)\n]*\)|<[^>\n]*>|https?://\S+|\{\s*[#*][^}\n]*\}|\[\[[^\]|\n]*\|?")
_TAG = re.compile(r"</?[A-Za-z][^>\n]*>")
_ANCHOR_LINES = re.compile(r"\{[ \t]*#[^}\n]*\}[ \t]*$", re.M)
_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:\s|$)")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_INLINE_CODE = re.compile(r"`([^`\n]+)`")
_TARGETS = re.compile(r"\]\(([^)\s]+)|\[\[([^\]|#\n]+)|(https?://[^\s)>\]]+)|\{\*\s*([^*}\s]+)")
_WORD = re.compile(r"[^\W_]+")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?(?![\w])")


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
class ExactGroup:
    kind: str  # identical (after line endings, BOM, trailing whitespace) | same_body (front matter differs)
    paths: list[str]


@dataclass
class DuplicateReport:
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
    profiles: dict[tuple[int, float], _Profile] = field(default_factory=dict)

    def rows_of(self, note: int) -> npt.NDArray[np.int64]:
        return self.by_note[self.starts[note] : self.starts[note + 1]]


@dataclass
class _Profile:
    """What the texts say, per layout row and per note (one pass over every chunk, cached per generation).

    Lines are keyed by their letters and digits (case folded, HTML tags and heading ids dropped, see
    :func:`_line_key`); lines without any are left out, and only body rows have lines.
    ``line_ptr[r]:line_ptr[r + 1]`` are row ``r``'s lines. A line is boilerplate when its key, or the
    heading it is under, is in ``boiler_min`` notes or more.
    """

    letters: npt.NDArray[np.int64]  # per row
    boiler: npt.NDArray[np.int64]  # per row: letters on boilerplate lines
    first_line: npt.NDArray[np.int64]  # per row, 1-based
    last_line: npt.NDArray[np.int64]
    line_ptr: npt.NDArray[np.int64]
    line_key: npt.NDArray[np.int64]
    line_no: npt.NDArray[np.int64]  # 1-based line in the note
    line_letters: npt.NDArray[np.int64]
    line_boiler: npt.NDArray[np.bool_]
    note_letters: npt.NDArray[np.int64]  # body letters per note
    lang: list[str | None]  # per note
    exact: list[ExactGroup]
    in_exact: set[frozenset[str]]
    boiler_min: int

    def weights(self, boiler_weight: float) -> npt.NDArray[np.float64]:
        """Each row's weight in coverage: its letters, boilerplate ones discounted; at least 1."""
        w = (self.letters - self.boiler) + boiler_weight * self.boiler
        return np.maximum(w.astype(np.float64), 1.0)

    def boiler_share(self) -> npt.NDArray[np.float64]:
        return np.where(self.letters > 0, self.boiler / np.maximum(self.letters, 1), 0.0)

    def lines(self, rows: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """(line indices, position in ``rows`` of each) for the lines of ``rows``."""
        counts = self.line_ptr[rows + 1] - self.line_ptr[rows]
        if not counts.sum():
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        pos = np.repeat(np.arange(len(rows), dtype=np.int64), counts)
        offsets = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
        return self.line_ptr[rows][pos] + offsets, pos


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


def boilerplate_min_notes(notes: int, settings: DiscoverSettings) -> int:
    """Notes a line or heading must appear in to count as boilerplate: a share of the vault, at least a floor."""
    return max(settings.boilerplate_notes, math.ceil(settings.boilerplate_share * notes))


def _profile(store: Store, lay: _Layout, settings: DiscoverSettings) -> _Profile:
    key = (settings.boilerplate_notes, settings.boilerplate_share)
    cached = lay.profiles.get(key)
    if cached is None:
        cached = _read_profile(store, lay, boilerplate_min_notes(len(lay.notes), settings))
        lay.profiles[key] = cached
    return cached


def _line_key(line: str) -> str:
    """A line's letters and digits, case folded, without HTML tags and a heading's ``{ #id }``
    (what :func:`_read_profile` computes for every line, one chunk at a time)."""
    return _NON_ALNUM.sub("", _ANCHOR_LINES.sub("", _TAG.sub(" ", line)).casefold())


def _normalized(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.split("\n")).strip()


def _note_batches(store: Store, lay: _Layout) -> Iterator[tuple[int, list[tuple[int, Chunk]]]]:
    """Each note with its (row, chunk) pairs in order, reading about FETCH_ROWS chunks per store call."""
    note = 0
    while note < len(lay.notes):
        stop = note
        while stop < len(lay.notes) and (
            stop == note or lay.starts[stop + 1] - lay.starts[note] <= FETCH_ROWS
        ):
            stop += 1
        rows = lay.by_note[lay.starts[note] : lay.starts[stop]]
        chunks = store.chunks(int(k) for k in lay.rowids[rows])
        for n in range(note, stop):
            got = [
                (int(r), chunks[int(lay.rowids[r])]) for r in lay.rows_of(n) if int(lay.rowids[r]) in chunks
            ]
            got.sort(key=lambda rc: rc[1].ordinal)
            yield n, got
        note = stop


def _read_profile(store: Store, lay: _Layout, boiler_min: int) -> _Profile:
    n_rows, n_notes = len(lay.rowids), len(lay.notes)
    letters = np.zeros(n_rows, dtype=np.int64)
    first_line = np.zeros(n_rows, dtype=np.int64)
    last_line = np.zeros(n_rows, dtype=np.int64)
    note_letters = np.zeros(n_notes, dtype=np.int64)
    lang: list[str | None] = [None] * n_notes
    line_row, line_key, line_letters, line_head = array("q"), array("q"), array("q"), array("q")
    line_no = array("q")
    note_keys, note_heads = array("q"), array("q")  # each note's distinct keys, for document frequency
    full: dict[str, list[str]] = defaultdict(list)
    body: dict[str, list[str]] = defaultdict(list)
    for n, chunks in _note_batches(store, lay):
        path = lay.notes[n]
        fence = ""
        head = 0  # hash of the heading the current line is under (0: none)
        keys: set[int] = set()
        heads: set[int] = set()
        prose: list[str] = []
        for row, chunk in chunks:
            first_line[row], last_line[row] = chunk.start_line + 1, chunk.end_line
            if chunk.frontmatter:
                letters[row] = len(_ALNUM.findall(chunk.text))
                continue
            raw = chunk.text.split("\n")
            folded = _ANCHOR_LINES.sub("", _TAG.sub(" ", chunk.text)).casefold().split("\n")
            line_keys = [_NON_ALNUM.sub("", f) for f in folded]
            heads_at = [head] * len(raw)  # the heading each line is under
            plain = [True] * len(raw)  # outside code fences
            for i, line in enumerate(raw):  # fences and headings: only lines that may be one
                if fence:
                    plain[i] = False
                if "```" in line or "~~~" in line:
                    m = _FENCE.match(line)
                    if m and (not fence or m.group(1)[0] == fence[0]):
                        fence = "" if fence else m.group(1)
                        plain[i] = False
                elif not fence and "#" in line[:4] and _HEADING.match(line):
                    head = hash(line_keys[i]) if line_keys[i] else 0
                    if head:
                        heads.add(head)
                heads_at[i] = head
            prose.extend(line for line, p in zip(raw, plain, strict=True) if p)
            first = chunk.start_line + 1
            kept = [i for i, k in enumerate(line_keys) if k]
            hashes = [hash(line_keys[i]) for i in kept]
            sizes = [len(line_keys[i]) for i in kept]
            keys.update(hashes)
            line_row.extend([row] * len(kept))
            line_no.extend(first + i for i in kept)
            line_key.extend(hashes)
            line_letters.extend(sizes)
            line_head.extend(heads_at[i] for i in kept)
            letters[row] = sum(sizes)
            note_letters[n] += letters[row]
        text = _NOT_PROSE.sub(" ", "\n".join(prose))
        cyr = sum(map(len, _CYRILLIC.findall(text)))
        lat = sum(map(len, _LATIN.findall(text)))
        note_keys.extend(keys)
        note_heads.extend(heads)
        if cyr + lat >= LANG_MIN_LETTERS:
            share = cyr / (cyr + lat)
            lang[n] = "ru" if share >= 0.5 else "en" if share <= 0.15 else None
        text = _normalized("\n".join(c.text for _, c in chunks))
        stripped = _normalized("\n".join(c.text for _, c in chunks if not c.frontmatter))
        full[sha256_hex(text)].append(path)
        if stripped:
            body[sha256_hex(stripped)].append(path)
    rows_arr = np.frombuffer(line_row, dtype=np.int64) if line_row else np.zeros(0, dtype=np.int64)
    order = np.argsort(rows_arr, kind="stable")

    def arr(a: array[int]) -> npt.NDArray[np.int64]:
        return (np.frombuffer(a, dtype=np.int64) if a else np.zeros(0, dtype=np.int64))[order]

    keys_arr, heads_arr = arr(line_key), arr(line_head)
    frequent_lines = _frequent(note_keys, boiler_min)
    frequent_heads = _frequent(note_heads, boiler_min)
    line_boiler = np.isin(keys_arr, frequent_lines) | np.isin(heads_arr, frequent_heads)
    line_letters_arr = arr(line_letters)
    line_no_arr = arr(line_no)
    rows_sorted = rows_arr[order]
    boiler = np.bincount(rows_sorted, weights=line_letters_arr * line_boiler, minlength=n_rows).astype(
        np.int64
    )
    line_ptr = np.zeros(n_rows + 1, dtype=np.int64)
    line_ptr[1:] = np.cumsum(np.bincount(rows_sorted, minlength=n_rows))
    exact, in_exact = _exact_groups(full, body)
    return _Profile(
        letters,
        boiler,
        first_line,
        last_line,
        line_ptr,
        keys_arr,
        line_no_arr,
        line_letters_arr,
        line_boiler,
        note_letters,
        lang,
        exact,
        in_exact,
        boiler_min,
    )


def _frequent(keys: array[int], min_notes: int) -> npt.NDArray[np.int64]:
    if not keys:
        return np.zeros(0, dtype=np.int64)
    values, counts = np.unique(np.frombuffer(keys, dtype=np.int64), return_counts=True)
    return values[counts >= min_notes]


def _exact_groups(
    full: dict[str, list[str]], body: dict[str, list[str]]
) -> tuple[list[ExactGroup], set[frozenset[str]]]:
    """Identical notes, then notes with the same body under different front matter; plus every pair
    the groups cover.

    A note is listed once: a same-body group names one note of each identical group (its first
    path), so a note never shows under both kinds."""
    groups = [ExactGroup("identical", sorted(ps)) for ps in full.values() if len(ps) > 1]
    first = {p: g.paths[0] for g in groups for p in g.paths}
    covered = {frozenset((a, b)) for ps in (*full.values(), *body.values()) for a in ps for b in ps if a != b}
    for ps in body.values():
        representatives = sorted({first.get(p, p) for p in ps})
        if len(representatives) > 1:
            groups.append(ExactGroup("same_body", representatives))
    groups.sort(key=lambda g: g.paths)
    return groups, covered


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
    raise VaultError(f"No indexed note matches {note!r}.", hint="Check the path, or run `vaultlens index`.")


def _refs(store: Store, rowids: list[int]) -> dict[int, Section]:
    return {r: Section.of(c) for r, c in store.chunks(rowids).items()}


def similar(
    store: Store, path: str, limit: int, min_chars: int, *, settings: DiscoverSettings | None = None
) -> SimilarResult:
    """Notes related to ``path``: per other note, its best section pair; a section made of
    boilerplate counts ``boilerplate_weight`` as much (a section half boilerplate, halfway)."""
    s = settings or DiscoverSettings()
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
    keep = (1.0 - (1.0 - s.boilerplate_weight) * _profile(store, lay, s).boiler_share()).astype(np.float32)
    sims = lay.vecs @ lay.vecs[body].T  # (chunks, my sections)
    for j, row in enumerate(body.tolist()):  # a pair counts as much as its more boilerplate side
        sims[:, j] *= np.minimum(keep, keep[row])
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
    for n, r, m, sc in picked:
        grouped[n].append(SectionMatch(refs[int(lay.rowids[m])], refs[int(lay.rowids[r])], round(sc, 4)))
    results = [
        SimilarNote(
            lay.notes[n], titles.get(lay.notes[n]) or lay.notes[n], round(float(note_best[n]), 4), grouped[n]
        )
        for n in order
    ]
    return SimilarResult(path, notice, results)


# a passage: (row of a, first line, last line, row of b, first line, last line, score); lines 1-based
Span = tuple[int, int, int, int, int, int, float]
# a reported pair before rendering: (score, kind, note a, note b, evidence (row a, row b, score), passages)
_Found = tuple[float, str, int, int, tuple[int, int, float], list[Span]]
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


def _partitions(vecs: npt.NDArray[np.float32], seed: int = 0) -> Iterator[npt.NDArray[np.int64]]:
    """Members of each k-means partition (about sqrt(n) of them); each vector joins its :data:`PROBES` nearest."""
    n = vecs.shape[0]
    rng = np.random.default_rng(seed)
    k = max(2, int(np.sqrt(n)))
    sample = vecs[rng.choice(n, min(n, 40 * k), replace=False)]
    centroids = _spherical_kmeans(sample, k, rng)
    probes = min(PROBES, k)
    nearest = np.empty((n, probes), dtype=np.int64)
    for s0 in range(0, n, 8192):
        sims = vecs[s0 : s0 + 8192] @ centroids.T
        nearest[s0 : s0 + 8192] = np.argpartition(-sims, probes - 1, axis=1)[:, :probes]
    owner = nearest.ravel()
    member = np.repeat(np.arange(n, dtype=np.int64), probes)
    order = np.argsort(owner, kind="stable")
    bounds = np.searchsorted(owner[order], np.arange(k + 1))
    for c in range(k):
        yield member[order[bounds[c] : bounds[c + 1]]]


def _partitioned_pairs(vecs: npt.NDArray[np.float32], floor: float, seed: int = 0) -> Iterator[PairBatch]:
    """Pairs with cos >= floor, approximately: each vector joins the partitions of its
    :data:`PROBES` nearest k-means centroids, and pairs are scored exactly inside each partition.

    Two near-copies (cos >= 0.9) are almost always nearest to the same centroid, and probing two
    makes a miss rarer still; recall is measured on planted pairs in bench/duplicates_scale.py,
    not guaranteed. Cost is the sum of squared partition sizes instead of n squared.
    """
    n = vecs.shape[0]
    seen: set[int] = set()
    for idx in _partitions(vecs, seed):
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


def _top_across(
    vecs: npt.NDArray[np.float32], left: npt.NDArray[np.int64], right: npt.NDArray[np.int64], m: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(l, r) for each l of ``left`` and its ``m`` nearest of ``right``, and for each r its ``m``
    nearest of ``left`` (duplicates possible): one blocked product, memory for one block, the
    right side's running best and the answer (O(n m))."""
    if not len(left) or not len(right):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    kr, kl = min(m, len(right)), min(m, len(left))
    targets = vecs[right]
    col_val = np.full((kl, len(right)), -np.inf, dtype=np.float32)  # each right's best lefts so far
    col_idx = np.zeros((kl, len(right)), dtype=np.int64)
    ls: list[npt.NDArray[np.int64]] = []
    rs: list[npt.NDArray[np.int64]] = []
    for start in range(0, len(left), BLOCK_ROWS):
        block = left[start : start + BLOCK_ROWS]
        sims = vecs[block] @ targets.T
        ls.append(np.repeat(block, kr))
        rs.append(right[np.argpartition(-sims, kr - 1, axis=1)[:, :kr]].ravel())
        kb = min(kl, len(block))
        top = np.argpartition(-sims, kb - 1, axis=0)[:kb]
        vals = np.vstack([col_val, np.take_along_axis(sims, top, axis=0)])
        idx = np.vstack([col_idx, block[top]])
        keep = np.argpartition(-vals, kl - 1, axis=0)[:kl]
        col_val, col_idx = np.take_along_axis(vals, keep, axis=0), np.take_along_axis(idx, keep, axis=0)
    found = np.isfinite(col_val)
    ls.append(col_idx[found])
    rs.append(np.broadcast_to(right, col_idx.shape)[found])
    return np.concatenate(ls), np.concatenate(rs)


def _translation_candidates(
    centroids: npt.NDArray[np.float32], side: npt.NDArray[np.bool_]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Distinct pairs (Latin note, Cyrillic note) of near centroids, ordered; k-means partitions above
    EXACT_MAX_ROWS notes."""
    left, right = np.flatnonzero(side), np.flatnonzero(~side)
    if len(centroids) <= EXACT_MAX_ROWS:
        ls, rs = _top_across(centroids, left, right, TRANSLATION_CANDIDATES)
    else:
        parts = [
            _top_across(centroids, idx[side[idx]], idx[~side[idx]], TRANSLATION_CANDIDATES)
            for idx in _partitions(centroids)
        ]
        ls = np.concatenate([p[0] for p in parts])
        rs = np.concatenate([p[1] for p in parts])
    codes = np.unique(ls * len(centroids) + rs)
    return codes // len(centroids), codes % len(centroids)


@dataclass
class _Rated:
    """One candidate pair's coverage, both ways."""

    na: int
    nb: int
    cover_a: float
    cover_b: float
    value_a: npt.NDArray[np.float64]  # per body row of a: its best match in b (cosine or copied lines)
    partner_a: npt.NDArray[np.int64]  # the row of b it matched (-1: none)
    value_b: npt.NDArray[np.float64]
    partner_b: npt.NDArray[np.int64]


class _Duplicates:
    """One `duplicates` run: the layout, the profile and the settings it rates pairs with."""

    def __init__(self, store: Store, threshold: float, min_chars: int, s: DiscoverSettings) -> None:
        self.store, self.threshold, self.s = store, threshold, s
        self.lay = lay = _layout(store)
        self.prof = _profile(store, lay, s)
        self.weight = self.prof.weights(s.boilerplate_weight)
        self.short = self.prof.note_letters < min_chars
        # the compared rows of every note (not front matter, not a short note), in line order
        usable = np.flatnonzero(~lay.frontmatter & ~self.short[lay.note_of])
        self._body = usable[np.lexsort((self.prof.first_line[usable], lay.note_of[usable]))]
        self._body_starts = np.searchsorted(lay.note_of[self._body], np.arange(len(lay.notes) + 1))
        self._keys: dict[int, npt.NDArray[np.int64]] = {}

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
        rows_idx = np.flatnonzero(usable)
        note_of = lay.note_of[rows_idx]
        best: dict[tuple[int, int], dict[int, tuple[float, int]]] = defaultdict(dict)
        for r, c, sims in _pairs(lay.vecs[rows_idx], floor):
            rr, cc = rows_idx[r].tolist(), rows_idx[c].tolist()
            for i, j, ni, nj, sc in zip(
                rr, cc, note_of[r].tolist(), note_of[c].tolist(), sims.tolist(), strict=True
            ):
                if ni == nj:
                    continue
                for x, y, nx, ny in ((i, j, ni, nj), (j, i, nj, ni)):
                    cur = best[(nx, ny)].get(x)
                    if cur is None or sc > cur[0]:
                        best[(nx, ny)][x] = (sc, y)
        return best

    def text_candidates(self) -> set[tuple[int, int]]:
        """Note pairs that share non-boilerplate lines (copied text) of CANDIDATE_LETTERS letters or more."""
        prof, lay = self.prof, self.lay
        line_row = np.repeat(np.arange(len(lay.rowids), dtype=np.int64), np.diff(prof.line_ptr))
        keep = (
            ~prof.line_boiler & (prof.line_letters >= LINE_MIN_LETTERS) & ~self.short[lay.note_of[line_row]]
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

    def rate(self, na: int, nb: int, best: dict[tuple[int, int], dict[int, tuple[float, int]]]) -> _Rated:
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
        return _Rated(na, nb, self.cover(na, va), self.cover(nb, vb), va, pa, vb, pb)

    def evidence(self, r: _Rated) -> tuple[int, int, float]:
        """(row of a, row of b, value) of the section that stands for the pair (:func:`_weightiest`),
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
        v, _, x, y = _weightiest(picks)
        return x, y, v

    def cover(self, n: int, value: npt.NDArray[np.float64]) -> float:
        w = self.weight[self.body(n)]
        counted = np.where(value >= self.threshold - SECTION_SLACK, value, 0.0)
        return float((w * counted).sum() / w.sum()) if len(w) else 0.0

    def passages(self, r: _Rated) -> list[Span]:
        """Passages shared by two notes that are not duplicates as a whole, each once, in a's order:
        runs of copied lines (:meth:`copied_runs`), then runs of sections that match at
        passage_threshold (by meaning or copied lines) and whose words are mostly the same."""
        kept = self.copied_runs(r.na, r.nb)
        for span in self.section_runs(r):
            if not any(_overlaps(span, q) for q in kept):
                kept.append(span)
        return sorted(kept, key=lambda p: p[1])

    def _content_lines(self, n: int) -> npt.NDArray[np.int64]:
        """A note's non-boilerplate lines, in line order, each line once."""
        prof = self.prof
        idx, _ = prof.lines(self.body(n))
        idx = idx[~prof.line_boiler[idx]]
        idx = idx[np.argsort(prof.line_no[idx], kind="stable")]
        if len(idx):
            idx = idx[np.r_[True, prof.line_no[idx][1:] != prof.line_no[idx][:-1]]]
        return idx

    def copied_runs(self, na: int, nb: int) -> list[Span]:
        """Runs of a's lines found in b in the same order (a gap of up to COPY_GAP other lines on
        either side allowed) with PASSAGE_MIN_LETTERS copied letters or more."""
        prof = self.prof
        la, lb = self._content_lines(na), self._content_lines(nb)
        if not len(la) or not len(lb):
            return []
        kb = prof.line_key[lb]
        order = np.argsort(kb, kind="stable")
        sorted_keys = kb[order]
        ka = prof.line_key[la]
        lo = np.searchsorted(sorted_keys, ka, side="left").tolist()
        hi = np.searchsorted(sorted_keys, ka, side="right").tolist()
        letters = prof.line_letters[la].tolist()
        runs: list[Span] = []
        cur: list[int] | None = None  # [a first pos, a last pos, b first pos, b last pos, copied letters]

        def close() -> None:
            if cur is not None and cur[4] >= PASSAGE_MIN_LETTERS:
                total = sum(letters[cur[0] : cur[1] + 1])
                a0, a1, b0, b1 = int(la[cur[0]]), int(la[cur[1]]), int(lb[cur[2]]), int(lb[cur[3]])
                runs.append(
                    (
                        self._row_of(na, a0),
                        int(prof.line_no[a0]),
                        int(prof.line_no[a1]),
                        self._row_of(nb, b0),
                        int(prof.line_no[b0]),
                        int(prof.line_no[b1]),
                        cur[4] / max(total, 1),
                    )
                )

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

    def _row_of(self, n: int, line: int) -> int:
        """The body row of note ``n`` that holds line index ``line``."""
        rows = self.body(n)
        where = np.flatnonzero((self.prof.line_ptr[rows] <= line) & (line < self.prof.line_ptr[rows + 1]))
        return int(rows[where[0]])

    def section_runs(self, r: _Rated) -> list[Span]:
        """Runs of consecutive substantial sections matched at passage_threshold whose matches are
        consecutive too, confirmed by their words (PASSAGE_MIN_OVERLAP of the shorter side in order)."""
        prof, s = self.prof, self.s
        found: list[tuple[int, int, int, int, float]] = []  # rows: a first, a last, b first, b last
        for x, y, value, partner, flip in (
            (r.na, r.nb, r.value_a, r.partner_a, False),
            (r.nb, r.na, r.value_b, r.partner_b, True),
        ):
            rows = self.body(x)
            where = {int(row): i for i, row in enumerate(self.body(y))}
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
                w = self.weight[run]
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
            words = self._span_words(r.na, r.nb, spans)
            spans = [
                p for p, (wa, wb) in zip(spans, words, strict=True) if _overlap(wa, wb) >= PASSAGE_MIN_OVERLAP
            ]
        return spans

    def _span_words(self, na: int, nb: int, spans: list[Span]) -> list[tuple[list[str], list[str]]]:
        """The words of each span's sections in a and in b."""
        prof, lay = self.prof, self.lay

        def between(n: int, first: int, last: int) -> list[int]:
            rows = self.body(n)
            return [int(x) for x in rows[(prof.first_line[rows] >= first) & (prof.last_line[rows] <= last)]]

        picks = [(between(na, p[1], p[2]), between(nb, p[4], p[5])) for p in spans]
        chunks = self.store.chunks(int(lay.rowids[x]) for pa, pb in picks for x in (*pa, *pb))

        def words(rows: list[int]) -> list[str]:
            text = "\n".join(chunks[int(lay.rowids[x])].text for x in rows if int(lay.rowids[x]) in chunks)
            return _WORD.findall(text.casefold())[:PASSAGE_MAX_WORDS]

        return [(words(pa), words(pb)) for pa, pb in picks]

    # ---- translations ---------------------------------------------------------------------------
    def translations(self, dismissed: set[tuple[str, str]]) -> list[tuple[float, int, int, int, int, float]]:
        """(score, Latin note, Cyrillic note, evidence row of each, evidence cosine) of every translation pair."""
        lay, prof, s = self.lay, self.prof, self.s
        notes = np.array(
            [n for n in range(len(lay.notes)) if prof.lang[n] in ("en", "ru") and len(self.body(n))],
            dtype=np.int64,
        )
        side = np.array([prof.lang[n] == "en" for n in notes.tolist()], dtype=bool)
        if not side.any() or side.all():
            return []
        bodies = [self.body(n) for n in notes.tolist()]
        starts = np.cumsum([0] + [len(b) for b in bodies[:-1]])
        centroids = np.empty((len(notes), lay.vecs.shape[1]), dtype=np.float32)
        for s0 in range(0, len(notes), 8192):  # weighted sums of each note's rows, a block of notes at a time
            part = bodies[s0 : s0 + 8192]
            rows = np.concatenate(part)
            weighted = lay.vecs[rows] * self.weight[rows][:, None].astype(np.float32)
            centroids[s0 : s0 + len(part)] = np.add.reduceat(
                weighted, starts[s0 : s0 + len(part)] - starts[s0]
            )
        centroids /= np.maximum(np.linalg.norm(centroids, axis=1, keepdims=True), 1e-9)
        ii, jj = _translation_candidates(centroids, side)
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
            scores[lo:hi] = self._min_cover(int(ii[lo]), jj[lo:hi].tolist())
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
        texts = self._body_texts({n for _, a, b in kept for n in (a, b)})
        signatures = {n: _structure(t) for n, t in texts.items()}
        out = []
        for score, a, b in kept:
            agree = _agreement(signatures[a], signatures[b])
            need = s.translation_threshold + (BARE_MARGIN if agree is None else 0.0)
            if score >= need and (agree is None or agree >= STRUCTURE_MIN):
                out.append((score, a, b, *self._translation_evidence(a, b)))
        return out

    def _min_cover(self, a: int, others: list[int]) -> npt.NDArray[np.float64]:
        """For each note of ``others``, the lower of its coverage of ``a`` and a's of it (cosines only)."""
        ra = self.body(a)
        parts = [self.body(b) for b in others]
        stacked = np.concatenate(parts)
        starts = np.cumsum([0] + [len(p) for p in parts[:-1]])
        sims = self.lay.vecs[ra] @ self.lay.vecs[stacked].T
        wa, wb = self.weight[ra], self.weight[stacked]
        cover_a = wa @ np.maximum.reduceat(sims, starts, axis=1) / wa.sum()
        cover_b = np.add.reduceat(wb * sims.max(axis=0), starts) / np.add.reduceat(wb, starts)
        result: npt.NDArray[np.float64] = np.minimum(cover_a, cover_b)
        return result

    def _translation_evidence(self, a: int, b: int) -> tuple[int, int, float]:
        ra, rb = self.body(a), self.body(b)
        sims = self.lay.vecs[ra] @ self.lay.vecs[rb].T
        picks = [
            (float(sims[i, j]), float(self.weight[ra[i]]), int(ra[i]), int(rb[j]))
            for i, j in enumerate(sims.argmax(axis=1).tolist())
        ]
        v, _, x, y = _weightiest(picks)
        return x, y, v

    def _body_texts(self, notes: set[int]) -> dict[int, str]:
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


def _weightiest(picks: list[tuple[float, float, int, int]]) -> tuple[float, float, int, int]:
    """Of the (value, weight, row, row) picks within EVIDENCE_SLACK of the best value, the largest value x weight."""
    top = max(p[0] for p in picks)
    return max((p for p in picks if p[0] >= top - EVIDENCE_SLACK), key=lambda p: (p[0] * p[1], p[0]))


def _overlap(a: list[str], b: list[str]) -> float:
    """Share of the shorter word list found, in order, in the other."""
    if not a or not b:
        return 0.0
    blocks = SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()
    return sum(m.size for m in blocks) / min(len(a), len(b))


def _overlaps(p: Span, q: Span) -> bool:
    """Whether two passages overlap on both sides."""
    return p[1] <= q[2] and q[1] <= p[2] and p[4] <= q[5] and q[4] <= p[5]


@dataclass(frozen=True)
class _Structure:
    """What a translation keeps: heading levels in order, code blocks, link targets, inline code, numbers."""

    headings: str
    fences: int
    targets: dict[str, int]
    code: dict[str, int]
    numbers: dict[str, int]


def _structure(text: str) -> _Structure:
    headings: list[str] = []
    fences = 0
    fence = ""
    targets: dict[str, int] = defaultdict(int)
    code: dict[str, int] = defaultdict(int)
    numbers: dict[str, int] = defaultdict(int)
    for line in text.split("\n"):
        m = _FENCE.match(line)
        if m and (not fence or m.group(1)[0] == fence[0]):
            fences += not fence
            fence = "" if fence else m.group(1)
            continue
        if fence:
            continue
        h = _HEADING.match(line)
        if h:
            headings.append(str(len(h.group(1))))
        for span in _INLINE_CODE.findall(line):
            code[span.strip()] += 1
        for groups in _TARGETS.findall(line):
            target = next(g for g in groups if g)
            targets[target] += 1
        for num in _NUMBER.findall(_NOT_PROSE.sub(" ", line)):
            numbers[num] += 1
    return _Structure("".join(headings), fences, dict(targets), dict(code), dict(numbers))


def _dice(a: dict[str, int], b: dict[str, int]) -> float | None:
    if not a and not b:
        return None
    common = sum(min(v, b.get(k, 0)) for k, v in a.items())
    return 2 * common / (sum(a.values()) + sum(b.values()))


def _ratio(x: int, y: int) -> float | None:
    return None if x == y == 0 else min(x, y) / max(x, y)


def _agreement(a: _Structure, b: _Structure) -> float | None:
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


def duplicates(
    store: Store, threshold: float, limit: int, min_chars: int, *, settings: DiscoverSettings | None = None
) -> DuplicateReport:
    s = settings or DiscoverSettings()
    run = _Duplicates(store, threshold, min_chars, s)
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
        spans = run.passages(r)
        if spans:
            lead = max(spans, key=lambda p: p[6])
            found.append((lead[6], "shared_passage", na, nb, (lead[0], lead[3], lead[6]), spans))
    for score, na, nb, x, y, cos in run.translations(dismissed):
        found.append((score, "translation", na, nb, (x, y, cos), []))

    def order(item: _Found) -> tuple[float, str, str]:
        a, b = sorted((lay.notes[item[2]], lay.notes[item[3]]))
        return (-item[0], a, b)

    whole = sorted((f for f in found if f[1] != "shared_passage"), key=order)
    shared = sorted((f for f in found if f[1] == "shared_passage"), key=order)
    report.total_pairs, report.total_shared_passages = len(whole), len(shared)
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
    return report


def _same_name(a: str, b: str) -> bool:
    return PurePosixPath(a).name.casefold() == PurePosixPath(b).name.casefold()
