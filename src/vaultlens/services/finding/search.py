"""Search: dense and full-text candidates fused per chunk, then grouped per note.

Dense similarity carries paraphrase and cross-language queries; BM25 carries exact
identifiers and rare names. The lexical index finds candidates per chunk, but the lexical
score used for ranking is that of the chunk's whole note: a note's evidence is often spread
over its chunks, and the chunk-level score loses it. Each side is normalised over the
candidate pool (dense min-max, lexical divided by its best score) and mixed with a per-query
lexical weight. A note's dense part is a soft maximum of all its chunks (log-mean-exp,
:data:`NOTE_TAU`), so a long reference page cannot win by the count of its sections over the
short page whose whole subject is the query.

With the optional quality tier (``embedding.tier``), the dense part is a blend of the two
models: each model's cosines are z-scored over every chunk of the index (their scales differ)
and mixed ``search.tier_weight`` to the tier (``search.one_language_tier_weight`` to a tier that reads one
language only). The blend and the soft maximum were kept because
they gained on held-out query halves of the docs and ru-wiki sets and lost no group anywhere
(docs/benchmarks.md). A tier that cannot embed the query (its server is down or slow, or the user
never agreed to send it there) is left out: the bundled model answers alone and the hits say so
(:attr:`SearchHits.notices`).

The weight is ``search.max_lexical_weight * confidence``, where the confidence is how much of
the query the best lexical hit explains (:attr:`LexicalHits.confidence`: the store's scores
are already on a scale where 1.0 means every query term matched once). A paraphrase or a
cross-language query, whose best BM25 hit explains little of it (median 0.4 on the vault
queries), stays close to pure dense ranking; a query whose words the best hit really contains
(identifiers, technical claims: median 0.96 on SciFact) leans on BM25. One fixed weight cannot
do both: 0.5 lost English to Russian queries, 0.7 and more dense weight lost SciFact
(docs/benchmarks.md). That maximum was measured against the bundled model alone; where the dense
part blends a tier that reads the vault's one language (minilm-en in an English vault), the
meaning side is stronger and the maximum is ``search.one_language_max_lexical_weight`` instead:
SciFact and Cranfield, two English sets whose queries are whole sentences, both rose on both halves
at 0.6 (docs/benchmarks.md, 2026-12-07 session 4).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from vaultlens.config.settings import SearchSettings
from vaultlens.embedding.base import EmbeddingProvider, Vectors
from vaultlens.embedding.tiers.base import TierProvider, one_language, reads
from vaultlens.errors import ConsentRequired, EmptyQuery, IndexEmpty, InvalidInput, ProviderError
from vaultlens.index.indexing.tier_fill import stored_scripts
from vaultlens.index.lexical import query_evidence
from vaultlens.index.store import ChunkKeys, LexicalHits, NoteScores, Store, grouped_keys
from vaultlens.services.consent import require_tier_query_consent
from vaultlens.services.finding import evidence
from vaultlens.services.finding.beside import beside
from vaultlens.services.finding.section import Section
from vaultlens.services.serial import AsDict

NOTE_CANDIDATES = 1000  # notes scored by note-level BM25; a note past this gets no lexical credit
# Below this cosine, with no lexical evidence either, a hit is only the least bad of the vault.
# Measured with the bundled model on examples/vault: nonsense and off-topic queries 0.09-0.22,
# real ones 0.32-0.46 (docs/benchmarks.md). Models with higher baseline cosines never trip it.
WEAK_SIMILARITY = 0.20
WEAK_LEXICAL = 0.5  # a note holding at least half of the query's information is not a weak match
NOTE_TAU = 0.05  # temperature of the soft maximum over a note's chunks


class ChunkScore(NamedTuple):
    rank: float  # orders notes (a note ranks by its best chunk)
    section: float  # orders the sections shown inside a note
    dense: float  # the raw cosine of the chunk with the query
    lexical: float  # the chunk's note's lexical score on the neutral scale (0 = no term matched)
    path: str  # the chunk's note ("" when the note vanished between the reads)
    bare: bool = False  # front matter no property of which matched: never shown beside a section that did


@dataclass(frozen=True, slots=True)
class NoteHit(AsDict):
    path: str
    title: str
    score: float  # the fused rank score, relative to this query's candidates (the best is about 1)
    sections: list[Section] = field(default_factory=list)
    similarity: float = 0.0  # the raw cosine of the note's best section with the query
    weak: bool = False  # low similarity and no lexical evidence: nothing here really matches

    @classmethod
    def from_dict(cls, item: dict[str, Any]) -> NoteHit:
        """The inverse of :meth:`as_dict` (a hit a running server sent back)."""
        sections = [
            Section(**{**sec, "heading_path": tuple(sec["heading_path"])}) for sec in item["sections"]
        ]
        return cls(**{**item, "sections": sections})


NOTICES_HEADER = "Vaultlens-Notices"  # the HTTP API's header for SearchHits.notices (a JSON list)


class SearchHits(list[NoteHit]):
    """The notes found, best first, and what the reader should know about how they were found
    (the quality tier was left out); every interface that shows hits shows the notices too."""

    def __init__(self, hits: list[NoteHit], notices: tuple[str, ...] = ()) -> None:
        super().__init__(hits)
        self.notices = notices

    def headers(self) -> dict[str, str] | None:
        """The HTTP header that carries the notices beside a body of hits (a JSON list in ASCII),
        for the API and the page alike; None without notices."""
        import json

        return {NOTICES_HEADER: json.dumps(self.notices)} if self.notices else None


def rank_notes(
    store: Store,
    provider: EmbeddingProvider,
    query: str,
    s: SearchSettings,
    limit: int,
    sections: int,
    tier: TierProvider | None = None,
) -> SearchHits:
    """Notes best matching ``query``, each with its strongest sections (``tier``: blend in its model)."""
    query = s.bounded_query(query)
    if not query:
        raise EmptyQuery("The query is empty.", hint='Try: vaultlens search "how do I cache static files"')
    try:
        query.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(
            "The query is not valid UTF-8 text (it holds bytes that are not characters).",
            hint="Check the terminal's or the input file's encoding; vaultlens reads queries as UTF-8.",
        ) from None
    qvec = provider.embed([query])[0]
    if tier is not None and not reads(tier, query):
        tier = None  # an English-only tier and a Russian query: the bundled model answers alone
    tier_qvec, notices = _tier_query(tier, query)
    blend = None
    if tier is not None and tier_qvec is not None:
        weight = s.one_language_tier_weight if one_language(tier) else s.tier_weight
        blend = TierBlend(store, qvec, tier_qvec, weight, s.tier_weight_across)
        if one_language(tier):  # beside a specialist of the vault's language, words weigh less
            s = replace(s, max_lexical_weight=s.one_language_max_lexical_weight)
    chunk_scores = score_chunks(store, qvec, query, s, blend, exact=limit)
    if not chunk_scores:  # only an index without a single chunk has no candidate at all
        run = store.last_run()
        if store.cleared:
            why = "it was cleared"
        elif run is not None and run.status != "ok":
            why = f"the last index run ({run.status}) stopped before it saved a chunk"
        else:
            why = "no note in the vault had text to index"
        raise IndexEmpty(
            f"The index is empty ({why}), so nothing can match.",
            hint="Run `vaultlens index` to index the vault; `vaultlens status` lists skipped files.",
        )
    return SearchHits(group_notes(store, chunk_scores, limit, sections), notices)


def _tier_query(tier: TierProvider | None, query: str) -> tuple[Vectors | None, tuple[str, ...]]:
    """The tier's vector of ``query``, or None and why: a failing tier never fails the search."""
    if tier is None:
        return None, ()
    try:
        require_tier_query_consent(tier)
        return tier.embed_queries([query])[0], ()
    except (ConsentRequired, ProviderError) as exc:
        return None, (f"The quality tier was left out, so the bundled model answered alone: {exc.message}",)


class TierBlend:
    """The dense score with the quality tier: both models' cosines z-scored over the whole index and
    mixed, per chunk (a chunk without a tier vector yet keeps its main-model z-score)."""

    def __init__(
        self, store: Store, qvec: Vectors, tier_qvec: Vectors, weight: float, across: float = 0.0
    ) -> None:
        self.rowids, vecs = store.matrix()
        main = _zscores(np.asarray(vecs @ qvec, dtype=np.float64))
        blend, self.across = main.copy(), main.copy()  # self.across: for sections in the other language
        tier_ids, tier_vecs = store.matrix(tier=True)
        if tier_ids.size and self.rowids.size:
            pos = np.minimum(np.searchsorted(self.rowids, tier_ids), self.rowids.size - 1)
            found = self.rowids[pos] == tier_ids
            # the product first, then the selection: selecting rows of a memory-mapped matrix copies it
            tier_z = _zscores(np.asarray(tier_vecs @ tier_qvec, dtype=np.float64)[found])
            at = pos[found]
            blend[at] = (1.0 - weight) * main[at] + weight * tier_z
            self.across[at] = (1.0 - across) * main[at] + across * tier_z
        self.blend = blend

    def top_k(self, k: int) -> ChunkKeys:
        """The best ``k`` chunks by the blend and the best ``k`` by the blend across languages (a
        section in the other language than the query's is scored by that one: :meth:`scores`)."""
        k = min(k, self.blend.size)
        if k <= 0:
            return self.rowids[:0]
        best = [np.argpartition(-x, k - 1)[:k] for x in (self.blend, self.across)]
        return self.rowids[np.union1d(*best)]

    def scores(self, keys: ChunkKeys, across: npt.NDArray[np.bool_] | None = None) -> npt.NDArray[np.float64]:
        """The blend of each key (NaN for a chunk without a vector); for the keys ``across`` marks
        (sections in the other language than the query's), the blend at ``search.tier_weight_across``."""
        out = np.full(keys.shape[0], np.nan)
        if self.rowids.size:
            pos = np.minimum(np.searchsorted(self.rowids, keys), self.rowids.size - 1)
            found = self.rowids[pos] == keys
            out[found] = self.blend[pos[found]]
            if across is not None:
                use = found & across
                out[use] = self.across[pos[use]]
        return out


NoteChunkScores = tuple[dict[str, list[int]], npt.NDArray[np.floating[Any]]]


def note_penalties(scored: NoteChunkScores, low: float, scale: float) -> dict[str, float]:
    """Log-mean-exp of each note's chunks minus their maximum (<= 0; 0 for a one-chunk note), on
    the candidate pool's min-max scale: a soft maximum that many middling chunks cannot raise.
    ``scored``: each note's chunk keys and the dense score of each, in that order (NaN for a chunk
    without a vector: :meth:`Store.note_chunk_scores`)."""
    groups, scores = scored
    if not groups:
        return {}
    sizes = np.array([len(k) for k in groups.values()])
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    v = np.asarray(scores, dtype=np.float64)
    valid = ~np.isnan(v)
    x = np.where(valid, (v - low) / scale / NOTE_TAU, -np.inf)
    top = np.maximum.reduceat(x, starts)
    with np.errstate(invalid="ignore"):  # a note without any vector: -inf - -inf
        total = np.add.reduceat(np.exp(x - np.repeat(top, sizes)), starts)
    count = np.add.reduceat(valid, starts)
    with np.errstate(divide="ignore", invalid="ignore"):
        penalty = np.where(count > 0, NOTE_TAU * np.log(total / np.maximum(count, 1)), 0.0)
    return dict(zip(groups, np.nan_to_num(penalty).tolist(), strict=True))


def chunk_penalties(
    names: list[str],
    note: npt.NDArray[np.intp],
    upper: npt.NDArray[np.float64],
    penalties_of: Callable[[set[str]], dict[str, float]],
    weight: float,
    exact: int | None,
) -> npt.NDArray[np.float64]:
    """Each chunk's note penalty (``penalties_of`` times ``weight``; ``note`` indexes ``names``).

    A penalty only lowers a note's score, so notes are taken best first by their unpenalised score
    ``upper`` (their best chunk's), in growing blocks, until no note left could still reach the best
    ``exact`` ones; the notes never reached keep penalty 0 and stay below them. Fetching every
    candidate note's chunks would cost more than the rest of a search on a large vault.
    """
    best = np.full(len(names), -np.inf)
    np.maximum.at(best, note, upper)
    order = np.argsort(-best, kind="stable")
    pen = np.zeros(len(names))
    done, block = 0, (max(2 * exact, 20) if exact else len(names))
    while done < len(names):
        chosen = order[done : done + block]
        got = penalties_of({names[i] for i in chosen})
        pen[chosen] = [weight * got.get(names[i], 0.0) for i in chosen]
        done, block = done + len(chosen), block * 2
        if exact and exact <= done < len(names):
            final = best[order[:done]] + pen[order[:done]]
            if best[order[done]] < np.partition(final, done - exact)[done - exact]:
                break  # the best note left, unpenalised, is below the exact-th best penalised one
    return pen[note]


def _zscores(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    return (x - x.mean()) / (x.std() + 1e-9) if x.size else x


class _LexicalChunks(NamedTuple):
    """The lexical stage's best chunks with the reads the fusion needs of them (done beside)."""

    scores: dict[int, float]
    keys: ChunkKeys  # of scores, in its order
    cosine: npt.NDArray[np.float32]  # the dense score of each of keys
    paths: dict[int, str]


def _lexical_chunks(store: Store, qvec: Vectors, terms: Sequence[str], limit: int) -> _LexicalChunks:
    scores = store.lexical_chunks(terms, limit)
    keys = np.fromiter(scores, np.int64, len(scores))
    if not scores:
        return _LexicalChunks(scores, keys, np.zeros(0, np.float32), {})
    return _LexicalChunks(scores, keys, store.scores(qvec, keys), store.chunk_paths(scores))


def score_chunks(
    store: Store,
    qvec: Vectors,
    query: str,
    s: SearchSettings,
    blend: TierBlend | None = None,
    exact: int | None = None,
) -> dict[int, ChunkScore]:
    """Two fused scores per candidate chunk, with the same dense part and lexical weight.

    ``rank`` uses the lexical score of the chunk's whole note, so the best chunk of a note
    carries the note's rank (see :func:`group_notes`); ``section`` uses the chunk's own score,
    so inside a note the section that holds the query's words (an identifier in a code block)
    comes first. ``blend``: the dense part mixes in the quality tier (see :class:`TierBlend`).
    ``exact``: only the best ``exact`` notes must carry their exact score (see
    :func:`chunk_penalties`); the others may keep an upper bound of it. On a large index the
    lexical stage's chunk rows, with their dense scores and paths, are read on a worker while this
    thread reads the dense candidates and the note rows (services/finding/beside.py; where reads run in a
    database server, the note rows on a second worker).
    """
    terms, share = query_evidence(query, everyday=evidence.two_languages(stored_scripts(store)))
    with store.snapshot() as generation:
        lexical_chunks = beside(store, generation, partial(_lexical_chunks, store, qvec, terms, s.candidates))
        # SQLite's three threads on two cores were slower than two (docs/benchmarks.md, "Night of 2026-12-06")
        lexical_notes: Callable[[], NoteScores] = partial(store.lexical_notes, terms, NOTE_CANDIDATES)
        if store.reads_in_server:
            lexical_notes = beside(store, generation, lexical_notes)
        if blend is None:
            keys, cosine = store.top_k(qvec, s.candidates)
        else:
            keys = blend.top_k(s.candidates)
            cosine = store.scores(qvec, keys)
        if keys.size == 0:
            return {}
        note_of = store.chunk_paths(keys.tolist())
        notes = lexical_notes()
        dense_notes = set(note_of.values())
        note_scores = notes.of(dense_notes)  # while the worker still reads the lexical chunk rows
        found = lexical_chunks()
        note_scores.update(notes.of(set(found.paths.values()) - dense_notes))
        note_of.update(found.paths)
        # a note holds a term only through one of its chunks: no chunk matched, no note did
        lexical = LexicalHits(found.scores, note_scores if found.scores else {})
    best_note = notes.best if found.scores else 0.0
    extra = ~np.isin(found.keys, keys)
    if extra.any():
        keys, cosine = (
            np.concatenate([keys, found.keys[extra]]),
            np.concatenate([cosine, found.cosine[extra]]),
        )
    known = ~np.isnan(cosine)  # a lexical hit without a vector (a writer between the two reads)
    ids, raw = keys[known], cosine[known].astype(np.float64)
    keys_list = ids.tolist()
    paths = [note_of.get(r, "") for r in keys_list]
    sections_read = store.chunks(keys_list)
    traits = [evidence.traits(c) if (c := sections_read.get(r)) else evidence.NO_TRAITS for r in keys_list]
    q_script = evidence.query_script(terms)
    both = evidence.bilingual(traits)  # the script rule, the tier's weight across and coverage apply
    langs = evidence.note_languages(traits, paths)
    across = np.array(
        [both and evidence.crosses(q_script, t, langs.get(p)) for t, p in zip(traits, paths, strict=True)],
        dtype=bool,
    )

    d = raw if blend is None else blend.scores(ids, across)
    low, scale = (float(d.min()), float(d.max() - d.min())) if d.size else (0.0, 0.0)
    d_norm = (d - low) / scale if scale > 0 else np.ones_like(d)
    a = s.max_lexical_weight * min(1.0, lexical.confidence * share) if lexical.chunks else 0.0
    lx = share * np.array([lexical.notes.get(p, 0.0) for p in paths], dtype=np.float64)
    own = share * np.array([lexical.chunks.get(r, 0.0) for r in keys_list])
    passing = np.array([both and evidence.foreign(q_script, t.mix) for t in traits], dtype=bool)
    lx[passing], own[passing] = 0.0, 0.0
    # a note's share of the best note's score, or among candidates in both languages how much of the
    # query it covers (see vaultlens.services.finding.evidence, "Coverage")
    yardstick = max(best_note * share, 1.0) if both else best_note * share
    l_norm = lx / yardstick if yardstick > 0 else np.zeros_like(lx)
    top_chunk = max(lexical.chunks.values(), default=0.0)
    c_norm = own / (top_chunk or 1.0)
    rank = (1.0 - a) * d_norm + a * l_norm
    section = (1.0 - a) * d_norm + a * c_norm
    across_notes = {p for p, x in zip(paths, across.tolist(), strict=True) if x}
    if scale > 0:
        names, note = np.unique(np.array(paths, dtype=object), return_inverse=True)
        penalty = chunk_penalties(
            names.tolist(),
            note,
            rank,
            lambda chosen: note_penalties(
                scored_note_chunks(store, qvec, blend, chosen, across_notes), low, scale
            ),
            1.0 - a,
            exact,
        )
        rank, section = rank + penalty, section + penalty
    rank, section = _not_answers(store, traits, paths, own, rank, section)
    bare = [t.frontmatter and o <= 0.0 for t, o in zip(traits, own.tolist(), strict=True)]
    return {
        r: ChunkScore(x, y, dense, note_lx, path, b)
        for r, x, y, dense, note_lx, path, b in zip(
            keys_list, rank.tolist(), section.tolist(), raw.tolist(), lx.tolist(), paths, bare, strict=True
        )
    }


def scored_note_chunks(
    store: Store,
    qvec: Vectors,
    blend: TierBlend | None,
    notes: set[str],
    across: AbstractSet[str] = frozenset(),
) -> NoteChunkScores:
    """Each of ``notes``' chunk keys and its dense score: the cosine, or with the tier the blend (the
    main model's z-score alone for the chunks of the notes in ``across``, in the other language)."""
    if blend is None:
        return store.note_chunk_scores(qvec, notes)
    groups = store.note_chunk_keys(notes)
    mask = np.fromiter((p in across for p, keys in groups.items() for _ in keys), bool)
    return groups, blend.scores(grouped_keys(groups), mask if across else None)


def group_notes(
    store: Store, chunk_scores: dict[int, ChunkScore], limit: int, sections: int
) -> list[NoteHit]:
    per_note: dict[str, list[tuple[float, int]]] = defaultdict(list)
    best: dict[str, float] = {}
    cosine: dict[str, float] = {}
    lexical: dict[str, float] = {}
    answered = {s.path for s in chunk_scores.values() if not s.bare}
    for rowid, score in chunk_scores.items():
        if path := score.path:  # a chunk whose note vanished between the reads is left out
            if not (score.bare and path in answered):  # front matter is shown where a property matched
                per_note[path].append((score.section, rowid))
            best[path] = max(best.get(path, -1.0), score.rank)
            cosine[path] = max(cosine.get(path, -1.0), score.dense)
            lexical[path] = max(lexical.get(path, 0.0), score.lexical)
    ranked = sorted(per_note.items(), key=lambda kv: (-best[kv[0]], kv[0]))[:limit]
    for _, scored in ranked:
        scored.sort(key=lambda s: (-s[0], s[1]))
    rows = store.chunks(r for _, scored in ranked for _, r in scored[:sections])  # only what is shown
    titles = store.titles(p for p, _ in ranked)
    hits = []
    for path, scored in ranked:
        secs = [Section.of(rows[r], score, snippet=True) for score, r in scored[:sections]]
        weak = cosine[path] < WEAK_SIMILARITY and lexical[path] < WEAK_LEXICAL
        hits.append(
            NoteHit(path, titles.get(path) or path, round(best[path], 4), secs, round(cosine[path], 4), weak)
        )
    return hits


def _not_answers(
    store: Store,
    traits: list[evidence.SectionTraits],
    paths: list[str],
    own: npt.NDArray[np.float64],
    rank: npt.NDArray[np.float64],
    section: npt.NDArray[np.float64],
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """``rank`` and ``section`` with the sections that are not answers moved down (see
    :mod:`vaultlens.services.finding.evidence`): front matter no property of which matched goes below every
    other candidate (unless it is all its note holds), a hub just below the best note it links to."""
    rank, section = rank.copy(), section.copy()
    bare = [i for i, t in enumerate(traits) if t.frontmatter and own[i] <= 0.0]
    if bare:
        sizes = store.note_chunk_keys({paths[i] for i in bare})
        floor = float(min(rank.min(), section.min())) - 1.0
        for i in bare:
            if len(sizes.get(paths[i], ())) > 1:
                section[i] = floor + section[i] / 10
    best: dict[str, float] = {}
    for i, t in enumerate(traits):
        if not t.links_to:
            best[paths[i]] = max(best.get(paths[i], -np.inf), float(rank[i]))
    for i, t in enumerate(traits):
        if t.links_to:
            targets = evidence.resolve_targets(t.links_to, best) - {paths[i]}
            if targets:
                cap = max(best[p] for p in targets) - evidence.HUB_MARGIN
                rank[i] = min(float(rank[i]), cap)
    return rank, section
