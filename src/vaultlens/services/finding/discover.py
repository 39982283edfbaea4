"""Related notes from the vectors already in the index (no embedding calls).

*Similar* compares every section of a note with every section of the vault and keeps, per
other note, its best section pair (chunk-level max-sim), so a note on two topics finds the
notes of each topic instead of a blurred average of both. A section made of boilerplate
(:mod:`vaultlens.services.finding.note_profile`) counts ``boilerplate_weight`` as much, so template sections many
notes share do not make unrelated notes look alike.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from vaultlens.config.settings import DiscoverSettings
from vaultlens.errors import NoteNotFound, VaultError
from vaultlens.index.store import StoreReads
from vaultlens.services.finding.note_profile import ALNUM, layout, profile
from vaultlens.services.finding.section import Section
from vaultlens.services.serial import AsDict
from vaultlens.vault.links import LinkResolver

SIMILAR_NEIGHBOURS = 100  # past the ANN threshold: nearest chunks of each section that `similar` compares


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
class SimilarResult(AsDict):
    path: str
    notice: str | None
    results: list[SimilarNote]


def resolve_note(store: StoreReads, vault_root: str, note: str) -> str:
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


def _refs(store: StoreReads, rowids: list[int]) -> dict[int, Section]:
    return {r: Section.of(c) for r, c in store.chunks(rowids).items()}


def _candidate_rows(store: StoreReads, rowids: npt.NDArray[np.int64], body: npt.NDArray[np.int64]) -> Any:
    """Layout rows to compare with ``body``: all of them (a slice), or past the store's ANN threshold
    the SIMILAR_NEIGHBOURS nearest of each section, so a call costs no pass over every vector."""
    found = store.neighbours(rowids[body], SIMILAR_NEIGHBOURS)
    if found is None:
        return slice(None)
    pos = np.minimum(np.searchsorted(rowids, found[1]), len(rowids) - 1)
    return np.unique(pos[rowids[pos] == found[1]])


def similar(
    store: StoreReads, path: str, limit: int, min_chars: int, *, settings: DiscoverSettings | None = None
) -> SimilarResult:
    """Notes related to ``path``: per other note, its best section pair; a section made of
    boilerplate counts ``boilerplate_weight`` as much (a section half boilerplate, halfway)."""
    s = settings or DiscoverSettings()
    lay = layout(store)
    if path not in lay.note_index:
        raise VaultError(f"{path} has no indexed text.")
    note = lay.note_index[path]
    mine = lay.rows_of(note)
    body = mine[~lay.frontmatter[mine]] if (~lay.frontmatter[mine]).any() else mine
    text = "".join(c.text for c in store.chunks(lay.rowids[body].tolist()).values())
    if len(ALNUM.findall(text)) < min_chars:
        return SimilarResult(
            path, f"{path} has fewer than {min_chars} letters or digits: too little text to compare.", []
        )
    notice = None
    centroid = lay.vecs[body].mean(axis=0)
    if len(body) > 1 and float(np.linalg.norm(centroid)) < 0.3:
        notice = "This note's sections point in unrelated directions; matches are per section, not for the whole note."
    keep = (1.0 - (1.0 - s.boilerplate_weight) * profile(store, lay, s).boiler_share()).astype(np.float32)
    rows = _candidate_rows(store, lay.rowids, body)  # every chunk, or the ANN index's nearest
    sims = lay.vecs[rows] @ lay.vecs[body].T  # (candidate chunks, my sections)
    for j, row in enumerate(body.tolist()):  # a pair counts as much as its more boilerplate side
        sims[:, j] *= np.minimum(keep[rows], keep[row])
    best = np.full(len(lay.rowids), -np.inf, dtype=np.float32)
    which = np.zeros(len(lay.rowids), dtype=np.int64)
    best[rows], which[rows] = sims.max(axis=1), sims.argmax(axis=1)
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
