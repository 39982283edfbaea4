"""Search latency at 100k chunks, excluding the query embedding, against a raw numpy baseline.

Builds a store of synthetic notes (10 chunks each): clustered, seeded 512-d unit vectors and short
synthetic texts drawn from per-cluster topic words plus a Zipf background vocabulary, inserted
through SQLiteStore.apply (the indexer's own write path, one transaction per 1,000 notes). Then,
on a freshly opened store (matrix memory-mapped from the .npy cache, as a new process sees it):

- ours: services.search.score_chunks + group_notes with a precomputed query vector, inside one
  store snapshot as the `search` verb runs them (dense top-k, FTS5 BM25 candidates for chunks and
  notes, fusion, per-note grouping, chunk rows and titles);
- baseline: the raw numpy matrix-vector product over the same matrix (in memory), and the same
  plus the top-k argpartition, so the ratio shows what the store and fusion add;
- end to end: `vaultlens search QUERY --json` as a subprocess (process start, imports, model load,
  query embedding, search), median of a few runs.

With ``--tier``: every chunk also gets a seeded 384-d quality-tier vector (embedding.tier), and
"ours with the tier" times TierBlend (both models' z-scored cosines over all chunks, the note-level
soft maximum) + score_chunks + group_notes with precomputed query vectors of both models.

Usage: .venv/bin/python bench/search_latency.py [--quick] [--chunks N] [--queries N] [--cli-runs N] [--tier]
       [--profile]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from _common import cli, machine, median, pct, save, table, temp_home, verdict

BAR_MS = 20.0
DIM = 512
PER_NOTE = 10
CLUSTERS = 256
TOPIC_WORDS = 24
VOCAB = 20_000
WORDS_PER_CHUNK = 30
NOTES_PER_TX = 1000


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def make_words(rng: np.random.Generator, n: int) -> list[str]:
    consonants, vowels = list("bcdfghklmnprstvz"), list("aeiou")
    seen: dict[str, None] = {}
    while len(seen) < n:
        k = int(rng.integers(2, 5))
        w = "".join(str(rng.choice(consonants)) + str(rng.choice(vowels)) for _ in range(k))
        seen.setdefault(w, None)
    return list(seen)


class Corpus:
    """Seeded clustered vectors and texts; queries come from the same clusters."""

    def __init__(self, n_chunks: int, seed: int = 42) -> None:
        self.rng = np.random.default_rng(seed)
        words = make_words(self.rng, VOCAB + CLUSTERS * TOPIC_WORDS)
        self.background = words[:VOCAB]
        self.topics = [
            words[VOCAB + c * TOPIC_WORDS : VOCAB + (c + 1) * TOPIC_WORDS] for c in range(CLUSTERS)
        ]
        zipf = 1.0 / np.arange(1, VOCAB + 1) ** 1.07
        self.zipf = zipf / zipf.sum()
        centers = self.rng.standard_normal((CLUSTERS, DIM)).astype(np.float32)
        self.centers = centers / np.linalg.norm(centers, axis=1, keepdims=True)
        self.n_chunks = n_chunks
        self.cluster_of = self.rng.integers(0, CLUSTERS, n_chunks)

    def vectors(self, start: int, stop: int) -> np.ndarray:
        c = self.cluster_of[start:stop]
        noise = self.rng.standard_normal((stop - start, DIM)).astype(np.float32) / np.sqrt(DIM)
        v = self.centers[c] + 1.2 * noise  # cosine to its centre ~0.6
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    def texts(self, start: int, stop: int) -> list[str]:
        """Chunk texts: 8 topic words of the chunk's cluster and Zipf background words, shuffled."""
        n = stop - start
        topic = self.rng.integers(0, TOPIC_WORDS, (n, 8))
        bg = self.rng.choice(VOCAB, (n, WORDS_PER_CHUNK - 8), p=self.zipf)
        out = []
        for j in range(n):
            ws = self.topics[int(self.cluster_of[start + j])]
            words = [ws[t] for t in topic[j]] + [self.background[b] for b in bg[j]]
            self.rng.shuffle(words)
            out.append(" ".join(words).capitalize() + ".")
        return out

    def query(self) -> tuple[str, np.ndarray]:
        c = int(self.rng.integers(0, CLUSTERS))
        words = [str(w) for w in self.rng.choice(self.topics[c], 2, replace=False)]
        words.append(self.background[int(self.rng.choice(VOCAB, p=self.zipf))])
        v = self.centers[c] + 1.5 * self.rng.standard_normal(DIM).astype(np.float32) / np.sqrt(DIM)
        return " ".join(words), (v / np.linalg.norm(v)).astype(np.float32)


def note_batches(corpus: Corpus) -> Iterator[tuple[list[Any], dict[str, Any], float]]:
    """(note updates, vectors, seconds to generate them) per transaction of NOTES_PER_TX notes."""
    from vaultlens.chunking.chunker import Chunk
    from vaultlens.index.lexical import terms
    from vaultlens.index.store import FileRecord, IndexedChunk, NoteUpdate

    n_notes = corpus.n_chunks // PER_NOTE
    for first in range(0, n_notes, NOTES_PER_TX):
        t0 = time.perf_counter()
        last = min(n_notes, first + NOTES_PER_TX)
        vecs = corpus.vectors(first * PER_NOTE, last * PER_NOTE)
        texts = corpus.texts(first * PER_NOTE, last * PER_NOTE)
        updates: list[NoteUpdate] = []
        vectors: dict[str, Any] = {}
        for n in range(first, last):
            path = f"folder{n // 500:03d}/note{n:06d}.md"
            title = f"Note {n}"
            chunks = []
            offset, line = 0, 0
            for k in range(PER_NOTE):
                i = n * PER_NOTE + k
                text = texts[i - first * PER_NOTE]
                heading = (title, f"Section {k}")
                ch = Chunk(
                    sha(f"{path}#{k}")[:16],
                    path,
                    k,
                    heading,
                    text,
                    sha(text),
                    offset,
                    offset + len(text),
                    line,
                    line + 2,
                )
                offset, line = offset + len(text) + 2, line + 3
                ehash = sha(f"{title} / Section {k}\n{text}")
                vectors[ehash] = vecs[i - first * PER_NOTE]
                lexical = " ".join(
                    terms(f"{path.rsplit('.', 1)[0].replace('/', ' ')} {title} Section {k}\n{text}")
                )
                chunks.append(IndexedChunk(ch, ehash, lexical))
            rec = FileRecord(path, "note", offset, 0, sha(path), "indexed", None, title, (), (), PER_NOTE)
            updates.append(NoteUpdate(rec, chunks, ()))
        yield updates, vectors, time.perf_counter() - t0


def fill_store(store: Any, corpus: Corpus) -> dict[str, float]:
    """Every note of ``corpus`` into ``store`` through its own apply (one transaction per batch)."""
    from vaultlens.embedding.local import LocalUSEProvider

    store.set_space(LocalUSEProvider().space)  # the bundled model's space, so the CLI accepts the store
    insert_s = gen_s = 0.0
    for updates, vectors, spent in note_batches(corpus):
        t0 = time.perf_counter()
        store.apply(updates=updates, vectors=vectors)
        insert_s += time.perf_counter() - t0
        gen_s += spent
    return {"generate_s": gen_s, "apply_s": insert_s}


def build_store(index_dir: Path, corpus: Corpus) -> dict[str, float]:
    from vaultlens.index.sqlite.store import SQLiteStore

    store = SQLiteStore(index_dir)
    timings = fill_store(store, corpus)
    t0 = time.perf_counter()
    rowids, _ = store.matrix()  # writes the generation-stamped .npy cache
    timings["matrix_cache_s"] = time.perf_counter() - t0
    assert rowids.size == corpus.n_chunks // PER_NOTE * PER_NOTE, rowids.size
    store.close()
    return timings


TIER_DIM = 384


def unit(v: np.ndarray) -> np.ndarray:
    return (v / np.linalg.norm(v)).astype(np.float32)


def add_tier_vectors(index: Path) -> None:
    """A seeded quality-tier vector for every chunk text, through the store's own write path."""
    from vaultlens.embedding.tiers.e5 import E5Tier
    from vaultlens.index.sqlite.store import SQLiteStore

    store = SQLiteStore(index)
    rng = np.random.default_rng(3)
    space = E5Tier().space  # the model is not loaded: only its space is named
    while rows := store.tier_missing(5000):
        store.add_tier_vectors(space, {h: unit(rng.standard_normal(TIER_DIM)) for h, _, _ in rows})
    store.matrix(tier=True)
    store.matrix()  # both caches for the final generation, as after an index run
    store.close()


def timed(fn: Any, *args: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn(*args)
    return (time.perf_counter() - t0) * 1000, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="10,000 chunks, 50 queries, 2 CLI runs")
    ap.add_argument("--chunks", type=int, default=None, help="chunks in the store (100,000)")
    ap.add_argument("--queries", type=int, default=None, help="timed queries (200)")
    ap.add_argument("--cli-runs", type=int, default=None, help="end-to-end CLI searches (5)")
    ap.add_argument("--tier", action="store_true", help="also time search with the quality tier")
    ap.add_argument("--profile", action="store_true", help="print where `ours` spends its time (cProfile)")
    args = ap.parse_args()
    n_chunks = args.chunks or (10_000 if args.quick else 100_000)
    n_queries = args.queries or (50 if args.quick else 200)
    cli_runs = args.cli_runs if args.cli_runs is not None else (2 if args.quick else 5)

    tmp = temp_home("search")
    vault = Path(tmp.name) / "vault"
    vault.mkdir()
    from vaultlens.config.paths import index_dir
    from vaultlens.index.lexical import query_terms
    from vaultlens.index.sqlite.store import SQLiteStore
    from vaultlens.services.app import App
    from vaultlens.services.finding.search import NOTE_CANDIDATES, TierBlend, group_notes, score_chunks

    settings = App.open(vault).settings
    search = settings.search  # the default search settings (candidates, fusion weight)
    limit, sections = search.limit, search.sections

    corpus = Corpus(n_chunks)
    print(
        f"building a store of {n_chunks:,} chunks ({n_chunks // PER_NOTE:,} notes) via SQLiteStore.apply ..."
    )
    build = build_store(index_dir(vault), corpus)
    print(
        f"  generated in {build['generate_s']:.1f}s, applied in {build['apply_s']:.1f}s,"
        f" matrix cache in {build['matrix_cache_s']:.1f}s"
    )

    if args.tier:
        add_tier_vectors(index_dir(vault))
    store = SQLiteStore(index_dir(vault))  # fresh: the matrix comes from the .npy cache, as in a new process
    rowids, vecs = store.matrix()
    mem = np.array(vecs, dtype=np.float32)  # the baseline's in-memory copy of the same matrix
    k = min(search.candidates, mem.shape[0])
    queries = [corpus.query() for _ in range(n_queries)]

    def ours(text: str, q: np.ndarray) -> tuple[float, float, Any]:
        with store.snapshot():  # one committed generation for the whole search, as the `search` verb
            t_score, scores = timed(score_chunks, store, q, text, search, None, limit)
            t_group, hits = timed(group_notes, store, scores, limit, sections)
        return t_score, t_group, hits

    def raw(q: np.ndarray) -> np.ndarray:
        return mem @ q

    def raw_topk(q: np.ndarray) -> np.ndarray:
        return np.argpartition(-(mem @ q), k - 1)[:k]

    tier_rng = np.random.default_rng(7)
    tier_q = [unit(tier_rng.standard_normal(TIER_DIM)) for _ in queries]

    def ours_tier(text: str, q: np.ndarray, tq: np.ndarray) -> Any:
        with store.snapshot():
            blend = TierBlend(store, q, tq, search.tier_weight)
            return group_notes(store, score_chunks(store, q, text, search, blend, limit), limit, sections)

    for (text, q), tq in zip(queries[:3], tier_q, strict=False):  # warm-up: memory maps, FTS pages, numpy
        ours(text, q)
        raw_topk(q)
        if args.tier:
            ours_tier(text, q, tq)
    if args.profile:  # per-function cumulative times over 60 queries, then the timed runs as usual
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        for text, q in queries[:60]:
            ours(text, q)
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(r"vaultlens", 15)
    t_raw: list[float] = []
    t_topk: list[float] = []
    t_ours: list[float] = []
    t_score: list[float] = []
    t_group: list[float] = []
    t_fts: list[float] = []
    t_tier: list[float] = []
    hits_found = 0
    for i, (text, q) in enumerate(queries):
        if i % 2:  # alternate order so drift on a shared machine hits both sides alike
            t_raw.append(timed(raw, q)[0])
            t_topk.append(timed(raw_topk, q)[0])
        s, g, hits = ours(text, q)
        t_score.append(s)
        t_group.append(g)
        t_ours.append(s + g)
        hits_found += bool(hits)
        if not i % 2:
            t_raw.append(timed(raw, q)[0])
            t_topk.append(timed(raw_topk, q)[0])
        t_fts.append(timed(store.lexical, query_terms(text), search.candidates, NOTE_CANDIDATES)[0])
        if args.tier:
            t_tier.append(timed(ours_tier, text, q, tier_q[i])[0])

    # diagnostic: the same with BLAS limited to one thread (oversubscribed cores make threaded gemv slow)
    from threadpoolctl import threadpool_limits

    t_raw1: list[float] = []
    t_ours1: list[float] = []
    with threadpool_limits(limits=1):
        for text, q in queries[: max(1, n_queries // 2)]:
            t_raw1.append(timed(raw, q)[0])
            s, g, _ = ours(text, q)
            t_ours1.append(s + g)

    # the query embedding, for the breakdown of the end-to-end time
    from vaultlens.embedding.registry import make_provider

    provider = make_provider(settings.embedding)
    load_ms, _ = timed(provider.embed, ["warm-up"])
    t_qemb = [timed(provider.embed, [text])[0] for text, _ in queries[:10]]

    t_cli: list[float] = []
    env = {**os.environ, "VAULTLENS_HOME": os.environ["VAULTLENS_HOME"]}
    for text, _ in queries[:cli_runs]:
        t0 = time.perf_counter()
        proc = subprocess.run(
            [cli(), "search", text, "--vault", str(vault), "--json"],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        t_cli.append((time.perf_counter() - t0) * 1000)
        if proc.returncode != 0:
            sys.exit(f"error: `vaultlens search` failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import vaultlens.cli.main"], env=env, check=True)
    import_ms = (time.perf_counter() - t0) * 1000

    med_raw = median(t_raw)
    med = median(t_ours)
    rows: list[tuple[str, ...]] = [("per query (ms)", "median", "p95", "x raw matvec")]

    def row(label: str, xs: list[float]) -> tuple[str, ...]:
        return (label, f"{median(xs):.2f}", f"{pct(xs, 0.95):.2f}", f"{median(xs) / med_raw:.1f}")

    rows += [
        row("baseline: numpy matrix @ vector", t_raw),
        row(f"baseline: matvec + argpartition top {k}", t_topk),
        row("ours: score_chunks + group_notes", t_ours),
        row("  score_chunks (dense + FTS + fusion)", t_score),
        row("    of which store.lexical (FTS5 chunks + notes)", t_fts),
        row("  group_notes (rows, titles, sections)", t_group),
        row("1 BLAS thread: numpy matrix @ vector", t_raw1),
        row("1 BLAS thread: ours", t_ours1),
        row("query embedding (model loaded)", t_qemb),
    ]
    if t_tier:
        rows.insert(6, row("ours with the quality tier (TierBlend + both)", t_tier))
    if t_cli:
        rows.append(row("end to end: `vaultlens search` CLI", t_cli))
        rows.append(("  of which process start + imports", f"{import_ms:.0f}", "", ""))
        rows.append(("  of which model load (in-process)", f"{load_ms:.0f}", "", ""))
    print()
    print(table(rows))
    ok = med < BAR_MS
    print(
        f"\n{n_chunks:,} chunks x {DIM}-d, {n_queries} queries ({hits_found} with results);"
        f" bar: median < {BAR_MS:.0f} ms excluding the query embedding -> {med:.2f} ms {verdict(ok)}"
    )

    def stats(xs: list[float]) -> dict[str, float]:
        return {"median_ms": round(median(xs), 3), "p95_ms": round(pct(xs, 0.95), 3), "n": len(xs)}

    result = {
        "quick": args.quick,
        "machine": machine(),
        "chunks": n_chunks,
        "notes": n_chunks // PER_NOTE,
        "dims": DIM,
        "queries": n_queries,
        "build": {k2: round(v, 3) for k2, v in build.items()},
        "raw_matvec": stats(t_raw),
        "raw_matvec_topk": stats(t_topk),
        "ours": stats(t_ours),
        "ours_tier": stats(t_tier) if t_tier else None,
        "score_chunks": stats(t_score),
        "fts_only": stats(t_fts),
        "group_notes": stats(t_group),
        "raw_matvec_1thread": stats(t_raw1),
        "ours_1thread": stats(t_ours1),
        "query_embedding": stats(t_qemb),
        "model_load_ms": round(load_ms, 1),
        "cli": stats(t_cli) if t_cli else None,
        "cli_runs_ms": [round(x, 1) for x in t_cli],
        "process_start_imports_ms": round(import_ms, 1),
        "ratio_ours_to_raw": round(med / med_raw, 2),
        "pass": ok,
    }
    store.close()
    print(f"result: {save('search_latency', result)}")
    tmp.cleanup()


if __name__ == "__main__":
    main()
