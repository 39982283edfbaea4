"""What the index says about each note, read once per store generation and shared by `similar` and `duplicates`.

The *layout* is the chunk vectors grouped by note. The *profile* is one pass over every chunk's
text: letters per section, line keys (for copied text), the script a note is written in, exact
copies, and *boilerplate*: a line that :func:`boilerplate_min_notes` notes or more contain, and every
line under a heading that many notes use ("Sources", "What next" of a template).

The pass (:class:`Scan`, everything but boilerplate, which depends on settings) is kept by the store
per store id and generation beside the vector cache, so only the first process after a change
reads the texts; a kept scan is used only when it names the layout's exact rows and notes.
"""

from __future__ import annotations

import json
import math
import re
from array import array
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from hashlib import blake2b
from typing import Any

import numpy as np
import numpy.typing as npt

from vaultlens.chunking.chunker import Chunk
from vaultlens.chunking.scripts import script_mix
from vaultlens.config.settings import DiscoverSettings
from vaultlens.fsutil import sha256_hex
from vaultlens.index.store import StoreReads

FETCH_ROWS = 2000  # chunks read per store call while profiling the vault
ALNUM = re.compile(r"[^\W_]", re.UNICODE)
_NON_ALNUM = re.compile(r"[\W_]+")
_NON_ALNUM_LINES = re.compile(r"[^\w\n]+|_+")  # the same, keeping line breaks: one call per chunk
_TAG = re.compile(r"</?[A-Za-z][^>\n]*>")
_ANCHOR_LINES = re.compile(r"\{[ \t]*#[^}\n]*\}[ \t]*$", re.M)
HEADING = re.compile(r"^ {0,3}(#{1,6})(?:\s|$)")
FENCE = re.compile(r"^\s*(`{3,}|~{3,})")


@dataclass(frozen=True, slots=True)
class ExactGroup:
    kind: str  # identical (after line endings, BOM, trailing whitespace) | same_body (front matter differs)
    paths: list[str]


@dataclass
class Layout:
    """Chunk vectors with, for each row, its note index and whether it is front matter."""

    rowids: npt.NDArray[np.int64]
    vecs: npt.NDArray[np.float32]
    note_of: npt.NDArray[np.int64]
    notes: list[str]
    frontmatter: npt.NDArray[np.bool_]
    note_index: dict[str, int] = field(default_factory=dict)
    by_note: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    starts: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(1, dtype=np.int64))
    profiles: dict[tuple[int, float], Profile] = field(default_factory=dict)
    generation: int = -1  # the store generation all of the above was read in
    scan: Scan | None = None

    def rows_of(self, note: int) -> npt.NDArray[np.int64]:
        return self.by_note[self.starts[note] : self.starts[note + 1]]


@dataclass
class Profile:
    """What the texts say, per layout row and per note (one pass over every chunk, cached per generation).

    Lines are keyed by their letters and digits (case folded, HTML tags and heading ids dropped, see
    :func:`line_key`); lines without any are left out, and only body rows have lines.
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
    line_notes: npt.NDArray[np.int64]  # notes that have the line's key
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
_LAYOUTS: dict[str, tuple[int, Layout]] = {}


def layout(store: StoreReads) -> Layout:
    with store.snapshot() as generation:  # vectors and chunk rows of one generation
        cached = _LAYOUTS.get(store.store_id)
        if cached is not None and cached[0] == generation:
            return cached[1]
        lay = _read_layout(store)
    lay.generation = generation
    _LAYOUTS.clear()  # one store per process is the rule; never keep a dead one's vectors alive
    _LAYOUTS[store.store_id] = (generation, lay)
    return lay


def _read_layout(store: StoreReads) -> Layout:
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
    return Layout(rowids, vecs32, note_of, list(index), frontmatter, index, by_note, starts)


def boilerplate_min_notes(notes: int, settings: DiscoverSettings) -> int:
    """Notes a line or heading must appear in to count as boilerplate: a share of the vault, at least a floor."""
    return max(settings.boilerplate_notes, math.ceil(settings.boilerplate_share * notes))


def profile(store: StoreReads, lay: Layout, settings: DiscoverSettings) -> Profile:
    key = (settings.boilerplate_notes, settings.boilerplate_share)
    cached = lay.profiles.get(key)
    if cached is None:
        if lay.scan is None:
            lay.scan = _scan(store, lay)
        cached = _profile_of(lay.scan, boilerplate_min_notes(len(lay.notes), settings))
        lay.profiles[key] = cached
    return cached


def stable_hash(key: str) -> int:
    """A line key's signed 64-bit hash, the same in every process (scans are kept on disk, so
    Python's per-process ``hash()`` cannot be used)."""
    return int.from_bytes(blake2b(key.encode(), digest_size=8).digest(), "little", signed=True)


SCAN_CACHE = "profile1"  # name of the kept scan: change it when what a scan holds, or its hash, changes
_LANGS: list[str | None] = [None, "en", "ru"]


@dataclass
class Scan:
    """The one pass over every chunk's text, before boilerplate (which depends on settings).

    Per row: letters, first/last line. Per line (ordered by row): row, key hash, line number,
    letters, hash of the heading it is under. Per note: body letters, language. Each note's
    distinct line and heading keys (for document frequency), and the exact-copy groups.
    """

    arrays: dict[str, npt.NDArray[Any]]

    _INT = (
        "letters", "first_line", "last_line", "line_row", "line_key", "line_no", "line_letters",
        "line_head", "note_letters", "note_keys", "note_heads",
    )  # fmt: skip

    def groups(self) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        raw = json.loads(self.arrays["groups"].tobytes().decode("utf-8"))
        full = {str(i): list(g) for i, g in enumerate(raw["full"])}
        body = {str(i): list(g) for i, g in enumerate(raw["body"])}
        return full, body

    def lang(self) -> list[str | None]:
        return [_LANGS[c] for c in self.arrays["lang"].tolist()]


def _identity(lay: Layout) -> dict[str, npt.NDArray[Any]]:
    """What a kept scan must match to be this layout's: its rows and its notes, in order."""
    digest = blake2b("\0".join(lay.notes).encode(), digest_size=16).digest()
    return {"rowids": np.asarray(lay.rowids, dtype=np.int64), "notes": np.frombuffer(digest, dtype=np.uint8)}


def _scan(store: StoreReads, lay: Layout) -> Scan:
    """The layout's scan: kept on disk by the store per generation, else read and kept."""
    with store.snapshot() as generation:
        same = generation == lay.generation  # else the layout is of another generation: compute only
        ident = _identity(lay)
        kept = store.load_derived(SCAN_CACHE, generation) if same else None
        if kept is not None and _valid(kept, ident, len(lay.rowids), len(lay.notes)):
            return Scan({k: v for k, v in kept.items() if k not in ident})
        scan = _read_scan(store, lay)
        if same:
            store.save_derived(SCAN_CACHE, generation, {**scan.arrays, **ident})
        return scan


def _valid(
    kept: dict[str, npt.NDArray[Any]], ident: dict[str, npt.NDArray[Any]], rows: int, notes: int
) -> bool:
    try:
        if any(not np.array_equal(kept[k], v) for k, v in ident.items()):
            return False
        per_row = all(kept[k].shape == (rows,) for k in ("letters", "first_line", "last_line"))
        per_note = kept["note_letters"].shape == (notes,) and kept["lang"].shape == (notes,)
        lines = {kept[k].shape for k in ("line_row", "line_key", "line_no", "line_letters", "line_head")}
        ints = all(kept[k].dtype == np.int64 and kept[k].ndim == 1 for k in Scan._INT)
        scan = Scan(kept)
        scan.groups()
        bad_lang = bool(kept["lang"].size) and (kept["lang"].min() < 0 or kept["lang"].max() >= len(_LANGS))
        bad_rows = bool(kept["line_row"].size) and (
            kept["line_row"].min() < 0 or kept["line_row"].max() >= rows
        )
        return per_row and per_note and len(lines) == 1 and ints and not bad_lang and not bad_rows
    except (KeyError, ValueError, TypeError, AttributeError):
        return False


def line_key(line: str) -> str:
    """A line's letters and digits, case folded, without HTML tags and a heading's ``{ #id }``
    (what :func:`_read_scan` computes for every line, one chunk at a time)."""
    return _NON_ALNUM.sub("", _ANCHOR_LINES.sub("", _TAG.sub(" ", line)).casefold())


def _normalized(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.split("\n")).strip()


def _note_batches(store: StoreReads, lay: Layout) -> Iterator[tuple[int, list[tuple[int, Chunk]]]]:
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


def _read_scan(store: StoreReads, lay: Layout) -> Scan:
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
                letters[row] = len(ALNUM.findall(chunk.text))
                continue
            raw = chunk.text.split("\n")
            folded = _ANCHOR_LINES.sub("", _TAG.sub(" ", chunk.text)).casefold()
            line_keys = _NON_ALNUM_LINES.sub("", folded).split("\n")
            heads_at = [head] * len(raw)  # the heading each line is under
            plain = [True] * len(raw)  # outside code fences
            for i, line in enumerate(raw):  # fences and headings: only lines that may be one
                if fence:
                    plain[i] = False
                if "```" in line or "~~~" in line:
                    m = FENCE.match(line)
                    if m and (not fence or m.group(1)[0] == fence[0]):
                        fence = "" if fence else m.group(1)
                        plain[i] = False
                elif not fence and "#" in line[:4] and HEADING.match(line):
                    head = (stable_hash(line_keys[i]) or 1) if line_keys[i] else 0
                    if head:
                        heads.add(head)
                heads_at[i] = head
            prose.extend(line for line, p in zip(raw, plain, strict=True) if p)
            first = chunk.start_line + 1
            kept = [i for i, k in enumerate(line_keys) if k]
            hashes = [stable_hash(line_keys[i]) for i in kept]
            sizes = [len(line_keys[i]) for i in kept]
            keys.update(hashes)
            line_row.extend([row] * len(kept))
            line_no.extend(first + i for i in kept)
            line_key.extend(hashes)
            line_letters.extend(sizes)
            line_head.extend(heads_at[i] for i in kept)
            letters[row] = sum(sizes)
            note_letters[n] += letters[row]
        note_keys.extend(keys)
        note_heads.extend(heads)
        lang[n] = script_mix("\n".join(prose)).language()
        text = _normalized("\n".join(c.text for _, c in chunks))
        stripped = _normalized("\n".join(c.text for _, c in chunks if not c.frontmatter))
        full[sha256_hex(text)].append(path)
        if stripped:
            body[sha256_hex(stripped)].append(path)
    rows_arr = np.frombuffer(line_row, dtype=np.int64) if line_row else np.zeros(0, dtype=np.int64)
    order = np.argsort(rows_arr, kind="stable")

    def arr(a: array[int], sort: bool = True) -> npt.NDArray[np.int64]:
        out = np.frombuffer(a, dtype=np.int64).copy() if a else np.zeros(0, dtype=np.int64)
        return out[order] if sort else out

    groups = {
        "full": [ps for ps in full.values() if len(ps) > 1],
        "body": [ps for ps in body.values() if len(ps) > 1],
    }
    return Scan(
        {
            "letters": letters,
            "first_line": first_line,
            "last_line": last_line,
            "line_row": rows_arr[order],
            "line_key": arr(line_key),
            "line_no": arr(line_no),
            "line_letters": arr(line_letters),
            "line_head": arr(line_head),
            "note_letters": note_letters,
            "note_keys": arr(note_keys, sort=False),
            "note_heads": arr(note_heads, sort=False),
            "lang": np.array([_LANGS.index(x) for x in lang], dtype=np.int8),
            "groups": np.frombuffer(json.dumps(groups).encode("utf-8"), dtype=np.uint8),
        }
    )


def _profile_of(scan: Scan, boiler_min: int) -> Profile:
    """The profile for one boilerplate threshold (a cheap pass over the scan's arrays)."""
    a = scan.arrays
    n_rows = len(a["letters"])
    rows_sorted = a["line_row"]
    keys_arr, heads_arr, line_letters_arr = a["line_key"], a["line_head"], a["line_letters"]
    frequent_heads = _frequent(a["note_heads"], boiler_min)
    line_notes = _notes_with(a["note_keys"], keys_arr)
    line_boiler = (line_notes >= boiler_min) | np.isin(heads_arr, frequent_heads)
    boiler = np.bincount(rows_sorted, weights=line_letters_arr * line_boiler, minlength=n_rows).astype(
        np.int64
    )
    line_ptr = np.zeros(n_rows + 1, dtype=np.int64)
    line_ptr[1:] = np.cumsum(np.bincount(rows_sorted, minlength=n_rows))
    exact, in_exact = _exact_groups(*scan.groups())
    return Profile(
        a["letters"],
        boiler,
        a["first_line"],
        a["last_line"],
        line_ptr,
        keys_arr,
        a["line_no"],
        line_letters_arr,
        line_boiler,
        line_notes,
        a["note_letters"],
        scan.lang(),
        exact,
        in_exact,
        boiler_min,
    )


def _frequent(keys: npt.NDArray[np.int64], min_notes: int) -> npt.NDArray[np.int64]:
    if not keys.size:
        return np.zeros(0, dtype=np.int64)
    values, counts = np.unique(keys, return_counts=True)
    return values[counts >= min_notes]


def _notes_with(note_keys: npt.NDArray[np.int64], keys: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """For each of ``keys``, how many notes have it (``note_keys`` holds each note's distinct keys)."""
    if not note_keys.size or not keys.size:
        return np.zeros(len(keys), dtype=np.int64)
    values, counts = np.unique(note_keys, return_counts=True)
    at = np.minimum(np.searchsorted(values, keys), len(values) - 1)
    return np.where(values[at] == keys, counts[at], 0).astype(np.int64)


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
